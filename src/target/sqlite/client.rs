//! The in-process SQLite target: one connection per worker, each step one
//! statement in autocommit, prepared once and cached. Workers run on their
//! own OS threads, so a blocking SQLite call never stalls anything else
//! (measured: a blocking-pool hop per statement costs 5x).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::scenario::limits::MAX_BUSY_TIMEOUT;
use crate::scenario::SqliteTarget;
use crate::statements::StepDef;
use crate::workload::{StepOutcome, Value};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use std::path::Path;

/// A failed step: SQLite's message, and whether the statement may
/// nevertheless have changed rows.
#[derive(Debug, Clone, PartialEq)]
pub struct StepError {
    /// SQLite's error message.
    pub message: String,
    /// False when SQLite guarantees nothing was applied:
    /// - any error of a read-only statement;
    /// - SQLITE_BUSY and SQLITE_LOCKED (an autocommit statement that could
    ///   not get its lock is rolled back);
    /// - SQLITE_CONSTRAINT of a statement whose constraint failures SQLite
    ///   undoes ([`StepDef::undone_on_constraint`]: ABORT, no FAIL) on a
    ///   connection with a rollback journal ([`Journal::RollsBack`]).
    ///
    /// Decided from the error's code, never its text.
    pub maybe_applied: bool,
    /// SQLite answered SQLITE_BUSY or SQLITE_LOCKED (read from the error
    /// code, never from the message): nothing of the statement applied,
    /// and the same statement may succeed later.
    pub busy: bool,
    /// SQLite answered SQLITE_FULL or SQLITE_IOERR (from the code): the
    /// database's files could not be written (a full disk). No design's
    /// fault; the target can no longer be used.
    pub storage: bool,
    /// SQLite's extended result code (e.g. 517, SQLITE_BUSY_SNAPSHOT), when
    /// the error came from SQLite.
    pub code: Option<i32>,
}

/// Whether SQLite can undo a statement on a connection: with
/// `journal_mode = off` there is no rollback journal, and a statement that
/// fails part-way keeps what it wrote. Read once per connection, when it
/// is opened (a step cannot change it: PRAGMA is no step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Journal {
    /// A rollback journal (delete, truncate, persist, memory, wal): a
    /// statement that fails with ABORT is backed out.
    RollsBack,
    /// `journal_mode = off`, or a mode that could not be read: nothing a
    /// failed statement wrote is known to be undone.
    Off,
}

impl Journal {
    /// The journal of `conn` as it is now (a mode that cannot be read
    /// counts as off: it can only make errors indeterminate).
    pub fn of(conn: &Connection) -> Journal {
        match conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)) {
            Ok(mode) if !mode.eq_ignore_ascii_case("off") => Journal::RollsBack,
            _ => Journal::Off,
        }
    }
}

/// `PRAGMA journal_size_limit` of every connection the bench opens: a WAL
/// (or persisted rollback journal) larger than this is cut back to it when
/// it starts again. Above [`crate::wal::CHECKPOINT_ABOVE`] and the keeper's usual
/// overshoot, so that a WAL the keeper keeps bounded is reused in place.
pub const JOURNAL_SIZE_LIMIT: u64 = 512 << 20;

/// Opens a connection to the target database with the scenario's pragmas.
/// A busy timeout beyond [`MAX_BUSY_TIMEOUT`] (the loader refuses one in a
/// scenario; a lock fault's `hold` may be longer) is taken as that.
/// Errors: the file cannot be opened, or a pragma is refused or not taken.
pub fn open(path: &Path, target: &SqliteTarget) -> anyhow::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(target.busy_timeout.min(MAX_BUSY_TIMEOUT))?;
    // journal_mode answers with the mode in effect; a mode SQLite cannot
    // use (e.g. wal on some filesystems) is an error, not a silent fallback.
    let mode: String = conn.query_row(
        &format!("PRAGMA journal_mode = {}", target.journal_mode),
        [],
        |r| r.get(0),
    )?;
    if !mode.eq_ignore_ascii_case(&target.journal_mode) {
        anyhow::bail!(
            "journal_mode {} was refused by SQLite (it kept {mode})",
            target.journal_mode
        );
    }
    conn.pragma_update(None, "synchronous", &target.synchronous)?;
    // A journal that starts again is cut back to this (crate::wal says why
    // the bench needs more than that while a load runs).
    conn.query_row(
        &format!("PRAGMA journal_size_limit = {}", JOURNAL_SIZE_LIMIT),
        [],
        |_| Ok(()),
    )?;
    conn.set_prepared_statement_cache_capacity(32);
    Ok(conn)
}

