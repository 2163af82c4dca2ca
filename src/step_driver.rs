//! The one step driver: runs an op's step machine to its end on a SQLite
//! connection, one statement per step in autocommit, or the steps of a
//! transaction block as one transaction, for every workload
//! and every place steps run (the in-process load of groups and of the
//! outbox, the reference server's pool and its outbox handler). The
//! caller's [`StepHooks`] say what happens around each step (an abort, a
//! pause, a crash, the step log) and what the op's end means
//! ([`StepHooks::end`]); the order of those decisions is fixed here, once:
//!
//! abort? -> the schedule fuzzer's point (not before an op's first step,
//! nor where [`crate::fuzz::point_allowed`] says no: inside a transaction
//! block) -> BEGIN, at a block's first step -> before the step (a pause)
//! -> the statement -> after it (the step log) -> an error ends the op
//! (inside a block: ROLLBACK, and a busy one, within the hooks' retry
//! budget, waits their backoff and runs the block again from BEGIN;
//! [`crate::txn_backoff`]) -> the machine advances -> a crash ends the op (inside a block:
//! ROLLBACK first) -> COMMIT, at a block's last step or where the op
//! ends inside it -> the machine's end ends it.
//!
//! Why a busy block runs again from BEGIN and never re-steps: a DEFERRED
//! block that read and then met SQLITE_BUSY or SQLITE_BUSY_SNAPSHOT on
//! its write holds a snapshot another writer has moved past; no retry of
//! the statement inside that transaction can succeed, only a new one
//! (sqlite.org/lang_transaction.html, "BEGIN DEFERRED"). What a rolled-back
//! attempt returned is forgotten: the machine is put back as it was at
//! BEGIN, so the columns and `changed_any` the op ends with are those of
//! what committed.
//!
//! Target-and-nemesis layer: imports the SQLite client (`exec_step`), the
//! step machine, the stop signals' causes and the schedule fuzzer's
//! delays; the engine's own driver once the client is a trait.

use crate::control::AbortCause;
use crate::statements::{OpProgram, StepDef, Txn};
use crate::target::sqlite::client::{exec_step, exec_step_in_txn, Journal, StepError};
use crate::txn_backoff::TxnPolicy;
use crate::workload::{Next, StepMachine, StepOutcome, Value};
use rusqlite::Connection;
use std::time::Duration;

/// How an op ended, for [`StepHooks::end`] to read as a completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Abandoned before a step (the user's second interrupt, or a stop's
    /// grace ran out): why, and the reason in words.
    Aborted(AbortCause, String),
    /// Step `step` failed; `maybe_applied` is its own (SQLite's) say.
    Failed {
        /// Index of the failed step in the program.
        step: usize,
        /// SQLite's message.
        message: String,
        /// The failed statement may have applied.
        maybe_applied: bool,
    },
    /// A crash fault ended the op after step `step`; `next` is what the
    /// machine would have done.
    Crashed {
        /// Index of the step after which the op died.
        step: usize,
        /// The machine's answer after that step.
        next: Next,
        /// The step was inside a transaction block, which was rolled back
        /// (nothing of it applied; the machine is as it was at BEGIN).
        rolled_back: bool,
    },
    /// The machine ended the op (`next` is not `Continue`).
    Done(Next),
}

