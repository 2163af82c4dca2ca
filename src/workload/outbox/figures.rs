//! The outbox workload's own figures in `summary.json` (its `outbox`
//! object: the queue, the attempts, the liveness report) and the part of
//! the skeleton (the figures a threshold may name) they add. Kept below
//! the checkers and the config loader, which read them.
//!
//! Layer: model. May import the modules of its own layer and of the
//! layers below it (core).

use crate::history::OpKind;
use serde::{Deserialize, Serialize};

/// The outbox workload's op kinds: one attempt of one delivery.
pub const OP_KINDS: [OpKind; 1] = [OpKind::Handle];

/// The outbox's part of `summary.json` (`crate::summary::Summary::put`):
/// one top-level key, `outbox`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct OutboxFigures {
    /// The queue, the attempts and the liveness report.
    pub outbox: OutboxSummary,
}

/// The outbox figures of a run (`summary.json`'s `outbox`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct OutboxSummary {
    /// Message ids M.
    pub messages: u64,
    /// Deliveries per message D.
    pub deliveries: u32,
    /// Concurrent handlers H.
    pub handlers: u32,
    /// Attempts a delivery may take before it is given up.
    pub max_attempts: u32,
    /// Attempts started (handle ops).
    pub attempts: u64,
    /// Deliveries acked by the bench.
    pub acked_deliveries: u64,
    /// Deliveries given up after their budget.
    pub given_up_deliveries: u64,
    /// The first given-up deliveries, as [msg_id, dup_id] (at most 50).
    pub given_up: Vec<(i64, u32)>,
    /// Attempts that lost a compare-and-swap (`fail-if`; natural failures).
    pub cas_lost: u64,
    /// Attempts a crash fault ended.
    pub crashed: u64,
    /// Attempts ended by an error or the step bound.
    pub errors: u64,
    /// Attempts started on a delivery the queue had handed out before
    /// (after a failed attempt, or an expired lease).
    #[serde(default)]
    pub redelivered_attempts: u64,
    /// Leases (`outbox.lease`): attempts started while an attempt of the
    /// same delivery still ran (0 without a lease).
    #[serde(default)]
    pub overlapping_attempts: u64,
    /// Leases that ran out while their attempt ran.
    #[serde(default)]
    pub lease_expired: u64,
    /// Acks of a delivery an overlapping attempt had acked first
    /// (recorded, harmless).
    #[serde(default)]
    pub late_acks: u64,
    /// Deliveries acked per second of load wall time.
    pub acked_per_s: f64,
    /// The liveness report (every message acked once the queue drains
    /// without faults), with redeliveries and ack disagreements.
    pub liveness: Liveness,
}

/// What the queue and the acks came to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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

/// The outbox figures of a skeleton: every figure of [`OutboxSummary`]
/// but its lists (no figures a threshold may name).
pub fn skeleton() -> serde_json::Value {
    let mut o = serde_json::to_value(OutboxSummary::default()).expect("serializes");
    o.as_object_mut().expect("an object").remove("given_up");
    o["liveness"]
        .as_object_mut()
        .expect("an object")
        .remove("unacked");
    serde_json::json!({ "outbox": o })
}
