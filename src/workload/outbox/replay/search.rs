//! The outbox replay's steps: each attempt's `handle` step machine with
//! its recorded delivery, driven through the orders the steps' intervals
//! allow ([`crate::replay_order::search`], one in-memory database with a
//! savepoint per step), and one order run again on a database file with
//! one connection per recorded worker ([`execute`]).
//!
//! An order is left as soon as a machine would take another path than the
//! recorded one (the next recorded step is not the one it runs, or it ends
//! where the run went on, or goes on where the run's attempt completed;
//! an attempt a crash cut short may go on: nothing more of it runs). A
//! strict search also leaves it when a step changes or returns another
//! number of rows than it did in the run (the run recorded counts, not
//! the rows returned); a relaxed one (the shrinking's) lets the counts
//! differ, and the checkers judge what it ran.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::{RecOp, RecStep, Recording};
use crate::replay_order::{Found, Plan, Stepper};
pub use crate::replay_step::{DbError, Ran, Taken};
use crate::target::sqlite::client::{exec_step, exec_step_in_txn, Journal};
use crate::workload::outbox::statements::OutboxVariant;
use crate::workload::value::Value;
use crate::workload::{Next, StepMachine, StepOutcome};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

/// Every step of `ops` of the recording.
pub fn whole(rec: &Recording, ops: Vec<usize>) -> Plan {
    Plan::whole(ops, |i| rec.ops[i].steps.len())
}

/// The `handle` machine of recorded op `i`, with its recorded delivery.
pub fn machine<'v>(rec: &Recording, v: &'v OutboxVariant, i: usize) -> StepMachine<'v> {
    let d = rec.ops[i].delivery;
    StepMachine::new(
        &v.handle,
        vec![
            Value::Int(d.msg_id),
            Value::Int(i64::from(d.dup_id)),
            Value::Int(d.tx_id),
            Value::Int(rec.now_ms(i)),
        ],
    )
}

fn same_answer(s: &RecStep, out: &StepOutcome) -> bool {
    out.changes == s.changes && out.rows.len() as u64 == s.rows
}

/// Whether the machine's path after step `pos` of `op` follows the
/// record (see the module's text).
fn follows(op: &RecOp, keep: usize, pos: usize, m: &StepMachine<'_>, next: Next) -> bool {
    if pos + 1 < keep {
        next == Next::Continue && m.current() == Some(op.steps[pos + 1].idx as usize)
    } else if keep == op.steps.len() && !op.cut_short() {
        next != Next::Continue
    } else {
        true
    }
}

/// The plan's steps as nodes (entry of the plan's ops, position) in the
/// preferred order (`prefer` ranks (op id, step index)), else start
/// order; and each node's immediate predecessors.
fn nodes(
    rec: &Recording,
    plan: &Plan,
    prefer: Option<&HashMap<(u64, u32), usize>>,
) -> (Vec<(usize, usize)>, Vec<Vec<usize>>) {
    let mut nodes: Vec<(usize, usize)> = (0..plan.ops.len())
        .flat_map(|i| (0..plan.keep[i]).map(move |p| (i, p)))
        .collect();
    let op = |i: usize| &rec.ops[plan.ops[i]];
    nodes.sort_by_key(|&(i, p)| {
        let s = &op(i).steps[p];
        let rank = prefer.and_then(|m| m.get(&(op(i).invoke.op, s.idx)).copied());
        (
            rank.unwrap_or(usize::MAX),
            s.start,
            s.end,
            op(i).invoke.op,
            p,
        )
    });
    let spans: Vec<(u64, u64)> = nodes
        .iter()
        .map(|&(i, p)| (op(i).steps[p].start, op(i).steps[p].end))
        .collect();
    let preds = crate::replay_order::predecessors(&spans);
    (nodes, preds)
}

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

impl Stepper for Searching<'_, '_> {
    type Error = DbError;

    fn take(&mut self, n: usize) -> Result<bool, DbError> {
        let (i, pos) = self.nodes[n];
        let op = &self.rec.ops[self.plan.ops[i]];
        let m = &mut self.ran.machines[i];
        if m.current() != Some(op.steps[pos].idx as usize) {
            return Ok(false);
        }
        let saved = m.clone();
        self.db.execute_batch("SAVEPOINT replayed")?;
        let step = m.current_step().expect("checked: the machine runs");
        let params: Vec<Value> = m.params().into_iter().cloned().collect();
        let refs: Vec<&Value> = params.iter().collect();
        let out = match exec_step_in_txn(&self.db, Journal::Off, step, &refs) {
            Ok(out) if !self.strict || same_answer(&op.steps[pos], &out) => out,
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

/// What a search found.
pub enum Searched<'v> {
    /// An allowed order that reproduces.
    Found(Ran<'v>),
    /// Every allowed order was run; none reproduces.
    Exhausted {
        /// Orders run to their end.
        leaves: u64,
    },
    /// The budget ran out first.
    Cut,
}

/// Searches the orders of `plan` for one that `accept` takes, spending at
/// most `budget` statements (what is left stays in it).
///
/// # Errors
/// The in-memory database refused the schema or a savepoint.
pub fn search<'v>(
    rec: &Recording,
    v: &'v OutboxVariant,
    (plan, strict): (&Plan, bool),
    prefer: Option<&HashMap<(u64, u32), usize>>,
    budget: &mut u64,
    accept: &mut dyn FnMut(&Ran<'v>, &Connection) -> Result<bool, DbError>,
) -> Result<Searched<'v>, DbError> {
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

/// Runs `order` of `plan` on a new database file `path` built from the
/// file's schema, each recorded worker's statements on a connection of its
/// own, each in autocommit. None where a machine left the record's path
/// (it cannot when a search found the order: the same statements on the
/// same rows).
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
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(p));
    }
    Connection::open(path)?.execute_batch(&v.schema)?;
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
                "handle.{} of op {}: {}",
                step.name, op.invoke.op, e.message
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
