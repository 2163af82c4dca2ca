//! NoMissedRegression, checkable from outside (`docs/groups.md`,
//! "NoMissedRegression", with its premises): every probe that
//! shows a group `resolved` with count c (a refused resolve whose probe read
//! `resolved`, and the final row) must be explained by a resolve.
//!
//! Groups are keyed by (project, fingerprint): resolves and refused
//! resolves by the key the bench sent, final rows by the key they hold, so
//! a design that computes its own group ids is judged like any other (ids
//! are only shown). Premise: one group row per key. Where
//! OneGroupPerFingerprint fails, which row a resolve or a probe was about
//! cannot be told: every observation of that key is `unknown`, said so.
//!
//! Count rule. Counts only grow, only counting steps change them, and in a
//! correct system a counting step on a resolved group flips it to
//! regressed; so the latest successful resolve before a probe returned
//! exactly the count the probe sees. For probe P the candidates are the
//! successful resolves of G that started before P ended: one returned c ->
//! holds; none did, but an indeterminate resolve of G that could be the
//! last one started before P ended -> unknown; else violated. Sound: in a
//! correct system the resolve that last set G resolved before P is among
//! the candidates (it started before P ended) and returned c, unless it is
//! indeterminate, which gives `unknown`, never `violated`. An indeterminate
//! resolve Q whose window closed before some successful resolve or counting
//! step of G started that also ended before P started cannot be the last
//! one (that step would have been followed by another resolve). Where
//! CountExact fails for G the premise "counts change only through counting
//! steps" fails, and a count-rule finding becomes `unknown`.
//!
//! Bookkeeping rule (the spec's `dirty`, where steps are logged): a counting
//! step S of G that starts after a successful resolve of G ended, and a
//! probe P showing `resolved` that starts after S ended, is a violation
//! unless some successful or indeterminate resolve of G started before P
//! ended and ended after S started. Sound: recorded step intervals contain
//! the real ones (start is taken before the statement, end after), all
//! comparisons are strict, so every resolve that could precede P finished
//! before S began: at P, `dirty[G]` is TRUE and G reads resolved, which is
//! the spec's violation exactly. It needs no count premise.
//!
//! A cut history ([`crate::history::completeness::Completeness::Cut`]): any resolve may be
//! missing from it, so both rules' "no resolve can explain the probe"
//! needs the whole history. A probe a recorded successful resolve
//! explains (it returned exactly the probe's count and started before the
//! probe ended) is judged as ever; any other probe is `unknown`, never
//! violated; the bookkeeping rule is not applied. A note says so.
//!
//! Explanations of a violation name, where steps are logged, the stale
//! read behind it (a counting op's read-only step that started before the
//! resolve's step ended, whose counting write came after the resolve
//! began) and point to `specstorm explore` for the shortest
//! counterexample; they are words only, and decide nothing.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::facts::{
    with_reads_by_start, CountingStep, GroupFacts, Probe, ReadStep, ResolveFact, Span,
};
use super::{secs, Facts, Tables};
use crate::verdict::{CheckResult, Evidence, Finding, GroupRef};
use crate::workload::Value;
use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Invariant name as reported (spec `NoMissedRegression`).
pub const NAME: &str = "NoMissedRegression";

/// Event ids of counting ops, looked up only when a finding needs them.
struct EventNames<'a> {
    facts: &'a Facts,
    map: OnceCell<HashMap<u64, super::event_map::Id<'a>>>,
}

impl<'a> EventNames<'a> {
    fn of(&self, op: u64) -> std::borrow::Cow<'a, str> {
        self.map
            .get_or_init(|| self.facts.events_by_counting_op())
            .get(&op)
            .map_or("?".into(), |id| id.text())
    }
}

