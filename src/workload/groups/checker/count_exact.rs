//! CountExact: for every group G, |Done(G)| <= event_count(G) <=
//! |Done(G)| + |Maybe(G)|, and event_count(G) <= |A(G)| (`docs/groups.md`,
//! "CountExact", with its premises; Done, Maybe and A(G) as "Done, Maybe,
//! A(G)" there defines them); and
//! at every instant a probe read G's count, the count lay between the
//! events certainly counted before the probe began and the events that
//! may have been counted by its end.
//!
//! Groups are keyed by (project, fingerprint), as the events are (a design
//! may compute its own group ids). Premise: one group row per key. Where
//! OneGroupPerFingerprint fails, the events of the key cannot be
//! attributed to one row: that key is `unknown` (and NoMissedRegression,
//! whose count rule needs CountExact, does not judge it either).
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
//!
//! Probes. A refused resolve's probe reads the row's count at some instant
//! of its step (of its whole op, remote). In a correct system the count at
//! an instant is the number of distinct events whose counting step took
//! effect before it (the spec's `done`), so a probe that read c in
//! [start, end] needs: events certainly counted (counting step ended;
//! accepted answer arrived) before `start` <= c <= events with an attempt
//! that counted or may have counted and whose counting step started
//! (remote: was invoked) by `end`. Recorded starts are taken before and
//! ends after the real ones (merging only widens them), so both bounds are
//! loose in the safe direction. Successful resolves' returned counts are
//! not used here: they are NoMissedRegression's to judge.
//!
//! One-block ingest (the header's `ingest_block`: the event-insert step
//! and the counting step lie in one transaction block). Then also
//! event_count(G) >= |A(G)|, so with the bound above the count equals the
//! group's event rows. Sound: SQLite commits a block's statements
//! together or none of them (the bench refuses blocks with `journal_mode
//! = off`, and ATTACH, where that fails); a rolled-back block, a crash
//! inside one (rolled back before the connection is used again) and a
//! COMMIT of unknown outcome leave both the row and its increment or
//! neither; a retry of a stored event stops at its insert, inside its
//! block, having changed nothing; and only counting steps change a count
//! (`check` refuses any other writer of the count column). So every row
//! of G came with exactly one increment of G's count, and a row without
//! its increment (what an autocommit design reports as a stranded event)
//! is a broken promise of atomicity here: a violation, not a weakness.
//! It reads the final rows only, so it holds for a cut history too; not
//! where the service prunes rows (`audit.events = "pruned"`).
//!
//! A violation is visible at the first instant the evidence shows it: the
//! earliest probe outside its bounds, else the final snapshot's read.
//!
//! A cut history ([`crate::history::completeness::Completeness::Cut`]): any attempt may be
//! missing, so every event row not certainly counted is Maybe and counts
//! may hold increments no recorded op made. Every upper bound drawn from
//! the history (Done + Maybe, and a probe's "events that may have been
//! counted by its end") needs the whole history and is not applied. What
//! stays is sound over any subset of the ops: a recorded Done event was
//! counted whatever is missing, so |Done(G)| <= event_count(G) and a
//! probe's lower bound stand (a missing op can only add counted events),
//! as do the lost increments of a key with no group row; and
//! event_count(G) <= |A(G)| reads the final rows, not the history (not
//! under `audit.events = "pruned"`, where nothing bounds the count from
//! above).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::facts::{EventFacts, Probe};
use super::{secs, Facts, Tables};
use crate::verdict::{CheckResult, Evidence, Finding, GroupRef};
use crate::workload::Value;
use std::cell::OnceCell;
use std::collections::{BTreeMap, HashSet};

/// Invariant name as reported (spec `CountExact`).
pub const NAME: &str = "CountExact";

/// Events of one key, as indexes into the facts' events: a key of a long
/// run holds millions, so 4 bytes each instead of an id and a reference.
#[derive(Clone, Copy)]
struct Evs<'a> {
    map: &'a super::event_map::EventMap<EventFacts>,
    idx: &'a [u32],
}

impl<'a> Evs<'a> {
    fn iter(self) -> impl Iterator<Item = (super::event_map::Id<'a>, &'a EventFacts)> {
        self.idx.iter().map(move |&i| self.map.at(i as usize))
    }
}