impl StepError {
    /// The kind of error, as the history records it.
    pub fn kind(&self) -> crate::history::StepErrorKind {
        if self.busy {
            crate::history::StepErrorKind::Busy
        } else {
            crate::history::StepErrorKind::Other
        }
    }
}

/// Executes one step on `conn` (whose journal is `journal`): binds
/// `params` by index, steps the statement to completion (so `changes()` is
/// its own) and collects the rows it returned.
pub fn exec_step(
    conn: &Connection,
    journal: Journal,
    step: &StepDef,
    params: &[&Value],
) -> Result<StepOutcome, StepError> {
    exec(conn, journal, step, params, false)
}

/// Executes one step of an open transaction block on `conn`, as
/// [`exec_step`] does, but leaves the transaction to its caller (the step
/// driver): an error neither rolls back nor is read as the step's alone,
/// since the caller rolls the whole block back.
pub fn exec_step_in_txn(
    conn: &Connection,
    journal: Journal,
    step: &StepDef,
    params: &[&Value],
) -> Result<StepOutcome, StepError> {
    exec(conn, journal, step, params, true)
}

/// [`exec_step`], or [`exec_step_in_txn`] when `in_txn`.
fn exec(
    conn: &Connection,
    journal: Journal,
    step: &StepDef,
    params: &[&Value],
    in_txn: bool,
) -> Result<StepOutcome, StepError> {
    let undone_on_constraint = step.undone_on_constraint && journal == Journal::RollsBack;
    let fail = |e: rusqlite::Error| {
        let code = e.sqlite_error_code();
        let busy = matches!(
            code,
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        );
        let rolled_back =
            busy || (code == Some(ErrorCode::ConstraintViolation) && undone_on_constraint);
        StepError {
            message: e.to_string(),
            maybe_applied: !step.readonly && !rolled_back,
            busy,
            storage: matches!(code, Some(ErrorCode::DiskFull | ErrorCode::SystemIoFailure)),
            code: e.sqlite_error().map(|f| f.extended_code),
        }
    };
    let mut stmt = conn.prepare_cached(&step.sql).map_err(|e| StepError {
        // Nothing ran if the statement could not even be prepared.
        maybe_applied: false,
        ..fail(e)
    })?;
    for (i, v) in params.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, *v).map_err(|e| StepError {
            maybe_applied: false,
            ..fail(e)
        })?;
    }
    let mut rows_out = Vec::new();
    let ran = if step.columns.is_empty() {
        stmt.raw_execute().map(drop)
    } else {
        let n = step.columns.len();
        let mut rows = stmt.raw_query();
        (|| {
            while let Some(row) = rows.next()? {
                let mut r = Vec::with_capacity(n);
                for c in 0..n {
                    r.push(Value::from(row.get_ref(c)?));
                }
                rows_out.push(r);
            }
            Ok(())
        })()
    };
    if let Err(e) = ran {
        let mut err = fail(e);
        if !in_txn && !conn.is_autocommit() {
            // The statement left a transaction open (not expected of a
            // step): what it did is not known to be undone, so it stays
            // indeterminate; the rollback frees the connection.
            let _ = conn.execute_batch("ROLLBACK");
            err.maybe_applied = !step.readonly;
        }
        return Err(err);
    }
    if !in_txn && !conn.is_autocommit() {
        // The statement checker refuses transaction control; this guards the
        // invariant that every step runs alone, whatever slipped through.
        let _ = conn.execute_batch("ROLLBACK");
        return Err(StepError {
            message: "the statement left a transaction open (rolled back): steps must run alone in autocommit".into(),
            maybe_applied: false,
            busy: false,
            storage: false,
            code: None,
        });
    }
    // changes() keeps the last write's count on this connection: a read-only
    // statement changed nothing, whatever it says.
    let changes = if step.readonly { 0 } else { conn.changes() };
    Ok(StepOutcome {
        changes,
        rows: rows_out,
    })
}

/// Why the target can no longer be used after `step` failed with a
/// storage error (SQLITE_FULL, SQLITE_IOERR): every later write would fail
/// the same way, so the load stops and the run exits 3.
pub fn storage_failure(step: &str, e: &StepError) -> String {
    format!(
        "the database could not be written (step {step}: {}); a full disk?",
        e.message
    )
}
