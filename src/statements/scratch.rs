//! The scratch database a statement file is checked on: in memory, with the
//! file's schema applied one statement at a time, so that an error names
//! the statement's own line.
//!
//! A file is checked before anything runs, and `audit` checks the
//! `variant.sql` of a run folder it was handed, so checking must not touch
//! anything outside that database: `ATTACH` (which creates and writes the
//! file it names), `DETACH`, `VACUUM INTO` (which writes a file) and
//! `load_extension` are refused in every block (no shipped target needs
//! them; a run works on one database), and the schema runs on a budget of
//! [`SCHEMA_STEPS`] SQLite steps, so that an endless statement is an error
//! instead of a `check` that never returns.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::Connection;

use super::sql_error::sqlite_message;
use super::{Block, FileError, StatementFile};
use crate::sql_guard::{self, Budget, Refusals};
use std::ops::{Deref, DerefMut};

/// The SQLite virtual-machine steps a schema may take when checked: creating
/// tables, indexes and triggers takes a few thousand; seeding a table with
/// a million rows, some tens of millions.
pub(super) const SCHEMA_STEPS: u64 = 200_000_000;

/// Why a statement file may not attach databases or load extensions.
pub(super) const REFUSED_WHY: &str = "a statement file may not ATTACH or DETACH databases, \
     VACUUM INTO a file, or call load_extension: it works on the one database under test, \
     and `check` and `audit` must touch no other file";

/// The scratch database of one check: a connection (through `Deref`) that
/// refuses what reaches outside it, and what it refused last.
pub struct Scratch {
    conn: Connection,
    refused: Refusals,
}

impl Deref for Scratch {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

impl Scratch {
    /// What the connection refused since the last call (SQLite's error
    /// for a refused function does not say it was refused).
    pub(super) fn refusal(&self) -> Option<String> {
        self.refused.take()
    }
}

/// Opens the scratch database and applies `schema` (the file's `schema`
/// block). The connection keeps refusing `ATTACH`, `DETACH` and the
/// functions of [`sql_guard::REFUSED_FUNCTIONS`] for the statements the
/// caller prepares on it. Errors: the statement's line, and SQLite's reason
/// or the refusal.
pub fn open(file: &StatementFile, schema: &Block) -> Result<Scratch, FileError> {
    let err = |line: usize, reason: String| FileError::at(&file.path, line, reason);
    let mut conn = Connection::open_in_memory()
        .map_err(|e| err(0, format!("cannot open a scratch SQLite database: {e}")))?;
    let refused = Refusals::default();
    let budget = guard(&mut conn, refused.clone())
        .and_then(|()| Budget::install(&mut conn, SCHEMA_STEPS))
        .map_err(|e| err(0, format!("cannot set up the scratch SQLite database: {e}")))?;
    let sql = schema.sql.as_str();
    // Line k (0-based) of a block's SQL is file line `block.line + 1 + k`.
    let line_at = |offset: usize| schema.line + 1 + sql[..offset].matches('\n').count();
    let fails = |offset: usize, e: &rusqlite::Error| {
        let reason = if budget.ran_out() {
            format!(
                "schema fails: it ran more than {} SQLite steps when checked (an endless \
                 statement?)",
                budget.max()
            )
        } else if let Some(what) = refused.take() {
            // `VACUUM INTO` is refused as the ATTACH it makes.
            let keyword: String = sql[offset..]
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .collect::<String>()
                .to_ascii_uppercase();
            let by = if what.starts_with(&keyword) {
                String::new()
            } else {
                format!(" (by {keyword})")
            };
            format!("schema: {what}{by} refused: {REFUSED_WHY}")
        } else {
            format!("schema fails: {}", sqlite_message(e))
        };
        err(line_at(offset), reason)
    };
    {
        let mut batch = rusqlite::Batch::new(&conn, sql);
        let mut at = 0;
        loop {
            let start = next_token(sql, at);
            let mut stmt = match batch.next() {
                Ok(Some(stmt)) => stmt,
                Ok(None) => break,
                Err(e) => return Err(fails(start, &e)),
            };
            // SQLite keeps a statement's text from where its preparation
            // began (blanks and comments before it included).
            let text = stmt.expanded_sql().unwrap_or_default();
            let begun = sql[at..].find(text.as_str()).map_or(start, |i| at + i);
            let start = next_token(sql, begun);
            // One step, parameters NULL, as a run applies the schema
            // (`execute_batch`).
            let stepped = stmt.raw_query().next().map(drop);
            if let Err(e) = stepped {
                return Err(fails(start, &e));
            }
            at = begun + text.len();
        }
    }
    Ok(Scratch { conn, refused })
}

/// Refuses, on `conn`, what reaches outside its database: attaching (see
/// [`sql_guard::no_attach`]), `ATTACH`/`DETACH` statements and the
/// functions of [`sql_guard::REFUSED_FUNCTIONS`] (an authorizer, which
/// SQLite consults while preparing, so a refused statement never runs;
/// `VACUUM INTO` attaches its output, and is refused as an `ATTACH`).
fn guard(conn: &mut Connection, refused: Refusals) -> rusqlite::Result<()> {
    sql_guard::no_attach(conn)?;
    conn.authorizer(Some(move |ctx: AuthContext<'_>| match ctx.action {
        a @ (AuthAction::Attach { .. } | AuthAction::Detach { .. }) => refused.refuse(&a),
        a @ AuthAction::Function { function_name }
            if sql_guard::refused_function(function_name) =>
        {
            refused.refuse(&a)
        }
        _ => Authorization::Allow,
    }))
}

/// The offset of the first SQL token at or after `at`: past blanks,
/// comments and empty statements (`;`).
fn next_token(sql: &str, at: usize) -> usize {
    let mut i = at.min(sql.len());
    loop {
        let rest = &sql[i..];
        let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
        i += rest.len() - trimmed.len();
        if trimmed.starts_with("--") {
            i += trimmed.find('\n').unwrap_or(trimmed.len());
        } else if let Some(body) = trimmed.strip_prefix("/*") {
            i += body.find("*/").map_or(trimmed.len(), |j| j + 4);
        } else {
            return i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_found_past_blanks_comments_and_empty_statements() {
        let sql = "  -- a\n /* b */ ;\n ATTACH 'x' AS y;";
        assert_eq!(&sql[next_token(sql, 0)..], "ATTACH 'x' AS y;");
        assert_eq!(next_token("  ", 0), 2);
        assert_eq!(next_token("/* open", 0), 7);
    }
}