/// Per key index, its events done or maybe ([`Evs`]), listed only once
/// a finding needs them: a correct run's keys need none, and a hot key's
/// list would be millions long.
struct KeyEvents<'a> {
    facts: &'a Facts,
    lists: OnceCell<Vec<Vec<u32>>>,
}

impl<'a> KeyEvents<'a> {
    fn of(&self, key: Option<u32>) -> Evs<'_> {
        let lists = self.lists.get_or_init(|| {
            let mut lists = vec![Vec::new(); self.facts.keys.len()];
            for (i, e) in self.facts.events.values().enumerate() {
                if e.done || e.maybe {
                    if let Some(l) = lists.get_mut(e.key as usize) {
                        l.push(u32::try_from(i).expect("fewer than 2^32 event ids"));
                    }
                }
            }
            lists
        });
        Evs {
            map: &self.facts.events,
            idx: key
                .and_then(|k| lists.get(k as usize))
                .map_or(&[], Vec::as_slice),
        }
    }
}

/// The verdict, and the (project, fingerprint) keys where the count could
/// not be shown right (violated or unjudgeable): NoMissedRegression's
/// premise fails there.
pub fn check(facts: &Facts, tables: &Tables) -> (CheckResult, HashSet<(String, String)>) {
    let (mut r, failed, figures) = check_keys(facts, tables);
    figures.notes(&mut r, facts.completeness.is_cut(), tables.events_pruned);
    (r, failed)
}

/// What CountExact's notes count, summed over groups: a judge of a
/// history in parts adds the parts' figures before writing the notes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Probes of group counts judged.
    pub probes: u64,
    /// Groups judged by bounds.
    pub bounded: u64,
}

impl std::ops::AddAssign for Figures {
    fn add_assign(&mut self, o: Figures) {
        self.probes += o.probes;
        self.bounded += o.bounded;
    }
}

