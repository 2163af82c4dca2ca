//! The history: every op's invoke and completion (Jepsen's `ok`, `fail`,
//! `info`), and for the in-process SQLite target every step's start and end,
//! streamed to `history.bin` in the run folder while the run goes (compact
//! records, compressed: [`file`] and [`codec`]; an earlier release's
//! folder holds `history.jsonl`, JSON lines, read as well). Times are
//! monotonic ns since the run's start (the UTC start is in the header).
//! [`writer`] streams it; [`reader`] reads it back for audits.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

mod binary;
pub mod codec;
pub mod completeness;
pub mod file;
pub mod part;
pub mod print;
pub mod reader;
pub mod writer;

#[cfg(test)]
mod format_tests;

use serde::{Deserialize, Serialize};

/// Version of the history file format; bumped on any incompatible change,
/// and on a change in what an absent field means: from 3 on, a header
/// without `event_step` says the writer found no event-inserting step
/// (before 3, histories had no such field and step 0 was assumed); from 4
/// on, the file is `history.bin`, compressed records ([`file`]), where 3
/// and before wrote `history.jsonl`; the entries are the same.
pub const HISTORY_SCHEMA_VERSION: u32 = 4;

/// The op kinds of every workload: groups has `ingest` and `resolve`,
/// outbox has `handle`; a workload registered at run time adds its own
/// ([`OpKind::register`]). Figures, the dashboard and the latency log list
/// the kinds of the run's workload only (each workload's list is its own:
/// its figures module's `OP_KINDS`).
///
/// A small number, not an enum, so that a workload outside the crate can
/// have kinds of its own; the built-in kinds are constants, usable in
/// patterns.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpKind(u8);

/// The names of the op kinds, indexed by their number: the built-in ones
/// first, then the registered ones.
static KIND_NAMES: std::sync::RwLock<Vec<&'static str>> = std::sync::RwLock::new(Vec::new());

/// The built-in kinds' names, in number order.
const BUILT_IN_KINDS: [&str; 3] = ["ingest", "resolve", "handle"];

/// Most op kinds a process may know (the built-in ones included).
pub const MAX_OP_KINDS: usize = 32;

#[allow(non_upper_case_globals)]
impl OpKind {
    /// Ingest one event (s1..s3 of groups.md).
    pub const Ingest: OpKind = OpKind(0);
    /// Resolve one group.
    pub const Resolve: OpKind = OpKind(1);
    /// Outbox: handle one delivery of one input message (one attempt).
    pub const Handle: OpKind = OpKind(2);

    /// Lowercase name, as in the history and the summary.
    pub fn name(self) -> &'static str {
        match BUILT_IN_KINDS.get(self.0 as usize) {
            Some(name) => name,
            None => KIND_NAMES
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(self.0 as usize - BUILT_IN_KINDS.len())
                .copied()
                .unwrap_or("unknown"),
        }
    }

    /// Whether the kind is built into the crate (not registered at run
    /// time).
    pub fn is_built_in(self) -> bool {
        (self.0 as usize) < BUILT_IN_KINDS.len()
    }

    /// The kind's number: an index for per-kind tables.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The kind named `name`, built in or registered.
    pub fn named(name: &str) -> Option<OpKind> {
        if let Some(i) = BUILT_IN_KINDS.iter().position(|n| *n == name) {
            return Some(OpKind(i as u8));
        }
        KIND_NAMES
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .position(|n| *n == name)
            .map(|i| OpKind((i + BUILT_IN_KINDS.len()) as u8))
    }

    /// An op kind of a workload registered at run time; the same name
    /// gives the same kind. Errors: [`MAX_OP_KINDS`] are taken.
    pub fn register(name: &'static str) -> Result<OpKind, String> {
        if let Some(k) = OpKind::named(name) {
            return Ok(k);
        }
        let mut names = KIND_NAMES.write().unwrap_or_else(|e| e.into_inner());
        if names.len() + BUILT_IN_KINDS.len() >= MAX_OP_KINDS {
            return Err(format!(
                "op kind {name:?}: at most {MAX_OP_KINDS} op kinds may be known"
            ));
        }
        names.push(name);
        Ok(OpKind((names.len() - 1 + BUILT_IN_KINDS.len()) as u8))
    }
}

