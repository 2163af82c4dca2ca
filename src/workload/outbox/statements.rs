//! Meaning of a statement file for the `outbox` workload
//! (`exactly_once_none_atomic.tla`): one op, `handle`, whose steps may
//! branch (`goto-if`, `goto`) and end as a natural failure (`fail-if`, a
//! lost compare-and-swap), and the exports that map what the file stores
//! onto the canonical tables `state_log`, `outbox`, `out_queue` and
//! `processed`.
//!
//! As for groups, every statement is prepared by SQLite itself on a scratch
//! database with the schema applied, so parameters and returned columns are
//! what SQLite says. Branch targets and the columns a condition names are
//! checked here, before anything runs.
//!
//! It sits in the outbox's folder, in the config layer (below its runtime),
//! beside its scenario section (`super::config`), which lists its
//! built-in variants.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use crate::statements::{
    compile_export, compile_op, open_scratch, parse, Block, BranchSpec, Cond, CondSpec, FileError,
    OpProgram, StatementFile, StepDef, StopIf,
};
use std::path::Path;

/// Built-in parameters of the outbox `handle` op, in
/// [`crate::statements::ParamSource::Builtin`] order: the message id, the delivery's
/// duplicate number (1..=D), the attempt's transaction id (unique per
/// delivery attempt, whatever the queue does) and wall-clock unix ms.
pub const HANDLE_BUILTINS: [&str; 4] = ["msg_id", "dup_id", "tx_id", "now_ms"];

/// Columns `export.state_log` must return, in this order.
pub const STATE_LOG_COLUMNS: [&str; 4] = ["ver", "msg_id", "tx_id", "kind"];
/// Columns `export.outbox` must return, in this order.
pub const OUTBOX_COLUMNS: [&str; 2] = ["msg_id", "ver"];
/// Columns `export.out_queue` must return, in this order.
pub const OUT_QUEUE_COLUMNS: [&str; 3] = ["seq", "msg_id", "ver"];
/// Columns `export.processed` must return, in this order.
pub const PROCESSED_COLUMNS: [&str; 2] = ["msg_id", "dup_id"];

/// A statement file checked against the `outbox` workload.
#[derive(Debug, Clone)]
pub struct OutboxVariant {
    /// The parsed file.
    pub file: StatementFile,
    /// The `schema` block (run once as a batch; creates the head row ver 0).
    pub schema: String,
    /// The `handle` op; builtins [`HANDLE_BUILTINS`]. Its last step is `ack`.
    pub handle: OpProgram,
    /// `export.state_log`: ver, msg_id, tx_id, kind.
    pub export_state_log: String,
    /// `export.outbox`: msg_id, ver (optional: a variant without an outbox
    /// has none).
    pub export_outbox: Option<String>,
    /// `export.out_queue`: seq, msg_id, ver.
    pub export_out_queue: String,
    /// `export.processed`: msg_id, dup_id.
    pub export_processed: String,
}

