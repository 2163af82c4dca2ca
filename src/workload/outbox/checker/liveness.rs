//! The liveness report (`docs/outbox.md`, the spec's Termination): every message
//! id is acked once the queue drains without faults. Reported in the
//! summary, never an exit criterion: with faults a correct protocol may
//! give a delivery up, and a run stopped early has messages in flight.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::at_most_one_out_queue_msg::redeliveries;
use super::consistent::disagreements;
use super::{OutboxFacts, OutboxTables};

pub use crate::workload::outbox::figures::Liveness;

/// The liveness report of a run.
pub fn report(facts: &OutboxFacts, tables: &OutboxTables) -> Liveness {
    // A shard's queue is its own messages'; a whole or merged run's, 1..=M.
    let messages = facts.message_ids().count() as u64;
    let deliveries = facts.header.map_or(0, |h| messages * h.deliveries as u64);
    let acked = facts.acked_msgs(tables);
    let drained = facts.drained();
    let judged = drained && !facts.faults_seen && !facts.partial;
    let unacked: Vec<i64> = facts
        .message_ids()
        .filter(|m| !acked.contains(m))
        .take(20)
        .collect();
    let d = disagreements(facts, tables);
    Liveness {
        messages,
        deliveries,
        acked_messages: acked.len() as u64,
        acked_deliveries: facts.acked_history.len() as u64,
        given_up_deliveries: facts.given_up.len() as u64,
        given_up_messages: facts.given_up_msgs().len() as u64,
        drained,
        judged,
        holds: judged.then_some(acked.len() as u64 == messages),
        unacked,
        redeliveries: redeliveries(tables),
        ack_disagreements: (d.history_only.len() + d.table_only.len()) as u64,
    }
}
