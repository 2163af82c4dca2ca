//! The outbox workload's part of `specstorm compare`: its figures in
//! `compare.json` (the queue and the attempts) and its rows in the table
//! (the overlap row only when some variant ran with a lease that
//! overlapped).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::figures::OutboxFigures;
use crate::summary::Summary;
use crate::workload::parts::CompareRow;

/// The outbox figures of a variant's summary `s` in `compare.json` (none
/// when it has no outbox figures).
pub fn figures(s: &Summary) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    let Some(OutboxFigures { outbox: o }) = s.part() else {
        return m;
    };
    m.insert("workload".into(), serde_json::json!("outbox"));
    m.insert(
        "outbox".into(),
        serde_json::json!({
            "messages": o.messages,
            "attempts": o.attempts,
            "acked_deliveries": o.acked_deliveries,
            "given_up_deliveries": o.given_up_deliveries,
            "cas_lost": o.cas_lost,
            "crashed": o.crashed,
            "redeliveries": o.liveness.redeliveries,
            "redelivered_attempts": o.redelivered_attempts,
            "overlapping_attempts": o.overlapping_attempts,
        }),
    );
    m
}

/// The outbox rows of the table: the queue and the attempts.
pub fn rows() -> Vec<CompareRow> {
    let mut rows = vec![
        CompareRow::new("messages", &["outbox", "messages"]),
        CompareRow::new("duration s", &["duration_s"]),
    ];
    for k in ["total", "handle"] {
        rows.push(CompareRow::throughput(k));
    }
    rows.extend(CompareRow::latency("handle"));
    for (name, key) in [
        ("attempts", "attempts"),
        ("acked deliveries", "acked_deliveries"),
        ("given up deliveries", "given_up_deliveries"),
        ("cas lost", "cas_lost"),
        ("crashed", "crashed"),
        ("redeliveries (resends)", "redeliveries"),
    ] {
        rows.push(CompareRow::new(name, &["outbox", key]));
    }
    rows.push(CompareRow {
        only_when_nonzero: true,
        ..CompareRow::new("overlapping attempts", &["outbox", "overlapping_attempts"])
    });
    rows
}
