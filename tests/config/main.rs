//! One test binary for config and statements: the scenario loader, the
//! statement-file format, and the input size caps. One binary per layer, not
//! one per file: every integration test binary links the whole crate, so
//! fewer binaries link faster.

#[path = "../common/mod.rs"]
mod common;

mod input_caps;
mod load_stages;
mod scenario_golden;
mod scenario_validation;
mod statement_files;
mod txn_blocks;
mod txn_policy_keys;
mod txn_refusals;
