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
use serde::{Deserialize, Serialize};

/// What the queue and the acks came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Liveness {
    /// Message ids of the run (M; a shard's: those it owns).
    pub messages: u64,
    /// Deliveries of the run (M x D; a shard's: of the messages it owns).
    pub deliveries: u64,
    /// Message ids acked (history and `processed`).
    pub acked_messages: u64,
    /// Deliveries acked in the history.
    pub acked_deliveries: u64,
    /// Deliveries given up after their budget.
    pub given_up_deliveries: u64,
    /// Message ids given up (no delivery acked).
    pub given_up_messages: u64,
    /// Every delivery was acked or given up.
    pub drained: bool,
    /// The report applies: the queue drained, no fault was injected and
    /// the run was not interrupted.
    pub judged: bool,
    /// Judged and every message acked (None: not judged).
    pub holds: Option<bool>,
    /// Message ids not acked (first 20).
    pub unacked: Vec<i64>,
    /// Resends of the same (msg_id, ver) in the out queue.
    pub redeliveries: u64,
    /// Acks the history and `processed` disagree on.
    pub ack_disagreements: u64,
}

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
