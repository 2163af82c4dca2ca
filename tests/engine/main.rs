//! One test binary for the engine: the plans a seed gives (ops, faults and
//! deliveries, the schedule fuzzer's choices), the history header of each
//! workload on each target, and every run ending by itself or on a stop.
//! One binary per layer, not one per file: every integration test binary
//! links the whole crate, so fewer binaries link faster.

#[path = "../common/mod.rs"]
mod common;

mod fuzz_choices;
mod fuzz_header;
mod op_plan_golden;
mod outbox_shard_plan;
mod run_ends;
mod run_golden;