/// [`check`] without its notes: the findings, the failed keys and the
/// figures the notes are written from ([`Figures::notes`]).
pub fn check_keys(
    facts: &Facts,
    tables: &Tables,
) -> (CheckResult, HashSet<(String, String)>, Figures) {
    let mut r = CheckResult::new(NAME);
    let mut failed = HashSet::new();
    let cut = facts.completeness.is_cut();
    // Each probe's bounds, counted in the same pass as |Done| and |Maybe|
    // per key (by key index).
    let mut bounds = Bounds::new(facts, !cut);
    let mut per_key: Vec<(u64, u64)> = vec![(0, 0); facts.keys.len()];
    for e in facts.events.values() {
        let Some(k) = per_key.get_mut(e.key as usize) else {
            continue;
        };
        if e.done {
            k.0 += 1;
        } else if e.maybe {
            k.1 += 1;
        }
        if e.done || e.maybe {
            bounds.add(e);
        }
    }
    bounds.sum();
    let lists = KeyEvents {
        facts,
        lists: OnceCell::new(),
    };
    let one_block = facts
        .header
        .as_ref()
        .and_then(|h| h.ingest_block)
        .filter(|_| !tables.events_pruned);
    let snapshot = tables.read_start;
    let mut with_row = HashSet::new();
    let mut bounded = 0u64;
    let mut probes = 0u64;
    for (key, rows) in tables.rows_by_key() {
        let ki = facts.key_of(&key.0, &key.1);
        if let Some(ki) = ki {
            with_row.insert(ki);
        }
        let (done, maybe) = ki.and_then(|k| per_key.get(k as usize)).unwrap_or(&(0, 0));
        let n_rows = tables.events_per_key.get(&key).copied().unwrap_or(0);
        let ids: Vec<String> = rows.iter().map(|g| g.id_text()).collect();
        let group = GroupRef {
            project: key.0.clone(),
            fingerprint: key.1.clone(),
            id: ids.join(", "),
        };
        if rows.len() > 1 {
            failed.insert(key.clone());
            r.unknown(Finding {
                msg_id: None,
                group: Some(group),
                event_id: None,
                expected: "one group row for the key, whose count the key's events bound".into(),
                found: format!("{} group rows: {}", rows.len(), ids.join(", ")),
                explanation: format!(
                    "undecided: whether the counts of ({}, {}) are right: its {} counted events \
                     cannot be attributed to one of its {} rows (OneGroupPerFingerprint does \
                     not hold, see there), so no row's count is judged",
                    key.0,
                    key.1,
                    done,
                    rows.len()
                ),
                evidence: vec![],
            });
            continue;
        }
        let g = rows[0];
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
                explanation: "undecided: whether the count is right: the final row's count is \
                              no integer, so it cannot be compared (see TypeOK)"
                    .into(),
                evidence: vec![],
            });
            continue;
        };
        if *maybe > 0 {
            bounded += 1;
        }
        // The earliest probe outside its bounds, if any.
        // The probes by (start, end), each as its place (4 bytes: a hot
        // key has hundreds of thousands): refused resolves' probes, then
        // the observations.
        let observed = ki.and_then(|k| facts.groups.get(&k)).map(|gf| {
            let n = gf.probes.len();
            let at = move |i: u32| {
                let i = i as usize;
                match gf.probes.get(i) {
                    Some(p) => (p, "resolved"),
                    None => (&gf.observations[i - n], "open or regressed"),
                }
            };
            let total = u32::try_from(n + gf.observations.len()).expect("fewer than 2^32 probes");
            let mut all: Vec<u32> = (0..total).collect();
            all.sort_by_key(|&i| {
                let p = at(i).0;
                (p.span.start, p.span.end.unwrap_or(u64::MAX))
            });
            (all, at)
        });
        let mut probe_finding = None;
        if let Some((all, at)) = observed.filter(|a| !a.0.is_empty()) {
            probes += all.len() as u64;
            let evs = || lists.of(ki);
            probe_finding = all.into_iter().find_map(|i| {
                let (p, status) = at(i);
                bounds.judge(ki, p, status, &evs, &group)
            });
        }
        // Compared as i128 so a negative count (a broken target) is below
        // every bound instead of wrapping or being clamped to 0.
        let (lo, hi) = (*done, done + maybe);
        let c = count as i128;
        // Rows the service pruned itself bound nothing.
        let over_rows = !tables.events_pruned && c > n_rows as i128;
        // A cut history bounds the count from below only.
        let over_hi = !cut && c > hi as i128;
        // A one-block ingest: every row came with its increment.
        let under_rows = one_block.is_some() && c < n_rows as i128;
        let snapshot_bad = c < lo as i128 || over_hi || over_rows || under_rows;
        if let Some(mut f) = probe_finding {
            failed.insert(key);
            if snapshot_bad {
                f.explanation.push_str(&format!(
                    "; the final row reads event_count = {count} as well"
                ));
            }
            r.violation(f);
            continue;
        }
        if !snapshot_bad {
            continue;
        }
        failed.insert(key);
        let found = format!("event_count = {count} in the final snapshot");
        let t_snap = Evidence {
            t: snapshot,
            op: None,
            what: format!(
                "the final snapshot (at {}) reads event_count = {count}",
                secs(snapshot)
            ),
        };
        let (expected, why, mut evidence) = if c < lo as i128 {
            (
                if cut {
                    format!("event_count >= |Done(G)| = {lo} (a cut history: no upper bound)")
                } else {
                    exp(lo, hi)
                },
                format!(
                    "a lost increment: {lo} events of the group certainly completed their \
                     counting step (|Done(G)| = {lo}), but the count is {count}: {} \
                     increment(s) were lost",
                    lo as i128 - c
                ),
                certainly_counted(lists.of(ki), u64::MAX, snapshot),
            )
        } else if over_hi {
            let (twice, evidence) = counted_twice(lists.of(ki), snapshot);
            let why = match twice {
                Some((id, n, ops)) => format!(
                    "a double count: event {id} was counted by {n} attempts (ops {ops:?}); the \
                     count {count} exceeds the {hi} events that can have been counted ({lo} \
                     done, {maybe} maybe)"
                ),
                None => format!(
                    "a double count: the count {count} exceeds the {hi} events that can have \
                     been counted ({lo} done, {maybe} maybe): the group was incremented more \
                     often than it has counted events"
                ),
            };
            (exp(lo, hi), why, evidence)
        } else if under_rows {
            let [first, last] = one_block.expect("under_rows needs a block");
            (
                format!(
                    "event_count = |A(G)| = {n_rows} event rows (the ingest inserts the row and \
                     counts it in one transaction block, steps {first}..={last})"
                ),
                format!(
                    "a partial effect: error_events holds {n_rows} rows for the group but the \
                     count is {count}: {} row(s) without their increment, which a committed \
                     block cannot leave (not a stranded event: the block promised both or \
                     neither)",
                    n_rows as i128 - c
                ),
                Vec::new(),
            )
        } else {
            (
                format!("event_count <= |A(G)| = {n_rows} event rows"),
                format!(
                    "the count {count} exceeds the {n_rows} rows error_events holds for the \
                     group: it counts events that are not stored"
                ),
                Vec::new(),
            )
        };
        evidence.push(t_snap);
        evidence.sort_by_key(|e| e.t);
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
    // Counted events whose group row is gone: their increments are lost.
    let mut orphans: BTreeMap<&(String, String), (u32, u64)> = BTreeMap::new();
    for (k, &(done, _)) in per_key.iter().enumerate() {
        let k = k as u32;
        if done > 0 && !with_row.contains(&k) {
            orphans.insert(&facts.keys[k as usize], (k, done));
        }
    }
    for ((project, fingerprint), (k, done)) in orphans {
        failed.insert((project.clone(), fingerprint.clone()));
        let mut evidence = certainly_counted(lists.of(Some(k)), u64::MAX, snapshot);
        evidence.push(Evidence {
            t: snapshot,
            op: None,
            what: format!(
                "the final snapshot (at {}) has no group row for ({project}, {fingerprint})",
                secs(snapshot)
            ),
        });
        r.violation(Finding {
            msg_id: None,
            group: Some(GroupRef {
                project: project.clone(),
                fingerprint: fingerprint.clone(),
                id: facts.key_group_ids[k as usize].clone(),
            }),
            event_id: None,
            expected: format!("a group row counting {done} events"),
            found: "no group row".into(),
            explanation: format!(
                "lost increments: {done} events completed their counting step for this key, \
                 yet the final snapshot has no group row for it"
            ),
            evidence,
        });
    }
    (r, failed, Figures { probes, bounded })
}

