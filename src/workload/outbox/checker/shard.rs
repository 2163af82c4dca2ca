//! What one shard of a sharded outbox run says of itself: no verdict
//! (every invariant `unknown`, as for groups: [`crate::workload::groups::checker::sharded`]),
//! and the liveness of its own messages. The run and its audit both come
//! here through [`super::check_all`]; `specstorm merge` judges the merged
//! history ([`crate::workload::outbox::merge`]'s doc argues why that judgement is one
//! run's).
//!
//! Why a shard is not judged alone: its history holds only the attempts
//! of the messages it owns ([`Shard::owns_message`]), while the service's
//! tables hold every shard's rows, so a sibling's rows would read as rows
//! no recorded attempt wrote (ack disagreements, and a sibling whose
//! attempts are still running when this shard reads would leave its
//! messages half done in these tables).
//!
//! Workload layer: imports the outbox checkers' types, the shard model and
//! the groups' sharded wording.

use super::{all_unknown, liveness, Liveness, OutboxFacts, OutboxTables};
use crate::shard::Shard;
use crate::verdict::CheckResult;

/// Shard `sh`'s report: every invariant `unknown`, and the liveness of
/// the messages it owns, over the rows of those messages only.
pub fn report(
    facts: &OutboxFacts,
    tables: &OutboxTables,
    sh: Shard,
) -> (Vec<CheckResult>, Liveness) {
    let results = all_unknown(&sh.not_judged());
    (results, liveness::report(facts, &own_rows(tables, sh)))
}

/// The rows of `tables` of the messages shard `sh` owns (the head row at
/// version 0 kept): what the shard's own attempts can have written.
pub fn own_rows(tables: &OutboxTables, sh: Shard) -> OutboxTables {
    let own = |m: Option<i64>| m.is_some_and(|m| Shard::owns_message(Some(sh), m));
    OutboxTables {
        state_log: tables
            .state_log
            .iter()
            .filter(|r| r.ver == Some(0) || own(r.msg_id))
            .cloned()
            .collect(),
        outbox: tables
            .outbox
            .as_ref()
            .map(|o| o.iter().filter(|(m, _)| own(*m)).copied().collect()),
        out_queue: tables
            .out_queue
            .iter()
            .filter(|r| own(r.msg_id))
            .cloned()
            .collect(),
        processed: tables
            .processed
            .iter()
            .filter(|(m, _)| own(*m))
            .copied()
            .collect(),
        ..tables.clone()
    }
}
