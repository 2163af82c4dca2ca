//! Stranded events (not a spec invariant; groups.md asks for the report):
//! rows in error_events whose inserting attempt stopped after s1 and before
//! the counting step, so that no retry will ever count them (a retry stops
//! at s1 with changes = 0). Counted and explained by cause; they fail no
//! run unless the scenario asks (thresholds, later).

use super::{Facts, Tables};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many events are stranded, in all and per cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stranded {
    /// Stranded events in all.
    pub total: u64,
    /// Stranded events per cause (how the inserting attempt ended).
    pub by_cause: BTreeMap<String, u64>,
    /// A few stranded event ids with the op that inserted them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<(String, u64)>,
    /// Events in the table that may or may not have been counted (an
    /// indeterminate attempt, not Done): stranded or not, nobody can say.
    #[serde(default)]
    pub undetermined: u64,
}

/// Events present in the final table, certainly not counted (neither Done
/// nor Maybe), whose row an attempt of this run inserted.
pub fn report(facts: &Facts, tables: &Tables) -> Stranded {
    let mut s = Stranded::default();
    let mut ids: Vec<_> = facts
        .events
        .iter()
        .filter(|(id, e)| {
            !e.done && !e.maybe && e.insert.is_some() && tables.event_ids.contains(*id)
        })
        .collect();
    ids.sort_by_key(|(id, _)| *id);
    s.undetermined = facts
        .events
        .iter()
        .filter(|(id, e)| e.is_maybe() && tables.event_ids.contains(*id))
        .count() as u64;
    for (id, e) in ids {
        let (op, cause) = e.insert.expect("filtered");
        let cause = cause
            .map(|c| facts.causes[c as usize].clone())
            .unwrap_or_else(|| "unknown".into());
        s.total += 1;
        *s.by_cause.entry(cause).or_default() += 1;
        if s.examples.len() < 10 {
            s.examples.push((id.clone(), op));
        }
    }
    s
}
