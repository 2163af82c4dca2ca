//! What `specstorm validate RUN_DIR` is asked: the options every
//! workload's trace validation reads. The command reaches the run's
//! workload through the registry (`Workload::validate`); the groups
//! workload checks its run against its spec with TLC
//! (`workload::groups::validate`, docs/validate.md).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it; it imports none, so the Workload trait may name it.

use std::path::PathBuf;

/// What `specstorm validate` was asked.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// The run folder.
    pub run_dir: PathBuf,
    /// The spec (default: the bundled specs/BacktalkGroups.tla).
    pub spec: Option<PathBuf>,
    /// Stop TLC after this many distinct states (inconclusive then).
    pub max_states: Option<u64>,
}
