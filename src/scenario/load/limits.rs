//! The loader's bounds on keys whose value sets how much the bench must
//! hold or do before a stop can act (before the load, or in one step of
//! it): each refusal names the key's line and why the bound is where it
//! is. Waits of any length need no bound: every wait of the bench ends
//! on a stop (`crate::control`).
//!
//! The bounds live here, in the config layer, and the code that relies on
//! them imports them from here (`crate::scenario::limits`): the generator
//! its retry window, the SQLite client its busy timeout.
//!
//! May import: its sibling files and `scenario`'s types.

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::Scenario;
use std::time::Duration;

/// How far ahead (in ops) a "later" retry may land, at most.
pub const LATER_WINDOW: u64 = 20_000;

/// Most retries of one event (`retry.max_retries`; the loader refuses
/// more). Every retry of an event is drawn when the event is first sent
/// (so that plans do not depend on timing) and waits in the generator's
/// queue until it is due, at most [`LATER_WINDOW`] ops later: the queue
/// then never holds more than `MAX_RETRIES * LATER_WINDOW` entries (2M,
/// 48 MB), and a fresh event costs at most 100 draws. Real clients retry
/// a handful of times; a hundred sends of one id is already no retry
/// policy but a flood, and a billion (accepted once) queued them all at
/// the first send, 17.8 GB and a run no signal could end.
pub const MAX_RETRIES: u32 = 100;

/// The longest busy timeout SQLite takes: a count of milliseconds in a
/// 32-bit int (24.8 days).
pub const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// Most groups (projects x fingerprints) over HTTP: the HTTP runtime
/// keeps one slot per group of the key space for the id the service
/// names (32 bytes each), allocated before the load; 2^24 slots are 512
/// MiB. In-process SQLite keeps nothing per group and has no bound.
pub const MAX_HTTP_GROUPS: u64 = 1 << 24;

/// Why an integer key may not exceed its maximum, for the keys whose
/// maximum is a cost rather than a meaning.
pub(super) fn why_at_most(path: &[&str]) -> Option<String> {
    match path {
        ["retry", "max_retries"] => Some(format!(
            "every retry of an event is drawn when the event is first sent and queued until \
             it is due, at most {LATER_WINDOW} ops later; a client that sends one id more than \
             {MAX_RETRIES} times has no retry policy, and the queue would only fill memory"
        )),
        _ => None,
    }
}

/// The bounds that span several keys, and bounds of durations.
pub(super) fn check(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    if s.target.busy_timeout > MAX_BUSY_TIMEOUT {
        return Err(ctx.error(
            &["target", "busy_timeout"],
            format!(
                "`target.busy_timeout` may be at most {} (SQLite takes it as a count of \
                 milliseconds in a 32-bit int), found {}",
                humantime::format_duration(MAX_BUSY_TIMEOUT),
                humantime::format_duration(s.target.busy_timeout)
            ),
        ));
    }
    // A workload's own bounds (`crate::scenario::section`).
    match crate::scenario::section::of(s.workload.name()) {
        Some(own) => (own.limits)(ctx, s),
        None => Ok(()),
    }
}