/// Per group: the resolves and counting steps sorted for lookups.
struct Index<'a> {
    resolves: Vec<&'a ResolveFact>,
    /// Max end over resolves[..=i].
    resolve_max_end: Vec<u64>,
    first_start_by_count: HashMap<i64, u64, foldhash::fast::RandomState>,
    /// By start (ties in the facts' order): the facts' own list, which
    /// [`Facts::finish`] sorted so, or else a sorted copy. A hot group
    /// of a long run has millions: no list of references beside it.
    counting: Cow<'a, [CountingStep]>,
    /// The steps' reads, by place in `counting`.
    reads: Cow<'a, [(u32, ReadStep)]>,
    /// Min end over counting[i..], where some step ends before it starts
    /// (else found by [`Index::counting_min_end`] walking from i).
    counting_min_end: Option<Vec<u64>>,
    /// Min end over resolves[i..] (never ended: `u64::MAX`).
    resolve_min_end: Vec<u64>,
}

fn suffix_min(v: impl DoubleEndedIterator<Item = u64> + ExactSizeIterator) -> Vec<u64> {
    let mut out = vec![0; v.len()];
    let mut m = u64::MAX;
    for (i, x) in v.enumerate().rev() {
        m = m.min(x);
        out[i] = m;
    }
    out
}

impl<'a> Index<'a> {
    fn new(g: &'a GroupFacts) -> Self {
        let mut resolves: Vec<_> = g.resolves.iter().collect();
        resolves.sort_by_key(|r| r.span.start);
        let mut max = 0;
        let resolve_max_end = resolves
            .iter()
            .map(|r| {
                max = max.max(r.span.end.unwrap_or(u64::MAX));
                max
            })
            .collect();
        let mut first_start_by_count = HashMap::default();
        for r in &resolves {
            first_start_by_count.entry(r.count).or_insert(r.span.start);
        }
        let (counting, reads) = if g.counting_steps.is_sorted_by_key(|s| s.start) {
            (
                Cow::Borrowed(g.counting_steps.as_slice()),
                Cow::Borrowed(g.reads.as_slice()),
            )
        } else {
            let (steps, reads) = with_reads_by_start(&g.counting_steps, &g.reads);
            (Cow::Owned(steps), Cow::Owned(reads))
        };
        let counting_min_end = counting
            .iter()
            .any(|s| s.end < s.start)
            .then(|| suffix_min(counting.iter().map(|s| s.end)));
        let resolve_min_end = suffix_min(resolves.iter().map(|r| r.span.end.unwrap_or(u64::MAX)));
        Index {
            resolves,
            resolve_max_end,
            first_start_by_count,
            counting,
            reads,
            counting_min_end,
            resolve_min_end,
        }
    }

    /// The read of `counting[i]`, if it has one.
    fn read_at(&self, i: usize) -> Option<ReadStep> {
        let k = self.reads.binary_search_by_key(&i, |r| r.0 as usize).ok()?;
        Some(self.reads[k].1)
    }

    /// The min end over `counting[i..]` (`u64::MAX` if empty). Walked
    /// from i: steps lie by start and none ends before it starts, so once
    /// a step starts at or after the least end seen, it and every later
    /// one end no earlier. Only the steps running at once are read.
    fn counting_min_end(&self, i: usize) -> u64 {
        if let Some(v) = &self.counting_min_end {
            return v.get(i).copied().unwrap_or(u64::MAX);
        }
        let mut m = u64::MAX;
        for s in self.counting.get(i..).unwrap_or(&[]) {
            if s.start >= m {
                break;
            }
            m = m.min(s.end);
        }
        m
    }

    /// Some successful resolve or counting step of G starts after `after`
    /// and ends before `before`.
    /// Each list is asked alone, by start: a hot group of a long run has
    /// millions of counting steps, and a merged copy of both lists would
    /// double what the judge holds for it.
    fn step_between(&self, after: u64, before: u64) -> bool {
        let i = self.resolves.partition_point(|r| r.span.start <= after);
        let j = self.counting.partition_point(|s| s.start <= after);
        (i < self.resolves.len() && self.resolve_min_end[i] < before)
            || (j < self.counting.len() && self.counting_min_end(j) < before)
    }
}