impl Figures {
    /// Appends CountExact's notes to `r`: what was judged how.
    pub fn notes(self, r: &mut CheckResult, cut: bool, pruned: bool) {
        let Figures { probes, bounded } = self;
        if probes > 0 {
            r.notes.push(format!(
                "{probes} probes of group counts (refused resolves) were judged against the events \
                 counted by their instant"
            ));
        }
        if cut {
            r.notes.push(format!(
                "{}: every event row not certainly counted may have been, and counts may hold \
                 increments no recorded op made; judged: |Done(G)| <= event_count <= |A(G)| in \
                 the final snapshot, and events certainly counted before each probe <= its count \
                 (the upper bounds from the history need the whole of it)",
                crate::history::completeness::CUT
            ));
        } else if bounded > 0 {
            r.notes.push(format!(
                "{bounded} groups were judged by bounds (Done <= count <= Done + Maybe) because \
                 some of their ingests were indeterminate (or answered ok without saying \
                 accepted or duplicate)"
            ));
        }
        if pruned {
            r.notes.push(
                "event_count <= |A(G)| not judged: the service deletes event rows (audit.events = \
                 \"pruned\"); the bounds rest on the history alone"
                    .into(),
            );
        }
    }
}

fn exp(lo: u64, hi: u64) -> String {
    if lo == hi {
        format!("event_count = |Done(G)| = {lo}")
    } else {
        format!("{lo} <= event_count <= {hi} (|Done(G)| .. |Done(G)| + |Maybe(G)|)")
    }
}

/// Per key with probes, each probe's bounds: at each instant a probe
/// began, how many of the key's events (done or maybe) were certainly
/// counted before it, and at each instant one ended, how many may have
/// been counted by then. Counted in one pass over the events, each found
/// among the key's probe instants: no sorted copy of a hot key's millions
/// of instants is held.
struct Bounds {
    /// Per key index: its slot in `keys`, if it has probes.
    slot: Vec<Option<u32>>,
    keys: Vec<ProbeBounds>,
    /// Whether the upper bound applies (not over a cut history).
    upper: bool,
}

/// One key's probe instants, distinct and sorted, and beside each the
/// events it bounds: counts per instant until [`Bounds::sum`], then the
/// running sums.
#[derive(Default)]
struct ProbeBounds {
    starts: Vec<u64>,
    counted_before: Vec<u64>,
    ends: Vec<u64>,
    counted_by_end: Vec<u64>,
    /// Where the key's last event fell in `starts` and in `ends`: the
    /// events come in about the order they were counted, so the next one
    /// of the key mostly falls there or just after.
    near: (usize, usize),
}

