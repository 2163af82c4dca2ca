//! Statement files: a workload variant as a file of named SQL statements
//! (`-- name: ...` blocks, as yesql/HugSQL/aiosql write them).
//!
//! The format is a public API (documented in `targets/README.md`). [`parse`] turns text into blocks
//! and directives; a workload's own compile (in its folder) checks a
//! parsed file against the workload through the checks every workload
//! shares ([`compile_op`], [`compile_export`], [`origin`]), preparing every
//! statement with SQLite itself on a scratch database, and yields the
//! [`OpProgram`]s the step machines run.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

mod check;
pub mod origin;
mod parse;
mod scratch;
mod sql_error;

// What a workload's own compile (in its folder) builds on: an op's steps
// and an export prepared on the scratch database, and SQLite's words for
// what went wrong.
pub use check::{compile_export, compile_op};
pub use scratch::{open as open_scratch, Scratch};
pub use sql_error::sqlite_message;

/// Most steps one op attempt may execute (jumps included): a backward
/// jump (the outbox's redo, "load the head again") could otherwise loop
/// for ever under contention. An attempt that reaches it ends as `fail`.
pub const MAX_MACHINE_STEPS: usize = 64;
pub use parse::parse;

use std::fmt;
use std::path::PathBuf;

/// A statement-file error: names the file, the 1-based line and the reason.
/// Every error is reported before anything runs; the CLI exits 2 on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FileError {
    /// The statement file.
    pub file: PathBuf,
    /// 1-based line number of the offending line (the block's `-- name:` line
    /// when the error concerns a whole block; 0 when it concerns the whole file).
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0: about the whole file (e.g. it cannot be read).
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.reason)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.reason)
        }
    }
}

/// A `stop-if` directive: stop the op after this step when the condition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum StopIf {
    /// `changes = 0`: the statement changed no row.
    ChangesZero,
    /// `changes > 0`
    ChangesPositive,
    /// `rows = 0`: the statement returned no row.
    RowsZero,
    /// `rows > 0`
    RowsPositive,
}

impl StopIf {
    /// Whether the condition holds for a step that changed `changes` rows and
    /// returned `rows` rows.
    pub fn holds(self, changes: u64, rows: usize) -> bool {
        match self {
            StopIf::ChangesZero => changes == 0,
            StopIf::ChangesPositive => changes > 0,
            StopIf::RowsZero => rows == 0,
            StopIf::RowsPositive => rows > 0,
        }
    }
}

/// A branch condition of `goto-if` / `fail-if`, as written (columns by name).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum CondSpec {
    /// `changes = 0|> 0`, `rows = 0|> 0`: the same tests as `stop-if`.
    Count(StopIf),
    /// `<column> is null`: the step returned NULL in that column (zero rows
    /// bind every column to NULL).
    IsNull(String),
    /// `<column> is not null`.
    NotNull(String),
}

/// A branch directive of a block: what it says and the 1-based line it is on
/// (errors found when compiling name that line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchSpec {
    /// The condition (None for an unconditional `goto`).
    pub cond: Option<CondSpec>,
    /// The target step's name (the `STEP` of `OP.STEP`); empty for `fail-if`.
    pub target: String,
    /// 1-based line of the directive.
    pub line: usize,
}

/// A compiled branch condition: column conditions hold the column's index
/// in the step's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    /// `changes`/`rows` against zero.
    Count(StopIf),
    /// Column `i` of the step's row is NULL (or the step returned no row).
    IsNull(usize),
    /// Column `i` of the step's row is not NULL.
    NotNull(usize),
}

/// One `-- name:` block as written in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The full name, e.g. `ingest.s1`, `schema`, `export.events`.
    pub name: String,
    /// 1-based line of the `-- name:` line.
    pub line: usize,
    /// `-- stop-if:` directive, if any.
    pub stop_if: Option<StopIf>,
    /// `-- counts: true` (the counting step of `ingest`).
    pub counts: bool,
    /// `-- goto-if: COND -> STEP` (outbox only).
    pub goto_if: Option<BranchSpec>,
    /// `-- goto: STEP` (outbox only).
    pub goto: Option<BranchSpec>,
    /// `-- fail-if: COND` (outbox only): the op ends as a natural failure.
    pub fail_if: Option<BranchSpec>,
    /// `-- begin: MODE`: this step opens a transaction block.
    pub begin: Option<TxnMode>,
    /// `-- end: commit`: this step closes the open transaction block.
    pub commit: bool,
    /// The SQL text of the block, comments and surrounding blank lines kept
    /// as written (SQLite ignores them), trailing whitespace trimmed.
    pub sql: String,
}

/// A parsed statement file (syntax only; a workload's compile gives it meaning).
#[derive(Debug, Clone)]
pub struct StatementFile {
    /// The file as given.
    pub path: PathBuf,
    /// Hex SHA-256 of the file's bytes (recorded in every run folder).
    pub sha256: String,
    /// The file's text.
    pub text: String,
    /// The `-- name:` blocks, in file order.
    pub blocks: Vec<Block>,
}

