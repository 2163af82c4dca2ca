//! TypeOK: every status is open/resolved/regressed, every event_count an
//! integer >= 0, and every acknowledged event (an `ok` answer with accepted
//! = true) is in error_events (the spec's `done ⊆ events`).
//!
//! Sound: each clause reads the final snapshot directly; an event counts as
//! acknowledged only when the target itself answered accepted, and rows are
//! never deleted by the workload, so a missing acknowledged row is lost
//! data. An event row whose group does not exist is legal (s1 runs before
//! s2) and not flagged. Where the service deletes event rows itself
//! (`audit.events = "pruned"`), a missing row proves nothing: that clause
//! is not judged, and the result says so.

use super::tables::text;
use super::{CheckResult, Facts, Finding, GroupRef, Tables};
use crate::workload::Value;

/// Invariant name as reported (spec `TypeOK`).
pub const NAME: &str = "TypeOK";

/// TypeOK (groups.md): every status is open, resolved or regressed, every `event_count` an integer >= 0, and every acknowledged event is in `error_events` (the spec's `done ⊆ events`).
pub fn check(facts: &Facts, tables: &Tables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    for g in &tables.groups {
        let group = Some(GroupRef {
            project: text(&g.project),
            fingerprint: text(&g.fingerprint),
            id: g.id_text(),
        });
        if !matches!(g.status.as_str(), Some("open" | "resolved" | "regressed")) {
            r.violation(Finding {
                msg_id: None,
                group: group.clone(),
                event_id: None,
                expected: "status in {open, resolved, regressed}".into(),
                found: format!(
                    "status = {}",
                    serde_json::to_string(&g.status).unwrap_or_default()
                ),
                explanation: "a group row holds a status the spec does not know".into(),
                evidence: vec![],
            });
        }
        if !matches!(g.event_count, Value::Int(n) if n >= 0) {
            r.violation(Finding {
                msg_id: None,
                group,
                event_id: None,
                expected: "event_count an integer >= 0".into(),
                found: format!(
                    "event_count = {}",
                    serde_json::to_string(&g.event_count).unwrap_or_default()
                ),
                explanation: "a group row holds a count that is no natural number".into(),
                evidence: vec![],
            });
        }
    }
    if tables.events_pruned {
        r.notes.push(
            "\"every acknowledged event is in error_events\" not judged: the service deletes \
             event rows (audit.events = \"pruned\"), so a missing row proves nothing; this \
             verdict covers statuses and counts only"
                .into(),
        );
        return r;
    }
    let mut missing: Vec<(&String, _)> = facts
        .events
        .iter()
        .filter(|(id, e)| e.acked && !tables.event_ids.contains(*id))
        .collect();
    missing.sort_by_key(|(id, _)| *id);
    for (id, e) in missing {
        let (project, fingerprint) = facts.keys[e.key as usize].clone();
        r.violation(Finding {
            msg_id: None,
            group: None,
            event_id: Some(id.clone()),
            expected: "every acknowledged event is in error_events".into(),
            found: format!("event {id} ({project}, {fingerprint}) was acknowledged but is missing"),
            explanation: "an ingest answered ok (accepted) for this event, yet the final \
                          error_events table has no row with its id: acknowledged data was lost"
                .into(),
            evidence: vec![],
        });
    }
    r
}
