//! NoLostOutput: once the run has drained, every acked message with a
//! `change` entry has an out-queue entry. Messages given up after their
//! delivery budget are listed apart and left out (a correct protocol may
//! leave one committed but unpublished when its last delivery crashed;
//! `docs/outbox.md`, "Invariants").
//!
//! Soundness. The rule judges acked messages only (history `ok` AND
//! `processed`), and an acked attempt ran its publish step before its ack,
//! so on a correct system the message's output is in the final
//! `out_queue`: never a violation, whatever other attempts of the message
//! did (crashed ones included). A system whose acked message changed the
//! state and published nothing has a change row and no out-queue row, and
//! every acked message is examined: never `holds`. Given-up messages are
//! listed in the notes, with whether they were committed and published.
//! When the queue did not drain (stopped by duration or Ctrl-C), acked
//! messages are still judged (the rule holds for them at any time) and the
//! notes say how many messages were in flight.
//!
//! A cut history (`Completeness::Cut`): the rule needs only the acked
//! attempts it judges, each recorded whole with its `ok`, and stands. A
//! delivery counts as given up only when all `max_attempts` of its
//! attempts are recorded without an `ok`, and the queue as drained only
//! when every delivery is so settled in the records, so neither is ever
//! claimed from missing records.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::{finding, state_rows, OutboxFacts, OutboxTables};
use crate::verdict::CheckResult;

/// The invariant's name in `docs/outbox.md`.
pub const NAME: &str = "NoLostOutput";

/// Judges NoLostOutput.
pub fn check(facts: &OutboxFacts, tables: &OutboxTables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    let acked = facts.acked_msgs(tables);
    let rows = tables.by_msg();
    for &m in &acked {
        let changes = rows.changes_of(m);
        if changes.is_empty() || !rows.out_of(m).is_empty() {
            continue;
        }
        r.violation(finding(
            Some(m),
            &format!("an out-queue entry for acked message {m}, whose state changed"),
            &format!("{}; no out-queue entry", state_rows(&changes)),
            &format!("message {m} was acked and changed the state, but its output is lost"),
            facts.evidence_of(m),
        ));
    }
    let given_up = facts.given_up_msgs();
    if !given_up.is_empty() {
        let listed: Vec<String> = given_up
            .iter()
            .take(20)
            .map(|&m| {
                format!(
                    "{m} (changes {}, published {})",
                    rows.changes_of(m).len(),
                    rows.out_of(m).len()
                )
            })
            .collect();
        r.notes.push(format!(
            "{} message(s) given up after their delivery budget, left out: {}{}",
            given_up.len(),
            listed.join(", "),
            if given_up.len() > 20 { ", ..." } else { "" }
        ));
    }
    if !facts.drained() {
        r.notes.push(
            "the queue did not drain: only acked messages were judged, messages in flight \
             were not"
                .to_string(),
        );
    }
    r.notes
        .push(format!("{} acked message(s) judged", acked.len()));
    r
}
