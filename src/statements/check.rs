//! Meaning of a statement file for the `groups` workload.
//!
//! Every check that can be made before a run is made here, so that a file
//! that compiles can only fail at run time for reasons of the target, not of
//! the file. Statements are prepared by SQLite itself on a scratch in-memory
//! database with the file's schema applied: parameters, returned columns and
//! whether a statement may write are what SQLite says, not what a parser of
//! ours guesses.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use std::collections::HashMap;

use super::origin;
use super::scratch::{self, Scratch};
use super::sql_error::sqlite_message;
use super::{
    Block, FileError, GroupsVariant, OpProgram, ParamSource, StatementFile, StepDef, StopIf, Txn,
    TxnMode, INGEST_BUILTINS, RESOLVE_BUILTINS,
};

/// Columns `export.events` must return, in this order.
const EVENTS_COLUMNS: [&str; 5] = ["id", "project", "fingerprint", "group_id", "received_at"];
/// Columns `export.groups` must return, in this order.
const GROUPS_COLUMNS: [&str; 5] = ["id", "project", "fingerprint", "status", "event_count"];

/// Checks a parsed statement file against the `groups` workload and compiles
/// its ops into step programs.
///
/// # Errors
///
/// A [`FileError`] with the offending block's `-- name:` line (0 for a
/// missing block) when:
/// - a block name is not `schema`, `ingest.STEP`, `resolve.STEP`,
///   `export.events` or `export.groups`;
/// - `schema`, an `ingest` or `resolve` step, `export.events` or
///   `export.groups` is missing;
/// - `counts` is used outside `ingest`, `stop-if` outside an op step, ingest
///   has no or several counting steps, the counting step is read-only, or a
///   step at or after the counting step has a `stop-if`;
/// - the schema fails to run (SQLite's message, at the statement's line),
///   or runs past its budget ([`scratch::SCHEMA_STEPS`]);
/// - any block uses `ATTACH`, `DETACH`, `VACUUM INTO` or `load_extension`
///   ([`scratch`]);
/// - a block other than `schema` does not hold exactly one statement, or
///   SQLite cannot prepare it (SQLite's message);
/// - a parameter is not of the `:name` form, or names neither a built-in of
///   the op nor a column of an earlier step (exports take none);
/// - a returned column has no plain name, repeats within the statement, or
///   is named like a built-in of the op;
/// - `stop-if: changes ...` is on a read-only statement, or `stop-if: rows
///   ...` on one that returns no columns;
/// - in `resolve`: a `stop-if` step does not return `event_count`, returns
///   it from a read-only statement, or stops on `= 0`; or no step can stop
///   with an `event_count`;
/// - an export writes, or does not return exactly its canonical columns in
///   the canonical order;
/// - `export.groups` computes `event_count` instead of returning a stored
///   column, or reads `status` from no column of that column's table;
/// - a resolve stop step returns an `event_count` that is not the count
///   column of the row it changes (a parameter, an expression, another
///   column), or does not itself update the status on that table
///   ([`origin::check_resolve_counts`]).
pub fn compile_groups(file: &StatementFile) -> Result<GroupsVariant, FileError> {
    let err = |line: usize, reason: String| FileError::at(&file.path, line, reason);

    let mut schema: Option<&Block> = None;
    let mut ingest: Vec<&Block> = Vec::new();
    let mut resolve: Vec<&Block> = Vec::new();
    let mut export_events: Option<&Block> = None;
    let mut export_groups: Option<&Block> = None;

    for block in &file.blocks {
        let (op, step) = match block.name.split_once('.') {
            Some((op, step)) => (op, Some(step)),
            None => (block.name.as_str(), None),
        };
        match (op, step) {
            ("schema", None) => schema = Some(block),
            ("schema", Some(_)) => {
                return Err(err(
                    block.line,
                    format!("`{}`: `schema` takes no step name", block.name),
                ))
            }
            ("ingest", Some(_)) => ingest.push(block),
            ("resolve", Some(_)) => resolve.push(block),
            ("ingest" | "resolve" | "export", None) => {
                return Err(err(
                    block.line,
                    format!(
                        "`{op}` needs a {} name: write `{op}.{}`",
                        if op == "export" { "table" } else { "step" },
                        if op == "export" { "TABLE" } else { "STEP" }
                    ),
                ))
            }
            ("export", Some("events")) => export_events = Some(block),
            ("export", Some("groups")) => export_groups = Some(block),
            ("export", Some(table)) => {
                return Err(err(
                    block.line,
                    format!(
                        "unknown export `{table}`: the groups workload exports \
                         `export.events` and `export.groups`"
                    ),
                ))
            }
            _ => {
                return Err(err(
                    block.line,
                    format!(
                        "unknown op `{op}` in `{}`: the groups workload has ops \
                         `ingest` and `resolve`, plus `schema` and `export.TABLE`",
                        block.name
                    ),
                ))
            }
        }
        // Branches are the outbox workload's: groups reads every op as a
        // straight line (its results depend on which steps ran), so a jump
        // there would silently change what "duplicate" or "refused" means.
        if let Some(b) = [&block.goto_if, &block.goto, &block.fail_if]
            .into_iter()
            .flatten()
            .next()
        {
            return Err(err(
                b.line,
                format!(
                    "`{}`: branch directives (`goto-if`, `goto`, `fail-if`) belong to the \
                     outbox workload; groups ops run their steps in file order",
                    block.name
                ),
            ));
        }
        if block.counts && op != "ingest" {
            return Err(err(
                block.line,
                format!(
                    "`counts` is allowed in `ingest` steps only (found in `{}`)",
                    block.name
                ),
            ));
        }
        if block.stop_if.is_some() && !matches!(op, "ingest" | "resolve") {
            return Err(err(
                block.line,
                format!(
                    "`stop-if` is allowed on op steps only (found in `{}`)",
                    block.name
                ),
            ));
        }
    }

    let missing = |what: &str| err(0, format!("missing {what}"));
    let schema = schema.ok_or_else(|| missing("block `schema`"))?;
    if ingest.is_empty() {
        return Err(missing("op `ingest` (blocks `ingest.STEP`)"));
    }
    if resolve.is_empty() {
        return Err(missing("op `resolve` (blocks `resolve.STEP`)"));
    }
    let export_events = export_events.ok_or_else(|| missing("block `export.events`"))?;
    let export_groups = export_groups.ok_or_else(|| missing("block `export.groups`"))?;

    // Ingest's counting step: checked before preparing, it needs no SQLite.
    let mut counting: Option<usize> = None;
    for (i, block) in ingest.iter().enumerate() {
        if !block.counts {
            continue;
        }
        if let Some(first) = counting {
            return Err(err(
                block.line,
                format!(
                    "ingest has several counting steps: `{}` and `{}` both have \
                     `counts: true` (exactly one is allowed)",
                    ingest[first].name, block.name
                ),
            ));
        }
        counting = Some(i);
    }
    let Some(counting_step) = counting else {
        return Err(err(
            ingest[0].line,
            "ingest has no counting step: exactly one step needs `counts: true`".to_string(),
        ));
    };
    // Groups reads a stop after counting as neither duplicate nor accepted.
    if let Some(block) = ingest[counting_step..].iter().find(|b| b.stop_if.is_some()) {
        return Err(err(
            block.line,
            format!(
                "`stop-if` on `{}`, at or after the counting step `{}`: a stop after \
                 counting has no meaning in groups (stops before it mean duplicate)",
                block.name, ingest[counting_step].name
            ),
        ));
    }

    let mut conn = scratch::open(file, schema)?;

    let ingest = compile_op(
        file,
        &conn,
        &schema.sql,
        "ingest",
        &INGEST_BUILTINS,
        &ingest,
    )?;
    let resolve = compile_op(
        file,
        &conn,
        &schema.sql,
        "resolve",
        &RESOLVE_BUILTINS,
        &resolve,
    )?;

    let counting = &ingest.steps[counting_step];
    if counting.readonly {
        return Err(err(
            counting.line,
            format!(
                "counting step `ingest.{}` is read-only: it must be the statement \
                 that increments the count",
                counting.name
            ),
        ));
    }
    check_resolve(file, &resolve)?;

    let events_block = export_events;
    let export_events = compile_export(file, &conn, events_block, &EVENTS_COLUMNS)?;
    let export_groups_sql = compile_export(file, &conn, export_groups, &GROUPS_COLUMNS)?;

    let group_columns = origin::group_columns(file, &mut conn, export_groups)?;
    origin::check_resolve_counts(file, &mut conn, &resolve, &group_columns)?;
    origin::check_count_writers(
        file,
        &mut conn,
        &ingest,
        counting_step,
        &resolve,
        &group_columns,
    )?;
    let event_step = origin::event_step(file, &mut conn, events_block, &ingest)?;

    Ok(GroupsVariant {
        file: file.clone(),
        schema: schema.sql.clone(),
        ingest,
        counting_step,
        event_step,
        resolve,
        export_events,
        export_groups: export_groups_sql,
    })
}

