//! TypeOK: every status is open/resolved/regressed, every event_count an
//! integer >= 0, and every acknowledged event (an `ok` answer with accepted
//! = true) is in error_events (the spec's `done ⊆ events`). Two named rules
//! of the same family (nothing the client was told is stored is lost):
//! - "unexplained duplicate": an ingest answered duplicate (`ok`, accepted
//!   = false) although no other attempt of its event that may have had an
//!   effect started before its deciding point ended (see
//!   [`super::facts`]): the client was told the event was already stored,
//!   and no attempt can have stored it;
//! - "insert ignored by its own op" (in-process, where the header names
//!   the event-insert step): the same, for an op whose own event-insert
//!   step changed a row and which then answered duplicate without running
//!   the counting step (a stop condition on a stale value): the event is
//!   stored, never counted, and every retry will stop as a duplicate.
//!
//! Two clauses of the final snapshot. "A row no op sent": every row of
//! error_events has the id of an event some op of the run carried (the
//! spec's `events ⊆ Events`: events hold only ids clients send); it rests
//! on the general premise that the judged rows are the run's own (a fresh
//! database, or the run's namespace of projects) and on a history that
//! holds every op sent (every op is recorded when it ends, an abandoned
//! request as `info`, and a cut history, where the last ops may be
//! missing, is not judged). And an
//! event answered duplicate whose
//! attempts all ended `ok` or `fail` is in error_events (a duplicate
//! answer says the row is there; after an indeterminate attempt the
//! stranded report counts it instead).
//!
//! Both rules are judged on the history alone (every attempt of the event,
//! after the whole history is read), so they hold also where the service
//! prunes event rows. A crash fault on an op exempts it from the second
//! rule (a pause is harmless). Where the event-insert step is not known
//! (an older history, or none named), duplicates are judged against every
//! step that may have changed a row, and the second rule is not judged:
//! a note says so.
//!
//! The rules and their premises are `docs/groups.md`'s "TypeOK" (with
//! "Unexplained duplicate" and "Insert ignored by its own op").
//!
//! A cut history ([`crate::history::completeness::Completeness::Cut`]): the two history rules and
//! "answered duplicate but never stored" need every attempt of the event
//! (the attempt that stored the row, or that stopped between its steps,
//! may be the one missing), so they are not applied, and a note says so.
//! The other clauses read one recorded answer and the final tables, and
//! stand: an acknowledged event must be stored whatever else happened.
//!
//! Sound: each clause reads the final snapshot directly; an event counts as
//! acknowledged only when the target itself answered accepted, and rows are
//! never deleted by the workload, so a missing acknowledged row is lost
//! data. An event row whose group does not exist is legal (s1 runs before
//! s2) and not flagged. Where the service deletes event rows itself
//! (`audit.events = "pruned"`), a missing row proves nothing: that clause
//! is not judged, and the result says so.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::event_map::Id;
use super::facts::{EventStep, Lost, LostRule};
use super::tables::text;
use super::{secs, Facts, Tables};
use crate::verdict::{CheckResult, Evidence, Finding, GroupRef};
use crate::workload::Value;

/// Invariant name as reported (spec `TypeOK`).
pub const NAME: &str = "TypeOK";

