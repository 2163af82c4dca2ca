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
//! The search is depth first over one in-memory database with a savepoint
//! per step, choices in a fixed order (a preferred order if given, else
//! the steps' start order), so the same plan gives the same order every
//! time; its budget counts statements executed, never time.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::{RecOp, RecStep, Recording};
use crate::target::sqlite::client::{exec_step, exec_step_in_txn, Journal};
use crate::workload::groups::statements::GroupsVariant;
use crate::workload::groups::validate::trace::Observed;
use crate::workload::groups::{IngestOp, ResolveOp};
use crate::workload::value::Value;
use crate::workload::{Next, StepMachine, StepOutcome};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

pub use crate::replay_order::Plan;
pub use crate::replay_step::{DbError, Ran, Taken};

/// Every step of `ops` of the recording.
pub fn whole(rec: &Recording, ops: Vec<usize>) -> Plan {
    Plan::whole(ops, |i| rec.ops[i].steps.len())
}

/// Whether entry `i` of `plan` runs fewer steps than were recorded.
pub fn cut(plan: &Plan, rec: &Recording, i: usize) -> bool {
    plan.keep[i] < rec.ops[plan.ops[i]].steps.len()
}

/// What a search found.
pub enum Searched<'v> {
    /// An allowed order that reproduces.
    Found(Ran<'v>),
    /// Every allowed order was run; none reproduces (`leaves`: how many
    /// ran to their end).
    Exhausted {
        /// Orders run to their end.
        leaves: u64,
    },
    /// The budget ran out first.
    Cut,
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

/// Whether the machine's path after taking step `pos` of `op` follows
/// the record: another kept step comes next, or the op ends where the
/// record ends it (an op cut short may go on: nothing more of it runs).
fn follows(op: &RecOp, keep: usize, pos: usize, m: &StepMachine<'_>, next: Next) -> bool {
    if pos + 1 < keep {
        next == Next::Continue && m.current() == Some(op.steps[pos + 1].idx as usize)
    } else if keep == op.steps.len() {
        next != Next::Continue
    } else {
        true
    }
}

/// The plan's steps as nodes: (entry of the plan's ops, position), in
/// the preferred order (`prefer` ranks (op id, step index)), else start
/// order; and each node's immediate predecessors in the interval order.
fn nodes(
    rec: &Recording,
    plan: &Plan,
    prefer: Option<&HashMap<(u64, u32), usize>>,
) -> (Vec<(usize, usize)>, Vec<Vec<usize>>) {
    let mut nodes: Vec<(usize, usize)> = plan
        .ops
        .iter()
        .enumerate()
        .flat_map(|(i, _)| (0..plan.keep[i]).map(move |p| (i, p)))
        .collect();
    let step = |&(i, p): &(usize, usize)| &rec.ops[plan.ops[i]].steps[p];
    nodes.sort_by_key(|n| {
        let s = step(n);
        let rank = prefer.and_then(|m| m.get(&(s.trace.op, s.idx)).copied());
        (
            rank.unwrap_or(usize::MAX),
            s.trace.start,
            s.trace.end,
            s.trace.op,
            s.idx,
        )
    });
    let spans: Vec<(u64, u64)> = nodes
        .iter()
        .map(|n| (step(n).trace.start, step(n).trace.end))
        .collect();
    let preds = crate::replay_order::predecessors(&spans);
    (nodes, preds)
}

/// One search's replay in progress: the in-memory database (a savepoint
/// per step taken), the steps taken and each op's machine before each.
struct Searching<'r, 'v> {
    rec: &'r Recording,
    plan: &'r Plan,
    nodes: &'r [(usize, usize)],
    strict: bool,
    db: Connection,
    ran: Ran<'v>,
    saved: Vec<StepMachine<'v>>,
    accept: &'r mut dyn FnMut(&Ran<'v>, &Connection) -> Result<bool, DbError>,
}

impl Searching<'_, '_> {
    fn undo(&self) -> Result<(), DbError> {
        Ok(self
            .db
            .execute_batch("ROLLBACK TO replayed; RELEASE replayed")?)
    }
}

impl crate::replay_order::Stepper for Searching<'_, '_> {
    type Error = DbError;

