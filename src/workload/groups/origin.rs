//! The groups workload's rules on what its statements do, decided before
//! anything runs from what SQLite says while preparing them on the scratch
//! database ([`crate::statements::origin`]: column origins and table
//! accesses):
//! - `export.groups` returns a stored count, and a status read from the
//!   count's row ([`group_columns`]);
//! - a successful resolve's `event_count` is the changed row's own count
//!   column, returned by the statement that changed the row's status
//!   ([`check_resolve_counts`]);
//! - only the counting step changes a group's count
//!   ([`check_count_writers`]);
//! - the ingest step that inserts the event row is found from what it does,
//!   not from its index ([`event_step`]).
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use crate::statements::origin::{accesses, origins, Act, Column};
use crate::statements::{sqlite_message, Block, FileError, OpProgram, StatementFile};
use rusqlite::Connection;

/// Where `export.groups` takes a group's count and status from.
#[derive(Debug, Clone)]
pub(super) struct GroupColumns {
    /// The stored count column (`event_count`'s origin).
    count: Column,
    /// The columns of the count's table the status is read from: its
    /// origin when SQLite gives one; for a computed status (`CASE state
    /// WHEN 'active' THEN 'open' ... END`), every column of that table the
    /// export reads other than the count and the origins of id, project
    /// and fingerprint.
    status: Vec<Column>,
    /// The status is a plain column (else computed from `status`).
    status_plain: bool,
}

/// Reads the origin of `export.groups`' count and status.
///
/// # Errors
/// `export.groups`' `event_count` is no stored column, or its status is
/// read from no column of the count's table.
pub(super) fn group_columns(
    file: &StatementFile,
    conn: &mut Connection,
    block: &Block,
) -> Result<GroupColumns, FileError> {
    let err = |reason: String| FileError::at(&file.path, block.line, reason);
    let sqlite = |e: rusqlite::Error| err(format!("`{}`: {}", block.name, sqlite_message(&e)));
    // Columns in the canonical order: id, project, fingerprint, status, event_count.
    let cols = origins(conn, &block.sql).map_err(sqlite)?;
    let Some(count) = cols[4].clone() else {
        return Err(err(format!(
            "`{}` computes `event_count` (SQLite reports no table column as its origin): \
             the count a resolve returns is checked against the group's stored count, so \
             return that column itself (e.g. `times_seen AS event_count`)",
            block.name
        )));
    };
    if let Some(status) = cols[3].clone() {
        if !status.same_table(&count.db, &count.table) {
            return Err(err(format!(
                "`{}` reads `status` from {status} and `event_count` from {count}: a \
                 resolve changes the status and reports the count in one statement, so \
                 both must be columns of one row",
                block.name
            )));
        }
        return Ok(GroupColumns {
            count,
            status: vec![status],
            status_plain: true,
        });
    }
    let identity: Vec<Column> = cols[..3].iter().flatten().cloned().collect();
    let mut status: Vec<Column> = Vec::new();
    for a in accesses(conn, &block.sql).map_err(sqlite)? {
        let Some(column) = a.column else { continue };
        let c = Column {
            db: a.db,
            table: a.table,
            column,
        };
        if a.act == Act::Read
            && c.same_table(&count.db, &count.table)
            && !c.same(&count)
            && !identity.iter().any(|i| i.same(&c))
            && !status.iter().any(|s| s.same(&c))
        {
            status.push(c);
        }
    }
    if status.is_empty() {
        return Err(err(format!(
            "`{}` reads `status` from no column of {} (the table its `event_count` \
             comes from): a resolve changes the status and reports the count in one \
             statement, so both must be columns of one row",
            block.name, count.table
        )));
    }
    Ok(GroupColumns {
        count,
        status,
        status_plain: false,
    })
}

/// The premise of NoMissedRegression's count rule: the `event_count` a
/// successful resolve returns is the group's count at the instant its
/// status became resolved. Every resolve step that can stop (a successful
/// resolve) must therefore return, as `event_count`, the count column of
/// the row it changes (`RETURNING` a bare column: its origin is that
/// column, and a RETURNING clause can only name the changed row's
/// columns), and must itself UPDATE the status (or upsert it) on that
/// table.
///
/// # Errors
/// A stop step's `event_count` has another origin (a parameter, an
/// expression, another column), or the step does not write the status.
pub(super) fn check_resolve_counts(
    file: &StatementFile,
    conn: &mut Connection,
    resolve: &OpProgram,
    groups: &GroupColumns,
) -> Result<(), FileError> {
    let count = &groups.count;
    for step in resolve.steps.iter().filter(|s| s.stop_if.is_some()) {
        let err = |reason: String| FileError::at(&file.path, step.line, reason);
        let sqlite =
            |e: rusqlite::Error| err(format!("`resolve.{}`: {}", step.name, sqlite_message(&e)));
        let Some(at) = step.columns.iter().position(|c| c == "event_count") else {
            continue; // refused earlier, with its own reason
        };
        let why = "NoMissedRegression's count rule needs the group's count at the \
                   instant its status changed";
        let fix = if count.column == "event_count" {
            "`... RETURNING event_count`".to_string()
        } else {
            format!("`... RETURNING {} AS event_count`", count.column)
        };
        match &origins(conn, &step.sql).map_err(sqlite)?[at] {
            Some(c) if c.same(count) => {}
            Some(c) => {
                return Err(err(format!(
                    "`resolve.{}` returns `event_count` from {c}, not from {count} of the \
                     row it changes (the column `export.groups` returns as event_count): \
                     {why} ({fix})",
                    step.name
                )))
            }
            None => {
                return Err(err(format!(
                    "`resolve.{}` returns `event_count` from a parameter, a literal or an \
                     expression (SQLite reports no table column as its origin), not from \
                     {count} of the row it changes: {why}, which only the row's own \
                     column holds ({fix})",
                    step.name
                )))
            }
        }
        // The statement itself (not a trigger it fires) must write the
        // status of the table whose row it returns.
        let writes_status = accesses(conn, &step.sql).map_err(sqlite)?.iter().any(|a| {
            a.act == Act::Update
                && a.via.is_none()
                && a.column.as_ref().is_some_and(|column| {
                    let c = Column {
                        db: a.db.clone(),
                        table: a.table.clone(),
                        column: column.clone(),
                    };
                    groups.status.iter().any(|s| s.same(&c))
                })
        });
        if !writes_status {
            let names: Vec<String> = groups.status.iter().map(|s| s.to_string()).collect();
            return Err(err(format!(
                "`resolve.{}` stops with an `event_count` but does not update {} ({}): \
                 only the statement that changed the status can report the count at that \
                 instant (`UPDATE ... SET status = 'resolved' ... RETURNING event_count`)",
                step.name,
                names.join(" or "),
                if groups.status_plain {
                    "the column `export.groups` returns as status"
                } else {
                    "the columns `export.groups` computes its status from"
                }
            )));
        }
    }
    Ok(())
}