impl std::fmt::Debug for OpKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // As the enum it was: `Ingest`, `Resolve`, `Handle`.
        let name = self.name();
        let mut c = name.chars();
        match c.next() {
            Some(first) => write!(f, "{}{}", first.to_ascii_uppercase(), c.as_str()),
            None => Ok(()),
        }
    }
}

impl Serialize for OpKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for OpKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor, so that reading a history allocates no name per op.
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = OpKind;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an op kind's name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<OpKind, E> {
                OpKind::named(name).ok_or_else(|| E::unknown_variant(name, &BUILT_IN_KINDS))
            }
        }
        d.deserialize_str(Name)
    }
}

/// Jepsen's completion types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum CompletionType {
    /// It happened.
    Ok,
    /// It certainly did not happen (nothing changed).
    Fail,
    /// Indeterminate: it may or may not have happened, in part or whole.
    Info,
}

impl CompletionType {
    /// Every completion type, in report order.
    pub const ALL: [CompletionType; 3] = [
        CompletionType::Ok,
        CompletionType::Fail,
        CompletionType::Info,
    ];

    /// Lowercase name, as in the history and the summary.
    pub fn name(self) -> &'static str {
        match self {
            CompletionType::Ok => "ok",
            CompletionType::Fail => "fail",
            CompletionType::Info => "info",
        }
    }
}

/// First line of every history file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`HISTORY_SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Workload name (`groups` or `outbox`).
    pub workload: String,
    /// Scenario name.
    pub scenario: String,
    /// Variant name (statement file or built-in).
    pub variant: String,
    /// Seed of the run.
    pub seed: u64,
    /// UTC start of the run (RFC 3339); every `t` is ns after it.
    pub started_utc: String,
    /// Whether steps are logged exactly (in-process SQLite target): then a
    /// step that started and has no end is the only source of "maybe".
    pub step_log: bool,
    /// Index of the ingest op's counting step (`counts: true`).
    pub counting_step: u32,
    /// Index of the ingest step that inserts the event row (found from what
    /// it does); None: no such step, or an older history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_step: Option<u32>,
    /// Prefix of every project of this run (empty on a fresh database).
    #[serde(default)]
    pub namespace: String,
    /// The ingest op's step names, in order (where a crash fault's
    /// `crashed_after` step lies against the counting step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ingest_steps: Vec<String>,
    /// The ingest's transaction block (first and last step index) that
    /// holds both the event-insert step and the counting step, if one
    /// does: every event row then has its increment or neither
    /// (targets/README.md, "Transaction blocks"). None: no such block, or
    /// an older history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingest_block: Option<[u32; 2]>,
    /// This run is shard i of n of one sharded run (`--shard i/n`); None
    /// for an ordinary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardHeader>,
    /// This history was merged from the histories of shards
    /// (`specstorm merge`); None for a history a run wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergedHeader>,
    /// The run's workload's own fields (top-level keys after the common
    /// ones): what its checkers need of the run that the common fields do
    /// not say. The workload puts and reads them ([`Header::put`],
    /// [`Header::part`]); the history only carries them.
    #[serde(flatten)]
    pub workload_part: part::WorkloadPart,
}

impl Header {
    /// Puts the workload's header `part` (a struct whose fields are
    /// top-level keys of the header) into [`Header::workload_part`].
    pub fn put<T: Serialize>(&mut self, part: &T) {
        self.workload_part.extend(part::WorkloadPart::of(part));
    }

    /// The workload's header part as its type `T` (each absent key `T`'s
    /// default); None when it is no `T`.
    pub fn part<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        self.workload_part.read()
    }
}

/// The delivery an outbox `handle` attempt works on (LockInMsg).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// The input message id (1..=M).
    pub msg_id: i64,
    /// The duplicate number of this delivery (1..=D).
    pub dup_id: u32,
    /// 1 for the delivery's first attempt, n for its n-th.
    pub attempt: u32,
    /// The attempt's transaction id, unique per attempt in the run.
    pub tx_id: i64,
}

