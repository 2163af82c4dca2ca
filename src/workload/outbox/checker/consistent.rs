//! ConsistentStateAndOutQueue: for every acked message id, exactly one
//! `change` entry for it, at version v+1, and at least one out-queue entry,
//! every one carrying v, the base version it was staged on. (Read
//! literally, the seed compares the change's version v+1 with the output's
//! v and fails on every message; `docs/outbox.md`, "Invariants", states
//! the intent used here.)
//!
//! "Acked" is `docs/outbox.md`'s: the history saw the ack (an `ok` attempt, which
//! ran through `handle.ack`) AND `processed` holds it. A disagreement is
//! reported as an `unknown` finding: an ack in the history that
//! `processed` lacks (the ack step's row was lost), or a `processed` row
//! that no attempt's ack step can have written. A `processed` row of an
//! attempt that crashed after its ack step (info) is no disagreement: the
//! step ran, only the bench's ack did not.
//!
//! Soundness. Only acked messages are judged, and an acked message's
//! handler ran Process..publish to completion, so a correct protocol has
//! committed exactly one change for it (at base v + 1) and published
//! `outbox[msg]` = (msg, v): never a violation, crashed or lost-CAS
//! attempts of the same message included (they wrote no second change,
//! and their publishes carry the same pair). A broken system that changes
//! an acked message twice, never, or publishes another version has final
//! rows that break the rule, and every acked message is examined: never
//! `holds`. Messages that are not acked (in flight when the run stopped,
//! given up) are not judged: the rule says nothing of them.
//!
//! A cut history ([`crate::history::completeness::Completeness::Cut`]): the rule needs
//! only the acked attempts it judges, each recorded whole with its `ok`,
//! and stands. A `processed` row no recorded attempt can have written is
//! no disagreement there (the attempt that wrote it may be missing): it is
//! counted in a note, not reported `unknown`.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::{finding, out_rows, state_rows, OutboxFacts, OutboxTables};
use crate::history::CompletionType;
use crate::verdict::{CheckResult, Evidence};

/// The invariant's name (the spec's `ConsistentStateAndoutQueue`).
pub const NAME: &str = "ConsistentStateAndOutQueue";

/// The ack disagreements between the history and `processed`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckDisagreements {
    /// Acked in the history, missing from `processed`: (msg, dup).
    pub history_only: Vec<(i64, u32)>,
    /// In `processed` with no attempt that ran its ack step: (msg, dup).
    pub table_only: Vec<(Option<i64>, Option<i64>)>,
    /// In `processed`, written by an attempt that crashed after its ack
    /// step (no disagreement, counted).
    pub by_indeterminate: u64,
    /// A cut history: in `processed` with no recorded attempt that ran its
    /// ack step (the one that did may be missing; no disagreement, counted).
    pub unrecorded: u64,
}

/// Compares the history's acks with `processed`.
pub fn disagreements(facts: &OutboxFacts, tables: &OutboxTables) -> AckDisagreements {
    let mut d = AckDisagreements::default();
    let rows = tables.by_msg();
    for &(m, dup) in facts.acked_history.keys() {
        if !rows.processed_holds(m, dup) {
            d.history_only.push((m, dup));
        }
    }
    for &(pm, pd) in &tables.processed {
        let key = pm.zip(pd.and_then(|d| u32::try_from(d).ok()));
        if key.is_some_and(|k| facts.acked_history.contains_key(&k)) {
            continue;
        }
        // An attempt of this delivery that ran its ack step and was not ok.
        let ran_ack = key.is_some_and(|(m, dup)| {
            facts.attempts_of(m).any(|a| {
                a.delivery.dup_id == dup
                    && a.completion != Some(CompletionType::Ok)
                    && facts.may_have_run(a, "ack")
            })
        });
        if ran_ack {
            d.by_indeterminate += 1;
        } else if facts.completeness.is_cut() {
            d.unrecorded += 1;
        } else {
            d.table_only.push((pm, pd));
        }
    }
    d
}

/// Judges ConsistentStateAndOutQueue for every acked message.
pub fn check(facts: &OutboxFacts, tables: &OutboxTables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    let acked = facts.acked_msgs(tables);
    let rows = tables.by_msg();
    for &m in &acked {
        let changes = rows.changes_of(m);
        let outs = rows.out_of(m);
        let ev = || facts.evidence_of(m);
        let expected = format!(
            "acked message {m}: exactly one `change` entry at some version v+1, and \
             out-queue entries, all carrying v"
        );
        if changes.len() != 1 {
            r.violation(finding(
                Some(m),
                &expected,
                &format!(
                    "{} change entries: [{}]; out queue: [{}]",
                    changes.len(),
                    state_rows(&changes),
                    out_rows(&outs)
                ),
                &format!(
                    "message {m} was acked but the state holds {} business changes for it",
                    changes.len()
                ),
                ev(),
            ));
            continue;
        }
        let Some(w) = changes[0].ver else { continue };
        if outs.is_empty() {
            r.violation(finding(
                Some(m),
                &expected,
                &format!("{}; no out-queue entry", state_rows(&changes)),
                &format!("message {m} was acked, its state changed, but nothing was published"),
                ev(),
            ));
            continue;
        }
        let wrong: Vec<&super::OutRow> = outs
            .iter()
            .copied()
            .filter(|o| o.ver != Some(w - 1))
            .collect();
        if !wrong.is_empty() {
            r.violation(finding(
                Some(m),
                &expected,
                &format!(
                    "{}; out queue: [{}]; {} entr(ies) do not carry {}",
                    state_rows(&changes),
                    out_rows(&outs),
                    wrong.len(),
                    w - 1
                ),
                &format!(
                    "message {m}'s output carries a version other than the base its \
                     change was committed on (ver {}): the output does not describe \
                     the state change",
                    w
                ),
                ev(),
            ));
        }
    }
    let d = disagreements(facts, tables);
    for &(m, dup) in &d.history_only {
        let mut ev = facts.evidence_of(m);
        ev.retain(|e| {
            e.op.is_some_and(|op| facts.acked_history.get(&(m, dup)) == Some(&op))
        });
        r.unknown(finding(
            Some(m),
            &format!("the ack of message {m} dup {dup} in `processed`"),
            "an `ok` attempt in the history, no row in `processed`",
            "the history and `processed` disagree on this ack: the ack step reported a \
             row the final table does not hold",
            ev,
        ));
    }
    for &(pm, pd) in &d.table_only {
        r.unknown(finding(
            pm,
            "every `processed` row written by an attempt's ack step",
            &format!(
                "processed(msg_id={}, dup_id={})",
                pm.map_or("NULL".into(), |v| v.to_string()),
                pd.map_or("NULL".into(), |v| v.to_string())
            ),
            "the history and `processed` disagree: no attempt of this delivery ran its \
             ack step",
            Vec::<Evidence>::new(),
        ));
    }
    r.notes.push(format!(
        "{} acked message(s) judged; {} ack(s) in `processed` by attempts that crashed after \
         their ack step",
        acked.len(),
        d.by_indeterminate
    ));
    if facts.completeness.is_cut() {
        r.notes.push(format!(
            "{}: {} row(s) of `processed` with no recorded attempt that ran its ack step were \
             not compared (the attempt may be missing); acked messages were judged as ever",
            crate::history::completeness::CUT,
            d.unrecorded
        ));
    }
    r
}
