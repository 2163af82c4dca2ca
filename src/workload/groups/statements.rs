//! Meaning of a statement file for the `groups` workload
//! (BacktalkGroups.tla): its ops `ingest` and `resolve`, the exports
//! `export.events` and `export.groups`, and the rules its checkers rest
//! on ([`compile_groups`]), checked on the shared checks of every
//! workload's statements ([`crate::statements`]) and on what SQLite says
//! the statements do ([`super::origin`]).
//!
//! It sits in the groups' folder, in the config layer (below its runtime),
//! beside its scenario section (`super::config`), which lists its
//! built-in variants.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use super::origin;
use crate::statements::{
    compile_export, compile_op, open_scratch, parse, Block, FileError, OpProgram, StatementFile,
    StopIf,
};
use std::path::Path;

/// A statement file checked against the `groups` workload.
#[derive(Debug, Clone)]
pub struct GroupsVariant {
    /// The parsed file.
    pub file: StatementFile,
    /// The `schema` block (may hold several statements; run once as a batch).
    pub schema: String,
    /// Builtins: `event_id, project, fingerprint, group_id, message, now_ms` (in this order).
    pub ingest: OpProgram,
    /// Index into `ingest.steps` of the step with `counts: true`.
    pub counting_step: usize,
    /// Index into `ingest.steps` of the step that inserts the event row,
    /// found from what it does: the first step that inserts (itself or
    /// through a trigger) into the table `export.events` takes its rows
    /// from. None when no step does. A step that inserts through a trigger
    /// reports its own statement's `changes`, not the trigger's.
    pub event_step: Option<usize>,
    /// Builtins: `group_id, now_ms, project, fingerprint` (in this order).
    pub resolve: OpProgram,
    /// `export.events`: returns columns id, project, fingerprint, group_id, received_at.
    pub export_events: String,
    /// `export.groups`: returns columns id, project, fingerprint, status, event_count.
    pub export_groups: String,
}

/// Built-in parameters of the groups `ingest` op, in
/// [`crate::statements::ParamSource::Builtin`] order.
pub const INGEST_BUILTINS: [&str; 6] = [
    "event_id",
    "project",
    "fingerprint",
    "group_id",
    "message",
    "now_ms",
];
/// Built-in parameters of the groups `resolve` op, in
/// [`crate::statements::ParamSource::Builtin`] order.
/// `project` and `fingerprint` let a design that computes its own group
/// ids address its row (they come after the first two, so that files
/// compiled before keep their indexes).
pub const RESOLVE_BUILTINS: [&str; 4] = ["group_id", "now_ms", "project", "fingerprint"];

/// Columns `export.events` must return, in this order.
pub const EVENTS_COLUMNS: [&str; 5] = ["id", "project", "fingerprint", "group_id", "received_at"];
/// Columns `export.groups` must return, in this order.
pub const GROUPS_COLUMNS: [&str; 5] = ["id", "project", "fingerprint", "status", "event_count"];

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
///   or runs past its budget (the scratch database's step budget);
/// - any block uses `ATTACH`, `DETACH`, `VACUUM INTO` or `load_extension`
///   ([`crate::statements::Scratch`]);
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
///   ([`super::origin::check_resolve_counts`]).
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

    let mut conn = open_scratch(file, schema)?;

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

/// Locates, parses and checks a groups variant (a statement file, or a
/// built-in one, [`crate::variant::locate`]).
/// Errors: file, line and reason (exit 2).
pub fn load_groups(variant: &str, scenario_dir: Option<&Path>) -> Result<GroupsVariant, FileError> {
    let (path, text) = crate::variant::locate(variant, scenario_dir)?;
    compile_groups(&parse(&path, &text)?)
}
