//! `[explore]`: the small world `specstorm explore` searches. Each
//! workload's keys are refused on the other's scenario; the groups world's
//! queued events need fingerprints.
//!
//! May import: its sibling files and `scenario`'s types.

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::Scenario;

/// The keys of the other workload's world are refused when given with a
/// value other than their default. Groups:
/// every queued event id needs a fingerprint (the spec's `FpOf` is total
/// on `Events`); the project must not be empty. (The outbox world's keys
/// are checked by their ranges.)
pub(super) fn check_explore(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let x = &s.explore;
    let outbox = s.workload == crate::scenario::Workload::Outbox;
    let (theirs, ours, who) = if outbox {
        (EXPLORE_GROUPS_KEYS, EXPLORE_OUTBOX_KEYS, "outbox")
    } else {
        (EXPLORE_OUTBOX_KEYS, EXPLORE_GROUPS_KEYS, "groups")
    };
    // A saved scenario (a run folder's scenario.toml) lists every key with
    // its value: the other world's keys at their defaults are no mistake.
    let d = crate::scenario::Explore::default();
    let at_default = |key: &str| match key {
        "queues" => x.queues == d.queues,
        "fingerprints" => x.fingerprints == d.fingerprints,
        "resolves" => x.resolves == d.resolves,
        "project" => x.project == d.project,
        "messages" => x.messages == d.messages,
        "deliveries" => x.deliveries == d.deliveries,
        "handlers" => x.handlers == d.handlers,
        "fails" => x.fails == d.fails,
        "redeliveries" => x.redeliveries == d.redeliveries,
        _ => false,
    };
    for key in theirs {
        if ctx.is_given(&["explore", key]) && !at_default(key) {
            return Err(ctx.error(
                &["explore", key],
                format!(
                    "`explore.{key}` belongs to the {} world; the {who} world of \
                     workload = \"{who}\" has {}",
                    if outbox { "groups" } else { "outbox" },
                    ours.iter()
                        .map(|k| format!("`explore.{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if outbox {
        return Ok(());
    }
    if x.project.trim().is_empty() {
        return Err(ctx.error(
            &["explore", "project"],
            "`explore.project` must not be empty",
        ));
    }
    for (w, queue) in x.queues.iter().enumerate() {
        for (i, id) in queue.iter().enumerate() {
            if !x.fingerprints.contains_key(id) {
                let (w, i) = (w.to_string(), i.to_string());
                return Err(ctx.error(
                    &["explore", "queues", &w, &i],
                    format!(
                        "event {id:?} of `explore.queues[{w}]` has no fingerprint: add `{id} = \"f1\"` (say) to `explore.fingerprints`"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `[explore]` keys of the groups world (besides the shared bounds).
const EXPLORE_GROUPS_KEYS: &[&str] = &["queues", "fingerprints", "resolves", "project"];
/// `[explore]` keys of the outbox world (besides the shared bounds).
const EXPLORE_OUTBOX_KEYS: &[&str] = &[
    "messages",
    "deliveries",
    "handlers",
    "fails",
    "redeliveries",
];
