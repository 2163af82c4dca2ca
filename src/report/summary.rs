//! `summary.json`'s types and rules under the path the report has always
//! given them: they live in the model ([`crate::summary`]), below the
//! workloads that fill them and the config loader that checks thresholds
//! against them, and the figures a threshold may name in the config
//! ([`crate::scenario::figures`]).
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

pub use crate::scenario::figures::skeleton;
pub use crate::summary::{
    exit, figures_of, invariants, judge_thresholds, rate, Coverage, Exit, Figures,
    InvariantSummary, PrecisionLoss, Provenance, Summary, ThresholdOutcome, WalReport,
    SUMMARY_SCHEMA_VERSION,
};
