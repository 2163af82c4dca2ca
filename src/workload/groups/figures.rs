//! The groups workload's own figures in `summary.json` ([`GroupsFigures`]:
//! events, duplicates, resolves, stranded events, evidence), the types
//! its checkers fill them with, and the part of the skeleton (the
//! figures a threshold may name) they add. Kept below the checkers and
//! the config loader, which read them.
//!
//! Layer: model. May import the modules of its own layer and of the
//! layers below it (core).

use crate::fault_kind::FaultKind;
use crate::history::OpKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The groups workload's op kinds, in report order (every groups figure
/// is keyed by these, and only these).
pub const OP_KINDS: [OpKind; 2] = [OpKind::Ingest, OpKind::Resolve];

/// The groups figures of a run: top-level keys of `summary.json`
/// (`crate::summary::Summary::put`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct GroupsFigures {
    /// Distinct events generated.
    #[serde(default)]
    pub events: u64,
    /// Accepted events per second of load wall time.
    #[serde(default)]
    pub events_per_s: f64,
    /// Ingests answered duplicate (`ok`, accepted = false).
    #[serde(default)]
    pub duplicates: u64,
    /// Resolves: `resolved` (status changed) and `refused` counts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resolves: BTreeMap<String, u64>,
    /// Stranded events (groups.md; reported, fails no run by default).
    #[serde(default)]
    pub stranded_events: Stranded,
    /// Per invariant, the chances the run gave it to see a violation, and
    /// per fault with a duration, those gathered while it was active
    /// (`checker::evidence`); a `holds` below the scenario's
    /// `[min_evidence]` is `unknown`.
    #[serde(default)]
    pub evidence: EvidenceReport,
}

// What every audit record has (audit.json's `stranded` and `evidence`):
// shared, below the folders.
pub use crate::figures::{EvidenceReport, FaultEvidence, Stranded};

/// The groups figures of a skeleton of a scenario with `faults` (and an
/// open load model when `open_model`), whose invariants are `invariants`:
/// faults with a duration have windows, and each one that was ever active
/// has its evidence, by its index in `[[faults]]`. Maps whose keys depend
/// on the run (`stranded_events.by_cause`) are left out.
pub fn skeleton(invariants: &[&str], faults: &[FaultKind], open_model: bool) -> serde_json::Value {
    let zeros: BTreeMap<&str, u64> = invariants.iter().map(|&name| (name, 0)).collect();
    let windowed: BTreeMap<String, serde_json::Value> = faults
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f, FaultKind::Kill | FaultKind::Lock))
        .map(|(i, f)| {
            (
                i.to_string(),
                serde_json::json!({
                    "kind": f.name(),
                    "windows": 0,
                    "active_s": 0.0,
                    "invariants": zeros,
                }),
            )
        })
        .collect();
    let mut v = serde_json::json!({
        "events": 0,
        "events_per_s": 0.0,
        "duplicates": 0,
        "resolves": { "resolved": 0, "refused": 0 },
        "stranded_events": { "total": 0, "undetermined": 0 },
        "evidence": { "invariants": zeros, "faults": windowed },
        "history": { "event_rows": 0, "group_rows": 0 },
    });
    if open_model {
        v["open_model"] = serde_json::json!({ "late": 0, "missed": 0 });
    }
    v
}
