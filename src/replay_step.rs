//! What every workload's replay keeps of the steps it ran: each step
//! taken with its parameters and answers ([`Taken`]), an order run to its
//! end with each op's step machine ([`Ran`]), and the failure of the
//! replay's database ([`DbError`]).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use crate::workload::value::Value;
use crate::workload::{Next, StepMachine, StepOutcome};

/// One step taken, and what it answered.
#[derive(Debug, Clone)]
pub struct Taken {
    /// Index into [`crate::replay_order::Plan::ops`].
    pub op: usize,
    /// Index into the op's recorded steps.
    pub pos: usize,
    /// The parameters it was bound to, in SQLite's index order.
    pub params: Vec<Value>,
    /// Rows changed.
    pub changes: u64,
    /// Rows returned.
    pub rows: u64,
    /// The first row returned.
    pub first: Option<Vec<Value>>,
    /// What the op's machine did next.
    pub next: Next,
}

impl Taken {
    /// Step `pos` of plan entry `op`, run with `params`, answered `out`:
    /// what it answered, kept before `m` (the op's machine) takes `out`
    /// and decides what it does next. The one place a step taken is
    /// recorded, for the search and for the replay on files alike.
    pub fn advance(
        m: &mut StepMachine<'_>,
        (op, pos): (usize, usize),
        params: Vec<Value>,
        out: StepOutcome,
    ) -> Self {
        let (changes, rows, first) = (
            out.changes,
            out.rows.len() as u64,
            out.rows.first().cloned(),
        );
        Taken {
            op,
            pos,
            params,
            changes,
            rows,
            first,
            next: m.advance(out),
        }
    }
}

/// An order run to its end: the steps in order, and each op's machine.
#[derive(Debug, Clone)]
pub struct Ran<'v> {
    /// The steps, in the order they ran.
    pub taken: Vec<Taken>,
    /// Per entry of the plan's ops, its machine after its last step.
    pub machines: Vec<StepMachine<'v>>,
}

/// A search's failure: the database refused the schema or a savepoint.
#[derive(Debug, thiserror::Error)]
#[error("the replay's database: {0}")]
pub struct DbError(pub String);

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError(e.to_string())
    }
}
