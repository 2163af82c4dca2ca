//! A groups history judged in parts: each part holds every op of some
//! (project, fingerprint) keys (an event's attempts share its key) and the
//! final rows of those keys, and the parts' verdicts are merged into what
//! one judge of the whole gives, byte for byte.
//!
//! Why that is exact. Every checker judges per key or per event, and sorts
//! what it reports: OneGroupPerFingerprint, CountExact and
//! NoMissedRegression report in key order (CountExact's keys without a
//! group row after those with one), so their findings are merged by key;
//! counts and the figures the notes are written from are summed
//! ([`count_exact::Figures`], NoMissedRegression's probes, the evidence,
//! the coverage, the stranded report's [`stranded::Parts`]); notes that
//! depend only on the header, the history's completeness and the tables'
//! mode are the same in every part. What has no exact merge here gives
//! None, and the caller judges the whole history instead: a TypeOK finding
//! (its findings are ordered by table row, duplicate time and event id), a
//! resolve that changed several rows (NoMissedRegression names the
//! history's first), a finding without a group.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::checker::evidence::{self, EvidenceReport};
use super::checker::{count_exact, no_missed_regression, one_group, stranded, type_ok};
use super::checker::{Facts, Tables};
use super::config::MinEvidence;
use crate::summary::Coverage;
use crate::verdict::{CheckResult, Finding, Verdict, MAX_KEPT};
use std::collections::btree_map::Entry;

/// Where a finding stands in its checker's report order: (phase, project,
/// fingerprint).
type Rank = (u8, String, String);

/// One checker's result in a part, each finding with its rank.
#[derive(Debug, Clone)]
struct Ranked {
    result: CheckResult,
    violations: Vec<Rank>,
    unknowns: Vec<Rank>,
}

/// One part judged: what [`merge`] needs of it.
#[derive(Debug, Clone)]
pub struct Part {
    /// TypeOK, OneGroupPerFingerprint, CountExact, NoMissedRegression,
    /// without their figure notes; None: no exact merge (see the module's doc).
    results: Option<Vec<Ranked>>,
    count: count_exact::Figures,
    probes: u64,
    stranded: stranded::Parts,
    evidence: EvidenceReport,
    coverage: Coverage,
    cut: bool,
    pruned: bool,
    step_log: bool,
}

/// Judges one part (its facts and its final rows).
pub fn judge(facts: &Facts, tables: &Tables) -> Part {
    let (count, failed, figures) = count_exact::check_keys(facts, tables);
    let (nmr, probes) = no_missed_regression::check_keys(facts, tables, &failed);
    let with_row = tables.rows_by_key();
    let count_phase = |k: &(String, String)| u8::from(!with_row.contains_key(k));
    let results = probes.and_then(|_| {
        let type_ok = type_ok::check(facts, tables);
        if type_ok.violations + type_ok.unknowns > 0 {
            return None;
        }
        Some(vec![
            ranked(type_ok, &|_| 0)?,
            ranked(one_group::check(tables), &|_| 0)?,
            ranked(count, &count_phase)?,
            ranked(nmr, &|_| 0)?,
        ])
    });
    Part {
        results,
        count: figures,
        probes: probes.unwrap_or(0),
        stranded: stranded::parts(facts, tables),
        evidence: evidence::gather(facts, tables),
        coverage: super::coverage::of(facts, tables),
        cut: facts.completeness.is_cut(),
        pruned: tables.events_pruned,
        step_log: facts.step_log,
    }
}

/// Each kept finding of `r` with its rank; None if one has no group.
fn ranked(r: CheckResult, phase: &dyn Fn(&(String, String)) -> u8) -> Option<Ranked> {
    let rank = |f: &Finding| {
        f.group.as_ref().map(|g| {
            let key = (g.project.clone(), g.fingerprint.clone());
            (phase(&key), key.0, key.1)
        })
    };
    let violations = r.examples.iter().map(rank).collect::<Option<_>>()?;
    let unknowns = r.unknown_examples.iter().map(rank).collect::<Option<_>>()?;
    Some(Ranked {
        result: r,
        violations,
        unknowns,
    })
}