/// Checks a parsed statement file against the `outbox` workload and compiles
/// `handle` into a step program with its branches resolved.
///
/// # Errors
///
/// A [`FileError`] with the offending line (the directive's line for a bad
/// branch, the block's `-- name:` line otherwise, 0 for a missing block)
/// when:
/// - a block is not `schema`, `handle.STEP` or one of `export.state_log`,
///   `export.outbox`, `export.out_queue`, `export.processed`; or a required
///   one (all but `export.outbox`) is missing;
/// - `counts` or `stop-if` is used (groups directives; outbox ends an
///   attempt with `fail-if` or by running to its last step), or a branch
///   directive sits outside a `handle` step;
/// - the last step of `handle` is not `ack`, or has a branch directive;
/// - a jump names no step of `handle`, or the step itself;
/// - a condition on `changes` sits on a read-only statement, one on `rows`
///   on a statement that returns no columns, or a column condition names a
///   column the step does not return;
/// - any error of the checks every workload shares on statements,
///   parameters, columns and exports ([`crate::statements::compile_op`],
///   [`crate::statements::compile_export`]).
pub fn compile_outbox(file: &StatementFile) -> Result<OutboxVariant, FileError> {
    let err = |line: usize, reason: String| FileError::at(&file.path, line, reason);
    let mut schema: Option<&Block> = None;
    let mut handle: Vec<&Block> = Vec::new();
    let mut exports: [Option<&Block>; 4] = [None; 4];
    const EXPORTS: [&str; 4] = ["state_log", "outbox", "out_queue", "processed"];

    for block in &file.blocks {
        let (op, step) = match block.name.split_once('.') {
            Some((op, step)) => (op, Some(step)),
            None => (block.name.as_str(), None),
        };
        match (op, step) {
            ("schema", None) => schema = Some(block),
            ("handle", Some(_)) => handle.push(block),
            ("export", Some(table)) if EXPORTS.contains(&table) => {
                let i = EXPORTS.iter().position(|t| *t == table).expect("listed");
                exports[i] = Some(block);
            }
            ("export", Some(table)) => {
                return Err(err(
                    block.line,
                    format!(
                        "unknown export `{table}`: the outbox workload exports {}",
                        EXPORTS.map(|t| format!("`export.{t}`")).join(", ")
                    ),
                ))
            }
            _ => {
                return Err(err(
                    block.line,
                    format!(
                        "unknown block `{}`: the outbox workload has the op `handle` \
                         (blocks `handle.STEP`), plus `schema` and `export.TABLE`",
                        block.name
                    ),
                ))
            }
        }
        if block.counts {
            return Err(err(
                block.line,
                format!("`{}`: `counts` is a groups directive", block.name),
            ));
        }
        if block.begin.is_some() || block.commit {
            return Err(err(
                block.line,
                format!(
                    "`{}`: transaction blocks (`begin`, `end`) are a groups feature; \
                     an outbox handler's steps each run alone in autocommit",
                    block.name
                ),
            ));
        }
        if block.stop_if.is_some() {
            return Err(err(
                block.line,
                format!(
                    "`{}`: `stop-if` has no meaning in outbox (an attempt succeeds by \
                     running its last step, `ack`); use `goto-if` to skip steps or \
                     `fail-if` to end the attempt as a failure",
                    block.name
                ),
            ));
        }
        if op != "handle" {
            if let Some(b) = [&block.goto_if, &block.goto, &block.fail_if]
                .into_iter()
                .flatten()
                .next()
            {
                return Err(err(
                    b.line,
                    format!(
                        "`{}`: branch directives are allowed on `handle` steps only",
                        block.name
                    ),
                ));
            }
        }
    }
    let missing = |what: &str| err(0, format!("missing {what}"));
    let schema = schema.ok_or_else(|| missing("block `schema`"))?;
    if handle.is_empty() {
        return Err(missing("op `handle` (blocks `handle.STEP`)"));
    }
    for (i, t) in EXPORTS.iter().enumerate() {
        if exports[i].is_none() && *t != "outbox" {
            return Err(missing(&format!("block `export.{t}`")));
        }
    }
    let last = handle[handle.len() - 1];
    if last.name != "handle.ack" {
        return Err(err(
            last.line,
            format!(
                "the last step of `handle` must be `handle.ack` (the step that records \
                 the ack in `processed`; the bench acks the delivery after it), found `{}`",
                last.name
            ),
        ));
    }
    if let Some(b) = [&last.goto_if, &last.goto, &last.fail_if]
        .into_iter()
        .flatten()
        .next()
    {
        return Err(err(
            b.line,
            "`handle.ack` is the last step: it takes no branch directive".to_string(),
        ));
    }

    let conn = open_scratch(file, schema)?;
    let mut program = compile_op(
        file,
        &conn,
        &schema.sql,
        "handle",
        &HANDLE_BUILTINS,
        &handle,
    )?;
    for (i, block) in handle.iter().enumerate() {
        let (goto_if, goto, fail_if) = {
            let step = &program.steps[i];
            let names: Vec<&str> = program.steps.iter().map(|s| s.name.as_str()).collect();
            let target = |b: &BranchSpec| -> Result<usize, FileError> {
                let t = names.iter().position(|n| *n == b.target).ok_or_else(|| {
                    err(
                        b.line,
                        format!(
                            "`{}`: jump to unknown step `{}` (steps of handle: {})",
                            block.name,
                            b.target,
                            names.join(", ")
                        ),
                    )
                })?;
                if t == i {
                    return Err(err(
                        b.line,
                        format!(
                            "`{}`: a jump to the step itself would run it again at once; \
                             jump to an earlier step (e.g. the load) or a later one",
                            block.name
                        ),
                    ));
                }
                Ok(t)
            };
            let cond = |b: &BranchSpec| compile_cond(file, block, step, b);
            let goto_if = match &block.goto_if {
                Some(b) => Some((cond(b)?, target(b)?)),
                None => None,
            };
            let goto = match &block.goto {
                Some(b) => Some(target(b)?),
                None => None,
            };
            let fail_if = match &block.fail_if {
                Some(b) => Some(cond(b)?),
                None => None,
            };
            (goto_if, goto, fail_if)
        };
        let step = &mut program.steps[i];
        step.goto_if = goto_if;
        step.goto = goto;
        step.fail_if = fail_if;
    }

    let export = |i: usize, cols: &[&str]| -> Result<Option<String>, FileError> {
        exports[i]
            .map(|b| compile_export(file, &conn, b, cols))
            .transpose()
    };
    let export_state_log = export(0, &STATE_LOG_COLUMNS)?.expect("checked present");
    let export_outbox = export(1, &OUTBOX_COLUMNS)?;
    let export_out_queue = export(2, &OUT_QUEUE_COLUMNS)?.expect("checked present");
    let export_processed = export(3, &PROCESSED_COLUMNS)?.expect("checked present");
    Ok(OutboxVariant {
        file: file.clone(),
        schema: schema.sql.clone(),
        handle: program,
        export_state_log,
        export_outbox,
        export_out_queue,
        export_processed,
    })
}

