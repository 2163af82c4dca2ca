//! The search for an order of a plan's recorded steps that the steps'
//! intervals allow and that reproduces a finding, and the execution of
//! one order on a fresh database file with one connection per recorded
//! worker.
//!
//! An order is allowed when a step that ended before another began comes
//! first (`validate`'s immediate predecessors, [`module::predecessors`],
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
use crate::workload::groups::validate::module;
use crate::workload::groups::validate::trace::{Observed, Trace};
use crate::workload::groups::{IngestOp, ResolveOp};
use crate::workload::value::Value;
use crate::workload::{Next, StepMachine, StepOutcome};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

/// Which recorded ops a replay runs, and how many of each one's steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Indices into [`Recording::ops`], in invoke order.
    pub ops: Vec<usize>,
    /// Per entry of `ops`: how many of its recorded steps run (fewer than
    /// all: the op is cut short after the last, as a crash cuts one).
    pub keep: Vec<usize>,
}

impl Plan {
    /// Every step of `ops`.
    pub fn whole(rec: &Recording, ops: Vec<usize>) -> Plan {
        let keep = ops.iter().map(|&i| rec.ops[i].steps.len()).collect();
        Plan { ops, keep }
    }

    /// Steps in all.
    pub fn steps(&self) -> usize {
        self.keep.iter().sum()
    }

    /// Whether entry `i` runs fewer steps than were recorded.
    pub fn cut(&self, rec: &Recording, i: usize) -> bool {
        self.keep[i] < rec.ops[self.ops[i]].steps.len()
    }
}

/// One step taken, and what it answered.
#[derive(Debug, Clone)]
pub struct Taken {
    /// Index into [`Plan::ops`].
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
    fn advance(
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

/// A search's failure: the database refused the schema or a savepoint.
#[derive(Debug, thiserror::Error)]
#[error("the replay's database: {0}")]
pub struct DbError(pub String);

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError(e.to_string())
    }
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
    let sub = Trace {
        steps: nodes.iter().map(|n| step(n).trace.clone()).collect(),
        ..Trace::default()
    };
    let preds = module::predecessors(&sub);
    (nodes, preds)
}

struct Frame {
    choices: Vec<usize>,
    at: usize,
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
    let (nodes, preds) = nodes(rec, plan, prefer);
    let db = Connection::open_in_memory()?;
    db.execute_batch(&v.schema)?;
    let mut ran = Ran {
        taken: Vec::new(),
        machines: plan.ops.iter().map(|&i| machine(rec, v, i)).collect(),
    };
    let mut next_pos = vec![0usize; plan.ops.len()];
    let mut done = vec![false; nodes.len()];
    // Per step taken: its node and its machine before it.
    let mut path: Vec<(usize, StepMachine<'v>)> = Vec::new();
    let enabled = |done: &[bool], next_pos: &[usize]| -> Vec<usize> {
        (0..nodes.len())
            .filter(|&n| {
                !done[n] && next_pos[nodes[n].0] == nodes[n].1 && preds[n].iter().all(|&p| done[p])
            })
            .collect()
    };
    let mut leaves = 0u64;
    let mut stack = vec![Frame {
        choices: enabled(&done, &next_pos),
        at: 0,
    }];
    let undo = |db: &Connection| db.execute_batch("ROLLBACK TO replayed; RELEASE replayed");
    loop {
        let f = stack.last_mut().expect("the root frame is never popped");
        if f.at >= f.choices.len() {
            let Some((n, saved)) = path.pop() else {
                return Ok(Searched::Exhausted { leaves });
            };
            stack.pop();
            undo(&db)?;
            let (i, _) = nodes[n];
            ran.machines[i] = saved;
            ran.taken.pop();
            next_pos[i] -= 1;
            done[n] = false;
            continue;
        }
        let n = f.choices[f.at];
        f.at += 1;
        if *budget == 0 {
            return Ok(Searched::Cut);
        }
        *budget -= 1;
        let (i, pos) = nodes[n];
        let op = &rec.ops[plan.ops[i]];
        let s = &op.steps[pos];
        let m = &mut ran.machines[i];
        if m.current() != Some(s.idx as usize) {
            continue;
        }
        let saved = m.clone();
        db.execute_batch("SAVEPOINT replayed")?;
        let step = m.current_step().expect("checked: the machine runs");
        let params: Vec<Value> = m.params().into_iter().cloned().collect();
        let refs: Vec<&Value> = params.iter().collect();
        let out = match exec_step_in_txn(&db, Journal::Off, step, &refs) {
            Ok(out) if !strict || same_answer(s, &out) => out,
            _ => {
                undo(&db)?;
                continue;
            }
        };
        let taken = Taken::advance(m, (i, pos), params, out);
        if !follows(op, plan.keep[i], pos, m, taken.next) {
            *m = saved;
            undo(&db)?;
            continue;
        }
        ran.taken.push(taken);
        path.push((n, saved));
        next_pos[i] += 1;
        done[n] = true;
        let choices = if path.len() == nodes.len() {
            leaves += 1;
            if accept(&ran, &db)? {
                return Ok(Searched::Found(ran));
            }
            Vec::new()
        } else {
            enabled(&done, &next_pos)
        };
        stack.push(Frame { choices, at: 0 });
    }
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
