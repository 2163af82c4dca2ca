//! Evidence: for each groups invariant, how many chances the run gave it
//! to see a violation, had there been one. A `holds` says only that none of
//! these chances showed one; over too few of them it says nothing, so a
//! `holds` below the scenario's minimum (`[min_evidence]`) becomes
//! `unknown` ([`require`]). A violation stands whatever the evidence: it
//! was seen. `docs/groups.md`, "Evidence: what a holds rests on", states
//! it for users.
//!
//! What counts, per invariant (each a count of things the checker judged):
//!
//! - **TypeOK**: the group rows whose status and count it read, plus the
//!   acknowledged events it looked up in `error_events` (none where event
//!   rows are pruned: that clause is not judged). A lost acknowledged
//!   write can only show on an acknowledged event; a bad status or count
//!   only on a row.
//! - **OneGroupPerFingerprint**: certainly counted events of a (project,
//!   fingerprint) beyond its first. A second row for a key can only come
//!   from an ingest of that key while a row for it exists or is being
//!   created (a design that finds the row by a non-deterministic id, or
//!   checks and then inserts); a key counted once had no such chance,
//!   however many rows are read.
//! - **CountExact**: certainly counted events, |Done| summed over all
//!   groups: each is one increment the final count must hold.
//! - **NoMissedRegression**: counting steps of a group that overlap or
//!   follow a successful resolve of it (the step ended after the resolve
//!   began) and start before some probe of it ends (a
//!   refused resolve that read it `resolved`, or its final row reading
//!   `resolved`). Only such a step can meet the group resolved and fail to
//!   flip it to regressed where a probe can see it: a step before every
//!   resolve meets it open or regressed, and a missed flip that no probe
//!   follows is healed or hidden by later steps. Where no steps are logged
//!   (over HTTP), the acknowledged ingest ops of the group in the same
//!   position stand for their counting steps (the op's interval holds it).
//!
//! Per fault with a duration (kill, lock: the history's `start`/`stop`
//! entries), the same counts over what happened while it was active: the
//! counting steps (or acknowledged ingest ops) whose interval overlaps one
//! of its windows. There, TypeOK counts acknowledged ingest ops only (the
//! group rows are read after the load, in no window), OneGroupPerFingerprint
//! counts every such step but each group's earliest, and CountExact counts
//! attempts (an event counted twice counts twice, which a correct run
//! never does).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::facts::FaultWindow;
use super::{Facts, Tables};
use crate::verdict::{CheckResult, Finding, Verdict};
use crate::workload::groups::config::MinEvidence;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What each invariant's evidence counts, in words (findings and docs).
pub fn what(invariant: &str) -> &'static str {
    match invariant {
        "TypeOK" => "group rows and acknowledged events checked",
        "OneGroupPerFingerprint" => {
            "certainly counted events of a (project, fingerprint) beyond its first"
        }
        "CountExact" => "certainly counted events",
        "NoMissedRegression" => {
            "counting steps of a group that overlap or follow a successful resolve of it, \
             before a probe of it"
        }
        _ => "",
    }
}

pub use crate::workload::groups::figures::{EvidenceReport, FaultEvidence};

/// Counts per invariant, in `GROUPS_INVARIANTS` order.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    type_ok: u64,
    one_group: u64,
    count_exact: u64,
    no_missed_regression: u64,
}

