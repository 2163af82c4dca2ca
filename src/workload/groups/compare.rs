//! The groups workload's part of `specstorm compare`: its figures in
//! `compare.json` (events, stranded events) and its rows in the table
//! (events, load, stranded events).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::figures::GroupsFigures;
use crate::summary::Summary;
use crate::workload::parts::CompareRow;

/// The groups figures of a variant's summary `s` in `compare.json`.
pub fn figures(s: &Summary) -> serde_json::Map<String, serde_json::Value> {
    let f: GroupsFigures = s.part().unwrap_or_default();
    let mut m = serde_json::Map::new();
    m.insert("events".into(), serde_json::json!(f.events));
    m.insert(
        "stranded_events".into(),
        serde_json::json!(f.stranded_events.total),
    );
    m
}

/// The groups rows of the table: events, load, stranded events.
pub fn rows() -> Vec<CompareRow> {
    let mut rows = vec![
        CompareRow::new("events", &["events"]),
        CompareRow::new("duration s", &["duration_s"]),
    ];
    for k in ["total", "ingest", "resolve"] {
        rows.push(CompareRow::throughput(k));
    }
    for kind in ["ingest", "resolve"] {
        rows.extend(CompareRow::latency(kind));
    }
    rows.push(CompareRow::new("stranded events", &["stranded_events"]));
    rows
}
