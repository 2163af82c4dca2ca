//! What the explorer needs from a workload: the [`World`] trait. A world
//! names its machines, the choices enabled in a state, how one choice runs
//! as one real statement, the spec's bookkeeping that belongs to the state
//! key, and the spec's state invariants. The search ([`super::search`]) is
//! written against this trait only, so a second workload (outbox) plugs in
//! by implementing it.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use rusqlite::Connection;
use std::fmt;

/// An error that ends the exploration: the world could not be run at all
/// (its schema failed, an export statement failed). A statement that fails
/// inside a step is no such error: it ends that op, as in a load run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ExploreError(pub String);

impl From<rusqlite::Error> for ExploreError {
    fn from(e: rusqlite::Error) -> Self {
        ExploreError(e.to_string())
    }
}

/// One broken invariant in one state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The spec's name of the invariant (`NoMissedRegression`).
    pub invariant: &'static str,
    /// Why it is broken, naming rows and bookkeeping.
    pub why: String,
}

/// What one step did, as the trace prints it (rows changed are added by
/// the trace from the databases before and after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepLabel {
    /// The machine that moved (`w1`, `resolver`).
    pub actor: String,
    /// The statement's block name (`ingest.s3_read`).
    pub statement: String,
    /// What the op works on (`e1`, `g:p1:f1`).
    pub subject: String,
    /// What the statement answered and what became of the op, e.g.
    /// `returned read_status='open'`, `op ends: accepted`.
    pub outcome: String,
}

impl fmt::Display for StepLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({}): {}",
            self.actor, self.statement, self.subject, self.outcome
        )
    }
}

/// A workload's world: its machines, their choices, the spec's bookkeeping
/// and invariants. Every method must be deterministic: the same state and
/// rows give the same answers, in the same order.
pub trait World {
    /// The state besides the rows: each machine's position and the values
    /// it read, and the spec's bookkeeping variables.
    type State: Clone;
    /// One scheduling choice (which machine moves, with which argument).
    type Choice: Clone + fmt::Debug;
    /// What the invariants and the choices read from the rows, once per state.
    type View;

    /// The schema batch, run once on the empty database.
    fn schema(&self) -> &str;

    /// The initial state.
    fn init(&self) -> Self::State;

    /// Reads what [`World::choices`] and [`World::check`] need from `db`.
    ///
    /// # Errors
    /// An export statement failed.
    fn view(&self, db: &Connection) -> Result<Self::View, ExploreError>;

    /// The choices enabled in `state` with rows `view`, in a fixed order.
    /// Empty: no machine can move (a final state).
    fn choices(&self, state: &Self::State, view: &Self::View) -> Vec<Self::Choice>;

    /// Takes `choice`: runs its one statement on `db` and updates `state`.
    /// A statement error ends the machine's op (recorded in the label).
    fn take(&self, state: &mut Self::State, choice: &Self::Choice, db: &Connection) -> StepLabel;

    /// Appends the state's key, rows excluded (the search adds them):
    /// positions, values read, bookkeeping. Two states with equal rows and
    /// equal keys must behave alike.
    fn key(&self, state: &Self::State, out: &mut Vec<u8>);

    /// The state's bookkeeping as one line, for the trace's initial state.
    fn describe(&self, state: &Self::State) -> String;

    /// The invariants broken in `state` with rows `view` (empty: all hold).
    fn check(&self, state: &Self::State, view: &Self::View) -> Vec<Violation>;
}
