//! The command line's conventions (issue 20, item 5): shell completions,
//! the man page, a `--version` that names the commit, the bundled SQLite
//! and TLS, the exit-code table in `run --help`, and `-v` / `RUST_LOG`
//! bringing the nemeses' log lines to stderr.

use crate::common::{specstorm, text};

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn completions_for_bash_name_every_command() {
    let o = specstorm(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = stdout(&o);
    assert!(s.contains("_specstorm()"), "{s}");
    for c in ["run", "check-target", "audit", "completions", "man"] {
        assert!(s.contains(c), "{c} missing:\n{s}");
    }
    let o = specstorm(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn the_man_page_is_roff_with_every_command_and_the_exit_codes() {
    let o = specstorm(&["man"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = stdout(&o);
    assert!(s.contains(".TH specstorm"), "{s}");
    for c in ["SPECSTORM RUN", "SPECSTORM CHECK-TARGET", "SPECSTORM AUDIT"] {
        assert!(s.contains(c), "{c} missing:\n{s}");
    }
    assert!(s.contains("Exit codes"), "{s}");
    assert!(s.contains("\\-\\-keep\\-open"), "{s}");
}

#[test]
fn version_names_the_commit_sqlite_and_tls() {
    let o = specstorm(&["--version"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = stdout(&o);
    let commit = env!("SPECSTORM_GIT_COMMIT");
    assert!(
        s.starts_with(&format!(
            "specstorm {} (commit {commit})",
            env!("CARGO_PKG_VERSION")
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!("SQLite {}", rusqlite::version())),
        "{s}"
    );
    assert!(s.contains("TLS: rustls"), "{s}");
    // Built in a git checkout: the commit is the checkout's.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Some(h) = head.ok().filter(|h| h.status.success()) {
        assert_eq!(commit, String::from_utf8_lossy(&h.stdout).trim());
    }
}

#[test]
fn run_help_ends_with_the_exit_codes() {
    let o = specstorm(&["run", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = stdout(&o);
    let table = &s[s.find("Exit codes").unwrap_or_else(|| panic!("{s}"))..];
    for code in ["  0 ", "  1 ", "  2 ", "  3 ", "  4 ", "  130 "] {
        assert!(table.contains(code), "{code:?} missing:\n{table}");
    }
}

#[test]
fn verbose_shows_the_nemesis_lines_and_quiet_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, v: &[&str], rust_log: Option<&str>| {
        let out = tmp.path().join(name);
        let mut c = crate::common::command();
        c.args(v)
            .args(["run", "scenarios/chaos-lock.toml", "-q", "--set"])
            .arg("stop.events=300")
            .arg("--out")
            .arg(&out)
            .env_remove("RUST_LOG");
        if let Some(l) = rust_log {
            c.env("RUST_LOG", l);
        }
        let o = c.output().unwrap();
        assert!(matches!(o.status.code(), Some(0 | 4)), "{}", text(&o));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let line = "lock nemesis: fault 0 on ";
    let err = run("v", &["-v"], None);
    assert!(err.contains(line) && err.contains("INFO"), "{err}");
    let err = run("quiet", &[], None);
    assert!(!err.contains(line), "{err}");
    let err = run("env", &[], Some("specstorm::nemesis=info"));
    assert!(err.contains(line), "{err}");
}
