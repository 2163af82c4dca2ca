//! Reports: `summary.json` (versioned, for CI and later tools) and the short
//! human summary printed at the end of a run. They only read the figures a
//! run produced; nothing here touches the load.

pub mod baseline;
pub mod hlog;
pub mod human;
pub mod plot;
pub mod summary;

pub use summary::{Summary, SUMMARY_SCHEMA_VERSION};
