//! The result files of a finished run and of a merge, in the order they
//! are written ([`super::export::write_all`]): `checks.json`, `junit.xml`,
//! then `summary.json` (a run writes its `latency.hlog` before them).
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::checks_json::ChecksJson;
use super::export::Exporter;
use super::junit::Junit;
use super::summary_json::SummaryJson;

/// The result files, in the order they are written.
pub const RESULTS: [&dyn Exporter; 3] = [&ChecksJson, &Junit, &SummaryJson];
