//! What a run exercised (`summary.json`'s `coverage`), per workload: the
//! groups' events certainly counted and probes that saw a group resolved
//! ([`groups`]), the outbox's messages acked ([`outbox`]). Shared by each
//! workload's run, its audit and the merge.
//!
//! Report layer: imports the checkers' facts and tables and the summary.

use crate::checker::outbox::Liveness;
use crate::checker::{Facts, Tables};
use crate::summary::Coverage;

/// What a history and its final tables exercised: events certainly
/// counted, and probes that showed a group resolved (refused resolves'
/// probes, and final rows reading resolved).
pub fn groups(facts: &Facts, tables: &Tables) -> Coverage {
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

/// What an outbox run exercised: the messages acked (a run that acked
/// none judged nothing: a gap, exit 4). Shared by the run and its audit.
pub fn outbox(liveness: &Liveness) -> Coverage {
    let mut coverage = Coverage {
        events_counted: liveness.acked_messages,
        probes: 0,
        gaps: Vec::new(),
    };
    if liveness.acked_messages == 0 {
        coverage
            .gaps
            .push("no message was acked, so the outbox invariants judged nothing".into());
    }
    coverage
}
