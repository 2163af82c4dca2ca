//! What every workload's replay does with recorded steps: each op a step
//! machine over the statement file with its recorded parameters (what a
//! workload's recording tells, [`Recorded`]), driven through the orders
//! the steps' intervals allow ([`search`], over one in-memory database
//! with a savepoint per step, [`crate::replay_order::search`]'s choices),
//! and one order run again on a database file with one connection per
//! recorded worker ([`execute`]); each step taken with its parameters and
//! answers ([`Taken`]), an order run to its end ([`Ran`]), and the failure
//! of the replay's database ([`DbError`]).
//!
//! An order in which a machine would take another path than the one
//! recorded (a stop where the run went on, a step the run never took) is
//! no re-execution of the record and is left. A strict search also
//! leaves an order as soon as a step answers otherwise than in the run
//! (what "the same answer" is, the workload says: what its history
//! records); a relaxed one (the shrinking's) lets answers differ, since
//! leaving ops out changes what the others see.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use crate::replay_order::Plan;
use crate::target::sqlite::client::{exec_step, exec_step_in_txn, Journal};
use crate::workload::value::Value;
use crate::workload::{Next, StepMachine, StepOutcome};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;

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

/// What a workload's recording tells the replay about its ops (indices
/// into the recording's ops, as [`crate::replay_order::Plan::ops`] holds
/// them) and their recorded steps (positions in the op's record).
pub trait Recorded<'v> {
    /// The statement file's schema.
    fn schema(&self) -> &str;
    /// The step machine of op `i`, with its recorded parameters.
    fn machine(&self, i: usize) -> StepMachine<'v>;
    /// How many steps op `i` recorded.
    fn steps(&self, i: usize) -> usize;
    /// The program index of step `pos` of op `i`.
    fn step_idx(&self, i: usize, pos: usize) -> u32;
    /// The interval of step `pos` of op `i`, ns since the run's start.
    fn span(&self, i: usize, pos: usize) -> (u64, u64);
    /// Op `i`'s id and worker.
    fn op(&self, i: usize) -> (u64, u32);
    /// Whether its machine ended after its last recorded step (false: a
    /// crash cut it short there, and the machine may go on).
    fn ended(&self, i: usize) -> bool;
    /// Whether `out` is what step `pos` of op `i` answered in the run.
    fn same_answer(&self, i: usize, pos: usize, out: &StepOutcome) -> bool;
}

/// Whether the machine's path after taking step `pos` of op `i` (of which
/// `keep` steps run) follows the record: another kept step comes next, or
/// the op ends where the record ends it (an op cut short, by the run's
/// crash or by the shrinking, may go on: nothing more of it runs).
fn follows<'v>(
    rec: &dyn Recorded<'v>,
    (i, keep, pos): (usize, usize, usize),
    m: &StepMachine<'_>,
    next: Next,
) -> bool {
    if pos + 1 < keep {
        next == Next::Continue && m.current() == Some(rec.step_idx(i, pos + 1) as usize)
    } else if keep == rec.steps(i) && rec.ended(i) {
        next != Next::Continue
    } else {
        true
    }
}

/// The plan's steps as nodes (entry of the plan's ops, position), in the
/// preferred order (`prefer` ranks (op id, step index)), else start
/// order; and each node's immediate predecessors in the interval order.
fn nodes<'v>(
    rec: &dyn Recorded<'v>,
    plan: &Plan,
    prefer: Option<&HashMap<(u64, u32), usize>>,
) -> (Vec<(usize, usize)>, Vec<Vec<usize>>) {
    let mut nodes: Vec<(usize, usize)> = (0..plan.ops.len())
        .flat_map(|i| (0..plan.keep[i]).map(move |p| (i, p)))
        .collect();
    nodes.sort_by_key(|&(i, p)| {
        let (o, idx) = (plan.ops[i], rec.step_idx(plan.ops[i], p));
        let rank = prefer.and_then(|m| m.get(&(rec.op(o).0, idx)).copied());
        let (start, end) = rec.span(o, p);
        (rank.unwrap_or(usize::MAX), start, end, rec.op(o).0, idx)
    });
    let spans: Vec<(u64, u64)> = nodes
        .iter()
        .map(|&(i, p)| rec.span(plan.ops[i], p))
        .collect();
    (nodes, crate::replay_order::predecessors(&spans))
}