/// The index of the ingest step that inserts the event row: the first
/// step that inserts (itself or through a trigger) into the table
/// `export.events` takes its rows from (the origin table of its first
/// column that has one; when every column is computed, the table it
/// reads, if it reads exactly one). None when no step inserts there.
///
/// Several steps may insert there; the first is the one: it is the
/// earliest point at which an op can put its event row in place, so an
/// op that ran it and then stopped or failed before counting is the one
/// whose event may be stranded; a later insert into the same table by the
/// same op finds the row already there when the first applied.
///
/// # Errors
/// SQLite cannot prepare a statement it prepared before (not expected).
pub(super) fn event_step(
    file: &StatementFile,
    conn: &mut Connection,
    export_events: &Block,
    ingest: &OpProgram,
) -> Result<Option<usize>, FileError> {
    let sqlite =
        |line: usize, e: rusqlite::Error| FileError::at(&file.path, line, sqlite_message(&e));
    let mut tables: Vec<(String, String)> = origins(conn, &export_events.sql)
        .map_err(|e| sqlite(export_events.line, e))?
        .into_iter()
        .flatten()
        .take(1)
        .map(|c| (c.db, c.table))
        .collect();
    if tables.is_empty() {
        for a in accesses(conn, &export_events.sql).map_err(|e| sqlite(export_events.line, e))? {
            if a.act == Act::Read
                && !tables
                    .iter()
                    .any(|(d, t)| d.eq_ignore_ascii_case(&a.db) && t.eq_ignore_ascii_case(&a.table))
            {
                tables.push((a.db, a.table));
            }
        }
        if tables.len() != 1 {
            return Ok(None);
        }
    }
    for (i, step) in ingest.steps.iter().enumerate() {
        let inserts = accesses(conn, &step.sql)
            .map_err(|e| sqlite(step.line, e))?
            .iter()
            .any(|a| {
                a.act == Act::Insert
                    && tables.iter().any(|(d, t)| {
                        d.eq_ignore_ascii_case(&a.db) && t.eq_ignore_ascii_case(&a.table)
                    })
            });
        if inserts {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// The premise CountExact and NoMissedRegression share: a group's count
/// changes only through the counting step. The counting step must write
/// the count column (update it, or insert into its table: an UPSERT that
/// creates the group with its first count), and no other step of either op
/// may update it, itself or through a trigger it fires: the checkers date
/// every change of the count by the counting steps, so a count changed by
/// another step would be judged a double count or a missed regression on a
/// design that may be correct.
///
/// # Errors
/// The counting step does not write the count column, or another step
/// updates it (the error names the trigger it does it through).
pub(super) fn check_count_writers(
    file: &StatementFile,
    conn: &mut Connection,
    ingest: &OpProgram,
    counting_step: usize,
    resolve: &OpProgram,
    groups: &GroupColumns,
) -> Result<(), FileError> {
    let count = &groups.count;
    let steps = ingest
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| ("ingest", Some(i), s))
        .chain(resolve.steps.iter().map(|s| ("resolve", None, s)));
    for (op, index, step) in steps {
        let err = |reason: String| FileError::at(&file.path, step.line, reason);
        let found = accesses(conn, &step.sql)
            .map_err(|e| err(format!("`{op}.{}`: {}", step.name, sqlite_message(&e))))?;
        let updates = found.iter().find(|a| {
            a.act == Act::Update
                && a.column.as_ref().is_some_and(|column| {
                    count.same(&Column {
                        db: a.db.clone(),
                        table: a.table.clone(),
                        column: column.clone(),
                    })
                })
        });
        if index == Some(counting_step) {
            let inserts = found
                .iter()
                .any(|a| a.act == Act::Insert && count.same_table(&a.db, &a.table));
            if updates.is_none() && !inserts {
                return Err(err(format!(
                    "counting step `ingest.{}` neither updates {count} nor inserts into {}: \
                     `counts: true` marks the statement that changes the group's count \
                     (the column `export.groups` returns as event_count)",
                    step.name, count.table
                )));
            }
            continue;
        }
        if let Some(a) = updates {
            let via = a
                .via
                .as_ref()
                .map(|t| format!(" through trigger or view `{t}`"))
                .unwrap_or_default();
            return Err(err(format!(
                "`{op}.{}` updates {count}{via}, but only the counting step may change a \
                 group's count: CountExact and NoMissedRegression date every change of the \
                 count by the counting steps (mark the step that changes the count with \
                 `counts: true`)",
                step.name
            )));
        }
    }
    Ok(())
}
