//! `[fuzz]`: `max_sleep`'s bound, and the fuzzer asked for by name where
//! it cannot act (an HTTP service the bench did not spawn runs its steps
//! itself). The keys' types are the schema's.
//!
//! May import: its sibling files and `scenario`'s types.

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::fuzz::MAX_SLEEP;
use crate::scenario::Scenario;

/// `fuzz.max_sleep` is at most [`MAX_SLEEP`]; `fuzz.enabled = true` given
/// on an HTTP target that is not spawned is refused, so that nobody
/// believes it took effect (left to its default there, it is only off).
pub(super) fn check_fuzz(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let Some(f) = &s.fuzz else { return Ok(()) };
    if f.max_sleep > MAX_SLEEP {
        return Err(ctx.error(
            &["fuzz", "max_sleep"],
            format!(
                "`fuzz.max_sleep` may be at most {}, found {}: the fuzzer widens a race window \
                 by about a statement's time; a longer wait is a pause fault ([[faults]] with \
                 kind = \"pause\")",
                humantime::format_duration(MAX_SLEEP),
                humantime::format_duration(f.max_sleep)
            ),
        ));
    }
    if f.enabled && !s.target.caps().steps && ctx.is_given(&["fuzz", "enabled"]) {
        return Err(ctx.error(
            &["fuzz", "enabled"],
            "`fuzz.enabled` = true needs steps the bench runs: in-process SQLite or the spawned \
             reference server (`target.spawn = true`); another HTTP service runs its own",
        ));
    }
    Ok(())
}
