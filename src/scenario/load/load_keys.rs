//! `[stop]`, and the checks that span a workload's own sections' keys
//! (`crate::scenario::section`), once each key has its type and range
//! (`schema`). Bounds that are a cost rather than a meaning are in
//! `limits`.
//!
//! May import: its sibling files, `scenario`'s types and its workload
//! sections' registry, `crate::scenario::section`.

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::Scenario;

/// The workload's own checks of its keys (the groups' open model needs a
/// rate, ...); then the run must stop on something.
pub(super) fn check(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    if let Some(own) = crate::scenario::section::of(s.workload.name()) {
        (own.keys)(ctx, s)?;
    }
    if s.stop.events == 0 && crate::scenario::section::load_duration(s).is_none() {
        // Blame an override if one caused it, else the [stop] table.
        let at = [&["stop", "events"][..], &["stop", "duration"][..]]
            .into_iter()
            .find(|path| ctx.override_of(path).is_some())
            .unwrap_or(&["stop"]);
        return Err(ctx.error(
            at,
            "the run would never stop: set `stop.events` > 0 or a `stop.duration`",
        ));
    }
    Ok(())
}
