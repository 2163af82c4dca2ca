//! A replay judged by the run's own checkers: the steps a replay ran
//! become a history (each step on a clock of its own, one after the
//! other, so every interval orders against every other as the replay ran
//! them), the replay's database gives the final tables, and
//! [`check_all`] judges them exactly as `audit` judges a run. A finding
//! is reproduced when the same invariant is violated on the same group.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::Recording;
use super::search::{DbError, Plan, Ran};
use crate::history::{Completion, CompletionType, Entry, OpKind, OpResult, Step};
use crate::replay_step::clock;
use crate::verdict::{CheckResult, Finding, Verdict};
use crate::workload::groups::checker::tables::{GroupRow, RowSink};
use crate::workload::groups::checker::{check_all, Facts, Tables};
use crate::workload::groups::statements::GroupsVariant;
use crate::workload::groups::{ingest_result, resolve_result};
use crate::workload::value::Value;
use crate::workload::Next;
use rusqlite::Connection;

/// The finding a replay looks for.
#[derive(Debug, Clone)]
pub struct Target {
    /// The invariant violated.
    pub invariant: String,
    /// The group's (project, fingerprint).
    pub key: (String, String),
    /// The event the finding names, if any.
    pub event: Option<String>,
}

impl Target {
    /// The finding `f` of `invariant`; None when it names no group.
    pub fn of(invariant: &str, f: &Finding) -> Option<Target> {
        let g = f.group.as_ref()?;
        Some(Target {
            invariant: invariant.to_string(),
            key: (g.project.clone(), g.fingerprint.clone()),
            event: f.event_id.clone(),
        })
    }

    /// Whether `results` violate the invariant on the group.
    pub fn reproduced(&self, results: &[CheckResult]) -> bool {
        results.iter().any(|r| {
            r.invariant == self.invariant
                && r.verdict == Verdict::Violated
                && r.examples.iter().any(|f| {
                    f.group
                        .as_ref()
                        .is_some_and(|g| (&g.project, &g.fingerprint) == (&self.key.0, &self.key.1))
                })
        })
    }
}

/// The history of what `ran` ran: step k of the order spans [4k+2, 4k+3]
/// ns, its op is invoked at 4k+1 before its first step and completes at
/// 4k+4 after its last; an op cut short completes `info`, crashed after
/// its last step, as a crash fault leaves one.
pub fn history(rec: &Recording, v: &GroupsVariant, plan: &Plan, ran: &Ran<'_>) -> Vec<Entry> {
    let mut out = vec![Entry::Header(rec.header.clone())];
    let mut started = vec![false; plan.ops.len()];
    for (k, t) in ran.taken.iter().enumerate() {
        let k = k as u64;
        let op = &rec.ops[plan.ops[t.op]];
        if !std::mem::replace(&mut started[t.op], true) {
            let mut i = op.invoke.clone();
            i.t = clock::invoke(k);
            i.intended = None;
            out.push(Entry::Invoke(i));
        }
        let s = &op.steps[t.pos];
        out.push(Entry::Step(Step {
            op: op.invoke.op,
            idx: s.idx,
            step: s.trace.name.clone(),
            start: clock::step(k).0,
            end: Some(clock::step(k).1),
            changes: t.changes,
            rows: t.rows,
            error: None,
            error_kind: None,
            maybe_applied: false,
            returned: t.first.clone(),
        }));
        if t.pos + 1 == plan.keep[t.op] {
            let m = &ran.machines[t.op];
            let (kind, result) = match t.next {
                Next::Continue => (
                    CompletionType::Info,
                    OpResult {
                        crashed_after: Some(s.trace.name.clone()),
                        error: Some("cut short by the replay's shrinking".into()),
                        ..OpResult::default()
                    },
                ),
                n if op.invoke.f == OpKind::Ingest => ingest_result(m, n, v.counting_step),
                n => resolve_result(m, n),
            };
            out.push(Entry::completion(
                kind,
                Completion {
                    t: clock::completion(k),
                    op: op.invoke.op,
                    worker: op.invoke.worker,
                    f: op.invoke.f,
                    result,
                },
            ));
        }
    }
    out.push(clock::footer(ran.taken.len() as u64, plan.ops.len() as u64));
    out
}

/// The final tables of the replay's database, through the statement
/// file's export statements.
///
/// # Errors
/// An export statement failed.
pub fn tables(db: &Connection, v: &GroupsVariant) -> Result<Tables, DbError> {
    let mut t = Tables::default();
    let mut stmt = db.prepare(&v.export_events)?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let c = |i| r.get_ref(i).map(Value::from);
        t.event(&c(0)?, &c(1)?, &c(2)?);
    }
    let mut stmt = db.prepare(&v.export_groups)?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let c = |i| r.get_ref(i).map(Value::from);
        t.group(GroupRow {
            id: c(0)?,
            project: c(1)?,
            fingerprint: c(2)?,
            status: c(3)?,
            event_count: c(4)?,
        });
    }
    Ok(t)
}

/// The checkers' verdicts on what `ran` ran, with `db` the database after
/// it.
///
/// # Errors
/// An export statement failed, or the history built is not one the
/// checkers take (a bug: it is built above).
pub fn check(
    rec: &Recording,
    v: &GroupsVariant,
    plan: &Plan,
    ran: &Ran<'_>,
    db: &Connection,
) -> Result<Vec<CheckResult>, DbError> {
    let entries = history(rec, v, plan, ran);
    let n = ran.taken.len() as u64;
    let facts = Facts::from_entries(entries.into_iter().map(Ok))
        .map_err(|e| DbError(format!("the replayed history: {e:#}")))?;
    let mut t = tables(db, v)?;
    (t.read_start, t.read_end) = clock::tables_read(n);
    Ok(check_all(&facts, &t).0)
}
