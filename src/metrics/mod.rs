//! Live metrics of a running load (`run --metrics-addr`): the figures the
//! dashboard shows, served as a Prometheus/OpenMetrics text exposition
//! while the run goes, for a monitoring stack to scrape. Each scrape reads
//! a [`crate::live::Live`] snapshot, as the dashboard does a few times a
//! second: the load records nothing twice and pays nothing per op for it.
//! [`exposition`] turns a snapshot into text; [`exporter`] serves it.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

pub mod exporter;
pub mod exposition;

pub use exporter::Exporter;
