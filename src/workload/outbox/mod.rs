//! The outbox workload (exactly_once_none_atomic.tla): how an ended
//! `handle` attempt reads as an op's completion. The step machine knows
//! only steps; this says what `ok`, `fail` and `info` mean for an attempt:
//!
//! - `ok`: the machine ran through its last step, `handle.ack` (the bench
//!   then acks the delivery);
//! - `fail`: a natural failure: a lost compare-and-swap (`fail-if`), or an
//!   error (or the step bound) before any step changed a row. The attempt's
//!   business effect did not happen; the delivery comes back;
//! - `info`: indeterminate: a crash fault after a step, an error of a step
//!   that may have applied or after a step changed rows, an abort.
//!
//! A lost compare-and-swap is `fail` even when an earlier step of the
//! attempt wrote a private row (its staged outbox record): that row is no
//! effect the spec's invariants see. The checkers never read `fail` as "no
//! row written": they judge the final tables.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

pub mod api;
pub mod compare;
pub mod config;
pub mod coverage;
pub mod figures;
pub mod header;
pub mod human;
pub mod prepare;
pub mod run;
pub use super::attempt_end::AttemptEnd;
use super::machine::{Next, StepMachine};
use crate::history::{CompletionType, OpResult};

/// How an attempt ends after a step whose machine said `next`, in every
/// runtime alike (in-process, the reference server): None while it goes
/// on; else (end, completion type, result) as [`attempt_result`] gives.
pub fn end_after(
    m: &StepMachine<'_>,
    program: &crate::statements::OpProgram,
    next: Next,
) -> Option<(AttemptEnd, CompletionType, OpResult)> {
    Some(match next {
        Next::Continue => return None,
        Next::Finished => attempt_result(m, AttemptEnd::Acked, None, ""),
        Next::FailedIf { at } => attempt_result(
            m,
            AttemptEnd::CasLost,
            None,
            &format!("cas lost at step {}", program.steps[at].name),
        ),
        Next::StepLimit { at } => attempt_result(
            m,
            AttemptEnd::Error,
            None,
            &format!(
                "step bound reached: {} steps executed (last {}) without ending",
                m.executed(),
                program.steps[at].name
            ),
        ),
        Next::TooManyRows { at, rows } => attempt_result(
            m,
            AttemptEnd::Error,
            None,
            &format!(
                "step {} returned {rows} rows (at most one allowed)",
                program.steps[at].name
            ),
        ),
        Next::Stopped { .. } => unreachable!("outbox refuses stop-if"),
    })
}

/// The completion of an attempt that ended as `end`; `maybe_applied` is
/// the failed step's own (errors only); `error` says why it did not
/// succeed (ignored for `Acked`). Returns (end, completion type, result).
pub fn attempt_result(
    m: &StepMachine<'_>,
    end: AttemptEnd,
    maybe_applied: Option<bool>,
    error: &str,
) -> (AttemptEnd, CompletionType, OpResult) {
    let kind = match end {
        AttemptEnd::Acked => CompletionType::Ok,
        AttemptEnd::CasLost => CompletionType::Fail,
        AttemptEnd::Crashed => CompletionType::Info,
        AttemptEnd::Error | AttemptEnd::Aborted => {
            if maybe_applied.unwrap_or(false) || m.changed_any() {
                CompletionType::Info
            } else {
                CompletionType::Fail
            }
        }
    };
    let result = OpResult {
        error: (end != AttemptEnd::Acked).then(|| error.to_string()),
        ..Default::default()
    };
    (end, kind, result)
}
pub mod audit;
pub mod checker;
pub mod explore;
pub mod explore_constants;
pub mod explore_invariants;
pub mod explore_main;
pub mod export;
pub mod http;
pub mod http_client;
pub mod http_runtime;
pub mod lease;
pub mod live;
pub mod merge;
pub mod probe;
pub mod replay;
pub mod runtime;
pub mod server;
pub mod server_handle;
pub mod service_db;
pub mod shard;
pub mod statements;
