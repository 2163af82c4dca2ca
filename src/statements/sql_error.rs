//! SQLite's own message for a rusqlite error, as the statement file's
//! errors quote it (the shared checks, a workload's own, and the scratch
//! database alike).
//!
//! Config layer: imports nothing of the crate.

/// SQLite's own message for a rusqlite error (without rusqlite's echo of
/// the whole SQL text).
pub fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqlInputError { msg, .. } => format!("SQLite: {msg}"),
        rusqlite::Error::SqliteFailure(_, Some(msg)) => format!("SQLite: {msg}"),
        other => format!("SQLite: {other}"),
    }
}