/// The meaning of a stop in `resolve` is "resolved, with this count": only a
/// statement that changed the status may say so, and it must say it with a
/// count.
fn check_resolve(file: &StatementFile, resolve: &OpProgram) -> Result<(), FileError> {
    let err = |line: usize, reason: String| FileError::at(&file.path, line, reason);
    let mut can_succeed = false;
    for step in resolve.steps.iter() {
        let Some(stop) = step.stop_if else { continue };
        let returns_count = step.columns.iter().any(|c| c == "event_count");
        if !returns_count {
            return Err(err(
                step.line,
                format!(
                    "`resolve.{}` has `stop-if` but returns no `event_count` column: \
                     a stop in resolve is a successful resolve and must report its count",
                    step.name
                ),
            ));
        }
        if step.readonly {
            return Err(err(
                step.line,
                format!(
                    "`resolve.{}` stops with an `event_count` from a read-only \
                     statement: the count must come from the statement that changed \
                     the status (`UPDATE ... RETURNING event_count`)",
                    step.name
                ),
            ));
        }
        if matches!(stop, StopIf::ChangesZero | StopIf::RowsZero) {
            // Stopping when nothing changed would report a resolve that did
            // not happen, with a NULL count.
            return Err(err(
                step.line,
                format!(
                    "`resolve.{}` stops when nothing changed (`= 0`): a stop in \
                     resolve is a successful resolve; use `rows > 0` or `changes > 0`",
                    step.name
                ),
            ));
        }
        can_succeed = true;
    }
    if !can_succeed {
        return Err(err(
            resolve.steps[0].line,
            "resolve has no step that can stop with an event_count column (add \
             `-- stop-if: rows > 0` to the `UPDATE ... RETURNING event_count` step)"
                .to_string(),
        ));
    }
    Ok(())
}

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
