//! `[load]`, `[stop]`, `[keys]` and `[retry]` (the groups workload's
//! load): the checks that span their keys, once each key has its type and
//! range (`schema`). Bounds that are a cost rather than a meaning are in
//! `limits`.
//!
//! May import: its sibling files and `scenario`'s types.

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::{LoadModel, Scenario, Skew};

/// The open model needs a rate and the closed one has none; the run must
/// stop on something; retries need a budget; a hot set lies within the
/// groups.
pub(super) fn check(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    match s.load.model {
        LoadModel::Open if s.load.rate <= 0.0 => {
            // Point at the rate when one was written, else at the model.
            let at: &[&str] = if ctx.is_given(&["load", "rate"]) {
                &["load", "rate"]
            } else {
                &["load", "model"]
            };
            return Err(ctx.error(
                at,
                format!(
                    "model = \"open\" needs `load.rate` > 0 (target ingest ops/s), found {}",
                    s.load.rate
                ),
            ));
        }
        LoadModel::Closed if s.load.rate != 0.0 => {
            return Err(ctx.error(
                &["load", "rate"],
                "rate only applies to model = open (set load.model = \"open\", or remove the rate)",
            ));
        }
        _ => {}
    }

    if s.stop.events == 0 && s.stop.duration.is_none() {
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

    if s.retry.probability > 0.0 && s.retry.max_retries == 0 {
        return Err(ctx.error(
            &["retry", "max_retries"],
            format!(
                "`retry.max_retries` must be at least 1 when `retry.probability` > 0 (it is {})",
                s.retry.probability
            ),
        ));
    }

    if s.keys.skew == Skew::Hot {
        let groups = s.groups();
        let hot = u64::from(s.keys.hot_groups);
        if hot == 0 || hot > groups {
            return Err(ctx.error(
                &["keys", "hot_groups"],
                format!(
                    "`keys.hot_groups` must be from 1 to the number of groups \
                     (projects * fingerprints = {groups}) when skew = \"hot\", found {hot}"
                ),
            ));
        }
    }
    Ok(())
}
