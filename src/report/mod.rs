//! Reports: `summary.json` (versioned, for CI and later tools), the short
//! human summary printed at the end of a run, `junit.xml`, the latency
//! interval log (`latency.hlog`), and `specstorm report`'s SVG plots and
//! baseline comparison. They only read the figures a run produced; nothing
//! here touches the load.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

pub mod baseline;
pub mod checks_json;
pub mod export;
pub mod folder;
pub mod hlog;
pub mod human;
pub mod junit;
pub mod plot;
pub mod precision;
pub mod results;
pub mod series;
pub mod summary;
pub mod summary_json;
pub mod target_curve;

pub use crate::summary::{Summary, SUMMARY_SCHEMA_VERSION};
