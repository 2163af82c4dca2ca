//! What every workload's replay script for the `sqlite3` shell shares:
//! its opening (the database made anew, the schema on connection 0, a
//! shell connection per recorded worker), a parameter value as the
//! shell's `.parameter set` takes it, and a step's parameter names as
//! SQLite numbers them. The workloads write their own comments.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use crate::workload::value::Value;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A value as an argument of the shell's `.parameter set`: an SQL
/// literal, in double quotes (the shell strips them and reads C escapes).
pub fn shell_literal(v: &Value) -> String {
    let sql = match v {
        Value::Null => "NULL".to_string(),
        Value::Int(i) => i.to_string(),
        Value::Real(f) => format!("{f:?}"),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    };
    format!("\"{}\"", sql.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `sql` ending in a semicolon, as the shell needs to run it.
pub fn ended(sql: &str) -> String {
    let t = sql.trim_end();
    if t.ends_with(';') {
        t.to_string()
    } else {
        format!("{t};")
    }
}

/// The parameter names of `sql` in SQLite's index order, as `db` (any
/// database with the file's schema) prepares it.
pub fn param_names(db: &Connection, sql: &str) -> Vec<String> {
    db.prepare(sql)
        .map(|st| {
            (1..=st.parameter_count())
                .map(|i| st.parameter_name(i).unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The script's opening: the title, how to run it, `db_name` made anew
/// with `schema` on connection 0, and a connection per worker of
/// `workers` (in the order they first run). Returns each worker's
/// connection number.
pub fn opening(
    out: &mut String,
    (title, db_name): (&str, &str),
    schema: &str,
    workers: impl IntoIterator<Item = u32>,
) -> BTreeMap<u32, usize> {
    let _ = writeln!(out, "-- {title}");
    let _ = writeln!(
        out,
        "-- Run it with `sqlite3 < THIS_FILE` in a folder of your choice: it makes {db_name} \
         there (anew each time)."
    );
    // Connection 0 holds the schema and the final read; each worker gets
    // the next number, in the order it first runs.
    let mut conn_of: BTreeMap<u32, usize> = BTreeMap::new();
    for w in workers {
        let next = conn_of.len() + 1;
        conn_of.entry(w).or_insert(next);
    }
    let listed: Vec<String> = conn_of
        .iter()
        .map(|(w, c)| format!("worker {w} on connection {c}"))
        .collect();
    let _ = writeln!(
        out,
        "-- One shell connection per recorded worker: {}; connection 0 makes the schema and \
         reads the final rows.",
        listed.join(", ")
    );
    let _ = writeln!(out, ".bail on\n.connection 0\n.open --new {db_name}");
    let _ = writeln!(out, "-- the statement file's schema\n{}", ended(schema));
    for c in conn_of.values() {
        let _ = writeln!(out, ".connection {c}\n.open {db_name}");
    }
    let _ = writeln!(out, ".headers on");
    conn_of
}
