//! One test binary for the workloads and their checkers: groups and outbox,
//! their invariants, evidence, explore worlds, correct designs. One binary
//! per layer, not one per file: every integration test binary links the whole
//! crate, so fewer binaries link faster.

#[path = "../common/mod.rs"]
mod common;

mod checkers;
mod correct_designs;
mod counter;
mod counter_runs;
mod evidence;
mod explore;
mod outbox;
mod outbox_designs;
mod outbox_lease;
mod typed_history;
