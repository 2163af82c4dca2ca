//! What `specstorm run` was asked ([`RunOptions`], with how the run is
//! watched, [`Watch`]) and why a run could not produce a verdict
//! ([`RunError`]): what the pipeline hands every workload and every
//! workload may answer, kept below the workloads (`crate::prepare`
//! re-exports them with the conversions from the clients' errors).
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use crate::exit_code::ExitCode;
use crate::whole::WriteError;
use std::path::PathBuf;
use std::time::Duration;

/// Why a run could not produce a verdict; each maps to a cli.md exit code.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Invalid scenario, statement file or arguments (exit 2).
    #[error("{0}")]
    Input(String),
    /// The target could not be used (exit 3).
    #[error("target: {0}")]
    Target(String),
    /// A file of the run folder could not be written (exit 3): which, and
    /// why (a full disk).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Anything else (exit 3: the bench could not judge the target).
    #[error(transparent)]
    Other(#[from] anyhow::Error),
    /// The user stopped the run before the load began (exit 130).
    #[error("{0}")]
    Interrupted(String),
}

impl RunError {
    /// The exit code (cli.md): 2 for input errors, 3 for target and other
    /// errors, 130 when interrupted before the load began.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            RunError::Input(_) => ExitCode::Usage,
            RunError::Target(_) | RunError::Write(_) | RunError::Other(_) => ExitCode::Target,
            RunError::Interrupted(_) => ExitCode::Interrupted,
        }
    }
}

/// What `specstorm run` was asked.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Scenario file; None runs the embedded default.
    pub scenario: Option<PathBuf>,
    /// `--set key=value` overrides (and `--seed`, `--duration` as overrides).
    pub overrides: Vec<String>,
    /// Run folder; None: `results/<UTC time>-<scenario>-<variant>/`.
    pub out: Option<PathBuf>,
    /// How the run is watched while it goes (progress lines, dashboard).
    pub watch: Watch,
    /// Print the end-of-run summary on stderr, not stdout (`compare`
    /// keeps stdout for its table).
    pub summary_on_stderr: bool,
    /// `--shard i/n`: this runner's part of a sharded run (HTTP target
    /// with `target.url` only; needs `run_id`).
    pub shard: Option<crate::shard::Shard>,
    /// `--run-id ID`: shared by every shard of one run; the project
    /// namespace on the target derives from it.
    pub run_id: Option<String>,
    /// `--metrics-addr`: serve the live figures there for scraping.
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// `--metrics-linger`: how long the endpoint stays up after the results
    /// are saved (an interrupt ends it sooner).
    pub metrics_linger: std::time::Duration,
    /// This run is one seed of a series (`--seeds`): its `catch_rate`
    /// thresholds are the series' to judge, over every seed, not its own.
    pub in_series: bool,
}

/// How a run is watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Watch {
    /// Nothing while it runs (the summary at the end still prints).
    #[default]
    Quiet,
    /// One plain line on stderr every so often: no escape codes.
    Lines(Duration),
    /// The live terminal dashboard; `color: false` honours `NO_COLOR`.
    Dashboard {
        /// Colors on (false: `NO_COLOR` is set).
        color: bool,
        /// How long the verdict panel stays after the run, unless a key
        /// ends it first ([`DASHBOARD_CLOSE_AFTER`]); None (`--keep-open`):
        /// until a key.
        close_after: Option<Duration>,
    },
}

/// How long the dashboard shows the verdicts before it gives the terminal
/// to the summary (as k6 and oha end by themselves: `run && next` must not
/// wait for a key).
pub const DASHBOARD_CLOSE_AFTER: Duration = Duration::from_secs(5);

impl Watch {
    /// The mode for `specstorm run`: quiet with `-q`; the dashboard when
    /// stdout and stdin are terminals, `CI` is not `true` and `--no-tui`
    /// was not given; else plain lines every 2 s.
    pub fn choose(quiet: bool, no_tui: bool) -> Watch {
        use std::io::IsTerminal;
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        if quiet {
            Watch::Quiet
        } else if no_tui
            || ci
            || !std::io::stdout().is_terminal()
            || !std::io::stdin().is_terminal()
        {
            Watch::Lines(Duration::from_secs(2))
        } else {
            Watch::Dashboard {
                color,
                close_after: Some(DASHBOARD_CLOSE_AFTER),
            }
        }
    }

    /// With `keep` (`--keep-open`), the dashboard's verdict panel stays
    /// until a key is pressed; other modes are unchanged.
    pub fn keep_open(self, keep: bool) -> Watch {
        match self {
            Watch::Dashboard { color, .. } if keep => Watch::Dashboard {
                color,
                close_after: None,
            },
            w => w,
        }
    }
}
