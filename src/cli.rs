//! The command line: `specstorm run` (the main job) and `specstorm check`
//! (validate without running). Exit codes follow `shared/reference/cli.md`.

use crate::run::{prepare, run, RunError, RunOptions};
use crate::runtime::Control;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A load-generating chaos test bench: runs a scenario against a real
/// implementation, records the history, and audits the final tables against
/// the invariants of its TLA+ spec.
#[derive(Debug, Parser)]
#[command(name = "specstorm", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario (default: the embedded default scenario), audit, save results.
    Run {
        /// Scenario file (TOML). Without it, the default scenario embedded in
        /// the binary runs against a fresh SQLite file.
        scenario: Option<PathBuf>,
        /// Stop after this wall time (e.g. 30s, 2m); overrides stop.duration.
        #[arg(long, value_parser = humantime::parse_duration)]
        duration: Option<Duration>,
        /// Seed of every random choice; overrides the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Run folder (default results/<UTC time>-<scenario>-<variant>/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override a scenario key, e.g. --set load.ingesters=4 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// No progress lines on stderr.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Validate a scenario and its statement file and print the resolved
    /// configuration, without touching any target.
    Check {
        scenario: Option<PathBuf>,
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
}

/// Runs the parsed command line; returns the process exit code.
pub fn main(cli: Cli) -> i32 {
    match cli.command {
        Command::Check { scenario, set } => match prepare(scenario.as_deref(), &set) {
            Ok(p) => {
                println!(
                    "# {} is valid; resolved configuration:",
                    describe(&scenario)
                );
                print!("{}", p.scenario.to_toml());
                println!(
                    "# variant: {} (sha256 {}): ingest {} steps (counting step {}), resolve {} steps",
                    p.variant.file.path.display(),
                    p.variant.file.sha256,
                    p.variant.ingest.steps.len(),
                    p.variant.ingest.steps[p.variant.counting_step].name,
                    p.variant.resolve.steps.len()
                );
                0
            }
            Err(e) => report_error(&e),
        },
        Command::Run {
            scenario,
            duration,
            seed,
            out,
            set,
            quiet,
        } => {
            let mut overrides = set;
            if let Some(d) = duration {
                overrides.push(format!(
                    "stop.duration=\"{}\"",
                    humantime::format_duration(d)
                ));
            }
            if let Some(seed) = seed {
                overrides.push(format!("seed={seed}"));
            }
            let opts = RunOptions {
                scenario,
                overrides,
                out,
                progress: (!quiet).then_some(Duration::from_secs(2)),
            };
            let control = Arc::new(Control::default());
            install_signal_handler(control.clone());
            match run(&opts, control) {
                Ok((summary, _)) => summary.exit.code,
                Err(e) => report_error(&e),
            }
        }
    }
}

fn describe(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "the embedded default scenario".into())
}

fn report_error(e: &RunError) -> i32 {
    eprintln!("specstorm: error: {e}");
    e.exit_code()
}

/// Ctrl-C / SIGTERM: the first stops the load gracefully (ops in flight
/// finish, the audit runs, results are saved, exit 130); the second
/// abandons ops in flight between steps (recorded as indeterminate).
fn install_signal_handler(control: Arc<Control>) {
    let _ = ctrlc::set_handler(move || {
        if control.interrupted.swap(true, Ordering::AcqRel) {
            eprintln!("specstorm: second interrupt: abandoning ops in flight");
            control.abort.store(true, Ordering::Release);
        } else {
            eprintln!("specstorm: interrupted: stopping the load, then auditing what ran");
        }
        control.stop.store(true, Ordering::Release);
    });
}
