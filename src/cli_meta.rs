//! What the command line says about itself and how it logs: the long
//! `--version` ([`long_version`]: the git commit, the bundled SQLite, TLS),
//! the exit-code table `run --help` ends with ([`EXIT_CODES`]), shell
//! completions and the man page (clap_complete, clap_mangen), and the log
//! subscriber every command but `serve` (which has `--log-level`) starts
//! ([`init_logging`]: `-v` / `RUST_LOG`), so that the warnings of the
//! nemeses and the fault proxy reach the user.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use std::io::Write;
use std::str::FromStr;
use tracing_subscriber::filter::{LevelFilter, Targets};

/// `run --help`'s last part: docs/cli.md's exit-code table, short.
pub const EXIT_CODES: &str = "\
Exit codes (docs/cli.md; when several apply, the first of 2, 130, 3, 1, 4 decides):
  0    the run met its expectation (every invariant holds, or exactly the
       expected ones are violated; every threshold met)
  1    the expectation was not met (an invariant violated that should hold,
       an expected violation not found, a threshold breached); report
       --baseline: a regression (held in the baseline, violated now)
  2    usage error, invalid scenario or statement file (nothing ran), a
       database holding rows without target.reuse, a taken run folder
  3    the target could not be used (unreachable, a TLS certificate not
       trusted, schema refused, not conforming, dead or hung mid-run), or a
       run-folder file could not be written
  4    inconclusive: a verdict unknown (too little evidence, not exercised),
       nothing violated unexpectedly
  130  interrupted (Ctrl-C, SIGTERM): partial results saved";

/// `specstorm --version`'s text: the crate version, the git commit it was
/// built from, the SQLite library linked in and the TLS stack.
pub fn long_version() -> String {
    format!(
        "{} (commit {})\nSQLite {} (bundled)\nTLS: rustls with the ring provider (https:// targets)",
        env!("CARGO_PKG_VERSION"),
        env!("SPECSTORM_GIT_COMMIT"),
        rusqlite::version(),
    )
}

/// The log filter: `RUST_LOG` when set (`warn`, `debug`,
/// `specstorm::nemesis=debug,warn`, ...; tracing's target=level syntax),
/// else warnings, and one level more per `-v` (info, debug, trace).
/// Errors: a `RUST_LOG` that does not parse (the default is then used).
pub fn log_filter(verbose: u8, rust_log: Option<&str>) -> Result<Targets, String> {
    let level = match verbose {
        0 => LevelFilter::WARN,
        1 => LevelFilter::INFO,
        2 => LevelFilter::DEBUG,
        _ => LevelFilter::TRACE,
    };
    let default = Targets::new().with_default(level);
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(default),
        Some(s) => Targets::from_str(s).map_err(|e| format!("RUST_LOG={s:?} is not a filter: {e}")),
    }
}

/// Starts the log subscriber on stderr (no colors unless stderr is a
/// terminal). A second call keeps the first subscriber.
pub fn init_logging(verbose: u8) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let rust_log = std::env::var("RUST_LOG").ok();
    let filter = log_filter(verbose, rust_log.as_deref()).unwrap_or_else(|why| {
        let _ = writeln!(std::io::stderr(), "specstorm: warning: {why}");
        log_filter(verbose, None).expect("the default filter")
    });
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(filter)
        .try_init();
}

/// `specstorm completions SHELL`: the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell, cmd: &mut clap::Command, out: &mut dyn Write) {
    clap_complete::generate(shell, cmd, "specstorm", out);
}

/// `specstorm man`: one man page (roff): the command, then a section per
/// subcommand with its synopsis, description and options (`run`'s with
/// its exit-code table).
pub fn man(cmd: clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(cmd.clone()).render(out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("specstorm {}", sub.get_name());
        writeln!(out, ".SH \"{}\"", name.to_uppercase())?;
        let page = clap_mangen::Man::new(sub.clone().bin_name(name));
        page.render_synopsis_section(out)?;
        page.render_description_section(out)?;
        page.render_options_section(out)?;
        if sub.get_after_long_help().or(sub.get_after_help()).is_some() {
            page.render_extra_section(out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_and_rust_log_choose_the_level() {
        use tracing::Level;
        let on = |t: &Targets, target: &str, l: Level| t.would_enable(target, &l);
        let quiet = log_filter(0, None).unwrap();
        assert!(on(&quiet, "specstorm::nemesis::lock", Level::WARN));
        assert!(!on(&quiet, "specstorm::nemesis::lock", Level::INFO));
        let v = log_filter(1, None).unwrap();
        assert!(on(&v, "specstorm::nemesis::lock", Level::INFO));
        assert!(!on(&v, "specstorm::nemesis::lock", Level::DEBUG));
        assert!(on(&log_filter(2, None).unwrap(), "x", Level::DEBUG));
        assert!(on(&log_filter(9, None).unwrap(), "x", Level::TRACE));
        // RUST_LOG wins over -v, with per-target levels.
        let env = log_filter(0, Some("specstorm::nemesis=debug,error")).unwrap();
        assert!(on(&env, "specstorm::nemesis::proxy", Level::DEBUG));
        assert!(!on(&env, "specstorm::pipeline", Level::WARN));
        assert!(log_filter(0, Some("not a = filter =")).is_err());
        // An empty RUST_LOG is no RUST_LOG.
        assert!(on(&log_filter(1, Some(" ")).unwrap(), "x", Level::INFO));
    }

    #[test]
    fn the_long_version_names_commit_sqlite_and_tls() {
        let v = long_version();
        assert!(v.starts_with(env!("CARGO_PKG_VERSION")), "{v}");
        assert!(
            v.contains(&format!("commit {}", env!("SPECSTORM_GIT_COMMIT"))),
            "{v}"
        );
        assert!(v.contains(rusqlite::version()), "{v}");
        assert!(v.contains("TLS: rustls"), "{v}");
    }
}
