//! An outbox replay judged by the run's own checkers: the steps a replay
//! ran become a history (each step on a clock of its own, one after the
//! other), the replay's database gives the final tables through the
//! file's `export.*` statements, and [`check_all`] judges them exactly as
//! `audit` judges a run. A finding is reproduced when the same invariant
//! is violated on the same message.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::Recording;
use super::search::{DbError, Ran};
use crate::history::{Completion, CompletionType, Entry, OpKind, OpResult, Step};
use crate::replay_order::Plan;
use crate::replay_step::clock;
use crate::verdict::{CheckResult, Finding, Verdict};
use crate::workload::outbox::checker::{check_all, tables, OutboxFacts};
use crate::workload::outbox::statements::OutboxVariant;
use rusqlite::Connection;

/// The finding a replay looks for.
#[derive(Debug, Clone)]
pub struct Target {
    /// The invariant violated.
    pub invariant: String,
    /// The message.
    pub msg: i64,
}

impl Target {
    /// The finding `f` of `invariant`; None when it names no message.
    pub fn of(invariant: &str, f: &Finding) -> Option<Target> {
        Some(Target {
            invariant: invariant.to_string(),
            msg: f.msg_id?,
        })
    }

    /// Whether `results` violate the invariant on the message.
    pub fn reproduced(&self, results: &[CheckResult]) -> bool {
        results.iter().any(|r| {
            r.invariant == self.invariant
                && r.verdict == Verdict::Violated
                && r.examples.iter().any(|f| f.msg_id == Some(self.msg))
        })
    }
}

/// The history of what `ran` ran: step k spans [4k+2, 4k+3] ns, its op
/// is invoked at 4k+1 before its first step and completes at 4k+4 after
/// its last; an op whose machine did not end there completes `info`,
/// crashed after its last step, as a crash fault leaves one.
pub fn history(rec: &Recording, v: &OutboxVariant, plan: &Plan, ran: &Ran<'_>) -> Vec<Entry> {
    let mut out = vec![Entry::Header(rec.header.clone())];
    let mut started = vec![false; plan.ops.len()];
    for (k, t) in ran.taken.iter().enumerate() {
        let k = k as u64;
        let op = &rec.ops[plan.ops[t.op]];
        if !std::mem::replace(&mut started[t.op], true) {
            let mut i = op.invoke.clone();
            i.t = clock::invoke(k);
            out.push(Entry::Invoke(i));
        }
        let s = &op.steps[t.pos];
        out.push(Entry::Step(Step {
            op: op.invoke.op,
            idx: s.idx,
            step: s.name.clone(),
            start: clock::step(k).0,
            end: Some(clock::step(k).1),
            changes: t.changes,
            rows: t.rows,
            error: None,
            error_kind: None,
            maybe_applied: false,
            returned: None,
        }));
        if t.pos + 1 == plan.keep[t.op] {
            let m = &ran.machines[t.op];
            let (kind, result) = match crate::workload::outbox::end_after(m, &v.handle, t.next) {
                Some((_, kind, result)) => (kind, result),
                None => (
                    CompletionType::Info,
                    OpResult {
                        crashed_after: Some(s.name.clone()),
                        error: Some(format!("crash fault after step {}", s.name)),
                        ..OpResult::default()
                    },
                ),
            };
            out.push(Entry::completion(
                kind,
                Completion {
                    t: clock::completion(k),
                    op: op.invoke.op,
                    worker: op.invoke.worker,
                    f: OpKind::Handle,
                    result,
                },
            ));
        }
    }
    out.push(clock::footer(ran.taken.len() as u64, plan.ops.len() as u64));
    out
}

/// The checkers' verdicts on what `ran` ran, with `db` the database after
/// it.
///
/// # Errors
/// An export statement failed, or the history built is not one the
/// checkers take (a bug: it is built above).
pub fn check(
    rec: &Recording,
    v: &OutboxVariant,
    plan: &Plan,
    ran: &Ran<'_>,
    db: &Connection,
) -> Result<Vec<CheckResult>, DbError> {
    let entries = history(rec, v, plan, ran);
    let n = ran.taken.len() as u64;
    let facts = OutboxFacts::read(entries.into_iter().map(Ok::<_, String>))
        .map_err(|e| DbError(format!("the replayed history: {e:#}")))?;
    let mut t = tables::read_rows(db, v)?;
    (t.read_start, t.read_end) = clock::tables_read(n);
    Ok(check_all(&facts, &t).0)
}
