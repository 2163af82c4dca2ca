//! Bounds on SQL the bench runs from files it does not control: a
//! statement file's schema when it is checked (`check`, and `audit`, which
//! checks a run folder's saved `variant.sql`), and a run folder's export
//! queries when it is audited. Such SQL gets a budget of SQLite
//! virtual-machine steps (a progress handler: an endless recursive query
//! ends with an error instead of running forever), may call no function
//! that reaches outside the database, and may attach no other database.
//!
//! Layer: core, the lowest. May import the modules of its own layer only.

use rusqlite::hooks::{AuthAction, Authorization};
use rusqlite::Connection;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Functions no checked or audited SQL may call: `load_extension` loads
/// code into the process, and the two-argument `fts3_tokenizer` hands
/// SQLite a pointer.
pub const REFUSED_FUNCTIONS: [&str; 2] = ["load_extension", "fts3_tokenizer"];

/// Whether `name` is one of [`REFUSED_FUNCTIONS`] (SQLite's function
/// names are case-insensitive).
pub fn refused_function(name: &str) -> bool {
    REFUSED_FUNCTIONS
        .iter()
        .any(|f| f.eq_ignore_ascii_case(name))
}

/// What an authorizer refused last, kept for the error that follows: SQLite
/// reports a refused function as a plain error (`SQLITE_ERROR`, as for an
/// unknown one), so the refusal is recorded where it is made rather than
/// read from the error.
#[derive(Debug, Clone, Default)]
pub struct Refusals(Arc<Mutex<Option<String>>>);

impl Refusals {
    /// Records `action` as refused; returns the authorizer's answer.
    pub fn refuse(&self, action: &AuthAction<'_>) -> Authorization {
        if let Ok(mut last) = self.0.lock() {
            *last = Some(describe(action));
        }
        Authorization::Deny
    }

    /// What was refused since the last call, if anything.
    pub fn take(&self) -> Option<String> {
        self.0.lock().ok().and_then(|mut last| last.take())
    }
}

/// An authorizer's action in words, for a refusal's message.
fn describe(action: &AuthAction<'_>) -> String {
    match action {
        AuthAction::Attach { filename } => format!("ATTACH {filename:?}"),
        AuthAction::Detach { database_name } => format!("DETACH {database_name}"),
        AuthAction::Function { function_name } => format!("the function {function_name}"),
        AuthAction::Insert { table_name } => format!("INSERT into {table_name}"),
        AuthAction::Update { table_name, .. } => format!("UPDATE of {table_name}"),
        AuthAction::Delete { table_name } => format!("DELETE from {table_name}"),
        AuthAction::Pragma { pragma_name, .. } => format!("PRAGMA {pragma_name}"),
        other => format!("{other:?}"),
    }
}

/// Virtual-machine steps between two calls of the progress handler: often
/// enough to stop close to the budget, rare enough to cost nothing.
const STEPS_PER_CALL: u64 = 10_000;

/// The work a connection may do, counted in SQLite virtual-machine steps
/// over all its statements together; when it is spent, the running
/// statement is interrupted (`SQLITE_INTERRUPT`) and so is every later one.
#[derive(Debug, Clone)]
pub struct Budget {
    max: u64,
    spent: Arc<AtomicU64>,
    ran_out: Arc<AtomicBool>,
}

impl Budget {
    /// Installs a budget of `max_steps` on `conn` (its progress handler).
    /// Errors: SQLite's.
    pub fn install(conn: &mut Connection, max_steps: u64) -> rusqlite::Result<Budget> {
        let budget = Budget {
            max: max_steps,
            spent: Arc::default(),
            ran_out: Arc::default(),
        };
        let (spent, ran_out) = (budget.spent.clone(), budget.ran_out.clone());
        conn.progress_handler(
            STEPS_PER_CALL as i32,
            Some(move || {
                let now = spent.fetch_add(STEPS_PER_CALL, Ordering::Relaxed) + STEPS_PER_CALL;
                if now >= max_steps {
                    ran_out.store(true, Ordering::Relaxed);
                    return true;
                }
                false
            }),
        )?;
        Ok(budget)
    }

    /// Whether the budget ran out (an interrupted statement was stopped by
    /// it, not by anything else).
    pub fn ran_out(&self) -> bool {
        self.ran_out.load(Ordering::Relaxed)
    }

    /// The budget, in steps.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Steps spent so far, to the nearest [`STEPS_PER_CALL`] below.
    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }
}

/// Forbids `conn` to attach databases, whatever an authorizer says:
/// `ATTACH` (and `VACUUM INTO`, which attaches its output) can then
/// neither create nor write a file. Errors: SQLite's.
pub fn no_attach(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::config::DbConfig;
    conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE, false)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_query_ends_when_the_budget_is_spent() {
        let mut conn = Connection::open_in_memory().unwrap();
        let b = Budget::install(&mut conn, 1_000_000).unwrap();
        let e = conn
            .query_row(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
                 SELECT count(*) FROM c",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_err();
        assert_eq!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::OperationInterrupted)
        );
        assert!(b.ran_out());
        assert!(b.spent() >= b.max());
    }

    #[test]
    fn attaching_creates_no_file() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("x.db");
        let conn = Connection::open_in_memory().unwrap();
        no_attach(&conn).unwrap();
        let sql = format!("ATTACH '{}' AS x", target.display());
        assert!(conn.execute_batch(&sql).is_err());
        let sql = format!("VACUUM INTO '{}'", target.display());
        assert!(conn.execute_batch(&sql).is_err());
        assert!(!target.exists());
    }
}
