//! `checks.json`: every checker's result with its findings and evidence,
//! as the audit and `specstorm report` read them back.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::export::{Exporter, RunResults};

/// File name in a run folder.
pub const FILE: &str = "checks.json";

/// Version of `checks.json`'s shape; bumped on any incompatible change. The
/// file is a bare array of results, so only its schema
/// (`schemas/checks.json`, `$id`) names it.
pub const CHECKS_SCHEMA_VERSION: u32 = 1;

/// The `checks.json` exporter.
pub struct ChecksJson;

impl Exporter for ChecksJson {
    fn file_name(&self) -> &str {
        FILE
    }

    fn serialize(&self, run: &RunResults<'_>) -> anyhow::Result<Vec<u8>> {
        Ok(serde_json::to_string_pretty(run.results)?.into_bytes())
    }
}
