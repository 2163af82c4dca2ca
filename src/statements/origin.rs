//! What a statement does, as SQLite itself tells it while preparing the
//! statement on the scratch database: where each returned column comes
//! from (column metadata: table and column of origin, none for a
//! parameter, a literal or an expression), and which tables and columns it
//! reads, inserts into and updates (the authorizer, which SQLite calls at
//! prepare time for the statement and for every trigger it may fire).
//!
//! A workload's rules on what its statements do rest on this ([`origins`],
//! [`accesses`]), each decided before anything runs, in the workload's own
//! compile; every workload's steps share one: a step whose constraint
//! failure SQLite certainly undoes ([`undone_on_constraint`]).
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use std::fmt;
use std::sync::{Arc, Mutex};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::Connection;

/// A column of a table of the scratch database.
#[derive(Debug, Clone)]
pub struct Column {
    /// The database (`main`, or an attached one's name).
    pub db: String,
    /// The table.
    pub table: String,
    /// The column.
    pub column: String,
}

impl Column {
    /// SQLite names are case-insensitive (ASCII).
    pub fn same(&self, other: &Column) -> bool {
        self.db.eq_ignore_ascii_case(&other.db)
            && self.table.eq_ignore_ascii_case(&other.table)
            && self.column.eq_ignore_ascii_case(&other.column)
    }

    /// Whether the column is one of table `table` of database `db`.
    pub fn same_table(&self, db: &str, table: &str) -> bool {
        self.db.eq_ignore_ascii_case(db) && self.table.eq_ignore_ascii_case(table)
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.db.eq_ignore_ascii_case("main") {
            write!(f, "{}.{}", self.table, self.column)
        } else {
            write!(f, "{}.{}.{}", self.db, self.table, self.column)
        }
    }
}

/// The origin of every column `sql` returns (None: no table column, i.e.
/// a parameter, a literal or an expression). SQLite reports origins for
/// `RETURNING` columns as for a SELECT's (tested in
/// `tests/config/statement_files.rs`), through views and subqueries in FROM.
pub fn origins(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<Option<Column>>> {
    let stmt = conn.prepare(sql)?;
    let out = stmt
        .columns_with_metadata()
        .map(
            |m| match (m.database_name(), m.table_name(), m.origin_name()) {
                (Some(db), Some(table), Some(column)) => Some(Column {
                    db: db.to_string(),
                    table: table.to_string(),
                    column: column.to_string(),
                }),
                _ => None,
            },
        )
        .collect();
    Ok(out)
}

/// What one authorizer call said a statement does to a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// A column is read.
    Read,
    /// A row is inserted.
    Insert,
    /// A column is updated.
    Update,
}

/// One table access a statement (or a trigger it may fire) makes.
#[derive(Debug, Clone)]
pub struct Access {
    /// What it does.
    pub act: Act,
    /// The table's database.
    pub db: String,
    /// The table.
    pub table: String,
    /// The column (reads and updates; None for an insert).
    pub column: Option<String>,
    /// The trigger or view the access is made from (None: the statement's
    /// own text).
    pub via: Option<String>,
}

/// Every read, insert and update SQLite's authorizer reports while
/// preparing `sql`, triggers included (SQLite codes a trigger's
/// statements into the statement that may fire it, so they are
/// authorized at prepare time too).
pub fn accesses(conn: &mut Connection, sql: &str) -> rusqlite::Result<Vec<Access>> {
    let log: Arc<Mutex<Vec<Access>>> = Arc::default();
    let sink = Arc::clone(&log);
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        let (act, table, column) = match ctx.action {
            AuthAction::Read {
                table_name,
                column_name,
            } => (Act::Read, table_name, Some(column_name)),
            AuthAction::Insert { table_name } => (Act::Insert, table_name, None),
            AuthAction::Update {
                table_name,
                column_name,
            } => (Act::Update, table_name, Some(column_name)),
            _ => return Authorization::Allow,
        };
        if let Ok(mut log) = sink.lock() {
            log.push(Access {
                act,
                db: ctx.database_name.unwrap_or("main").to_string(),
                table: table.to_string(),
                column: column.map(str::to_string),
                via: ctx.accessor.map(str::to_string),
            });
        }
        Authorization::Allow
    }))?;
    let prepared = conn.prepare(sql).map(drop);
    conn.authorizer(None::<fn(AuthContext<'_>) -> Authorization>)?;
    prepared?;
    let out = std::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(out)
}

/// Whether SQLite undoes every change of a statement that fails on a
/// constraint: true when neither the statement nor the schema says FAIL
/// (`OR FAIL`, `ON CONFLICT FAIL`, `RAISE(FAIL, ...)` keep the rows changed
/// before the failing one), DEFERRED or `defer_foreign_keys` (a deferred
/// constraint fails at commit, not in the statement) or VIRTUAL (a
/// virtual table may not take part in a statement rollback). The default
/// conflict resolution, ABORT, backs out the statement's changes; in
/// autocommit the statement is the whole transaction. A scan of the text
/// for these words, comments included, can only err toward "may have
/// applied". The connection's journal is the other premise
/// ([`crate::target::sqlite::client::Journal`]).
pub fn undone_on_constraint(statement: &str, schema: &str) -> bool {
    const KEEP: [&str; 4] = ["FAIL", "DEFERRED", "DEFER_FOREIGN_KEYS", "VIRTUAL"];
    let says = |text: &str| {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .any(|w| KEEP.iter().any(|k| w.eq_ignore_ascii_case(k)))
    };
    !says(statement) && !says(schema)
}
