//! The search for an order of a plan's recorded steps that the steps'
//! intervals allow and that reproduces a finding, and the execution of
//! one order on a fresh database file with one connection per recorded
//! worker.
//!
//! An order is allowed when a step that ended before another began comes
//! first (`validate`'s immediate predecessors, [`crate::replay_order::predecessors`],
//! computed over the plan's steps only: j ended before i began is a
//! comparison of the two, so leaving steps out removes no constraint
//! between those kept) and each op's steps keep their order. Every op
//! runs as the implementation runs it, a step machine over the statement
//! file with the op's recorded parameters; an order in which a machine
//! would take another path than the one recorded (a stop where the run
//! went on, a step the run never took) is no re-execution of the record
//! and is left. A strict search also leaves an order as soon as a step
//! answers otherwise than it did in the run (rows changed, rows returned,
//! the row returned, a resolve's count, a probe's row): it looks for the
//! run itself. A relaxed one (the shrinking's) lets answers differ, since
//! leaving ops out changes what the others see; the checkers judge what it
//! ran.
//!
//! The search and the execution are [`crate::replay_step`]'s, which this
//! module feeds with the recording (its machines, intervals and answers):
//! depth first over one in-memory database with a savepoint per step,
//! choices in a fixed order (a preferred order if given, else the steps'
//! start order), so the same plan gives the same order every time; its
//! budget counts statements executed, never time.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::{RecStep, Recording};
use crate::replay_step::Recorded;
use crate::workload::groups::statements::GroupsVariant;
use crate::workload::groups::validate::trace::Observed;
use crate::workload::groups::{IngestOp, ResolveOp};
use crate::workload::value::Value;
use crate::workload::{StepMachine, StepOutcome};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

pub use crate::replay_order::Plan;
pub use crate::replay_step::{DbError, Ran, Searched, Taken};

/// Every step of `ops` of the recording.
pub fn whole(rec: &Recording, ops: Vec<usize>) -> Plan {
    Plan::whole(ops, |i| rec.ops[i].steps.len())
}

/// Whether entry `i` of `plan` runs fewer steps than were recorded.
pub fn cut(plan: &Plan, rec: &Recording, i: usize) -> bool {
    plan.keep[i] < rec.ops[plan.ops[i]].steps.len()
}

/// The step machine of recorded op `i`, with its recorded parameters
/// (the message, which the run does not record, is `replay`).
pub fn machine<'v>(rec: &Recording, v: &'v GroupsVariant, i: usize) -> StepMachine<'v> {
    let inv = &rec.ops[i].invoke;
    let now = rec.now_ms(i);
    if rec.ops[i].is_ingest() {
        let op = IngestOp {
            event_id: inv.event_id.clone().unwrap_or_default(),
            project: inv.project.clone(),
            fingerprint: inv.fingerprint.clone(),
            group_id: inv.group_id.clone(),
            message: "replay".into(),
            attempt: inv.attempt.unwrap_or(0),
            intended_ns: None,
            group: 0,
            key: 0,
        };
        StepMachine::new(&v.ingest, op.builtins(now))
    } else {
        let op = ResolveOp {
            project: inv.project.clone(),
            fingerprint: inv.fingerprint.clone(),
            group_id: inv.group_id.clone(),
            group: 0,
            key: 0,
        };
        StepMachine::new(&v.resolve, op.builtins(now))
    }
}

/// Whether `out` is what recorded step `s` answered in the run: rows
/// changed and returned, the row returned where it was recorded, and the
/// resolve's count or the probe's row the op's completion recorded.
fn same_answer(s: &RecStep, out: &StepOutcome) -> bool {
    if out.changes != s.changes || out.rows.len() as u64 != s.rows {
        return false;
    }
    if let Some(r) = &s.returned {
        return out.rows.first() == Some(r);
    }
    let first = out.rows.first();
    match &s.trace.observed {
        Observed::Count(c) => first.and_then(|r| r.first()).and_then(Value::as_i64) == Some(*c),
        Observed::Probe(Some((st, n))) => first.is_some_and(|r| {
            r.first().and_then(Value::as_str) == Some(st.as_str())
                && (*n < 0 || r.get(1).and_then(Value::as_i64) == Some(*n))
        }),
        Observed::Probe(None) => first.is_none(),
        _ => true,
    }
}

/// The recording with the statement file it ran.
struct Groups<'r, 'v>(&'r Recording, &'v GroupsVariant);

impl<'v> Recorded<'v> for Groups<'_, 'v> {
    fn schema(&self) -> &str {
        &self.1.schema
    }

    fn machine(&self, i: usize) -> StepMachine<'v> {
        machine(self.0, self.1, i)
    }

    fn steps(&self, i: usize) -> usize {
        self.0.ops[i].steps.len()
    }

    fn step_idx(&self, i: usize, pos: usize) -> u32 {
        self.0.ops[i].steps[pos].idx
    }

    fn span(&self, i: usize, pos: usize) -> (u64, u64) {
        let t = &self.0.ops[i].steps[pos].trace;
        (t.start, t.end)
    }

    fn op(&self, i: usize) -> (u64, u32) {
        let inv = &self.0.ops[i].invoke;
        (inv.op, inv.worker)
    }

    /// The recording refuses a crash (validate's reasons): every op
    /// ended after its last recorded step.
    fn ended(&self, _: usize) -> bool {
        true
    }

    fn same_answer(&self, i: usize, pos: usize, out: &StepOutcome) -> bool {
        same_answer(&self.0.ops[i].steps[pos], out)
    }
}

/// Searches the orders of `plan` (strict: the run's own answers only) for
/// one that `accept` takes, spending at most `budget` statements (what
/// is left stays in it). `accept` sees the steps taken, the machines and
/// the database after the last step.
///
/// # Errors
/// The in-memory database refused the schema or a savepoint.
pub fn search<'v>(
    rec: &Recording,
    v: &'v GroupsVariant,
    plan: &Plan,
    strict: bool,
    prefer: Option<&HashMap<(u64, u32), usize>>,
    budget: &mut u64,
    accept: &mut dyn FnMut(&Ran<'v>, &Connection) -> Result<bool, DbError>,
) -> Result<Searched<'v>, DbError> {
    crate::replay_step::search(&Groups(rec, v), (plan, strict), prefer, budget, accept)
}

/// Runs `order` (entries of the plan's ops and positions, as a search
/// found them) on a new database file `path` built from the statement
/// file's schema, each recorded worker's statements on a connection of
/// its own, each statement in autocommit. Returns what it ran, or None
/// where a machine left the record's path (it cannot, when the search
/// found the order: the same statements on the same rows).
///
/// # Errors
/// The file could not be made or a statement failed.
pub fn execute<'v>(
    rec: &Recording,
    v: &'v GroupsVariant,
    plan: &Plan,
    order: &[(usize, usize)],
    path: &Path,
) -> Result<Option<Ran<'v>>, DbError> {
    crate::replay_step::execute(&Groups(rec, v), plan, order, path)
}