/// `v.partition_point(pred)`, looked for first at `*near` and just after
/// it (then left there).
#[inline]
fn partition_near(v: &[u64], near: &mut usize, pred: impl Fn(u64) -> bool) -> usize {
    let h = (*near).min(v.len());
    let i = if h > 0 && !pred(v[h - 1]) {
        v[..h - 1].partition_point(|&x| pred(x))
    } else if h == v.len() || !pred(v[h]) {
        h
    } else if h + 1 == v.len() || !pred(v[h + 1]) {
        h + 1
    } else {
        h + 2 + v[h + 2..].partition_point(|&x| pred(x))
    };
    *near = i;
    i
}

impl Bounds {
    fn new(facts: &Facts, upper: bool) -> Self {
        let mut slot = vec![None; facts.keys.len()];
        let mut keys = Vec::new();
        for (&k, g) in &facts.groups {
            let probes = g.probes.iter().chain(&g.observations);
            if g.probes.is_empty() && g.observations.is_empty() {
                continue;
            }
            let Some(s) = slot.get_mut(k as usize) else {
                continue;
            };
            let mut starts: Vec<u64> = probes.clone().map(|p| p.span.start).collect();
            let mut ends: Vec<u64> = probes.map(|p| p.span.end.unwrap_or(u64::MAX)).collect();
            starts.sort_unstable();
            starts.dedup();
            ends.sort_unstable();
            ends.dedup();
            *s = Some(keys.len() as u32);
            keys.push(ProbeBounds {
                counted_before: vec![0; starts.len()],
                counted_by_end: vec![0; ends.len()],
                starts,
                ends,
                near: (0, 0),
            });
        }
        Bounds { slot, keys, upper }
    }

    /// Counts an event done or maybe at the first probe instant it bounds.
    #[inline]
    fn add(&mut self, e: &EventFacts) {
        let Some(Some(s)) = self.slot.get(e.key as usize) else {
            return;
        };
        let b = &mut self.keys[*s as usize];
        if let Some(t) = e.counted_by() {
            // Before every start after t.
            let i = partition_near(&b.starts, &mut b.near.0, |s| s <= t);
            if let Some(c) = b.counted_before.get_mut(i) {
                *c += 1;
            }
        }
        if let Some(t) = e.count_from() {
            // By every end at or after t.
            let i = partition_near(&b.ends, &mut b.near.1, |end| end < t);
            if let Some(c) = b.counted_by_end.get_mut(i) {
                *c += 1;
            }
        }
    }

    /// Turns the counts per instant into running sums, once every event
    /// was added.
    fn sum(&mut self) {
        for b in &mut self.keys {
            for v in [&mut b.counted_before, &mut b.counted_by_end] {
                let mut sum = 0;
                for c in v.iter_mut() {
                    sum += *c;
                    *c = sum;
                }
            }
        }
    }

    /// (events certainly counted before `ps`, events that may have been
    /// counted by `pe`) of key `ki`, both instants of its probes.
    fn at(&self, ki: Option<u32>, ps: u64, pe: u64) -> (i64, i64) {
        let Some(b) = ki
            .and_then(|k| self.slot.get(k as usize).copied().flatten())
            .map(|s| &self.keys[s as usize])
        else {
            return (0, 0);
        };
        let lower = b
            .starts
            .binary_search(&ps)
            .map_or(0, |i| b.counted_before[i]);
        let upper = b.ends.binary_search(&pe).map_or(0, |i| b.counted_by_end[i]);
        (lower as i64, upper as i64)
    }