/// TypeOK (`docs/groups.md`): every status is open, resolved or regressed, every `event_count` an integer >= 0, and every acknowledged event is in `error_events` (the spec's `done ⊆ events`).
pub fn check(facts: &Facts, tables: &Tables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    // What the final snapshot shows is visible from its read on.
    let snapshot = |what: String| {
        vec![Evidence {
            t: tables.read_start,
            op: None,
            what: format!("the final snapshot (at {}) {what}", secs(tables.read_start)),
        }]
    };
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
                evidence: snapshot(format!("holds group {} with this status", g.id_text())),
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
                evidence: snapshot(format!("holds group {} with this count", g.id_text())),
            });
        }
    }
    let cut = facts.completeness.is_cut();
    if cut {
        r.notes.push(format!(
            "{}: \"unexplained duplicate\", \"insert ignored by its own op\", \"answered \
             duplicate but never stored\" and \"a row no op sent\" not judged (each needs \
             every attempt of the event, or every op); statuses, counts and acknowledged \
             events were",
            crate::history::completeness::CUT
        ));
    } else {
        for id in unsent_rows(facts, tables) {
            r.violation(Finding {
                msg_id: None,
                group: None,
                event_id: Some(id.clone()),
                expected: "every event row's id is one a client sent (the spec's events ⊆ \
                           Events)"
                    .into(),
                found: format!("error_events holds a row with id {id}, which no op sent"),
                explanation: format!(
                    "a row no op sent: no ingest of this run carried event id {id}, yet the \
                     final error_events table has a row with it in this run's rows: the \
                     service stored an event no client sent (a garbled or invented id, or a \
                     row written outside the ops, the schema's own included)"
                ),
                evidence: snapshot(format!("holds a row for event {id}")),
            });
        }
        for l in &facts.lost {
            r.violation(lost_finding(facts, l));
        }
    }
    match (facts.step_log, facts.event_step) {
        _ if cut => {}
        (true, EventStep::Known(_)) => {}
        (true, EventStep::Assumed(_)) => r.notes.push(
            "\"insert ignored by its own op\" not judged: this history does not record which \
             ingest step inserts the event row (it predates that record); duplicate answers \
             were judged against every step that may have changed a row"
                .into(),
        ),
        (true, EventStep::Unknown) => r.notes.push(
            "\"insert ignored by its own op\" not judged: the history does not name the ingest \
             step that inserts the event row; duplicate answers were judged against every step \
             that may have changed a row"
                .into(),
        ),
        (false, _) => r.notes.push(
            "\"insert ignored by its own op\" not judged: it needs the step log (the \
             in-process target); duplicate answers were judged against the other attempts' \
             requests"
                .into(),
        ),
    }
    if tables.events_pruned {
        r.notes.push(
            "\"every acknowledged event is in error_events\" not judged: the service deletes \
             event rows (audit.events = \"pruned\"), so a missing row proves nothing; this \
             verdict covers statuses, counts and rows no op sent only"
                .into(),
        );
        return r;
    }
    // A duplicate answer says the row is already there, and rows are never
    // deleted: an event answered duplicate that is missing was dropped,
    // however its attempts overlapped. Where some attempt of it is
    // indeterminate it may have stopped between a step that made later
    // attempts answer duplicate and the one that stores the row (a fault,
    // an error): the stranded report counts it instead.
    let mut unstored: Vec<(Id<'_>, _)> = facts
        .events
        .iter()
        .filter(|(id, e)| {
            !cut && !e.acked
                && e.tries.iter().any(|a| a.decided().is_some())
                && !e.tries.iter().any(|a| a.indeterminate)
                && !e.in_table(*id, tables)
        })
        .collect();
    unstored.sort_by_key(|(id, _)| *id);
    for (id, e) in unstored {
        let (project, fingerprint) = facts.keys[e.key as usize].clone();
        let ops: Vec<u64> = e
            .tries
            .iter()
            .filter(|a| a.decided().is_some())
            .map(|a| a.op)
            .collect();
        r.violation(Finding {
            msg_id: None,
            group: None,
            event_id: Some(id.to_string()),
            expected: "every event answered duplicate is in error_events".into(),
            found: format!(
                "event {id} ({project}, {fingerprint}) was answered duplicate (ops {ops:?}) but \
                 is missing"
            ),
            explanation: format!(
                "answered duplicate but never stored: ops {ops:?} were told event {id} was \
                 already stored, every attempt of it ended ok or fail, and the final \
                 error_events table has no row with its id: the event was dropped"
            ),
            evidence: snapshot(format!("has no row for event {id}")),
        });
    }
    let mut missing: Vec<(Id<'_>, _)> = facts
        .events
        .iter()
        .filter(|(id, e)| e.acked && !e.in_table(*id, tables))
        .collect();
    missing.sort_by_key(|(id, _)| *id);
    for (id, e) in missing {
        let (project, fingerprint) = facts.keys[e.key as usize].clone();
        r.violation(Finding {
            msg_id: None,
            group: None,
            event_id: Some(id.to_string()),
            expected: "every acknowledged event is in error_events".into(),
            found: format!("event {id} ({project}, {fingerprint}) was acknowledged but is missing"),
            explanation: "an ingest answered ok (accepted) for this event, yet the final \
                          error_events table has no row with its id: acknowledged data was lost"
                .into(),
            evidence: snapshot(format!("has no row for event {id}")),
        });
    }
    r
}

/// The ids of the final `error_events` rows that no op of the history
/// carried, in id order. Sound where the judged rows are the run's own (a
/// fresh database, or the run's namespace of projects, the general
/// premise) and the history holds every op sent (a cut history is not
/// judged here).
fn unsent_rows(facts: &Facts, tables: &Tables) -> Vec<String> {
    let mut ids: Vec<String> = tables
        .event_ids
        .iter()
        .filter(|id| facts.events.get(id).is_none())
        .map(|id| id.into_owned())
        .collect();
    ids.sort();
    ids
}

/// A lost event as a finding: the duplicate op at its deciding point, and
/// every other attempt of the event that started before it, with why it
/// cannot explain the answer (later attempts are only counted: they are
/// no evidence of when the loss became visible).
fn lost_finding(facts: &Facts, l: &Lost) -> Finding {
    let e = &facts.events[&l.event_id];
    let (project, fingerprint) = facts.keys[e.key as usize].clone();
    let d = e.tries.iter().find(|a| a.op == l.op).copied();
    let step = d.and_then(|d| d.stop_step());
    let decided_by = match step {
        Some(i) => format!(
            "its step {} (the stop that answered duplicate) ended at {}",
            facts.ingest_step_name(i),
            secs(l.decided)
        ),
        None => format!("the answer arrived at {}", secs(l.decided)),
    };
    let mut evidence = Vec::new();
    let mut later = Vec::new();
    let mut others: Vec<_> = e.tries.iter().filter(|a| a.op != l.op).collect();
    others.sort_by_key(|a| (a.start, a.op));
    for a in others {
        if a.start >= l.decided {
            later.push(a.op);
            continue;
        }
        evidence.push(Evidence {
            t: a.start.min(l.decided),
            op: Some(a.op),
            what: format!(
                "attempt op {} (from {}): {}",
                a.op,
                secs(a.start),
                a.effect.why_not()
            ),
        });
    }
    let own = l.rule == LostRule::InsertIgnored;
    evidence.push(Evidence {
        t: l.decided,
        op: Some(l.op),
        what: format!(
            "ingest op {} answered duplicate (ok, accepted = false){}; {decided_by}",
            l.op,
            if own {
                let i = facts.event_step.index().unwrap_or(0);
                format!(
                    " after its own event-insert step {} changed a row",
                    facts.ingest_step_name(i)
                )
            } else {
                String::new()
            }
        ),
    });
    evidence.sort_by_key(|e| e.t);
    let n_before = evidence.len() - 1;
    let before = match n_before {
        0 => "no other attempt of it started before its deciding point".to_string(),
        n => format!(
            "none of the {n} other attempt(s) that started before its deciding point may \
             have inserted it"
        ),
    };
    let later = if later.is_empty() {
        String::new()
    } else {
        format!(
            " ({} later attempt(s), ops {:?}, started after it)",
            later.len(),
            later
        )
    };
    let (expected, explanation) = if own {
        (
            "an op that inserted its event row runs on to count it".to_string(),
            format!(
                "{}: op {} inserted event {} itself, then answered duplicate without running \
                 the counting step (a stop condition decided on a stale value): the event is \
                 stored but never counted, and every retry will stop as a duplicate; \
                 {before}{later}",
                l.rule.name(),
                l.op,
                l.event_id
            ),
        )
    } else {
        (
            "a duplicate answer only after another attempt of the event may have stored it"
                .to_string(),
            format!(
                "{}: op {} was told event {} was already stored, but {before}{later}: the \
                 event was dropped while the client was told it was stored",
                l.rule.name(),
                l.op,
                l.event_id
            ),
        )
    };
    Finding {
        msg_id: None,
        group: Some(GroupRef {
            project: project.clone(),
            fingerprint: fingerprint.clone(),
            id: facts.key_group_ids[e.key as usize].clone(),
        }),
        event_id: Some(l.event_id.clone()),
        expected,
        found: format!(
            "{}: ingest op {} answered duplicate for event {} ({project}, {fingerprint}); \
             {decided_by}",
            l.rule.name(),
            l.op,
            l.event_id
        ),
        explanation,
        evidence,
    }
}
