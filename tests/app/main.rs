//! One test binary for the commands: run, audit (also of untrusted folders),
//! compare and merge (of shards) of either workload, and the shipped docs. One binary per
//! layer, not one per file: every integration test binary links the whole
//! crate, so fewer binaries link faster.

#[path = "../common/mod.rs"]
mod common;

mod audit;
mod audit_parts;
mod audit_untrusted;
mod cli;
mod cli_basics;
mod distributed;
mod docs;
mod event_ids;
mod load_stages;
mod metrics;
mod msrv;
mod outbox_parity;
mod outbox_shard_merge;
mod outbox_tools;
mod replay;
mod run_judge_parts;
mod seeds;
mod shard_merge;
mod validate;