impl Counts {
    fn map(self) -> BTreeMap<String, u64> {
        [
            (super::type_ok::NAME, self.type_ok),
            (super::one_group::NAME, self.one_group),
            (super::count_exact::NAME, self.count_exact),
            (super::no_missed_regression::NAME, self.no_missed_regression),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// One fault's windows: how many opened, and the time they covered as
/// disjoint spans sorted by start (so their ends are sorted too).
struct Windows {
    fault: u32,
    kind: &'static str,
    opened: u64,
    spans: Vec<(u64, u64)>,
}

impl Windows {
    /// Whether [start, end] overlaps one of the windows (closed intervals).
    fn overlaps(&self, (start, end): (u64, u64)) -> bool {
        let i = self.spans.partition_point(|w| w.1 < start);
        self.spans.get(i).is_some_and(|w| w.0 <= end)
    }
}

fn windows(facts: &Facts, end_of_run: u64) -> Vec<Windows> {
    let mut by_fault: BTreeMap<u32, Windows> = BTreeMap::new();
    for &FaultWindow {
        fault,
        kind,
        start,
        stop,
    } in &facts.fault_windows
    {
        let w = by_fault.entry(fault).or_insert_with(|| Windows {
            fault,
            kind: kind.name(),
            opened: 0,
            spans: Vec::new(),
        });
        w.opened += 1;
        w.spans.push((start, stop.unwrap_or(end_of_run.max(start))));
    }
    let mut out: Vec<Windows> = by_fault.into_values().collect();
    for w in &mut out {
        // A fault's windows follow one another; should two overlap, their
        // union is what it covered.
        w.spans.sort();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(w.spans.len());
        for &(s, e) in &w.spans {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        w.spans = merged;
    }
    out
}

/// The evidence of a history and its final tables (one pass over the
/// events and one over the groups).
pub fn gather(facts: &Facts, tables: &Tables) -> EvidenceReport {
    let mut total = Counts::default();
    let faults = windows(facts, tables.read_start);
    let mut during = vec![Counts::default(); faults.len()];
    let mut done_per_key: HashMap<u32, u64> = HashMap::new();
    let mut acked = 0u64;
    for e in facts.events.values() {
        if e.done {
            total.count_exact += 1;
            *done_per_key.entry(e.key).or_default() += 1;
        }
        acked += u64::from(e.acked);
    }
    total.one_group = done_per_key.values().map(|n| n.saturating_sub(1)).sum();
    total.type_ok = tables.groups.len() as u64 + if tables.events_pruned { 0 } else { acked };

    let resolved_final: HashSet<u32> = tables
        .groups
        .iter()
        .filter(|g| g.status.as_str() == Some("resolved"))
        .filter_map(|g| {
            let (p, f) = g.key();
            facts.key_of(&p, &f)
        })
        .collect();
    for g in facts.groups.values() {
        // The intervals that certainly hold a counting step of the group,
        // walked again where needed rather than copied: a hot group of a
        // long run has millions.
        let steps = g.counting_steps.iter().filter(|_| facts.step_log);
        let acked = g.acked.iter().filter(|_| !facts.step_log);
        let counted = steps.map(|s| (s.start, s.end)).chain(acked.copied());
        let first_resolve = g.resolves.iter().map(|r| r.span.start).min();
        let final_probe = g
            .key
            .filter(|k| resolved_final.contains(k))
            .map(|_| tables.read_end);
        let last_probe = g
            .probes
            .iter()
            .map(|p| p.span.end.unwrap_or(u64::MAX))
            .chain(final_probe)
            .max();
        let window = first_resolve.zip(last_probe);
        let nmr = counted
            .clone()
            .filter(move |s| window.is_some_and(|(rs, pe)| s.1 > rs && s.0 < pe));
        total.no_missed_regression += nmr.clone().count() as u64;
        if faults.is_empty() {
            continue;
        }
        let earliest = counted.clone().min();
        for (w, c) in faults.iter().zip(during.iter_mut()) {
            let n = |spans: &mut dyn Iterator<Item = (u64, u64)>| {
                spans.filter(|s| w.overlaps(*s)).count() as u64
            };
            let in_w = n(&mut counted.clone());
            c.count_exact += in_w;
            c.one_group += in_w - u64::from(earliest.is_some_and(|s| w.overlaps(s)));
            c.no_missed_regression += n(&mut nmr.clone());
            if !tables.events_pruned {
                c.type_ok += n(&mut g.acked.iter().copied());
            }
        }
    }
    EvidenceReport {
        invariants: total.map(),
        faults: faults
            .iter()
            .zip(during)
            .map(|(w, c)| {
                let ns: u64 = w.spans.iter().map(|s| s.1 - s.0).sum();
                (
                    w.fault.to_string(),
                    FaultEvidence {
                        kind: w.kind.to_string(),
                        windows: w.opened,
                        active_s: (ns as f64 / 1e6).round() / 1e3,
                        invariants: c.map(),
                    },
                )
            })
            .collect(),
    }
}

/// [`gather`] then [`require`]: the evidence of a history and its final
/// tables, with each `holds` below its minimum turned `unknown`. The one
/// call of both for runs, audits and merges, so that they judge alike.
pub fn judge(
    facts: &Facts,
    tables: &Tables,
    min: &MinEvidence,
    results: &mut [CheckResult],
) -> EvidenceReport {
    let evidence = gather(facts, tables);
    require(results, &evidence, min);
    evidence
}

/// Turns each `holds` whose evidence is below its minimum into `unknown`,
/// with a finding "too little evidence: N, minimum M". A violated or
/// unknown verdict is left as it is; so is an invariant with no evidence
/// figure or no minimum (not a groups invariant).
pub fn require(results: &mut [CheckResult], evidence: &EvidenceReport, min: &MinEvidence) {
    for r in results {
        let (Some(m), Some(&n)) = (min.of(&r.invariant), evidence.invariants.get(&r.invariant))
        else {
            continue;
        };
        if n >= m || r.verdict != Verdict::Holds {
            continue;
        }
        let name = r.invariant.clone();
        r.unknown(Finding {
            group: None,
            event_id: None,
            msg_id: None,
            expected: format!("at least {m} {} (min_evidence.{name})", what(&name)),
            found: format!("{n}"),
            explanation: format!(
                "too little evidence: {n}, minimum {m}: the run gave {name} {n} chance(s) to \
                 see a violation ({}), too few for its holds to mean anything; run longer or \
                 under less disruptive faults, or lower min_evidence.{name}",
                what(&name)
            ),
            evidence: vec![],
        });
    }
}
