//! What a groups run exercised (`summary.json`'s `coverage`): the events
//! certainly counted and the probes that saw a group resolved. Shared by
//! the run, its audit and the merge.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::summary::Coverage;
use crate::workload::groups::checker::{Facts, Tables};

/// What a history and its final tables exercised: events certainly
/// counted, and probes that showed a group resolved (refused resolves'
/// probes, and final rows reading resolved).
pub fn of(facts: &Facts, tables: &Tables) -> Coverage {
    let probes = facts
        .groups
        .values()
        .map(|g| g.probes.len() as u64)
        .sum::<u64>()
        + tables
            .groups
            .iter()
            .filter(|g| g.status.as_str() == Some("resolved"))
            .count() as u64;
    Coverage::new(
        facts.events.values().filter(|e| e.done).count() as u64,
        probes,
    )
}
