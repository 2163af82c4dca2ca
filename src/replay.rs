//! What `specstorm replay RUN_DIR` is asked: the options every workload's
//! replay reads. The command reaches the run's workload through the
//! registry (`Workload::replay`); the groups workload re-executes the
//! steps behind one finding of an in-process SQLite run, shrinks them and
//! writes a script and an explore world (`workload::groups::replay`,
//! docs/replay.md).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it; it imports none, so the Workload trait may name it.

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
