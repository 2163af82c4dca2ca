//! The figures every summary and the live view share: latency figures of
//! one histogram ([`Latency`]) and ok / fail / info counts of one op kind
//! ([`Counts`]).
//!
//! Model layer: imports nothing of the crate.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latency figures of one histogram, µs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
pub struct Counts {
    /// Ops that happened.
    pub ok: u64,
    /// Ops that certainly did not happen.
    pub fail: u64,
    /// Indeterminate ops.
    pub info: u64,
}