/// What a caller of [`drive`] decides around the steps. Every hook but
/// [`StepHooks::end`] has a default that does nothing.
pub trait StepHooks<'p> {
    /// What the op's end gives the caller.
    type Out;

    /// Before each step: why and the reason to abandon the op, if it must
    /// be.
    fn abort(&mut self) -> Option<(AbortCause, String)> {
        None
    }

    /// The schedule fuzzer's delay before executed step number `n` (never
    /// 0), if it has one here; the driver performs it.
    fn fuzz(&mut self, _n: usize) -> Option<crate::fuzz::Delay> {
        None
    }

    /// After the fuzzer's `delay` before executed step number `n`
    /// (`step`) held the worker from `start` to `end`: the hook records
    /// it.
    fn fuzzed(
        &mut self,
        _n: usize,
        _step: &'p StepDef,
        _delay: crate::fuzz::Delay,
        _start: u64,
        _end: u64,
    ) {
    }

    /// Before executed step number `n` (program step `i`): a pause fault
    /// waits here (and is recorded by the hook).
    fn before(&mut self, _n: usize, _i: usize, _step: &'p StepDef) {}

    /// The clock the step log's times are read on.
    fn now(&self) -> u64 {
        0
    }

    /// After program step `i` ran from `start` to `end`, with its outcome.
    fn after(&mut self, _i: usize, _start: u64, _end: u64, _r: &Result<StepOutcome, StepError>) {}

    /// After executed step number `n` (program step `i`) succeeded:
    /// whether a crash fault ends the op here (the hook records it).
    fn crash(&mut self, _n: usize, _i: usize, _step: &'p StepDef) -> bool {
        false
    }

    /// A transaction block's BEGIN (attempt `attempt`, 0 the first)
    /// succeeded: what [`StepHooks::after`] hears from here until the
    /// block commits or is rolled back belongs to this attempt.
    fn begun(&mut self, _txn: &'p Txn, _attempt: u32) {}

    /// The attempt of a block was rolled back ([`Rollback`] says why and
    /// whether it runs again): the hook forgets the attempt's steps and
    /// records the rollback.
    fn rolled_back(&mut self, _r: &Rollback<'p>) {}

    /// The retry policy of this op's transaction blocks (the scenario's
    /// `target.txn_*` keys); the default reruns a busy block at once, up
    /// to [`crate::txn_backoff::DEFAULT_RETRIES`] times.
    fn txn_policy(&self) -> TxnPolicy {
        TxnPolicy::default()
    }

    /// Waits `d` (never zero) between a block's rollback and its next
    /// BEGIN; a stop (or a server's shutdown) cuts it short, and the block
    /// then runs again at once.
    fn wait(&mut self, d: Duration);

    /// The block committed: BEGIN started at `begin`, COMMIT returned at
    /// `commit` (on [`StepHooks::now`]).
    fn committed(&mut self, _txn: &'p Txn, _begin: u64, _commit: u64) {}

    /// The op's completion from how it ended and the machine's state.
    fn end(self, m: &StepMachine<'p>, end: End) -> Self::Out;
}

/// One rolled-back attempt of a transaction block.
#[derive(Debug, Clone)]
pub struct Rollback<'p> {
    /// The block.
    pub txn: &'p Txn,
    /// The step that failed or crashed (the block's first when BEGIN did).
    pub step: usize,
    /// The attempt (0 the first).
    pub attempt: u32,
    /// SQLite's extended result code; None for a crash fault or an end
    /// the machine decided (too many rows).
    pub code: Option<i32>,
    /// When the failing statement (or BEGIN) started and ended.
    pub wait: (u64, u64),
    /// The block runs again from BEGIN.
    pub retried: bool,
    /// When the policy's wait before the next BEGIN started and ended
    /// (equal when there was none).
    pub backoff: (u64, u64),
}

/// An open transaction block: the block, the machine as it was at BEGIN,
/// when BEGIN started.
struct Open<'p> {
    txn: &'p Txn,
    before: StepMachine<'p>,
    begin: u64,
}

/// Rolls back the open transaction, if SQLite has not already (some
/// errors roll back on their own; ROLLBACK then has nothing to do).
fn rollback(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

/// Whether an error lets the block run again: busy or locked, read from
/// SQLite's code, never its message.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Ends the open attempt of `o.txn`: rolls it back (if SQLite has not),
/// puts the machine back as it was at BEGIN, and, when the failure was
/// busy and the policy's budget has room, waits the policy's backoff;
/// then tells the hooks. Returns whether the block runs again.
#[allow(clippy::too_many_arguments)]
fn end_attempt<'p, H: StepHooks<'p>>(
    conn: &Connection,
    hooks: &mut H,
    policy: &TxnPolicy,
    (txn, step): (&'p Txn, usize),
    attempt: &mut u32,
    code: Option<i32>,
    wait: (u64, u64),
    busy: bool,
) -> bool {
    rollback(conn);
    let retried = busy && *attempt < policy.retries;
    let t = hooks.now();
    let mut backoff = (t, t);
    if retried {
        let d = policy.wait(*attempt);
        if !d.is_zero() {
            hooks.wait(d);
            backoff.1 = hooks.now();
        }
    }
    hooks.rolled_back(&Rollback {
        txn,
        step,
        attempt: *attempt,
        code,
        wait,
        retried,
        backoff,
    });
    *attempt += 1;
    retried
}

/// Runs one op of `program` with `builtins` on `conn` (whose journal is
/// `journal`, read when it was opened) to its end; see the module's
/// order of decisions.
pub fn drive<'p, H: StepHooks<'p>>(
    (conn, journal): (&Connection, Journal),
    program: &'p OpProgram,
    builtins: Vec<Value>,
    mut hooks: H,
) -> H::Out {
    let policy = hooks.txn_policy();
    let mut m = StepMachine::new(program, builtins);
    let mut n = 0usize;
    let mut open: Option<Open<'p>> = None;
    // Attempts of the current block so far (0 before its first BEGIN).
    let mut attempt = 0u32;
    loop {
        if let Some((cause, why)) = hooks.abort() {
            if let Some(o) = open.take() {
                m = o.before;
                let t = hooks.now();
                let at = (o.txn, m.current().unwrap_or(o.txn.first));
                end_attempt(
                    conn,
                    &mut hooks,
                    &policy,
                    at,
                    &mut attempt,
                    None,
                    (t, t),
                    false,
                );
            }
            return hooks.end(&m, End::Aborted(cause, why));
        }
        let Some(i) = m.current() else {
            unreachable!("an op with no step is refused by the statement checker")
        };
        let step = &program.steps[i];
        if n > 0 && crate::fuzz::point_allowed(program, i) {
            if let Some(delay) = hooks.fuzz(n) {
                let start = hooks.now();
                delay.perform();
                let end = hooks.now();
                hooks.fuzzed(n, step, delay, start, end);
            }
        }
        if open.is_none() {
            if let Some(txn) = program.txn_of(i) {
                if journal == Journal::Off {
                    return hooks.end(
                        &m,
                        End::Failed {
                            step: i,
                            message: "transaction blocks need a rollback journal: \
                                      journal_mode = off has none (targets/README.md)"
                                .into(),
                            maybe_applied: false,
                        },
                    );
                }
                let begin = hooks.now();
                if let Err(e) = conn.execute_batch(txn.mode.begin_sql()) {
                    let end = hooks.now();
                    let code = e.sqlite_error().map(|f| f.extended_code);
                    let at = (txn, i);
                    let busy = is_busy(&e);
                    if end_attempt(
                        conn,
                        &mut hooks,
                        &policy,
                        at,
                        &mut attempt,
                        code,
                        (begin, end),
                        busy,
                    ) {
                        continue;
                    }
                    return hooks.end(
                        &m,
                        End::Failed {
                            step: i,
                            message: format!("BEGIN: {e}"),
                            maybe_applied: false,
                        },
                    );
                }
                hooks.begun(txn, attempt);
                open = Some(Open {
                    txn,
                    before: m.clone(),
                    begin,
                });
            }
        }
        hooks.before(n, i, step);
        let start = hooks.now();
        let r = if open.is_some() {
            exec_step_in_txn(conn, journal, step, &m.params())
        } else {
            exec_step(conn, journal, step, &m.params())
        };
        let stop = hooks.now();
        hooks.after(i, start, stop, &r);
        n += 1;
        let next = match r {
            Ok(out) => m.advance(out),
            Err(e) => {
                if let Some(o) = open.take() {
                    // Nothing of the block applied once it is rolled back.
                    m = o.before;
                    let at = (o.txn, i);
                    if end_attempt(
                        conn,
                        &mut hooks,
                        &policy,
                        at,
                        &mut attempt,
                        e.code,
                        (start, stop),
                        e.busy,
                    ) {
                        continue;
                    }
                    return hooks.end(
                        &m,
                        End::Failed {
                            step: i,
                            message: format!("{} (transaction block rolled back)", e.message),
                            maybe_applied: false,
                        },
                    );
                }
                return hooks.end(
                    &m,
                    End::Failed {
                        step: i,
                        message: e.message,
                        maybe_applied: e.maybe_applied,
                    },
                );
            }
        };
        if hooks.crash(n - 1, i, step) {
            let rolled_back = if let Some(o) = open.take() {
                // A dead process's transaction is rolled back before its
                // connection is used again.
                m = o.before;
                let at = (o.txn, i);
                end_attempt(
                    conn,
                    &mut hooks,
                    &policy,
                    at,
                    &mut attempt,
                    None,
                    (stop, stop),
                    false,
                );
                true
            } else {
                false
            };
            return hooks.end(
                &m,
                End::Crashed {
                    step: i,
                    next,
                    rolled_back,
                },
            );
        }
        if let Some(o) = open.take() {
            if next == Next::Continue && i != o.txn.last {
                open = Some(o);
            } else if !matches!(next, Next::Continue | Next::Stopped { .. } | Next::Finished) {
                // The op failed inside the block (more than one row): the
                // block is rolled back, not committed half-way.
                m = o.before;
                let at = (o.txn, i);
                end_attempt(
                    conn,
                    &mut hooks,
                    &policy,
                    at,
                    &mut attempt,
                    None,
                    (stop, stop),
                    false,
                );
                return hooks.end(
                    &m,
                    End::Failed {
                        step: i,
                        message: format!("{next:?} inside a transaction block (rolled back)"),
                        maybe_applied: false,
                    },
                );
            } else {
                let c0 = hooks.now();
                if let Err(e) = conn.execute_batch("COMMIT") {
                    let c1 = hooks.now();
                    if is_busy(&e) {
                        // A busy COMMIT leaves the transaction open (SQLite
                        // says so); rolled back here, nothing applied.
                        m = o.before;
                        let code = e.sqlite_error().map(|f| f.extended_code);
                        let at = (o.txn, i);
                        if end_attempt(
                            conn,
                            &mut hooks,
                            &policy,
                            at,
                            &mut attempt,
                            code,
                            (c0, c1),
                            true,
                        ) {
                            continue;
                        }
                        return hooks.end(
                            &m,
                            End::Failed {
                                step: i,
                                message: format!("COMMIT: {e}"),
                                maybe_applied: false,
                            },
                        );
                    }
                    // Any other failure of COMMIT leaves its outcome
                    // unknown: may have applied.
                    rollback(conn);
                    return hooks.end(
                        &m,
                        End::Failed {
                            step: i,
                            message: format!("COMMIT: {e}"),
                            maybe_applied: true,
                        },
                    );
                }
                let c1 = hooks.now();
                hooks.committed(o.txn, o.begin, c1);
                attempt = 0;
            }
        }
        if next != Next::Continue {
            return hooks.end(&m, End::Done(next));
        }
    }
}