/// What a judge of the whole history gives: the verdicts (with the
/// evidence minimums applied), the stranded report, the evidence and the
/// coverage.
pub type Merged = (
    Vec<CheckResult>,
    stranded::Stranded,
    EvidenceReport,
    Coverage,
);

/// The parts' verdicts merged (see the module's doc), with the evidence
/// minimums `min` applied; None where no exact merge exists.
pub fn merge(parts: Vec<Part>, min: &MinEvidence) -> Option<Merged> {
    let first = parts.first()?;
    let (cut, pruned, step_log) = (first.cut, first.pruned, first.step_log);
    let mut count = count_exact::Figures::default();
    let mut probes = 0;
    let mut str_parts: Option<stranded::Parts> = None;
    let mut ev: Option<EvidenceReport> = None;
    let mut coverage = Coverage::new(0, 0);
    let mut per_checker: Vec<Vec<Ranked>> = vec![];
    for p in parts {
        count += p.count;
        probes += p.probes;
        match &mut str_parts {
            Some(s) => s.add(p.stranded),
            None => str_parts = Some(p.stranded),
        }
        match &mut ev {
            Some(e) => add_evidence(e, p.evidence),
            None => ev = Some(p.evidence),
        }
        coverage.events_counted += p.coverage.events_counted;
        coverage.probes += p.coverage.probes;
        for (i, r) in p.results?.into_iter().enumerate() {
            if per_checker.len() <= i {
                per_checker.push(vec![]);
            }
            per_checker[i].push(r);
        }
    }
    let mut results = per_checker
        .into_iter()
        .map(merge_results)
        .collect::<Option<Vec<_>>>()?;
    count.notes(&mut results[2], cut, pruned);
    no_missed_regression::notes(&mut results[3], probes, cut, step_log);
    let ev = ev?;
    evidence::require(&mut results, &ev, min);
    Some((results, str_parts?.finish(), ev, coverage))
}

/// One checker's results of every part as one: findings by (visible
/// instant, rank) and by rank, counts summed, notes the same in every part.
fn merge_results(parts: Vec<Ranked>) -> Option<CheckResult> {
    let notes = parts.first()?.result.notes.clone();
    let mut r = CheckResult::new(&parts.first()?.result.invariant);
    r.notes = notes;
    let mut violations = vec![];
    let mut unknowns = vec![];
    for p in parts {
        if p.result.notes != r.notes {
            return None;
        }
        r.violations += p.result.violations;
        r.unknowns += p.result.unknowns;
        r.first_violation_ns = match (r.first_violation_ns, p.result.first_violation_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        violations.extend(p.violations.into_iter().zip(p.result.examples));
        unknowns.extend(p.unknowns.into_iter().zip(p.result.unknown_examples));
    }
    // Stable sorts: findings of one key are of one part, in its order.
    violations.sort_by(|(ra, a), (rb, b)| (visible(a), ra).cmp(&(visible(b), rb)));
    unknowns.sort_by(|(a, _), (b, _)| a.cmp(b));
    r.examples = violations.into_iter().take(MAX_KEPT).map(|x| x.1).collect();
    r.unknown_examples = unknowns.into_iter().take(MAX_KEPT).map(|x| x.1).collect();
    r.verdict = if r.violations > 0 {
        Verdict::Violated
    } else if r.unknowns > 0 {
        Verdict::Unknown
    } else {
        Verdict::Holds
    };
    Some(r)
}

/// The instant a finding became visible, as [`CheckResult::violation`]
/// orders them (none: last).
fn visible(f: &Finding) -> u64 {
    f.evidence.iter().map(|e| e.t).max().unwrap_or(u64::MAX)
}

/// Adds another part's evidence (of other groups and events; the fault
/// windows are the same in every part).
fn add_evidence(e: &mut EvidenceReport, o: EvidenceReport) {
    for (k, n) in o.invariants {
        *e.invariants.entry(k).or_default() += n;
    }
    for (k, f) in o.faults {
        match e.faults.entry(k) {
            Entry::Vacant(v) => {
                v.insert(f);
            }
            Entry::Occupied(mut mine) => {
                for (k, n) in f.invariants {
                    *mine.get_mut().invariants.entry(k).or_default() += n;
                }
            }
        }
    }
}
