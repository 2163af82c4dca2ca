//! The checks of a statement file that every workload shares: an op's
//! steps ([`compile_op`]) and an export ([`compile_export`]), each block
//! prepared by SQLite itself on the scratch database with the file's
//! schema applied. A workload's own compile (which ops and exports it
//! has, and what they must mean) builds on them in its folder.
//!
//! Every check that can be made before a run is made, so that a file
//! that compiles can only fail at run time for reasons of the target, not of
//! the file: parameters, returned columns and whether a statement may write
//! are what SQLite says, not what a parser of ours guesses.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use std::collections::HashMap;

use super::origin;
use super::scratch::{self, Scratch};
use super::sql_error::sqlite_message;
use super::{
    Block, FileError, OpProgram, ParamSource, StatementFile, StepDef, StopIf, Txn, TxnMode,
};

/// Prepares the steps of one op in order, resolving each parameter to a
/// built-in or to a column of an earlier step.
pub fn compile_op(
    file: &StatementFile,
    conn: &Scratch,
    schema: &str,
    op: &str,
    builtins: &[&'static str],
    blocks: &[&Block],
) -> Result<OpProgram, FileError> {
    let err = |line: usize, reason: String| FileError::at(&file.path, line, reason);
    // Column name -> (step, column) of the latest earlier step returning it.
    let mut env: HashMap<String, (usize, usize)> = HashMap::new();
    let mut steps = Vec::with_capacity(blocks.len());
    let mut txns = Vec::new();
    // The block open at this step: its mode and first step (the parser
    // has checked that blocks are closed and do not nest).
    let mut open: Option<(TxnMode, usize)> = None;

    for (index, block) in blocks.iter().enumerate() {
        if let Some(mode) = block.begin {
            open = Some((mode, index));
        }
        let stmt = prepare_one(file, conn, block)?;
        let mut params = Vec::with_capacity(stmt.parameter_count());
        for i in 1..=stmt.parameter_count() {
            let name = named_param(stmt.parameter_name(i))
                .map_err(|r| err(block.line, format!("`{}`: {r}", block.name)))?;
            let source = if let Some(b) = builtins.iter().position(|b| *b == name) {
                ParamSource::Builtin(b)
            } else if let Some(&(step, column)) = env.get(name) {
                ParamSource::Column { step, column }
            } else {
                return Err(err(
                    block.line,
                    format!(
                        "`{}`: unknown parameter `:{name}` (not a built-in of {op}: {}; \
                         nor a column returned by an earlier step of {op})",
                        block.name,
                        builtins
                            .iter()
                            .map(|b| format!(":{b}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            if let (Some((TxnMode::Batch, first)), ParamSource::Column { step, .. }) =
                (open, &source)
            {
                if *step >= first {
                    return Err(err(
                        block.line,
                        format!(
                            "`{}`: parameter `:{name}` is a column of `{op}.{}`, in the \
                             same batch: a batch's parameters are bound before it is sent, \
                             so no statement of a batch reads another's result (use \
                             `begin: immediate` for that)",
                            block.name,
                            steps_name(blocks[*step])
                        ),
                    ));
                }
            }
            params.push(source);
        }
        if let (Some((TxnMode::Batch, _)), Some(_)) = (open, block.stop_if) {
            return Err(err(
                block.line,
                format!(
                    "`{}`: `stop-if` inside a batch: a batch runs all its statements \
                     (use `begin: immediate` to stop part-way)",
                    block.name
                ),
            ));
        }

        let columns = step_columns(&stmt, builtins)
            .map_err(|r| err(block.line, format!("`{}`: {r}", block.name)))?;
        let readonly = stmt.readonly();
        match block.stop_if {
            Some(StopIf::ChangesZero | StopIf::ChangesPositive) if readonly => {
                return Err(err(
                    block.line,
                    format!(
                        "`{}`: `stop-if: changes ...` needs a statement that modifies \
                         rows; this one is read-only (use `stop-if: rows ...`)",
                        block.name
                    ),
                ))
            }
            Some(StopIf::RowsZero | StopIf::RowsPositive) if columns.is_empty() => {
                return Err(err(
                    block.line,
                    format!(
                        "`{}`: `stop-if: rows ...` needs a statement that returns rows \
                         (SELECT or ... RETURNING); this one returns no columns",
                        block.name
                    ),
                ))
            }
            _ => {}
        }
        for (c, name) in columns.iter().enumerate() {
            env.insert(name.clone(), (index, c));
        }
        let step = block
            .name
            .split_once('.')
            .map_or(block.name.as_str(), |(_, s)| s);
        steps.push(StepDef {
            name: step.to_string(),
            line: block.line,
            sql: block.sql.clone(),
            stop_if: block.stop_if,
            counts: block.counts,
            goto_if: None,
            goto: None,
            fail_if: None,
            params,
            columns,
            readonly,
            undone_on_constraint: origin::undone_on_constraint(&block.sql, schema),
        });
        if block.commit {
            if let Some((mode, first)) = open.take() {
                txns.push(Txn {
                    mode,
                    first,
                    last: index,
                });
            }
        }
    }
    Ok(OpProgram {
        op: op.to_string(),
        builtins: builtins.to_vec(),
        steps,
        txns,
    })
}

/// The step part of an op step's name.
fn steps_name(block: &Block) -> &str {
    block
        .name
        .split_once('.')
        .map_or(block.name.as_str(), |(_, s)| s)
}

/// Prepares an export: no parameters, read-only, exactly the canonical
/// columns in the canonical order. Returns its SQL.
pub fn compile_export(
    file: &StatementFile,
    conn: &Scratch,
    block: &Block,
    expected: &[&str],
) -> Result<String, FileError> {
    let err = |reason: String| FileError::at(&file.path, block.line, reason);
    let stmt = prepare_one(file, conn, block)?;
    if stmt.parameter_count() > 0 {
        let name = stmt.parameter_name(1).unwrap_or("?");
        return Err(err(format!(
            "`{}`: export blocks take no parameters (found `{name}`)",
            block.name
        )));
    }
    if !stmt.readonly() {
        return Err(err(format!(
            "`{}`: an export must be read-only (it runs inside the audit's read \
             transaction)",
            block.name
        )));
    }
    let columns: Vec<&str> = stmt.column_names().collect();
    if columns != expected {
        return Err(err(format!(
            "`{}` must return exactly the columns {} in this order (alias them with \
             AS); it returns [{}]",
            block.name,
            expected.join(", "),
            columns.join(", ")
        )));
    }
    Ok(block.sql.clone())
}

/// Prepares a block that must hold exactly one statement.
pub(super) fn prepare_one<'c>(
    file: &StatementFile,
    conn: &'c Scratch,
    block: &Block,
) -> Result<rusqlite::Statement<'c>, FileError> {
    // A step is one query or one row change, run alone in autocommit:
    // transaction control would wrap several steps, and PRAGMA, ATTACH,
    // DDL and the like change the connection or the schema under test.
    let kw = first_keyword(&block.sql);
    let is_step = matches!(
        kw.as_str(),
        "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "REPLACE" | "WITH" | "VALUES"
    );
    let not_a_step = || {
        FileError::at(
            &file.path,
            block.line,
            format!(
                "`{}` is a {kw} statement: a step or export must be a query or a row \
                 change (SELECT, INSERT, UPDATE, DELETE, REPLACE, WITH, VALUES); \
                 transaction control and connection or schema statements are not steps \
                 (put DDL in `schema`), since every step runs alone in autocommit",
                block.name
            ),
        )
    };
    match conn.prepare(&block.sql) {
        Ok(stmt) if is_step => Ok(stmt),
        Ok(_) => Err(not_a_step()),
        Err(e) => {
            let refused = conn.refusal();
            // An ATTACH step is refused while prepared; what it is says more.
            if refused.is_some() && !is_step {
                return Err(not_a_step());
            }
            let reason = match (e, refused) {
                (rusqlite::Error::MultipleStatement, _) => format!(
                    "`{}` holds more than one statement; only `schema` may hold several \
                     (each step is one statement, run alone)",
                    block.name
                ),
                (rusqlite::Error::Empty, _) => {
                    format!("`{}` holds no SQL statement", block.name)
                }
                (_, Some(what)) => {
                    format!("`{}`: {what} refused: {}", block.name, scratch::REFUSED_WHY)
                }
                (other, None) => format!("`{}`: {}", block.name, sqlite_message(&other)),
            };
            Err(FileError::at(&file.path, block.line, reason))
        }
    }
}

/// The first SQL keyword of a block, upper case, past comments and blanks.
fn first_keyword(sql: &str) -> String {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map(|(_, r)| r).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map(|(_, r)| r).unwrap_or("");
        } else {
            break;
        }
    }
    rest.chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_uppercase()
}

/// The name of a `:name` parameter, without its colon.
fn named_param(name: Option<&str>) -> Result<&str, String> {
    match name {
        None => Err("positional parameter `?` is not allowed: use named `:name` parameters".into()),
        Some(n) => match n.strip_prefix(':') {
            Some(bare) => Ok(bare),
            None => Err(format!(
                "parameter `{n}` is not allowed: use named `:name` parameters only"
            )),
        },
    }
}

/// The columns a step returns, each a plain name that is no built-in and
/// appears once (a later step may override it; one statement may not).
fn step_columns(stmt: &rusqlite::Statement<'_>, builtins: &[&str]) -> Result<Vec<String>, String> {
    let mut columns: Vec<String> = Vec::new();
    for name in stmt.column_names() {
        let plain = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !plain {
            return Err(format!(
                "column `{name}` has no plain name: alias it (e.g. `count(*) AS n`)"
            ));
        }
        if builtins.contains(&name) {
            return Err(format!(
                "column `{name}` is named like a built-in parameter; rename it with AS"
            ));
        }
        if columns.iter().any(|c| c == name) {
            return Err(format!(
                "column `{name}` is returned twice; alias one of them"
            ));
        }
        columns.push(name.to_string());
    }
    Ok(columns)
}
