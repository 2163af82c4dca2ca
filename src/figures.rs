//! The figures every summary and the live view share: latency figures of
//! one histogram ([`Latency`]) and ok / fail / info counts of one op kind
//! ([`Counts`]); and what every audit record (`audit.json`) holds besides
//! the verdicts: stranded events ([`Stranded`], counted by the workloads
//! that have them) and the evidence per invariant ([`EvidenceReport`]).
//!
//! Model layer: imports nothing of the crate.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Latency figures of one histogram, µs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Latency {
    /// Values in the histogram.
    pub count: u64,
    /// Median, µs.
    pub p50: f64,
    /// 90th percentile, µs.
    pub p90: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// 99.9th percentile, µs.
    pub p999: f64,
    /// Maximum, µs.
    pub max: f64,
    /// Mean, µs.
    pub mean: f64,
}

impl Latency {
    /// Figures of a histogram of ns values.
    pub fn of(h: &Histogram<u64>) -> Self {
        let us = |ns: u64| (ns as f64 / 1e3 * 10.0).round() / 10.0;
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            p50: us(h.value_at_quantile(0.5)),
            p90: us(h.value_at_quantile(0.9)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
            mean: (h.mean() / 1e3 * 10.0).round() / 10.0,
        }
    }
}

/// ok / fail / info counts of one op kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Counts {
    /// Ops that happened.
    pub ok: u64,
    /// Ops that certainly did not happen.
    pub fail: u64,
    /// Indeterminate ops.
    pub info: u64,
}

/// How many events are stranded, in all and per cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Stranded {
    /// Stranded events in all; None: the history cannot tell (see `notes`).
    pub total: Option<u64>,
    /// Stranded events per cause (how the inserting attempt ended).
    pub by_cause: BTreeMap<String, u64>,
    /// A few stranded event ids with the op that inserted them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<(String, u64)>,
    /// Events in the table that may or may not have been counted (an
    /// indeterminate attempt, not Done): stranded or not, nobody can say.
    #[serde(default)]
    pub undetermined: u64,
    /// What the figures rest on, or why there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Default for Stranded {
    fn default() -> Self {
        Stranded {
            total: Some(0),
            by_cause: BTreeMap::new(),
            examples: Vec::new(),
            undetermined: 0,
            notes: Vec::new(),
        }
    }
}

/// The evidence of a run: per invariant, and per fault with a duration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct EvidenceReport {
    /// Per invariant (spec name): the evidence of the whole run.
    pub invariants: BTreeMap<String, u64>,
    /// Per fault with a duration (its index in `[[faults]]`, as text), if
    /// it was ever active: the evidence gathered while it was.
    #[serde(default)]
    pub faults: BTreeMap<String, FaultEvidence>,
}

/// The evidence gathered while one fault was active.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FaultEvidence {
    /// The fault's kind (`kill`, `lock`).
    pub kind: String,
    /// Windows in which it was active (start to stop).
    pub windows: u64,
    /// Time it was active in all, s (a window never stopped: until the
    /// final read began).
    pub active_s: f64,
    /// Per invariant (spec name): evidence whose interval overlaps one of
    /// its windows.
    pub invariants: BTreeMap<String, u64>,
}
