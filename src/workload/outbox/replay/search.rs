//! The outbox replay's steps: each attempt's `handle` step machine with
//! its recorded delivery, driven through the orders the steps' intervals
//! allow and run again on a database file ([`crate::replay_step`]'s
//! search and execution, which this module feeds with the recording).
//!
//! The run recorded each step's counts, not the rows it returned, so a
//! strict search holds each step to the rows it changed and returned. An
//! attempt a crash fault cut short (or the stop's grace) may go on after
//! its last recorded step: nothing more of it runs; any other attempt
//! must end where the run's did.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::Recording;
use crate::replay_order::Plan;
use crate::replay_step::Recorded;
pub use crate::replay_step::{DbError, Ran, Searched, Taken};
use crate::workload::outbox::statements::OutboxVariant;
use crate::workload::value::Value;
use crate::workload::{StepMachine, StepOutcome};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

/// Every step of `ops` of the recording.
pub fn whole(rec: &Recording, ops: Vec<usize>) -> Plan {
    Plan::whole(ops, |i| rec.ops[i].steps.len())
}

/// The recording with the statement file it ran.
struct Outbox<'r, 'v>(&'r Recording, &'v OutboxVariant);

impl<'v> Recorded<'v> for Outbox<'_, 'v> {
    fn schema(&self) -> &str {
        &self.1.schema
    }

    fn machine(&self, i: usize) -> StepMachine<'v> {
        let d = self.0.ops[i].delivery;
        StepMachine::new(
            &self.1.handle,
            vec![
                Value::Int(d.msg_id),
                Value::Int(i64::from(d.dup_id)),
                Value::Int(d.tx_id),
                Value::Int(self.0.now_ms(i)),
            ],
        )
    }

    fn steps(&self, i: usize) -> usize {
        self.0.ops[i].steps.len()
    }

    fn step_idx(&self, i: usize, pos: usize) -> u32 {
        self.0.ops[i].steps[pos].idx
    }

    fn span(&self, i: usize, pos: usize) -> (u64, u64) {
        let s = &self.0.ops[i].steps[pos];
        (s.start, s.end)
    }

    fn op(&self, i: usize) -> (u64, u32) {
        let inv = &self.0.ops[i].invoke;
        (inv.op, inv.worker)
    }

    fn ended(&self, i: usize) -> bool {
        !self.0.ops[i].cut_short()
    }

    fn same_answer(&self, i: usize, pos: usize, out: &StepOutcome) -> bool {
        let s = &self.0.ops[i].steps[pos];
        out.changes == s.changes && out.rows.len() as u64 == s.rows
    }
}

/// Searches the orders of `plan` for one that `accept` takes, spending at
/// most `budget` statements (what is left stays in it).
///
/// # Errors
/// The in-memory database refused the schema or a savepoint.
pub fn search<'v>(
    rec: &Recording,
    v: &'v OutboxVariant,
    plan: (&Plan, bool),
    prefer: Option<&HashMap<(u64, u32), usize>>,
    budget: &mut u64,
    accept: &mut dyn FnMut(&Ran<'v>, &Connection) -> Result<bool, DbError>,
) -> Result<Searched<'v>, DbError> {
    crate::replay_step::search(&Outbox(rec, v), plan, prefer, budget, accept)
}

/// Runs `order` of `plan` on a new database file `path`, one connection
/// per recorded worker.
///
/// # Errors
/// The file could not be made or a statement failed.
pub fn execute<'v>(
    rec: &Recording,
    v: &'v OutboxVariant,
    plan: &Plan,
    order: &[(usize, usize)],
    path: &Path,
) -> Result<Option<Ran<'v>>, DbError> {
    crate::replay_step::execute(&Outbox(rec, v), plan, order, path)
}
