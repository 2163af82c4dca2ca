//! Clients: how a target executes one step. Only the in-process SQLite
//! target for now; each worker owns one client (and its connection).

pub mod export;
pub mod http;
pub mod spawn;
pub mod sqlite;
