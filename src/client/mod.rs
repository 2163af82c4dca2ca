//! Clients: how a target executes one step or op: the in-process SQLite
//! target (each worker owns one connection) and HTTP targets (the
//! contract's requests, and readers of their saved exports).

pub mod export;
pub mod http;
pub mod mapping;
pub mod outbox_export;
pub mod service;
pub mod service_db;
pub mod spawn;
pub mod sqlite;
pub mod template;
pub mod watchdog;
