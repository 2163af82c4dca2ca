//! One test binary for report, ui and server: summaries, expectations and
//! thresholds, plots and baselines, the dashboard, the reference server. One
//! binary per layer, not one per file: every integration test binary links
//! the whole crate, so fewer binaries link faster.

#[path = "../common/mod.rs"]
mod common;

mod abort_on_fail;
mod dashboard;
mod dashboard_end;
mod expectations;
mod junit_schema;
mod report;
mod schemas;
mod server;
