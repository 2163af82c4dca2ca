//! Where a workload's ops run, Jepsen-style: one [`Target`] trait for the
//! in-process SQLite database ([`sqlite`]) and an HTTP service
//! ([`http`]: the contract or an `[api]` mapping, the spawned reference
//! server or `target.url`, a `target.command` service). A target is made
//! ready (schema and fit; or started, healthy and checked for an earlier
//! run's rows through the workload's closure), runs the workload's load
//! with its clients while the nemeses it supports run beside it (lock,
//! kill, the fault proxy; crash and pause are the runtimes' step hooks or
//! the reference server's fault hook) and the WAL keeper watches its
//! database, reads the final tables through the workload's reader, and is
//! torn down, saying what went wrong ([`Target::finish`]). Its [`Caps`]
//! say which fault kinds it can take.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

pub mod http;
pub mod sqlite;

use crate::clock::Clock;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::history::writer::HistorySink;
use crate::nemesis::Recorder;
use crate::scenario::{self, Scenario};
use std::path::Path;
use std::sync::Arc;

pub use crate::scenario::Caps;

/// Why a target could not be used; each maps to a run error
/// (`prepare::RunError`) and so to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The scenario asks what cannot be done, or the target holds what
    /// the run must not mix with (exit 2).
    #[error("{0}")]
    Input(String),
    /// The target could not be used (exit 3).
    #[error("target: {0}")]
    Target(String),
    /// Anything else (exit 3).
    #[error(transparent)]
    Other(#[from] anyhow::Error),
    /// The user stopped the run before the load began (exit 130).
    #[error("{0}")]
    Interrupted(String),
}

impl From<crate::target::http::spawn::StartError> for TargetError {
    fn from(e: crate::target::http::spawn::StartError) -> Self {
        use crate::target::http::spawn::StartError;
        match e {
            StartError::Failed(why) => TargetError::Target(why),
            StartError::Interrupted => TargetError::Interrupted(e.to_string()),
        }
    }
}

/// What every target is made with: the run's scenario, folder, clock,
/// signals, history and fault plan.
pub struct Setup<'a> {
    /// The resolved scenario (its `[target]`, `[api]`, `[audit]`, faults).
    pub scenario: &'a Scenario,
    /// The run folder (`variant.sql` saved there already).
    pub run_dir: &'a Path,
    /// The scenario file's folder (`target.workdir`, a relative
    /// `audit.sqlite`).
    pub base: &'a Path,
    /// The history (the WAL keeper's checkpoints).
    pub sink: HistorySink,
    /// The run's clock.
    pub clock: Clock,
    /// Stop, abort and the target's failure.
    pub control: Arc<Control>,
    /// The fault plan and its recorder.
    pub nemesis: Recorder,
}

impl Setup<'_> {
    /// The scenario's faults of `kind` this target can take, with their
    /// index in `[[faults]]` (none when `caps` cannot: the loader refused
    /// such a scenario already, see [`scenario::Target::caps`]).
    fn faults(&self, kind: FaultKind, caps: Caps) -> Vec<(u32, scenario::Fault)> {
        if !caps.supports(kind) {
            return Vec::new();
        }
        self.scenario
            .faults
            .iter()
            .enumerate()
            .filter(|(_, f)| f.kind == kind)
            .map(|(i, f)| (i as u32, f.clone()))
            .collect()
    }
}

/// One target, from ready to torn down: [`Target::run`] once, then
/// [`Target::final_read`] once, then [`Target::finish`].
pub trait Target {
    /// What the load's workers are handed (connections, a client).
    type Clients;
    /// What a workload's reader reads the final tables from.
    type Source<'a>
    where
        Self: 'a;

    /// The fault kinds it can take.
    fn caps(&self) -> Caps;

    /// The target, for the summary (`sqlite PATH`, `http URL`).
    fn describe(&self) -> String;

    /// Runs `load` with the target's clients while its nemeses and WAL
    /// keeper run, then stops them. Errors: the clients cannot be made
    /// (the load never began).
    fn run<O>(&mut self, load: impl FnOnce(Self::Clients) -> O) -> Result<O, TargetError>;

    /// Reads the final tables through `read`, once the load drained. None
    /// when the target could not give them (the reason is then the
    /// target's error, see [`Target::finish`]: nothing is judged); an
    /// error when the run cannot go on.
    fn final_read<T>(
        &mut self,
        read: impl FnOnce(Self::Source<'_>) -> Result<T, String>,
    ) -> Result<Option<T>, TargetError>;

    /// Stops what the target started and says what it was and why it
    /// failed the run, if it did (exit 3).
    fn finish(self) -> Finished;
}

/// What a torn-down target tells the run.
pub struct Finished {
    /// The target, for the summary (`sqlite PATH`, `http URL`).
    pub target_desc: String,
    /// The target misbehaved in a way that makes the run exit 3.
    pub target_error: Option<String>,
    /// Its database's WAL, when the bench could watch it.
    pub wal: Option<crate::wal::WalReport>,
}
