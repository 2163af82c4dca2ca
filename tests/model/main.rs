//! One test binary for model and history: the run folder (one run per folder,
//! whole-or-absent files on a full disk) and killed runs' cut histories. One
//! binary per layer, not one per file: every integration test binary links
//! the whole crate, so fewer binaries link faster.

#[path = "../common/mod.rs"]
mod common;

mod disk_full;
mod killed_run;
mod run_folder_claim;