/// Where the value of one `:parameter` of a step comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamSource {
    /// A built-in parameter of the op (index into the op's builtin list,
    /// e.g. groups ingest: `event_id, project, fingerprint, group_id, message, now_ms`).
    Builtin(usize),
    /// A column returned by an earlier step of the same op: (step index, column index).
    /// When several earlier steps return the column, the latest one wins.
    Column {
        /// Index of the earlier step.
        step: usize,
        /// Index of the column in that step's result.
        column: usize,
    },
}

/// One step of an op: one statement, run alone in autocommit, or as part
/// of its op's transaction block ([`OpProgram::txns`]).
#[derive(Debug, Clone)]
pub struct StepDef {
    /// The step part of the block name (`s1` for `ingest.s1`).
    pub name: String,
    /// 1-based line of the block's `-- name:` line.
    pub line: usize,
    /// The statement (exactly one).
    pub sql: String,
    /// When to stop the op after this step.
    pub stop_if: Option<StopIf>,
    /// The counting step of `ingest`.
    pub counts: bool,
    /// `goto-if`: when the condition holds after this step, run step
    /// `.1` (an index into the op's steps) next.
    pub goto_if: Option<(Cond, usize)>,
    /// `goto`: run this step index next (after `goto-if`, if both are set
    /// and the condition did not hold).
    pub goto: Option<usize>,
    /// `fail-if`: when the condition holds the op ends as a natural failure.
    pub fail_if: Option<Cond>,
    /// One entry per SQLite parameter index (1-based index i is `params[i-1]`).
    pub params: Vec<ParamSource>,
    /// Names of the columns the statement returns (empty for plain writes).
    pub columns: Vec<String>,
    /// `sqlite3_stmt_readonly`: false for statements that may modify rows.
    pub readonly: bool,
    /// SQLite undoes every change of this statement when it fails on a
    /// constraint: the default conflict resolution (ABORT) backs the
    /// statement out, and in autocommit it is the whole transaction.
    /// False when the statement's or the schema's text says FAIL (`OR
    /// FAIL`, `ON CONFLICT FAIL`, `RAISE(FAIL, ...)`: rows changed before
    /// the failing one stay), DEFERRED or `defer_foreign_keys` (checked at
    /// commit), or VIRTUAL (a virtual table may not roll back): a scan of
    /// the text, comments included, that can only err toward "may have
    /// applied". The connection's journal is the other premise
    /// ([`crate::target::sqlite::client::Journal`]).
    pub undone_on_constraint: bool,
}

/// How a transaction block runs (`-- begin: MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnMode {
    /// `BEGIN DEFERRED`: the first read takes a snapshot, the first write
    /// the write lock; a write after a read fails at once (SQLITE_BUSY or
    /// SQLITE_BUSY_SNAPSHOT) when another connection wrote in between.
    Deferred,
    /// `BEGIN IMMEDIATE`: the write lock is taken at BEGIN, where the
    /// busy timeout applies; nothing later in the block waits for it.
    Immediate,
    /// D1's `db.batch([...])`: the statements run in order as one
    /// transaction, any error rolls back all. Its parameters are bound
    /// before the batch is sent, so no statement reads a column of another
    /// in the same batch, and no `stop-if` sits inside it. Runs as `BEGIN
    /// IMMEDIATE` (D1 runs a batch alone).
    Batch,
}

impl TxnMode {
    /// The mode as written after `-- begin:`.
    pub fn name(self) -> &'static str {
        match self {
            TxnMode::Deferred => "deferred",
            TxnMode::Immediate => "immediate",
            TxnMode::Batch => "batch",
        }
    }

    /// The statement that opens a block of this mode.
    pub fn begin_sql(self) -> &'static str {
        match self {
            TxnMode::Deferred => "BEGIN DEFERRED",
            TxnMode::Immediate | TxnMode::Batch => "BEGIN IMMEDIATE",
        }
    }
}

/// A transaction block of an op: its steps `first..=last` run as one
/// transaction on the worker's connection (targets/README.md,
/// "Transaction blocks").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Txn {
    /// The mode.
    pub mode: TxnMode,
    /// Index of the block's first step.
    pub first: usize,
    /// Index of its last step.
    pub last: usize,
}

impl Txn {
    /// Whether step `i` belongs to the block.
    pub fn holds(&self, i: usize) -> bool {
        (self.first..=self.last).contains(&i)
    }
}

/// The steps of one op kind, in file order.
#[derive(Debug, Clone)]
pub struct OpProgram {
    /// `ingest` or `resolve`.
    pub op: String,
    /// Names of the built-in parameters, in the order [`ParamSource::Builtin`] indexes them.
    pub builtins: Vec<&'static str>,
    /// The steps, in file order.
    pub steps: Vec<StepDef>,
    /// The op's transaction blocks, in step order, disjoint; steps outside
    /// every block run alone in autocommit.
    pub txns: Vec<Txn>,
}

impl OpProgram {
    /// The transaction block step `i` belongs to, if any.
    pub fn txn_of(&self, i: usize) -> Option<&Txn> {
        self.txns.iter().find(|t| t.holds(i))
    }
}
