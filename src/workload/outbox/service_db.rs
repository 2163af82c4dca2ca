//! The outbox's final tables from a service's own database (`[audit]
//! sqlite`): the scenario's `export.*` queries ([`queries`]) read in one
//! transaction ([`read_final`]); the audit reads a saved copy through the
//! same queries.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::scenario::api::AuditConfig;
use crate::target::http::service_db::open;
use crate::workload::outbox::checker::tables::{ExportQueries, OutboxTables};
use std::path::Path;

/// An outbox scenario's export queries (`export.state_log`,
/// `export.outbox`, `export.out_queue`, `export.processed`; the loader
/// checked that all but `export.outbox` are given with `sqlite`).
pub fn queries(audit: &AuditConfig) -> ExportQueries<'_> {
    let q = |k: &str| audit.export.get(k).map(String::as_str);
    ExportQueries {
        state_log: q("state_log").unwrap_or_default(),
        outbox: q("outbox").filter(|s| !s.trim().is_empty()),
        out_queue: q("out_queue").unwrap_or_default(),
        processed: q("processed").unwrap_or_default(),
    }
}

/// The outbox's final tables from the service's database, in one read
/// transaction; `now` gives the read's instants. Errors: the file cannot
/// be opened, or a query fails (named as `audit.export.*` with SQLite's
/// reason).
pub fn read_final(
    path: &Path,
    audit: &AuditConfig,
    now: &dyn Fn() -> u64,
) -> Result<OutboxTables, String> {
    let mut conn = open(path)?;
    let q = queries(audit);
    let named = [
        ("export.state_log", Some(q.state_log)),
        ("export.outbox", q.outbox),
        ("export.out_queue", Some(q.out_queue)),
        ("export.processed", Some(q.processed)),
    ];
    for (name, sql) in named {
        if let Some(sql) = sql {
            conn.prepare(sql)
                .map_err(|e| format!("audit.{name} cannot run on {}: {e}", path.display()))?;
        }
    }
    crate::workload::outbox::checker::tables::read_with(&mut conn, q, now)
        .map_err(|e| format!("reading {} through audit.export.*: {e}", path.display()))
}