    fn take(&mut self, n: usize) -> Result<bool, DbError> {
        let (i, pos) = self.nodes[n];
        let op = &self.rec.ops[self.plan.ops[i]];
        let s = &op.steps[pos];
        let m = &mut self.ran.machines[i];
        if m.current() != Some(s.idx as usize) {
            return Ok(false);
        }
        let saved = m.clone();
        self.db.execute_batch("SAVEPOINT replayed")?;
        let step = m.current_step().expect("checked: the machine runs");
        let params: Vec<Value> = m.params().into_iter().cloned().collect();
        let refs: Vec<&Value> = params.iter().collect();
        let out = match exec_step_in_txn(&self.db, Journal::Off, step, &refs) {
            Ok(out) if !self.strict || same_answer(s, &out) => out,
            _ => {
                self.undo()?;
                return Ok(false);
            }
        };
        let taken = Taken::advance(m, (i, pos), params, out);
        if !follows(op, self.plan.keep[i], pos, m, taken.next) {
            *m = saved;
            self.undo()?;
            return Ok(false);
        }
        self.ran.taken.push(taken);
        self.saved.push(saved);
        Ok(true)
    }

    fn untake(&mut self, n: usize) -> Result<(), DbError> {
        self.undo()?;
        let saved = self.saved.pop().expect("a step was taken");
        self.ran.machines[self.nodes[n].0] = saved;
        self.ran.taken.pop();
        Ok(())
    }

    fn accept(&mut self) -> Result<bool, DbError> {
        (self.accept)(&self.ran, &self.db)
    }
}

/// Searches the orders of `plan` (strict: the run's own answers only) for
/// one that `accept` takes, spending at most `budget` statements (what
/// is left stays in it). `accept` sees the steps taken, the machines and
/// the database after the last step.
///
/// # Errors
/// The in-memory database refused the schema or a savepoint.
#[allow(clippy::too_many_arguments)]
pub fn search<'v>(
    rec: &Recording,
    v: &'v GroupsVariant,
    plan: &Plan,
    strict: bool,
    prefer: Option<&HashMap<(u64, u32), usize>>,
    budget: &mut u64,
    accept: &mut dyn FnMut(&Ran<'v>, &Connection) -> Result<bool, DbError>,
) -> Result<Searched<'v>, DbError> {
    use crate::replay_order::Found;
    let (nodes, preds) = nodes(rec, plan, prefer);
    let db = Connection::open_in_memory()?;
    db.execute_batch(&v.schema)?;
    let mut s = Searching {
        rec,
        plan,
        nodes: &nodes,
        strict,
        db,
        ran: Ran {
            taken: Vec::new(),
            machines: plan.ops.iter().map(|&i| machine(rec, v, i)).collect(),
        },
        saved: Vec::new(),
        accept,
    };
    Ok(
        match crate::replay_order::search(&nodes, &preds, budget, &mut s)? {
            Found::Accepted => Searched::Found(s.ran),
            Found::Exhausted { leaves } => Searched::Exhausted { leaves },
            Found::Cut => Searched::Cut,
        },
    )
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
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(p));
    }
    let schema = Connection::open(path)?;
    schema.execute_batch(&v.schema)?;
    drop(schema);
    let mut conns: HashMap<u32, Connection> = HashMap::new();
    let mut ran = Ran {
        taken: Vec::new(),
        machines: plan.ops.iter().map(|&i| machine(rec, v, i)).collect(),
    };
    for &(i, pos) in order {
        let op = &rec.ops[plan.ops[i]];
        let conn = match conns.entry(op.invoke.worker) {
            std::collections::hash_map::Entry::Occupied(c) => c.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Connection::open(path)?),
        };
        let m = &mut ran.machines[i];
        if m.current() != Some(op.steps[pos].idx as usize) {
            return Ok(None);
        }
        let step = m.current_step().expect("checked: the machine runs");
        let params: Vec<Value> = m.params().into_iter().cloned().collect();
        let refs: Vec<&Value> = params.iter().collect();
        let out = exec_step(conn, Journal::of(conn), step, &refs).map_err(|e| {
            DbError(format!(
                "{}.{} of op {}: {}",
                m.program().op,
                step.name,
                op.invoke.op,
                e.message
            ))
        })?;
        let taken = Taken::advance(m, (i, pos), params, out);
        if !follows(op, plan.keep[i], pos, m, taken.next) {
            return Ok(None);
        }
        ran.taken.push(taken);
    }
    Ok(Some(ran))
}
