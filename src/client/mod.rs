//! Clients: how a target executes one step or op: the in-process SQLite
//! target (each worker owns one connection) and HTTP targets (the
//! contract's requests, and readers of their saved exports).
//! [`schema_fit`] checks a target database against the statement file
//! before any op runs.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

pub mod export;
pub mod handle_mapping;
pub mod http;
pub mod mapping;
pub mod outbox_export;
pub mod request_template;
pub mod schema_fit;
pub mod service;
pub mod service_db;
pub mod spawn;
pub mod sqlite;
pub mod sqlite_tables;
pub mod template;
pub mod watchdog;
