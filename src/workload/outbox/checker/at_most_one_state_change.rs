//! AtMostOneStateChange: for every message id, at most one `state_log`
//! entry of kind `change` (`docs/outbox.md`, "Invariants"; the spec's `<= 2` counts the change
//! and its cleanup, which we tell apart by `kind`).
//!
//! Soundness. The rule reads only the final `state_log`, the ground truth
//! of what was committed: a row is there whatever became of the attempt
//! that wrote it (ok, lost CAS, crashed, never completed), so an
//! indeterminate attempt can neither hide a second change nor invent one.
//! A correct system writes a change only through the compare-and-swap of
//! StateCommit after Process saw no outbox entry with a clean head, so it
//! never has two; a broken one that changes a message twice has two rows
//! of kind `change` with that msg_id, and every message is examined, so it
//! is never judged `holds`. Rows whose msg_id is not an integer are
//! TypeOK's, not counted here.
//!
//! A cut history (`Completeness::Cut`) changes nothing: the rule reads the
//! final `state_log`; the history only names the writers in a finding.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::{finding, state_rows, OutboxFacts, OutboxTables};
use crate::verdict::CheckResult;
use std::collections::BTreeMap;

/// The invariant's name in the spec.
pub const NAME: &str = "AtMostOneStateChange";

/// Judges AtMostOneStateChange on the final tables; the history only
/// names which attempts wrote the rows.
pub fn check(facts: &OutboxFacts, tables: &OutboxTables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    let mut by_msg: BTreeMap<i64, Vec<&super::StateRow>> = BTreeMap::new();
    for row in tables.state_log.iter().filter(|r| r.is_change()) {
        if let Some(m) = row.msg_id {
            by_msg.entry(m).or_default().push(row);
        }
    }
    let mut checked = 0u64;
    for (m, rows) in by_msg {
        checked += 1;
        if rows.len() <= 1 {
            continue;
        }
        let writers: Vec<String> = rows
            .iter()
            .map(|row| match row.tx_id.and_then(|t| facts.by_tx.get(&t)) {
                Some(&a) => format!(
                    "ver {} by {}",
                    row.ver.unwrap_or(-1),
                    facts.attempts[a].describe()
                ),
                None => format!(
                    "ver {} (no tx_id: see the attempts' writing steps below)",
                    row.ver.unwrap_or(-1)
                ),
            })
            .collect();
        r.violation(finding(
            Some(m),
            &format!("at most one state_log entry of kind `change` for message {m}"),
            &format!("{} changes: {}", rows.len(), state_rows(&rows)),
            &format!(
                "message {m} changed the business state {} times: {}",
                rows.len(),
                writers.join("; ")
            ),
            facts.evidence_of(m),
        ));
    }
    r.notes
        .push(format!("{checked} message(s) with a state change examined"));
    r
}
