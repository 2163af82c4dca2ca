//! A workload's final tables read from a SQLite database as one snapshot:
//! its export queries run in order in one read transaction, every row
//! handed to the workload, which keeps what it needs of it. The
//! in-process target's database after the load, a saved `target.db` in an
//! audit, a service's own database (`[audit] sqlite`) are read this way.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use rusqlite::{Connection, Row};

/// Runs `queries` in order in one read transaction on `conn`, handing
/// every row of `queries[i]` to `row(i, row)`. Returns the read's start
/// and end (`now` at the transaction's start and before its commit, ns
/// since run start). Errors: SQLite's (a query fails, a table is missing)
/// or `row`'s (a row with fewer columns).
pub fn read_snapshot(
    conn: &mut Connection,
    queries: &[&str],
    now: &dyn Fn() -> u64,
    row: &mut dyn FnMut(usize, &Row<'_>) -> rusqlite::Result<()>,
) -> rusqlite::Result<[u64; 2]> {
    let tx = conn.transaction()?;
    let start = now();
    for (i, sql) in queries.iter().enumerate() {
        let mut st = tx.prepare(sql)?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            row(i, r)?;
        }
    }
    let end = now();
    tx.commit()?;
    Ok([start, end])
}
