//! `summary.json`: the run's figures ([`crate::summary::Summary::to_json`]),
//! pretty-printed, its keys in sorted order.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::export::{Exporter, RunResults};

/// File name in a run folder.
pub const FILE: &str = "summary.json";

/// The `summary.json` exporter.
pub struct SummaryJson;

impl Exporter for SummaryJson {
    fn file_name(&self) -> &str {
        FILE
    }

    fn serialize(&self, run: &RunResults<'_>) -> anyhow::Result<Vec<u8>> {
        Ok(serde_json::to_string_pretty(&run.summary.to_json())?.into_bytes())
    }
}