/// Which part of a sharded run a history is (`specstorm run --shard i/n
/// --run-id ID`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ShardHeader {
    /// i: this runner's index, 0 <= i < n.
    pub index: u32,
    /// n: how many runners share the run.
    pub count: u32,
    /// The id every shard of the run shares (the namespace derives from it).
    pub run_id: String,
    /// UTC of this history's time origin (`t` = 0), ns since the Unix
    /// epoch, read next to the monotonic clock's start: what `merge` puts
    /// the shards on one time base with (`started_utc` is only ms, and is
    /// taken earlier).
    pub clock_utc_ns: u64,
}

/// What a merged history was made from (`specstorm merge`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedHeader {
    /// The run folders merged, shard 0 first.
    pub from: Vec<String>,
    /// The shards' shared run id.
    pub run_id: String,
    /// How many shards were merged.
    pub shards: u32,
    /// The bound on how far two runners' clocks may disagree, ns: every
    /// op's window was widened by half of it on each side.
    pub clock_skew_ns: u64,
    /// UTC of the merged time origin, ns since the Unix epoch.
    pub clock_utc_ns: u64,
    /// Per shard (in `from` order): ns added to its times (before widening),
    /// and the op id and worker number added to its own.
    pub offsets: Vec<MergeOffset>,
}

/// How one shard's entries were moved onto the merged history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeOffset {
    /// The shard's index.
    pub shard: u32,
    /// ns added to every time of the shard.
    pub t_ns: u64,
    /// Added to every op id of the shard.
    pub op: u64,
    /// Added to every worker number of the shard.
    pub worker: u32,
}

/// An op begins. `t` is ns since run start; for the open load model
/// `intended` is the ns at which the op should have started (latency is
/// measured from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invoke {
    /// ns since run start.
    pub t: u64,
    /// Op id, unique within the run.
    pub op: u64,
    /// Worker number, unique within the run (ingesters first, then resolvers).
    pub worker: u32,
    /// Op kind.
    pub f: OpKind,
    /// Outbox `handle`: the delivery it took from the queue (None for groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Ingest: the event id (reused by retries); None for resolves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// Project of the group (empty, and not written, for outbox).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub project: String,
    /// Fingerprint of the group (empty, and not written, for outbox).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    /// Group id (empty, and not written, for outbox).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group_id: String,
    /// Ingest: 0 for an event's first send, n for its n-th retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Open model: intended start, ns since run start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended: Option<u64>,
}

/// One step (statement) of an op, as executed: start and end in ns since
/// run start (an absent `end` means it started and never ended), rows
/// changed and returned, and the error if it failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Op id of the step's op.
    pub op: u64,
    /// Step index within the op (file order).
    pub idx: u32,
    /// Step name (`s1`, `s3_write`, `update`, ...).
    pub step: String,
    /// ns since run start, taken before the statement ran.
    pub start: u64,
    /// ns since run start, taken after the statement ended; None: never ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<u64>,
    /// Rows the statement changed (SQLite's `changes()`).
    #[serde(default)]
    pub changes: u64,
    /// Rows the statement returned.
    #[serde(default)]
    pub rows: u64,
    /// SQLite's error message, if the step failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// If the step failed: the kind of error, from SQLite's error code.
    /// None: it did not fail, or a history written before the kind was
    /// recorded (its readers then read `error`, see `checker::legacy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<StepErrorKind>,
    /// For a step that failed: whether it may nevertheless have changed rows
    /// (false for SQLITE_BUSY/LOCKED and read-only statements).
    #[serde(default, skip_serializing_if = "is_false")]
    pub maybe_applied: bool,
    /// The first row the statement returned, its columns in order (the
    /// status a read saw, the count a resolve returned): what `specstorm
    /// validate` compares with the spec's state. None: it returned no row,
    /// or a history written before returned values were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned: Option<Vec<crate::workload::value::Value>>,
}

/// The kind of error a failed step met, read from SQLite's error code
/// (never its message).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepErrorKind {
    /// SQLITE_BUSY or SQLITE_LOCKED: the statement did not get its lock;
    /// nothing of it applied, and it may succeed later.
    Busy,
    /// Any other error.
    Other,
}

impl Step {
    /// The step certainly completed and changed at least one row.
    pub fn applied(&self) -> bool {
        self.end.is_some() && self.error.is_none() && self.changes > 0
    }

