//! One test binary for targets and the nemesis: in-process SQLite, HTTP (the
//! contract, [api] mappings, spawned and external services), the fault kinds.
//! One binary per layer, not one per file: every integration test binary
//! links the whole crate, so fewer binaries link faster.

#[path = "../common/mod.rs"]
mod common;

mod api_mapping;
mod attempt_end;
mod check_target;
mod d1_worker;
mod fault_proxy;
mod http_target;
mod nemesis;
mod orphans;
mod outbox_api_mapping;
mod outbox_http;
mod outbox_proxy;
mod sqlite_client;
mod txn_blocks;
mod txn_http;
mod txn_retry_policy;
mod wal;