/// Resolves a condition against what the step is: `changes` needs a
/// statement that may write, `rows` one that returns columns, a column
/// condition a column the step itself returns.
fn compile_cond(
    file: &StatementFile,
    block: &Block,
    step: &StepDef,
    b: &BranchSpec,
) -> Result<Cond, FileError> {
    let err = |reason: String| FileError::at(&file.path, b.line, reason);
    match b
        .cond
        .as_ref()
        .expect("goto-if and fail-if carry a condition")
    {
        CondSpec::Count(c @ (StopIf::ChangesZero | StopIf::ChangesPositive)) => {
            if step.readonly {
                return Err(err(format!(
                    "`{}`: a condition on `changes` needs a statement that modifies rows; \
                     this one is read-only (use `rows ...` or a column condition)",
                    block.name
                )));
            }
            Ok(Cond::Count(*c))
        }
        CondSpec::Count(c) => {
            if step.columns.is_empty() {
                return Err(err(format!(
                    "`{}`: a condition on `rows` needs a statement that returns rows \
                     (SELECT or ... RETURNING); this one returns no columns",
                    block.name
                )));
            }
            Ok(Cond::Count(*c))
        }
        CondSpec::IsNull(col) | CondSpec::NotNull(col) => {
            let i = step.columns.iter().position(|c| c == col).ok_or_else(|| {
                err(format!(
                    "`{}`: the condition names column `{col}`, which this step does not \
                     return (it returns: {})",
                    block.name,
                    if step.columns.is_empty() {
                        "no column".to_string()
                    } else {
                        step.columns.join(", ")
                    }
                ))
            })?;
            Ok(match b.cond.as_ref() {
                Some(CondSpec::IsNull(_)) => Cond::IsNull(i),
                _ => Cond::NotNull(i),
            })
        }
    }
}

/// Locates, parses and checks an outbox variant (a statement file, or a
/// built-in one, `crate::variant::locate`).
/// Errors: file, line and reason (exit 2).
pub fn load_outbox(variant: &str, scenario_dir: Option<&Path>) -> Result<OutboxVariant, FileError> {
    let (path, text) = crate::variant::locate(variant, scenario_dir)?;
    compile_outbox(&parse(&path, &text)?)
}