    /// A violation, if the probe read a count outside its bounds.
    fn judge<'e>(
        &self,
        ki: Option<u32>,
        p: &Probe,
        status: &str,
        evs: &dyn Fn() -> Evs<'e>,
        group: &GroupRef,
    ) -> Option<Finding> {
        let (ps, pe) = (p.span.start, p.span.end.unwrap_or(u64::MAX));
        let (lower, upper) = self.at(ki, ps, pe);
        let c = p.count;
        if c >= lower && (c <= upper || !self.upper) {
            return None;
        }
        let what = match p.op {
            Some(op) => format!(
                "refused resolve op {op}'s probe read event_count = {c} at [{}, {}]",
                secs(ps),
                secs(pe)
            ),
            None => format!("a probe read event_count = {c}"),
        };
        let (why, mut evidence) = if c < lower {
            (
                format!(
                    "a lost increment: {what}, but {lower} events of the group had certainly \
                     completed their counting step before the probe began: {} increment(s) \
                     lost by then",
                    lower - c
                ),
                certainly_counted(evs(), ps, ps),
            )
        } else {
            let (twice, ev) = counted_twice(evs(), ps);
            let twice = twice
                .map(|(id, n, ops)| {
                    format!("; event {id} was counted by {n} attempts (ops {ops:?})")
                })
                .unwrap_or_default();
            (
                format!(
                    "a double count: {what}, but at most {upper} events of the group can have \
                     been counted by the probe's end (every event with a counting step \
                     started by then){twice}"
                ),
                ev,
            )
        };
        evidence.push(Evidence {
            t: ps,
            op: p.op,
            what: format!("{what} (status {status})"),
        });
        evidence.sort_by_key(|e| e.t);
        Some(Finding {
            msg_id: None,
            group: Some(group.clone()),
            event_id: None,
            expected: if self.upper {
                format!(
                    "{lower} <= event_count <= {upper} at the probe (events certainly counted \
                     before it began .. events that may have been counted by its end)"
                )
            } else {
                format!(
                    "event_count >= {lower} at the probe (events certainly counted before it \
                     began; a cut history gives no upper bound)"
                )
            },
            found: what,
            explanation: why,
            evidence,
        })
    }
}

/// Evidence: the last few events certainly counted before `before`, with
/// the instant each was counted by (capped at `cap`, the instant the
/// violation is visible).
fn certainly_counted(evs: Evs<'_>, before: u64, cap: u64) -> Vec<Evidence> {
    let mut counted: Vec<_> = evs
        .iter()
        .filter_map(|(id, e)| e.counted_by().filter(|&t| t < before).map(|t| (t, id, e)))
        .collect();
    counted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let skip = counted.len().saturating_sub(8);
    counted[skip..]
        .iter()
        .map(|(t, id, e)| Evidence {
            t: (*t).min(cap),
            op: e.counted_ops().first().copied(),
            what: format!(
                "event {id}: counted by op(s) {:?} (certainly by {})",
                e.counted_ops(),
                secs(*t)
            ),
        })
        .collect()
}

/// The event counted by the most attempts, if more than one, and evidence:
/// events counted more than once (else none), with the instant each was
/// first counted by (capped at `cap`).
fn counted_twice(evs: Evs<'_>, cap: u64) -> (Option<(String, u32, Vec<u64>)>, Vec<Evidence>) {
    let mut twice: Vec<_> = evs.iter().filter(|(_, e)| e.counted > 1).collect();
    twice.sort_by(|a, b| b.1.counted.cmp(&a.1.counted).then(a.0.cmp(&b.0)));
    let top = twice
        .first()
        .map(|(id, e)| ((*id).to_string(), e.counted, e.counted_ops()));
    let evidence = twice
        .iter()
        .take(8)
        .map(|(id, e)| Evidence {
            t: e.counted_by().unwrap_or(0).min(cap),
            op: e.counted_ops().first().copied(),
            what: format!(
                "event {id}: {} attempts, counted by {} of them (ops {:?})",
                e.attempts(),
                e.counted,
                e.counted_ops()
            ),
        })
        .collect();
    (top, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wherever it starts looking, it finds what a binary search finds.
    #[test]
    fn partition_near_finds_the_partition_point_from_any_start() {
        let v: Vec<u64> = vec![2, 4, 4, 4, 7, 9, 12, 12, 30];
        for t in 0..35u64 {
            for start in 0..=v.len() + 2 {
                let mut near = start;
                let want = v.partition_point(|&s| s <= t);
                assert_eq!(
                    partition_near(&v, &mut near, |s| s <= t),
                    want,
                    "{t} {start}"
                );
                assert_eq!(near, want);
                let mut near = start;
                let want = v.partition_point(|&s| s < t);
                assert_eq!(
                    partition_near(&v, &mut near, |s| s < t),
                    want,
                    "{t} {start}"
                );
            }
        }
        let mut near = 3;
        assert_eq!(partition_near(&[], &mut near, |s| s < 5), 0);
    }
}
