//! The groups' final tables and group ids from a service's own database
//! (`[audit] sqlite`): the scenario's `export.events` and `export.groups`
//! queries ([`queries`]), the final tables read in one transaction
//! ([`read_final`]), and the group ids the service computed, read while the
//! load runs (`api.group_ids = "audit"`, [`group_ids`]). The audit reads a
//! saved copy through the same queries.
//!
//! The service keeps writing while the group ids are polled, which
//! SQLite's locking allows (the connection is read-only).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::checker::Tables;
use super::tables_read::read_tables_with;
use crate::scenario::api::AuditConfig;
use crate::target::http::service_db::open;
use std::path::Path;

/// The export queries of `audit` (loader-checked to be present).
pub fn queries(audit: &AuditConfig) -> (&str, &str) {
    let q = |k: &str| audit.export.get(k).map_or("", String::as_str);
    (q("events"), q("groups"))
}

/// The final tables from the service's database, in one read transaction,
/// only this run's `namespace`; `now` gives the read's instants (ns since
/// run start). Errors: the file cannot be opened, or a query fails (named
/// as `export.events`/`export.groups` with SQLite's reason).
pub fn read_final(
    path: &Path,
    audit: &AuditConfig,
    namespace: &str,
    now: &dyn Fn() -> u64,
) -> Result<Tables, String> {
    let mut conn = open(path)?;
    let (events, groups) = queries(audit);
    for (name, q) in [("export.events", events), ("export.groups", groups)] {
        conn.prepare(q)
            .map_err(|e| format!("audit.{name} cannot run on {}: {e}", path.display()))?;
    }
    read_tables_with(&mut conn, (events, groups), namespace, now)
        .map_err(|e| format!("reading {} through audit.export.*: {e}", path.display()))
}

/// (group id, project, fingerprint) of every group row, through
/// `export.groups`. Errors: as [`read_final`].
pub fn group_ids(
    path: &Path,
    audit: &AuditConfig,
) -> Result<Vec<(String, String, String)>, String> {
    let conn = open(path)?;
    let (_, groups) = queries(audit);
    let mut st = conn
        .prepare(groups)
        .map_err(|e| format!("audit.export.groups: {e}"))?;
    let text = |v: rusqlite::types::ValueRef<'_>| match v {
        rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        rusqlite::types::ValueRef::Integer(i) => i.to_string(),
        _ => String::new(),
    };
    let rows = st
        .query_map([], |r| {
            Ok((
                text(r.get_ref(0)?),
                text(r.get_ref(1)?),
                text(r.get_ref(2)?),
            ))
        })
        .map_err(|e| format!("audit.export.groups: {e}"))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("audit.export.groups: {e}"))
}
