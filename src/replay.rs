//! What `specstorm replay RUN_DIR` is asked: the options every workload's
//! replay reads. The command reaches the run's workload through the
//! registry (`Workload::replay`); the groups workload re-executes the
//! steps behind one finding of an in-process SQLite run, shrinks them and
//! writes a script and an explore world (`workload::groups::replay`,
//! docs/replay.md); the outbox workload does the same for an outbox run
//! (`workload::outbox::replay`).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it; it imports only the exit codes, the verdicts and the
//! replay's database error (below the Workload trait), so the trait may
//! name it.

use std::path::PathBuf;

/// What `specstorm replay` was asked.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The run folder.
    pub run_dir: PathBuf,
    /// Which finding (1-based, in the order `replay` lists them).
    pub finding: usize,
    /// Most statements one search for an order may execute (each test of
    /// the shrinking has its own budget of this size).
    pub max_steps: u64,
    /// Over HTTP, where the server's steps are not recorded: send the
    /// run's ops again to the reference server this many times and count
    /// how often each invariant is violated (`--reruns N`).
    pub reruns: Option<u32>,
}

/// The default of `--max-steps`.
pub const DEFAULT_MAX_STEPS: u64 = 200_000;

/// Why a replay could not be made, with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Not a run folder of the in-process target the workload replays, no
    /// step records,
    /// nothing found, no such finding, a design refused: exit 2.
    #[error("{0}")]
    Usage(String),
    /// A step the replay cannot re-execute, or the budget ran out: exit 4.
    #[error("{0}")]
    Inconclusive(String),
    /// A file could not be read or written, or a database failed: exit 3.
    #[error("{0}")]
    Unreadable(String),
}

impl ReplayError {
    /// cli.md's code.
    pub fn exit_code(&self) -> crate::exit_code::ExitCode {
        use crate::exit_code::ExitCode;
        match self {
            ReplayError::Usage(_) => ExitCode::Usage,
            ReplayError::Inconclusive(_) => ExitCode::Inconclusive,
            ReplayError::Unreadable(_) => ExitCode::Target,
        }
    }
}

impl From<crate::replay_step::DbError> for ReplayError {
    fn from(e: crate::replay_step::DbError) -> Self {
        ReplayError::Unreadable(e.to_string())
    }
}

/// Every violation of `results`, numbered from 1 in report order: the
/// findings `replay` lists and `--finding N` picks, for every workload.
pub fn violations(
    results: &[crate::verdict::CheckResult],
) -> Vec<(String, crate::verdict::Finding)> {
    results
        .iter()
        .filter(|r| r.verdict == crate::verdict::Verdict::Violated)
        .flat_map(|r| r.examples.iter().map(|f| (r.invariant.clone(), f.clone())))
        .collect()
}
