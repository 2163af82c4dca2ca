//! What the integration tests share, one copy of each helper: the binary
//! and its output ([`bench`]), a run into a fresh folder ([`run`]), the
//! files of a run folder ([`folder`]), child processes and waits bounded
//! only to detect a hang ([`procs`]), HTTP clients and fake servers
//! ([`http`]), the reference server on a free port ([`server`]), and
//! sharded runs' merge ([`shard`]).
//!
//! Each layer's test binary takes this folder in with
//! `#[path = "../common/mod.rs"] mod common;`. Not every binary uses every
//! helper, hence the allowances below.

#![allow(dead_code, unused_imports)]

pub mod bench;
pub mod folder;
pub mod http;
pub mod procs;
pub mod run;
pub mod server;
pub mod shard;

pub use bench::{command, root, specstorm, text};
pub use folder::{history, json, names, summary, verdict};
pub use server::Server;
