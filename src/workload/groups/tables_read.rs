//! The groups workload's final tables read from a SQLite database through
//! the variant's export queries, in one read transaction
//! ([`crate::target::sqlite::tables::read_snapshot`]): the in-process
//! target's database after the load, a saved `target.db` in an audit, a
//! service's own database (`[audit] sqlite`).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::checker::tables::{GroupRow, RowSink, Tables};
use super::statements::GroupsVariant;
use crate::target::sqlite::tables::read_snapshot;
use crate::workload::Value;
use rusqlite::Connection;

/// Reads the canonical tables (the variant's `export.*` queries) in one
/// read transaction, keeping only projects that start with `namespace`
/// (all when empty). `now` gives the read's start and end, ns since run
/// start. Errors: SQLite's (a query fails, a table is missing).
pub fn read_tables(
    conn: &mut Connection,
    variant: &GroupsVariant,
    namespace: &str,
    now: &dyn Fn() -> u64,
) -> rusqlite::Result<Tables> {
    read_tables_with(
        conn,
        (&variant.export_events, &variant.export_groups),
        namespace,
        now,
    )
}

/// [`read_tables`] with the two export queries given: `export.events`
/// (id, project, fingerprint, ...) and `export.groups` (id, project,
/// fingerprint, status, event_count), in that column order. Errors: a
/// query SQLite refuses, or a row with fewer columns.
pub fn read_tables_with(
    conn: &mut Connection,
    queries: (&str, &str),
    namespace: &str,
    now: &dyn Fn() -> u64,
) -> rusqlite::Result<Tables> {
    let mut t = Tables::default();
    [t.read_start, t.read_end] = read_rows_with(conn, queries, namespace, now, &mut t)?;
    Ok(t)
}

/// [`read_tables_with`] into any [`RowSink`]; returns the read's start
/// and end, ns since run start. Errors: as [`read_tables_with`].
pub fn read_rows_with(
    conn: &mut Connection,
    (export_events, export_groups): (&str, &str),
    namespace: &str,
    now: &dyn Fn() -> u64,
    t: &mut dyn RowSink,
) -> rusqlite::Result<[u64; 2]> {
    let mine = |project: &Value| {
        namespace.is_empty() || project.as_str().is_some_and(|p| p.starts_with(namespace))
    };
    read_snapshot(
        conn,
        &[export_events, export_groups],
        now,
        &mut |query, r| {
            if query == 0 {
                // Text (or a blob) of UTF-8 is read where it lies: as
                // Value::from would give it, with no copy per value.
                let (id, project, fingerprint) = (r.get_ref(0)?, r.get_ref(1)?, r.get_ref(2)?);
                if let (Some(i), Some(p), Some(f)) = (bytes(id), utf8(project), utf8(fingerprint)) {
                    // An id of hex digits is read once, as bits, and is
                    // UTF-8 with no check; any other is checked as before.
                    let read = match super::id_bits::bits_of(i) {
                        Some(bits) => Some(Ok(bits)),
                        None => std::str::from_utf8(i).ok().map(Err),
                    };
                    if let Some(read) = read {
                        if namespace.is_empty() || p.starts_with(namespace) {
                            match read {
                                Ok(bits) => t.event_bits(i, bits, p, f),
                                Err(text) => t.event_text(text, p, f),
                            }
                        }
                        return Ok(());
                    }
                }
                let project = Value::from(r.get_ref(1)?);
                if mine(&project) {
                    t.event(
                        &Value::from(r.get_ref(0)?),
                        &project,
                        &Value::from(r.get_ref(2)?),
                    );
                }
            } else {
                let row = GroupRow {
                    id: Value::from(r.get_ref(0)?),
                    project: Value::from(r.get_ref(1)?),
                    fingerprint: Value::from(r.get_ref(2)?),
                    status: Value::from(r.get_ref(3)?),
                    event_count: Value::from(r.get_ref(4)?),
                };
                if mine(&row.project) {
                    t.group(row);
                }
            }
            Ok(())
        },
    )
}

/// A value's text where it is text or a blob of UTF-8 (as
/// [`Value::from`] reads both), else None.
fn utf8(v: rusqlite::types::ValueRef<'_>) -> Option<&str> {
    bytes(v).and_then(|t| std::str::from_utf8(t).ok())
}

/// The bytes of a text or a blob, not yet checked as UTF-8.
fn bytes(v: rusqlite::types::ValueRef<'_>) -> Option<&[u8]> {
    match v {
        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => Some(t),
        _ => None,
    }
}
