//! `[explore]`: the small world `specstorm explore` searches. Each
//! workload's world has its keys (`crate::scenario::section`): another
//! workload's keys are refused on its scenario, and its own checks run.
//!
//! May import: its sibling files, `scenario`'s types and its workload
//! sections' registry, `crate::scenario::section`.

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::Scenario;

/// The keys of another workload's world are refused when given with a
/// value other than their default; then the workload's own checks of its
/// world. (A workload without a world of its own, one registered at run
/// time, takes no `[explore]` at all: refused with the workload.)
pub(super) fn check_explore(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let Some(own) = crate::scenario::section::of(s.workload.name()) else {
        return Ok(());
    };
    let who = own.workload;
    // A saved scenario (a run folder's scenario.toml) lists every key with
    // its value: the other world's keys at their defaults are no mistake.
    let given = serde_json::to_value(&s.explore).expect("explore serializes");
    let default =
        serde_json::to_value(crate::scenario::Explore::default()).expect("explore serializes");
    let at_default = |key: &str| given.get(key) == default.get(key);
    for other in crate::scenario::section::workloads() {
        if other.workload == who {
            continue;
        }
        for key in other.explore_keys {
            if ctx.is_given(&["explore", key]) && !at_default(key) {
                return Err(ctx.error(
                    &["explore", key],
                    format!(
                        "`explore.{key}` belongs to the {} world; the {who} world of \
                         workload = \"{who}\" has {}",
                        other.workload,
                        own.explore_keys
                            .iter()
                            .map(|k| format!("`explore.{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    (own.explore_check)(ctx, s)
}
