//! specstorm: a load-generating chaos test bench that audits a real
//! implementation against the invariants of its TLA+ spec.
//!
//! Jepsen's decomposition, one module per job: [`scenario`] (config) ->
//! a workload's generator (ops) -> a [`target`] (in-process SQLite or an
//! HTTP service, executing step machines of [`workload`], one statement
//! per step, through [`step_driver`]) driven by [`scheduler`] and the
//! workload's runtime -> [`history`] -> the workload's checkers (one per
//! invariant) -> [`report`] (summary, JSON, human output). [`server`] is
//! the reference HTTP target (`specstorm serve`); `specstorm check-target`
//! probes a running service's contract through its workload
//! ([`probe_report`]); [`compare`] runs one scenario against several
//! variants (`specstorm compare`). [`audit`] re-runs the checkers over a
//! saved run folder; [`merge`] shards a run over several load generators
//! and merges their run folders. [`explore`] drives the same step
//! machines through every interleaving of a small world, as TLC does for
//! the spec (`specstorm explore`).
//! Every run goes through one [`pipeline`]; what differs between
//! workloads is behind the `Workload` trait ([`workload::traits`]), and
//! each workload is found in one registry ([`workload::registry`]); each
//! built-in workload's code (ops, runtime, checkers, its scenario
//! sections) is in its folder, `src/workload/<name>/`.
//! [`input`] reads the files the commands take within a size cap.
//! [`wal`] keeps the target's write-ahead log bounded while a load runs;
//! [`whole`] writes a run folder's files whole or not at all.
//!
//! The modules form layers that import only downward, bottom first: core
//! ([`clock`], [`control`], [`draws`], [`exit_code`], ...), model ([`history`],
//! [`verdict`], [`figures`], [`shard`], ...), config ([`scenario`],
//! [`statements`]), engine, target and nemesis ([`target`], [`nemesis`]),
//! workload (the workloads' checkers), report, ui and server, and the
//! commands ([`prepare`], [`pipeline`], the workloads' implementations,
//! [`audit`], [`merge`], ...). `tests/architecture.rs` places every module
//! in its layer and fails on an import cycle or an upward import.

#![warn(missing_docs)]

pub mod abort_on_fail;
pub mod audit;
pub mod audit_db;
pub mod audit_error;
pub mod audit_history;
pub mod audit_killed;
pub mod audit_record;
pub mod audit_tables;
pub mod cli;
pub mod cli_meta;
pub mod clock;
pub mod compare;
pub mod control;
pub mod dashboard;
pub mod draws;
pub mod exit_code;
pub mod explore;
pub mod fault_hook;
pub mod fault_kind;
pub mod figures;
pub mod fuzz;
pub mod history;
pub mod input;
pub mod live;
pub mod merge;
pub mod merge_parts;
pub mod metrics;
pub mod nemesis;
pub mod pipeline;
pub mod prepare;
pub mod probe_report;
pub mod replay;
pub mod replay_order;
pub mod replay_script;
pub mod replay_step;
pub mod report;
pub mod run_dir;
pub mod run_folder;
pub mod run_options;
pub mod scenario;
pub mod scheduler;
pub mod schemas;
pub mod seed_list;
pub mod series;
pub mod series_rates;
pub mod server;
pub mod shard;
pub mod sql_guard;
pub mod statements;
pub mod stats;
pub mod step_driver;
pub mod summary;
pub mod target;
pub mod txn_backoff;
pub mod validate;
pub mod variant;
pub mod verdict;
pub mod wal;
pub mod watch;
pub mod whole;
pub mod workload;
