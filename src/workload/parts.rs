//! What a workload hands the generic reports besides `summary.json`'s
//! figures ([`crate::summary::Summary::put`]): its lines in the human
//! summary ([`HumanParts`]), and its figures and rows in `specstorm
//! compare` ([`CompareRow`]). The reports lay them out; none of them names
//! a workload.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

/// A workload's lines in the human summary, each block whole lines
/// (each ending in a newline), empty when it has none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HumanParts {
    /// The load's lines under the heading; None: the common line (ops,
    /// duration, ops/s in all).
    pub load: Option<String>,
    /// After the ops per kind and the open model: its own counts.
    pub figures: String,
    /// After the invariants: what their verdicts rest on.
    pub evidence: String,
    /// After the precision lines: what the run left behind.
    pub closing: String,
    /// The end-of-run text printed on the terminal stops at its last
    /// line, without the blank line that follows it otherwise.
    pub trim_end: bool,
}

/// One figure row of `specstorm compare`'s table: its label and the path
/// of the figure in each variant's compared figures.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    /// The row's label (`events`, `cas lost`).
    pub label: String,
    /// The figure's path (`["outbox", "cas_lost"]`).
    pub path: Vec<String>,
    /// Shown only when some variant has it above 0.
    pub only_when_nonzero: bool,
}

impl CompareRow {
    /// The row `label` of the figure at `path`.
    pub fn new(label: impl Into<String>, path: &[&str]) -> CompareRow {
        CompareRow {
            label: label.into(),
            path: path.iter().map(|p| p.to_string()).collect(),
            only_when_nonzero: false,
        }
    }

    /// The latency rows (p50, p99, p99.9, max, µs) of op kind `kind`.
    pub fn latency(kind: &str) -> Vec<CompareRow> {
        ["p50", "p99", "p999", "max"]
            .iter()
            .map(|p| CompareRow::new(format!("{kind} latency {p} µs"), &["latency_us", kind, p]))
            .collect()
    }

    /// The rows every workload has: the duration and the throughput in
    /// all (a workload's rows by default).
    pub fn common() -> Vec<CompareRow> {
        vec![
            CompareRow::new("duration s", &["duration_s"]),
            CompareRow::throughput("total"),
        ]
    }

    /// The throughput row of op kind `kind` (or `total`).
    pub fn throughput(kind: &str) -> CompareRow {
        CompareRow::new(
            format!("throughput {kind} ops/s"),
            &["throughput_ops_per_s", kind],
        )
    }
}