    /// The step may have changed rows, but the log cannot say for sure.
    pub fn maybe_applied(&self) -> bool {
        self.end.is_none() || (self.error.is_some() && self.maybe_applied)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What an op's completion reports (the value part of ok/fail/info).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OpResult {
    /// Ingest: true = the event was accepted and counted; false = duplicate.
    /// None when the answer does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
    /// Resolve: true = resolved (status changed), false = refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    /// Resolve: the count a successful resolve returned, or a refused
    /// resolve's probe read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_count: Option<i64>,
    /// Refused resolve: the status its probe read (None: no such group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The step whose statement produced `event_count`/`status` (its
    /// interval is the observation's instant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect_step: Option<u32>,
    /// Why the op failed or is indeterminate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// In process, an op abandoned between steps by a stop: why (`error`
    /// says it in words). None: not abandoned, or a history written before
    /// it was recorded (its readers then read `error`, see
    /// `checker::legacy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<crate::control::AbortCause>,
    /// A crash fault abandoned the op after this step (the worker died
    /// mid-request): nothing of the op ran after its completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crashed_after: Option<String>,
    /// Outbox over HTTP: the out-queue record an acked delivery's answer
    /// named as published, `[msg_id, ver]` (contract: `sent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<[i64; 2]>,
    /// A mapped service's answer did not tell what happened (an `ok`
    /// whose value is unknown): why, e.g. "the answer does not say
    /// accepted or duplicate". The checkers then use bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ambiguous: Option<String>,
    /// Over HTTP, an op the reference server's fault hook crashed: every
    /// step it ran, in order, with the rows each changed, as its answer
    /// reported them (what the in-process step log would know, but
    /// times). Empty otherwise. Nothing of the op ran after the last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hook_steps: Vec<HookStep>,
}

/// One step of an op the reference server's fault hook crashed, as its
/// answer reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookStep {
    /// Step name (`s1`, `update`, ...).
    pub step: String,
    /// Rows the statement changed (SQLite's `changes()`).
    pub changes: u64,
}

/// An op ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// ns since run start.
    pub t: u64,
    /// Op id of the invoke it completes.
    pub op: u64,
    /// Worker number, unique within the run (ingesters first, then resolvers).
    pub worker: u32,
    /// Op kind.
    pub f: OpKind,
    /// What the op returned (flattened into the entry).
    #[serde(flatten)]
    pub result: OpResult,
}

/// Last line of a history written to the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Footer {
    /// ns since run start.
    pub t: u64,
    /// The load was stopped early (Ctrl-C, SIGTERM).
    pub partial: bool,
    /// Ops invoked in the run.
    pub ops: u64,
    /// The final tables' read (one read transaction): start and end, ns
    /// since run start; None if they were not read (or an older history).
    /// The audit takes the final rows as a probe in this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables_read: Option<[u64; 2]>,
}

/// What a fault entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultAction {
    /// A fault with a duration began (kill: the server was killed; lock:
    /// the write lock was taken).
    Start,
    /// It ended (kill: the restart begins now, before the new server
    /// listens; lock: the lock was released).
    Stop,
    /// One injection into one op (crash, pause, proxy toxic).
    Inject,
}

/// A nemesis event: a fault started, stopped, or was injected into one op.
/// The checkers read them to narrow when an indeterminate op can have taken
/// effect (a killed server runs nothing after the kill; a request the
/// proxy never forwarded had no effect; one it forwarded was answered by
/// the server before the proxy dropped the answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultEntry {
    /// ns since run start.
    pub t: u64,
    /// Index of the fault in the scenario's `[[faults]]`.
    pub fault: u32,
    /// Its kind.
    pub kind: crate::fault_kind::FaultKind,
    /// start, stop or inject.
    pub action: FaultAction,
    /// The op it hit (inject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<u64>,
    /// crash: the step after which the op was abandoned; pause: the step
    /// it delayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Proxy: whether the request reached the server (false: certainly no
    /// effect; true: the server answered before the proxy dropped it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded: Option<bool>,
    /// Free text: the toxic, the delay, the pid killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Proxy, `drop_response`: what the server answered before the proxy
    /// dropped it (what `detail` says in words). None for any other
    /// fault, or in a history written before it was recorded (its readers
    /// then read `detail`, see `checker::legacy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<DroppedResponse>,
}

