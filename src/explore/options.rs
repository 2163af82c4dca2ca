//! What `specstorm explore` was asked to do ([`ExploreOptions`]): what
//! the driver hands a workload's `explore`, kept with the worlds, below
//! the workloads.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::db::Restore;
use std::path::PathBuf;

/// What `specstorm explore` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct ExploreOptions {
    /// Scenario file (None: the embedded default scenario).
    pub scenario: Option<PathBuf>,
    /// `--set KEY=VALUE` overrides.
    pub overrides: Vec<String>,
    /// `--max-depth` (steps from the initial state); replaces `explore.max_depth`.
    pub max_depth: Option<u64>,
    /// `--max-states` (distinct states); replaces `explore.max_states`.
    pub max_states: Option<u64>,
    /// How a state's database is brought back.
    pub restore: Restore,
    /// No progress lines on stderr.
    pub quiet: bool,
}
