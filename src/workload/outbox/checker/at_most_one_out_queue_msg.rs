//! AtMostOneOutQueueMsg: for every message id, the out queue holds at most
//! one distinct (msg_id, ver); resends of the same pair are allowed
//! (consumers deduplicate by id) and counted as `redeliveries`
//! (`docs/outbox.md`, "Invariants").
//!
//! Soundness. The rule reads only the final `out_queue`, every publish
//! that committed, whatever became of the attempt (a crash after publish
//! leaves its row, which is exactly what a consumer would see). A correct
//! system publishes only `outbox[msg]`, written once from the staged record
//! of the one committed change, so every publish of a message carries the
//! same pair: never a violation. A system that publishes two different
//! versions of one message has two distinct pairs in the final table, and
//! every message is examined: never `holds`.
//!
//! A cut history (`Completeness::Cut`) changes nothing: the rule reads the
//! final `out_queue` only.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::{finding, out_rows, OutboxFacts, OutboxTables};
use crate::verdict::CheckResult;
use std::collections::{BTreeMap, BTreeSet};

/// The invariant's name in the spec.
pub const NAME: &str = "AtMostOneOutQueueMsg";

/// Resends in the out queue: rows beyond the first of each (msg_id, ver).
pub fn redeliveries(tables: &OutboxTables) -> u64 {
    let distinct: BTreeSet<(Option<i64>, Option<i64>)> =
        tables.out_queue.iter().map(|r| (r.msg_id, r.ver)).collect();
    (tables.out_queue.len() - distinct.len()) as u64
}

/// Judges AtMostOneOutQueueMsg on the final `out_queue`.
pub fn check(facts: &OutboxFacts, tables: &OutboxTables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    let mut by_msg: BTreeMap<i64, Vec<&super::OutRow>> = BTreeMap::new();
    for row in &tables.out_queue {
        if let Some(m) = row.msg_id {
            by_msg.entry(m).or_default().push(row);
        }
    }
    for (m, rows) in &by_msg {
        let vers: BTreeSet<Option<i64>> = rows.iter().map(|r| r.ver).collect();
        if vers.len() <= 1 {
            continue;
        }
        r.violation(finding(
            Some(*m),
            &format!("one distinct (msg_id, ver) in the out queue for message {m}"),
            &format!(
                "{} distinct versions in {} publishes: {}",
                vers.len(),
                rows.len(),
                out_rows(rows)
            ),
            &format!(
                "message {m} was published with different versions, so consumers \
                 deduplicating by id see two different outputs; the publishing \
                 attempts and their steps follow"
            ),
            facts.evidence_of(*m),
        ));
    }
    r.notes.push(format!(
        "{} message(s) in the out queue, {} redelivery(ies) of the same (msg_id, ver)",
        by_msg.len(),
        redeliveries(tables)
    ));
    r
}