/// The server's answer to a request whose answer the fault proxy dropped:
/// the server did what it answered, though the client never heard it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedResponse {
    /// Its status code.
    pub status: u16,
    /// Its body, when it was read whole and is at most
    /// [`DroppedResponse::MAX_BODY`] bytes (and the proxy keeps bodies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl DroppedResponse {
    /// The longest body recorded (bytes): the contract's answers are far
    /// shorter; a longer one says nothing the checkers read.
    pub const MAX_BODY: usize = 1024;
}

/// What the bench itself did to the target ([`BenchEntry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchAction {
    /// A blocking WAL checkpoint (`wal_checkpoint(TRUNCATE)`): writers
    /// wait for it, as for the lock nemesis ([`crate::wal`]).
    WalCheckpoint,
    /// The schedule fuzzer's yield or sleep before a step of op `op`
    /// (`crate::fuzz`): it holds up only that op's worker.
    Fuzz,
    /// A transaction block of op `op` was rolled back (a statement of it
    /// failed, or a crash fault hit it) and, when `txn.retried`, runs
    /// again from BEGIN (targets/README.md, "Transaction blocks"). The
    /// rolled-back attempt's steps are not in the step log: nothing of
    /// them applied.
    TxnRollback,
}

/// One rolled-back attempt of a transaction block ([`BenchEntry`]'s `txn`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnRollback {
    /// The block's first step.
    pub block: String,
    /// The step whose failure (or crash) rolled it back; the block's first
    /// step also when BEGIN itself failed.
    pub step: String,
    /// The attempt rolled back (0: the first).
    pub attempt: u32,
    /// SQLite's extended result code of the failure (5 SQLITE_BUSY, 517
    /// SQLITE_BUSY_SNAPSHOT, 6 SQLITE_LOCKED, ...); None for a crash fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    /// How long the failing statement (or BEGIN) ran, ns: its wait for the
    /// lock, 0 when it failed at once.
    pub wait_ns: u64,
    /// The block runs again from BEGIN.
    pub retried: bool,
    /// How long the worker then waited before that BEGIN, ns (the
    /// scenario's `target.txn_backoff`; absent when it did not wait).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backoff_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The schedule fuzzer's choice at one point of an op ([`BenchEntry`]'s
/// `fuzz`): drawn from the seed, the op's key and `n` alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FuzzChoice {
    /// The step it came before; None when the bench asked the server for
    /// it before a program that branches ran (which step is the n-th
    /// executed one it could not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The executed step it came before (0-based; the op's first has no
    /// point before it).
    pub n: u32,
    /// The drawn sleep in ns; 0: a yield.
    pub ns: u64,
}

/// Something the bench did to the target that can hold ops up for a
/// moment, with its start and end: not a fault of the schedule, and not
/// read by the checkers (it changes no row); it explains a stall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchEntry {
    /// ns since run start, when it began.
    pub t: u64,
    /// ns since run start, when it ended.
    pub end: u64,
    /// What it was.
    pub action: BenchAction,
    /// Free text: its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The op it held up, when it held up one op (the fuzzer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<u64>,
    /// The fuzzer's choice, for [`BenchAction::Fuzz`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuzz: Option<FuzzChoice>,
    /// The rolled-back attempt, for [`BenchAction::TxnRollback`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn: Option<TxnRollback>,
}

/// One entry of the history (a record of `history.bin`, a line of an
/// earlier release's `history.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Entry {
    /// First line: the run's identity.
    Header(Header),
    /// An op begins.
    Invoke(Invoke),
    /// A step (statement) of an op ran.
    Step(Step),
    /// The op happened.
    Ok(Completion),
    /// The op certainly did not happen.
    Fail(Completion),
    /// The op is indeterminate.
    Info(Completion),
    /// A nemesis event.
    Fault(FaultEntry),
    /// The bench's own action on the target (a blocking WAL checkpoint).
    Bench(BenchEntry),
    /// Last line, when the history was written to the end.
    Footer(Footer),
}

impl Entry {
    /// A completion entry of the given type.
    pub fn completion(kind: CompletionType, c: Completion) -> Entry {
        match kind {
            CompletionType::Ok => Entry::Ok(c),
            CompletionType::Fail => Entry::Fail(c),
            CompletionType::Info => Entry::Info(c),
        }
    }
}
