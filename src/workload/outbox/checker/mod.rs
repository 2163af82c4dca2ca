//! Checkers of the `outbox` workload (exactly_once_none_atomic.tla), one
//! module per invariant, exactly as `docs/outbox.md` defines
//! them for a real run: each judges the final [`OutboxTables`] together
//! with the [`OutboxFacts`] of the history (who was acked, who was given
//! up, which attempt's which step wrote what). Each module writes down why
//! its rule is sound: never a violation on a correct system, never `holds`
//! on a broken one, crashed (indeterminate) attempts included.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

pub mod at_most_one_out_queue_msg;
pub mod at_most_one_state_change;
pub mod consistent;
pub mod facts;
pub mod liveness;
pub mod no_lost_output;
pub mod shard;
pub mod tables;
pub mod type_ok;

pub use facts::{Attempt, OutboxFacts};
pub use liveness::Liveness;
pub use tables::{OutRow, OutboxTables, StateRow};

use crate::verdict::{CheckResult, Evidence, Finding};

// Each listed name is its checker's: the list cannot drift from the
// checkers without failing the build.
const _: () = assert!(crate::scenario::invariants::same_names(
    &crate::workload::outbox::config::OUTBOX_INVARIANTS,
    &[
        type_ok::NAME,
        at_most_one_state_change::NAME,
        at_most_one_out_queue_msg::NAME,
        consistent::NAME,
        no_lost_output::NAME,
    ]
));

/// Every outbox checker's result (TypeOK, AtMostOneStateChange,
/// AtMostOneOutQueueMsg, ConsistentStateAndOutQueue, NoLostOutput: the
/// order of [`crate::workload::outbox::config::OUTBOX_INVARIANTS`]) and the liveness report.
/// The history of one shard of several is not judged alone
/// ([`shard::report`]): the run and its audit both come here, so they
/// agree; `specstorm merge` judges the merged history.
pub fn check_all(facts: &OutboxFacts, tables: &OutboxTables) -> (Vec<CheckResult>, Liveness) {
    if let Some(sh) = facts.shard_of_several() {
        return shard::report(facts, tables, sh);
    }
    let results = vec![
        type_ok::check(facts, tables),
        at_most_one_state_change::check(facts, tables),
        at_most_one_out_queue_msg::check(facts, tables),
        consistent::check(facts, tables),
        no_lost_output::check(facts, tables),
    ];
    (results, liveness::report(facts, tables))
}

/// Every outbox invariant `unknown` for one reason (the final tables could
/// not be read): used where a verdict would be unsound.
pub fn all_unknown(explanation: &str) -> Vec<CheckResult> {
    crate::workload::outbox::config::OUTBOX_INVARIANTS
        .iter()
        .map(|name| {
            let mut r = CheckResult::new(name);
            r.unknown(finding(
                None,
                "the final tables",
                "none",
                explanation,
                vec![],
            ));
            r
        })
        .collect()
}

/// A finding about message `msg` (None: about the whole run).
pub(crate) fn finding(
    msg: Option<i64>,
    expected: &str,
    found: &str,
    explanation: &str,
    evidence: Vec<Evidence>,
) -> Finding {
    Finding {
        msg_id: msg,
        group: None,
        event_id: None,
        expected: expected.into(),
        found: found.into(),
        explanation: explanation.into(),
        evidence,
    }
}

/// The rows of `state_log` and `out_queue`, as words.
pub(crate) fn state_rows(rows: &[&StateRow]) -> String {
    rows.iter()
        .map(|r| r.describe())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The rows of `out_queue`, as words.
pub(crate) fn out_rows(rows: &[&OutRow]) -> String {
    rows.iter()
        .map(|r| r.describe())
        .collect::<Vec<_>>()
        .join(", ")
}