/// One search's replay in progress: the in-memory database (a savepoint
/// per step taken), the steps taken and each op's machine before each.
struct Searching<'r, 'v> {
    rec: &'r dyn Recorded<'v>,
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
        let o = self.plan.ops[i];
        let m = &mut self.ran.machines[i];
        if m.current() != Some(self.rec.step_idx(o, pos) as usize) {
            return Ok(false);
        }
        let saved = m.clone();
        self.db.execute_batch("SAVEPOINT replayed")?;
        let step = m.current_step().expect("checked: the machine runs");
        let params: Vec<Value> = m.params().into_iter().cloned().collect();
        let refs: Vec<&Value> = params.iter().collect();
        let out = match exec_step_in_txn(&self.db, Journal::Off, step, &refs) {
            Ok(out) if !self.strict || self.rec.same_answer(o, pos, &out) => out,
            _ => {
                self.undo()?;
                return Ok(false);
            }
        };
        let taken = Taken::advance(m, (i, pos), params, out);
        if !follows(self.rec, (o, self.plan.keep[i], pos), m, taken.next) {
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
    /// Every allowed order was run; none reproduces (`leaves`: how many
    /// ran to their end).
    Exhausted {
        /// Orders run to their end.
        leaves: u64,
    },
    /// The budget ran out first.
    Cut,
}

/// Searches the orders of `plan` that the intervals allow for one that
/// `accept` takes (strict: each step must answer as in the run, else its
/// answers may differ; the machines' paths must follow the record in
/// both), over one in-memory database with a savepoint per step, trying
/// choices in the preferred order, spending at most `budget` statements
/// (what is left stays in it). `accept` sees the steps taken, the
/// machines and the database after the last step.
///
/// # Errors
/// The in-memory database refused the schema or a savepoint.
pub fn search<'v>(
    rec: &dyn Recorded<'v>,
    (plan, strict): (&Plan, bool),
    prefer: Option<&HashMap<(u64, u32), usize>>,
    budget: &mut u64,
    accept: &mut dyn FnMut(&Ran<'v>, &Connection) -> Result<bool, DbError>,
) -> Result<Searched<'v>, DbError> {
    use crate::replay_order::Found;
    let (nodes, preds) = nodes(rec, plan, prefer);
    let db = Connection::open_in_memory()?;
    db.execute_batch(rec.schema())?;
    let mut s = Searching {
        rec,
        plan,
        nodes: &nodes,
        strict,
        db,
        ran: Ran {
            taken: Vec::new(),
            machines: plan.ops.iter().map(|&i| rec.machine(i)).collect(),
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
/// found them) on a new database file `path` built from the schema, each
/// recorded worker's statements on a connection of its own, each
/// statement in autocommit. Returns what it ran, or None where a machine
/// left the record's path (it cannot when a search found the order: the
/// same statements on the same rows).
///
/// # Errors
/// The file could not be made or a statement failed.
pub fn execute<'v>(
    rec: &dyn Recorded<'v>,
    plan: &Plan,
    order: &[(usize, usize)],
    path: &Path,
) -> Result<Option<Ran<'v>>, DbError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(std::path::PathBuf::from(p));
    }
    Connection::open(path)?.execute_batch(rec.schema())?;
    let mut conns: HashMap<u32, Connection> = HashMap::new();
    let mut ran = Ran {
        taken: Vec::new(),
        machines: plan.ops.iter().map(|&i| rec.machine(i)).collect(),
    };
    for &(i, pos) in order {
        let o = plan.ops[i];
        let (op_id, worker) = rec.op(o);
        let conn = match conns.entry(worker) {
            std::collections::hash_map::Entry::Occupied(c) => c.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Connection::open(path)?),
        };
        let m = &mut ran.machines[i];
        if m.current() != Some(rec.step_idx(o, pos) as usize) {
            return Ok(None);
        }
        let step = m.current_step().expect("checked: the machine runs");
        let params: Vec<Value> = m.params().into_iter().cloned().collect();
        let refs: Vec<&Value> = params.iter().collect();
        let out = exec_step(conn, Journal::of(conn), step, &refs).map_err(|e| {
            DbError(format!(
                "{}.{} of op {op_id}: {}",
                m.program().op,
                step.name,
                e.message
            ))
        })?;
        let taken = Taken::advance(m, (i, pos), params, out);
        if !follows(rec, (o, plan.keep[i], pos), m, taken.next) {
            return Ok(None);
        }
        ran.taken.push(taken);
    }
    Ok(Some(ran))
}

/// The made-up instants of the history a replay is judged from, both
/// workloads': the k-th step taken (from 0) is its op's invoke at 4k+1
/// (for the op's first step), runs over [4k+2, 4k+3] and completes its op
/// at 4k+4 (for the op's last step); after n steps the tables are read
/// over [4n+5, 4n+6] and the footer is at 4n+7. Every step then ends
/// before the next begins: the checkers see the one order that ran.
pub mod clock {
    use crate::history::{Entry, Footer};

    /// The invoke of the op whose first step is the k-th taken.
    pub fn invoke(k: u64) -> u64 {
        4 * k + 1
    }

    /// The k-th step's (start, end).
    pub fn step(k: u64) -> (u64, u64) {
        (4 * k + 2, 4 * k + 3)
    }

    /// The completion of the op whose last step is the k-th taken.
    pub fn completion(k: u64) -> u64 {
        4 * k + 4
    }

    /// The final read of the tables after `n` steps.
    pub fn tables_read(n: u64) -> (u64, u64) {
        (4 * n + 5, 4 * n + 6)
    }

    /// The footer after `n` steps of `ops` ops.
    pub fn footer(n: u64, ops: u64) -> Entry {
        let (a, b) = tables_read(n);
        Entry::Footer(Footer {
            t: 4 * n + 7,
            partial: false,
            ops,
            tables_read: Some([a, b]),
        })
    }
}
