//! The one entry of `specstorm run` for every workload: loads the
//! scenario far enough to know its workload and hands it to that
//! workload's runner ([`crate::run`] for groups, [`crate::outbox_run`] for
//! the outbox).
//!
//! App layer, above every runner: imports the runners and
//! [`crate::prepare`]; no runner imports it.

use crate::control::Control;
use crate::prepare::{RunError, RunOptions};
use crate::report::summary::Summary;
use std::path::PathBuf;
use std::sync::Arc;

/// Runs a scenario end to end with its workload's runner and saves its
/// results; returns the summary (whose `exit.code` is the process's exit
/// code) and the run folder.
pub fn run(opts: &RunOptions, control: Arc<Control>) -> Result<(Summary, PathBuf), RunError> {
    if crate::outbox_run::is_outbox(opts.scenario.as_deref(), &opts.overrides)? {
        return crate::outbox_run::run(opts, control);
    }
    crate::run::run(opts, control)
}
