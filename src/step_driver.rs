//! The one step driver: runs an op's step machine to its end on a SQLite
//! connection, one statement per step in autocommit, for every workload
//! and every place steps run (the in-process load of groups and of the
//! outbox, the reference server's pool and its outbox handler). The
//! caller's [`StepHooks`] say what happens around each step (an abort, a
//! pause, a crash, the step log) and what the op's end means
//! ([`StepHooks::end`]); the order of those decisions is fixed here, once:
//!
//! abort? -> before the step (a pause) -> the statement -> after it (the
//! step log) -> an error ends the op -> the machine advances -> a crash
//! ends the op -> the machine's end ends it.
//!
//! Target-and-nemesis layer: imports the SQLite client (`exec_step`), the
//! step machine and the stop signals' causes; the engine's own driver once
//! the client is a trait.

use crate::control::AbortCause;
use crate::statements::{OpProgram, StepDef};
use crate::target::sqlite::client::{exec_step, Journal, StepError};
use crate::workload::{Next, StepMachine, StepOutcome, Value};
use rusqlite::Connection;

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

    /// The op's completion from how it ended and the machine's state.
    fn end(self, m: &StepMachine<'p>, end: End) -> Self::Out;
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
    let mut m = StepMachine::new(program, builtins);
    let mut n = 0usize;
    loop {
        if let Some((cause, why)) = hooks.abort() {
            return hooks.end(&m, End::Aborted(cause, why));
        }
        let Some(i) = m.current() else {
            unreachable!("an op with no step is refused by the statement checker")
        };
        let step = &program.steps[i];
        hooks.before(n, i, step);
        let start = hooks.now();
        let r = exec_step(conn, journal, step, &m.params());
        let stop = hooks.now();
        hooks.after(i, start, stop, &r);
        let next = match r {
            Ok(out) => m.advance(out),
            Err(StepError {
                message,
                maybe_applied,
                ..
            }) => {
                return hooks.end(
                    &m,
                    End::Failed {
                        step: i,
                        message,
                        maybe_applied,
                    },
                )
            }
        };
        if hooks.crash(n, i, step) {
            return hooks.end(&m, End::Crashed { step: i, next });
        }
        n += 1;
        if next != Next::Continue {
            return hooks.end(&m, End::Done(next));
        }
    }
}
