//! CountExact: for every group G, |Done(G)| <= event_count(G) <=
//! |Done(G)| + |Maybe(G)|, and event_count(G) <= |A(G)| (groups.md).
//!
//! Sound: Done holds only events whose counting step certainly changed G's
//! row (from the exact step log, or an `ok` accepted answer), so a correct
//! system has counted at least those; every attempt that may have counted
//! is in Maybe, so a correct system counted no more than Done + Maybe; and
//! a correct system counts each event row at most once, so never more than
//! the rows A(G). With no indeterminate attempt the bounds meet: equality.
//! A count that is not an integer cannot be judged (TypeOK reports it): that
//! group's verdict is `unknown`. Where the service deletes event rows
//! itself (`audit.events = "pruned"`), |A(G)| bounds nothing and is not
//! used: the bounds then rest on the history alone, and a note says so.

use super::facts::EventFacts;
use super::{CheckResult, Evidence, Facts, Finding, GroupRef, Tables};
use crate::workload::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Invariant name as reported (spec `CountExact`).
pub const NAME: &str = "CountExact";

/// |Done|, |Maybe| and the events behind them, for one (project, fingerprint).
type KeyCounts<'a> = (u64, u64, Vec<(&'a String, &'a EventFacts)>);

/// The verdict, and the (project, fingerprint) keys where the count could
/// not be shown right (violated or unjudgeable): NoMissedRegression's
/// premise fails there.
pub fn check(facts: &Facts, tables: &Tables) -> (CheckResult, HashSet<(String, String)>) {
    let mut r = CheckResult::new(NAME);
    let mut failed = HashSet::new();
    // (done, maybe, events) per key.
    let mut per_key: HashMap<u32, KeyCounts<'_>> = HashMap::new();
    for (id, e) in &facts.events {
        let k = per_key.entry(e.key).or_default();
        if e.done {
            k.0 += 1;
        } else if e.maybe {
            k.1 += 1;
        }
        if e.done || e.maybe {
            k.2.push((id, e));
        }
    }
    let mut with_row = HashSet::new();
    let mut bounded = 0u64;
    for g in &tables.groups {
        let key = g.key();
        let ki = facts.key_of(&key.0, &key.1);
        if let Some(ki) = ki {
            with_row.insert(ki);
        }
        let empty = (0, 0, Vec::new());
        let (done, maybe, evs) = ki.and_then(|k| per_key.get(&k)).unwrap_or(&empty);
        let rows = tables.events_per_key.get(&key).copied().unwrap_or(0);
        let group = GroupRef {
            project: key.0.clone(),
            fingerprint: key.1.clone(),
            id: g.id_text(),
        };
        let Value::Int(count) = g.event_count else {
            failed.insert(key);
            r.unknown(Finding {
                msg_id: None,
                group: Some(group),
                event_id: None,
                expected: format!("an integer count in [{done}, {}]", done + maybe),
                found: format!(
                    "event_count = {}",
                    serde_json::to_string(&g.event_count).unwrap_or_default()
                ),
                explanation: "the count is no integer, so it cannot be compared (see TypeOK)"
                    .into(),
                evidence: vec![],
            });
            continue;
        };
        if *maybe > 0 {
            bounded += 1;
        }
        // Compared as i128 so a negative count (a broken target) is below
        // every bound instead of wrapping or being clamped to 0.
        let (lo, hi) = (*done, done + maybe);
        let c = count as i128;
        // Rows the service pruned itself bound nothing.
        let over_rows = !tables.events_pruned && c > rows as i128;
        if c < lo as i128 || c > hi as i128 || over_rows {
            failed.insert(key);
            let mut evidence = explain(evs, c < lo as i128);
            evidence.truncate(10);
            let found = format!("event_count = {count}");
            let (expected, why) = if over_rows {
                (
                    format!("event_count <= |A(G)| = {rows} event rows"),
                    "the group counts more events than error_events holds for it".to_string(),
                )
            } else if c < lo as i128 {
                (
                    exp(lo, hi),
                    format!(
                        "{} events certainly completed their counting step, but the count is \
                         {count}: increments were lost",
                        lo
                    ),
                )
            } else {
                (
                    exp(lo, hi),
                    format!(
                        "at most {hi} events can have been counted ({lo} done, {maybe} maybe), \
                         but the count is {count}: an event was counted twice"
                    ),
                )
            };
            r.violation(Finding {
                msg_id: None,
                group: Some(group),
                event_id: None,
                expected,
                found,
                explanation: why,
                evidence,
            });
        }
    }
    // Counted events whose group row is gone: their increments are lost.
    let mut orphans: BTreeMap<&(String, String), u64> = BTreeMap::new();
    for (k, (done, _, _)) in &per_key {
        if *done > 0 && !with_row.contains(k) {
            orphans.insert(&facts.keys[*k as usize], *done);
        }
    }
    for ((project, fingerprint), done) in orphans {
        failed.insert((project.clone(), fingerprint.clone()));
        r.violation(Finding {
            msg_id: None,
            group: Some(GroupRef {
                project: project.clone(),
                fingerprint: fingerprint.clone(),
                id: String::new(),
            }),
            event_id: None,
            expected: format!("a group row counting {done} events"),
            found: "no group row".into(),
            explanation: "events completed their counting step for this fingerprint, yet no \
                          group row exists for it"
                .into(),
            evidence: vec![],
        });
    }
    if bounded > 0 {
        r.notes.push(format!(
            "{bounded} groups were judged by bounds (Done <= count <= Done + Maybe) because \
             some of their ingests were indeterminate (or answered ok without saying \
             accepted or duplicate)"
        ));
    }
    if tables.events_pruned {
        r.notes.push(
            "event_count <= |A(G)| not judged: the service deletes event rows (audit.events = \
             \"pruned\"); the bounds rest on the history alone"
                .into(),
        );
    }
    (r, failed)
}

fn exp(lo: u64, hi: u64) -> String {
    if lo == hi {
        format!("event_count = |Done(G)| = {lo}")
    } else {
        format!("{lo} <= event_count <= {hi} (|Done(G)| .. |Done(G)| + |Maybe(G)|)")
    }
}

/// Evidence: events counted more than once first (the usual cause of a
/// count too high), else a few counted events.
fn explain(evs: &[(&String, &EventFacts)], too_low: bool) -> Vec<Evidence> {
    let mut out: Vec<Evidence> = Vec::new();
    let mut sorted: Vec<_> = evs.to_vec();
    sorted.sort_by(|a, b| b.1.counted.cmp(&a.1.counted).then(a.0.cmp(b.0)));
    for (id, e) in sorted {
        if !too_low && e.counted < 2 && !out.is_empty() {
            break;
        }
        out.push(Evidence {
            t: 0,
            op: e.counted_ops.first().copied(),
            what: format!(
                "event {id}: {} attempts, counted by {} (ops {:?}){}",
                e.attempts,
                e.counted,
                e.counted_ops,
                if e.is_maybe() { ", maybe counted" } else { "" }
            ),
        });
        if out.len() >= 10 {
            break;
        }
    }
    out
}