/// Checks every probe of every group, keyed by (project, fingerprint).
/// `premise_failed` holds the keys where CountExact could not be shown.
pub fn check(
    facts: &Facts,
    tables: &Tables,
    premise_failed: &HashSet<(String, String)>,
) -> CheckResult {
    let (mut r, probes) = check_keys(facts, tables, premise_failed);
    if let Some(probes) = probes {
        notes(&mut r, probes, facts.completeness.is_cut(), facts.step_log);
    }
    r
}

/// [`check`] without its closing notes, and the probes judged (written
/// by [`notes`]; a judge of a history in parts adds the parts' first).
/// None: a resolve changed several rows, and nothing was judged (the
/// result is complete as it is).
pub fn check_keys(
    facts: &Facts,
    tables: &Tables,
    premise_failed: &HashSet<(String, String)>,
) -> (CheckResult, Option<u64>) {
    let mut r = CheckResult::new(NAME);
    // A resolve that changed several rows may have resolved groups no
    // resolve of theirs records: their probes cannot be judged.
    if let Some(&(op, rows)) = facts.wide_resolves.first() {
        r.unknown(Finding {
            msg_id: None,
            group: None,
            event_id: None,
            expected: "every resolve changes only the group it names".into(),
            found: format!(
                "resolve op {op} changed {rows} rows in one step ({} such resolves)",
                facts.wide_resolves.len()
            ),
            explanation: format!(
                "undecided: resolve op {op} changed {rows} rows in one step, so it may have \
                 resolved groups it does not name, and no probe of any group can be \
                 explained or refuted by the resolves the history credits to it"
            ),
            evidence: vec![],
        });
        r.notes.push(
            "not judged: a resolve changed more than one row (the rule's premise is that a \
             resolve changes only its own group)"
                .into(),
        );
        return (r, None);
    }
    let empty = GroupFacts::default();
    let rows = tables.rows_by_key();
    let keys: BTreeSet<(String, String)> = rows
        .keys()
        .cloned()
        .chain(facts.groups.keys().map(|&k| facts.keys[k as usize].clone()))
        .collect();
    let mut probes_checked = 0u64;
    let names = EventNames {
        facts,
        map: OnceCell::new(),
    };
    for key in keys {
        let ki = facts.key_of(&key.0, &key.1);
        let g = ki.and_then(|k| facts.groups.get(&k)).unwrap_or(&empty);
        let rows = rows.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        // Shown by the exported id where there is a row, else by the id
        // the bench sent.
        let id = match (rows, ki) {
            ([], Some(k)) => facts.key_group_ids[k as usize].clone(),
            ([], None) => String::new(),
            _ => rows
                .iter()
                .map(|g| g.id_text())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let group = GroupRef {
            project: key.0.clone(),
            fingerprint: key.1.clone(),
            id,
        };
        let finals: Vec<Probe> = rows
            .iter()
            .filter_map(|g| match (g.status.as_str(), &g.event_count) {
                (Some("resolved"), Value::Int(c)) => Some(Probe {
                    op: None,
                    span: Span {
                        start: tables.read_start,
                        end: Some(tables.read_end),
                    },
                    count: *c,
                }),
                _ => None,
            })
            .collect();
        if rows.len() > 1 {
            // Which row a resolve or a probe was about cannot be told.
            let n = (g.probes.len() + finals.len()) as u64;
            probes_checked += n;
            if n > 0 {
                let ops: Vec<u64> = g.probes.iter().filter_map(|p| p.op).take(5).collect();
                r.unknown(Finding {
                    msg_id: None,
                    group: Some(group.clone()),
                    event_id: None,
                    expected: "every observation of the group as resolved explained by a \
                               resolve of it"
                        .into(),
                    found: format!(
                        "{n} observation(s) as resolved (refused resolve ops {ops:?}{}, \
                         and {} final row(s))",
                        if g.probes.len() > 5 { ", ..." } else { "" },
                        finals.len()
                    ),
                    explanation: format!(
                        "undecided: whether these observations are explained: ({}, {}) has \
                         {} group rows (OneGroupPerFingerprint does not hold, see there), so \
                         resolves and probes cannot be attributed to one row; not judged",
                        key.0,
                        key.1,
                        rows.len()
                    ),
                    evidence: vec![],
                });
            }
            continue;
        }
        let idx = Index::new(g);
        let premise_ok = !premise_failed.contains(&key);
        for p in g.probes.iter().chain(&finals) {
            probes_checked += 1;
            judge(facts, &names, g, &idx, p, &group, premise_ok, &mut r);
        }
    }
    (r, Some(probes_checked))
}

/// Appends NoMissedRegression's closing notes to `r`: `probes_checked`
/// probes judged, in a history `cut` or not, with a step log or not.
pub fn notes(r: &mut CheckResult, probes_checked: u64, cut: bool, step_log: bool) {
    r.notes.push(format!(
        "{probes_checked} probes showed a group resolved (refused resolves and final rows)"
    ));
    if cut {
        r.notes.push(format!(
            "{}: a probe no recorded resolve explains is unknown, never violated, and the \
             spec's dirty bookkeeping rule was not applied (both need every resolve)",
            crate::history::completeness::CUT
        ));
    } else if !step_log {
        r.notes
            .push("no step log: the spec's dirty bookkeeping rule was not applied".into());
    }
}

#[allow(clippy::too_many_arguments)]
fn judge(
    facts: &Facts,
    names: &EventNames<'_>,
    g: &GroupFacts,
    idx: &Index<'_>,
    p: &Probe,
    group: &GroupRef,
    premise_ok: bool,
    r: &mut CheckResult,
) {
    let pe = p.span.end.unwrap_or(u64::MAX);
    let ps = p.span.start;
    let c = p.count;
    let n_cand = idx.resolves.partition_point(|x| x.span.start < pe);
    let explained = idx.first_start_by_count.get(&c).is_some_and(|&s| s < pe);
    let unknown_last: Vec<_> = g
        .unknown_resolves
        .iter()
        .filter(|q| q.span.start < pe)
        .filter(|q| match q.span.end {
            None => true,
            Some(qe) => !idx.step_between(qe, ps),
        })
        .collect();

    let cut = facts.completeness.is_cut();
    // The spec's own bookkeeping, where steps are logged (it needs every
    // resolve: not over a cut history).
    let dirty_step = if facts.step_log && n_cand > 0 && !cut {
        let open_ended = g
            .unknown_resolves
            .iter()
            .any(|q| q.span.start < pe && q.span.end.is_none());
        let t = g
            .unknown_resolves
            .iter()
            .filter(|q| q.span.start < pe)
            .filter_map(|q| q.span.end)
            .fold(idx.resolve_max_end[n_cand - 1], u64::max);
        let j = idx.counting.partition_point(|s| s.start <= t);
        if open_ended || j == idx.counting.len() || idx.counting_min_end(j) >= ps {
            None
        } else {
            idx.counting[j..]
                .iter()
                .filter(|s| s.end < ps)
                .min_by_key(|s| s.end)
        }
    } else {
        None
    };

    if explained && dirty_step.is_none() && premise_ok {
        return;
    }
    let what = match p.op {
        Some(op) => format!(
            "refused resolve op {op} probed {} as (resolved, {c}) at [{}, {}]",
            group.id,
            secs(ps),
            secs(pe)
        ),
        None => format!(
            "the final row of {} reads (resolved, {c}) (snapshot at {})",
            group.id,
            secs(ps)
        ),
    };
    let evidence = evidence(names, idx, p, dirty_step);
    let expected = format!(
        "a successful resolve of {} that returned event_count = {c}",
        group.id
    );
    let candidates = &idx.resolves[..n_cand];
    if let Some(s) = dirty_step {
        let stale = stale_read(facts, idx, candidates, None, pe);
        r.violation(Finding {
            msg_id: None,
            group: Some(group.clone()),
            event_id: Some(names.of(s.op).to_string()),
            expected,
            found: what.clone(),
            explanation: format!(
                "{what}; but counting step of ingest op {} (event {}) ran at [{}, {}], after \
                 every resolve of the group that started before the probe had ended: the \
                 group is dirty and still reads resolved (a missed resolved->regressed \
                 transition){stale}",
                s.op,
                names.of(s.op),
                secs(s.start),
                secs(s.end)
            ),
            evidence,
        });
        return;
    }
    if !premise_ok {
        r.unknown(Finding {
            msg_id: None,
            group: Some(group.clone()),
            event_id: None,
            expected,
            found: what.clone(),
            explanation: format!(
                "undecided: whether {what} is explained by a resolve: CountExact does not hold \
                 for ({}, {}) (see CountExact), so its count may have changed other than \
                 through counting steps, and the count rule cannot judge this probe",
                group.project, group.fingerprint
            ),
            evidence,
        });
        return;
    }
    if cut {
        r.unknown(Finding {
            msg_id: None,
            group: Some(group.clone()),
            event_id: None,
            expected,
            found: what.clone(),
            explanation: format!(
                "undecided: whether a resolve returned {c} before {what}: no recorded \
                 successful resolve did, but the history was cut (the run was killed), and \
                 the resolve that explains the probe may be among the ops it lacks"
            ),
            evidence,
        });
        return;
    }
    if !unknown_last.is_empty() {
        let ops: Vec<u64> = unknown_last.iter().map(|q| q.op).take(5).collect();
        r.unknown(Finding {
            msg_id: None,
            group: Some(group.clone()),
            event_id: None,
            expected,
            found: what.clone(),
            explanation: format!(
                "undecided: whether a resolve returned {c} before {what}: no successful \
                 resolve did, but indeterminate resolve op(s) {ops:?}{} started before the \
                 probe ended and may have set the group resolved at count {c}; their outcome \
                 is unknown, so they leave it open",
                if unknown_last.len() > 5 {
                    " (and more)"
                } else {
                    ""
                }
            ),
            evidence,
        });
        return;
    }
    // The candidate that best explains the count: the highest count below
    // c (where spans overlap, the latest to start need not be the last).
    let below = candidates
        .iter()
        .filter(|r| r.count < c)
        .max_by_key(|r| (r.count, r.span.start));
    let last = below.or(candidates.iter().min_by_key(|r| r.count));
    let base = match last {
        Some(l) if c < l.count => format!(
            "{what}; no resolve returned {c}, and every successful resolve that started \
             before it returned more (the lowest, op {}, returned {} at [{}, {}]): counts \
             only grow, so nothing explains the probe",
            l.op,
            l.count,
            secs(l.span.start),
            secs(l.span.end.unwrap_or(0))
        ),
        Some(l) => format!(
            "{what}; no resolve returned {c}: the successful resolve with the highest count \
             below it, op {}, returned {} at [{}, {}], so {} counting step(s) changed the \
             group after it without flipping it to regressed (a missed resolved->regressed \
             transition){}",
            l.op,
            l.count,
            secs(l.span.start),
            secs(l.span.end.unwrap_or(0)),
            c - l.count,
            stale_read(facts, idx, candidates, Some(l), pe)
        ),
        None => format!("{what}; no successful resolve of the group started before it"),
    };
    r.violation(Finding {
        msg_id: None,
        group: Some(group.clone()),
        event_id: None,
        expected,
        found: what,
        explanation: base,
        evidence,
    });
}

/// Where steps are logged: a counting op whose read (its read-only step
/// before the counting step) started before a resolve's step ended, and
/// whose counting write ended after that resolve began and before the
/// probe ended: the stale read a read-then-write design decides from.
/// Words for the explanation (empty if none), with a pointer to the
/// explorer for the shortest counterexample.
fn stale_read(
    facts: &Facts,
    idx: &Index<'_>,
    candidates: &[&ResolveFact],
    first: Option<&ResolveFact>,
    pe: u64,
) -> String {
    if !facts.step_log {
        return String::new();
    }
    let latest = candidates.iter().rev().take(3).copied();
    let found = first.into_iter().chain(latest).find_map(|m| {
        let m_end = m.span.end.unwrap_or(u64::MAX);
        idx.counting.iter().enumerate().find_map(|(k, s)| {
            let rd = idx.read_at(k)?;
            (rd.start < m_end && s.end > m.span.start && s.end < pe).then_some((m, s, rd))
        })
    });
    let Some((m, s, rd)) = found else {
        return String::new();
    };
    let variant = facts
        .header
        .as_ref()
        .map(|h| explore_variant(&h.variant))
        .unwrap_or_else(|| "VARIANT.sql".into());
    format!(
        ". Op {}'s step {} at [{}, {}] read the group before resolve op {} resolved it at \
         [{}, {}]; its counting write {} at [{}, {}] then kept `resolved`. For the shortest \
         counterexample, run `specstorm explore --set variant={variant}`",
        s.op,
        facts.ingest_step_name(rd.idx),
        secs(rd.start),
        secs(rd.end),
        m.op,
        secs(m.span.start),
        secs(m.span.end.unwrap_or(0)),
        facts.ingest_step_name(facts.counting_step),
        secs(s.start),
        secs(s.end)
    )
}

/// The `variant` value that makes `specstorm explore` run the history's
/// variant: a built-in's name, else its statement file.
fn explore_variant(name: &str) -> String {
    if crate::variant::builtin().any(|(n, _, _)| n == name) || name.ends_with(".sql") {
        name.to_string()
    } else {
        format!("{name}.sql")
    }
}

/// The resolves and counting steps that explain a finding, in time order:
/// the last few successful resolves before the probe, then the counting
/// steps of the group that started after the latest of them.
fn evidence(
    names: &EventNames<'_>,
    idx: &Index<'_>,
    p: &Probe,
    dirty: Option<&CountingStep>,
) -> Vec<Evidence> {
    let pe = p.span.end.unwrap_or(u64::MAX);
    let n = idx.resolves.partition_point(|x| x.span.start < pe);
    let mut ev = Vec::new();
    for r in &idx.resolves[n.saturating_sub(3)..n] {
        ev.push(Evidence {
            t: r.span.start,
            op: Some(r.op),
            what: format!(
                "resolve op {} set resolved and returned event_count = {} (at [{}, {}])",
                r.op,
                r.count,
                secs(r.span.start),
                secs(r.span.end.unwrap_or(0))
            ),
        });
    }
    let after = idx.resolves[..n].last().map(|r| r.span.start).unwrap_or(0);
    let mut counted: Vec<&CountingStep> = idx
        .counting
        .iter()
        .filter(|s| (s.end > after && s.start < pe) || dirty.is_some_and(|d| d.op == s.op))
        .collect();
    counted.truncate(10);
    for s in counted {
        ev.push(Evidence {
            t: s.start,
            op: Some(s.op),
            what: format!(
                "ingest op {} (event {}, invoked at {}) ran its counting step at [{}, {}]",
                s.op,
                names.of(s.op),
                secs(s.op_start),
                secs(s.start),
                secs(s.end)
            ),
        });
    }
    ev.push(Evidence {
        t: p.span.start,
        op: p.op,
        what: match p.op {
            Some(op) => format!("refused resolve op {op} probed (resolved, {})", p.count),
            None => format!("final snapshot reads (resolved, {})", p.count),
        },
    });
    ev.sort_by_key(|e| e.t);
    ev
}
