//! Live figures of a running load, shared between the load loop, which
//! only writes them, and whoever watches (the dashboard, plain progress
//! lines), which reads [`Snapshot`]s a few times a second. Each worker owns
//! one slot (its own [`Stats`] behind a mutex nobody else takes but a
//! reader, briefly), so recording an op costs an uncontended lock.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use crate::abort_on_fail::{AbortWatch, Breach};
use crate::figures::{Counts, Latency};
use crate::history::{CompletionType, OpKind};
use crate::nemesis::FaultPlan;
use crate::stats::Stats;
use crate::verdict::Verdict;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The load runs.
    Load,
    /// The load stopped; ops in flight finish.
    Draining,
    /// The final tables are read and audited.
    Audit,
    /// Verdicts are in.
    Done,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Load,
            1 => Phase::Draining,
            2 => Phase::Audit,
            _ => Phase::Done,
        }
    }

    /// Lowercase name, for display.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Draining => "draining",
            Phase::Audit => "audit",
            Phase::Done => "done",
        }
    }
}

/// What the run is, for headers: fixed before the load starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInfo {
    /// Scenario name.
    pub scenario: String,
    /// Variant name.
    pub variant: String,
    /// The target, e.g. `sqlite PATH` or `http URL`.
    pub target: String,
    /// Seed of the run.
    pub seed: u64,
    /// `stop.events` (0: no limit).
    pub stop_events: u64,
    /// `stop.duration` (None: no limit).
    pub stop_duration: Option<Duration>,
    /// The open model's ingest target over the load's time (`load.rate`
    /// or `[[load.stages]]`); None: no target.
    pub ingest_target: Option<crate::scenario::stages::Curve>,
}

/// The shared live figures of one run.
pub struct Live {
    /// What the run is.
    pub info: RunInfo,
    /// The run's workload's op kinds, in report order: the snapshot
    /// lists these only.
    kinds: &'static [OpKind],
    slots: Vec<Mutex<Stats>>,
    /// Fresh events generated so far.
    pub generated: AtomicU64,
    phase: AtomicU8,
    /// The fault plan (injections per kind, timed faults active).
    pub faults: Option<Arc<FaultPlan>>,
    verdicts: Mutex<Option<Verdicts>>,
    load_ns: AtomicU64,
    workload: Mutex<Option<WorkloadLive>>,
    /// The run's `abort_on_fail` thresholds, if it has any (set once,
    /// before the load).
    abort: OnceLock<AbortWatch>,
}

/// The end of a run, for the verdict panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdicts {
    /// Per invariant: name, verdict, violations or unknowns, the first
    /// finding's explanation.
    pub invariants: Vec<(String, Verdict, u64, Option<String>)>,
    /// Stranded events in all; None: the history cannot tell.
    pub stranded: Option<u64>,
    /// The exit code and the rule that decided it.
    pub exit: (i32, String),
    /// The run folder.
    pub run_dir: String,
}

impl Live {
    /// Live figures for `workers` workers (one slot each) of a run whose
    /// workload has the op kinds `kinds` (in report order).
    pub fn new(
        info: RunInfo,
        kinds: &'static [OpKind],
        workers: usize,
        faults: Option<Arc<FaultPlan>>,
    ) -> Self {
        Live {
            info,
            kinds,
            slots: (0..workers.max(1))
                .map(|_| Mutex::new(Stats::default()))
                .collect(),
            generated: AtomicU64::new(0),
            phase: AtomicU8::new(0),
            faults,
            verdicts: Mutex::new(None),
            load_ns: AtomicU64::new(0),
            workload: Mutex::new(None),
            abort: OnceLock::new(),
        }
    }

    /// Judges `abort` on these figures while the load runs (None: the
    /// run has no `abort_on_fail` threshold). Set before the load; a
    /// second call changes nothing.
    pub fn set_abort(&self, abort: Option<AbortWatch>) {
        if let Some(a) = abort {
            let _ = self.abort.set(a);
        }
    }

    /// Judges the `abort_on_fail` thresholds if due, `elapsed_ns` into the
    /// load (the scheduler's tick): true once one breached, and the load
    /// must stop.
    pub fn abort_due(&self, elapsed_ns: u64) -> bool {
        self.abort
            .get()
            .is_some_and(|w| w.check(elapsed_ns, || self.merged(), self.kinds))
    }

    /// The breach that stopped the load, if one did.
    pub fn abort_breach(&self) -> Option<Breach> {
        self.abort.get().and_then(AbortWatch::breach)
    }

    /// Worker `w`'s slot (workers beyond the count share the last one).
    pub fn slot(&self, w: usize) -> &Mutex<Stats> {
        &self.slots[w.min(self.slots.len() - 1)]
    }

    /// Every slot merged: the load's figures so far.
    pub fn merged(&self) -> Stats {
        let mut total = Stats::default();
        for s in &self.slots {
            total.merge(&s.lock().expect("stats slot"));
        }
        total
    }

    /// Moves the run to `phase`.
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Release);
    }

    /// Where the run is.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// The load's elapsed time, ns since its start, as the load loop last
    /// set it.
    pub fn set_elapsed(&self, ns: u64) {
        self.load_ns.store(ns, Ordering::Relaxed);
    }

    /// The workload's own figures now.
    pub fn set_workload(&self, w: WorkloadLive) {
        *self.workload.lock().expect("workload figures") = Some(w);
    }

    /// Hands over the verdicts (the phase becomes done).
    pub fn set_verdicts(&self, v: Verdicts) {
        *self.verdicts.lock().expect("verdicts") = Some(v);
        self.set_phase(Phase::Done);
    }

    /// A consistent-enough view of everything, now.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_and_stats().0
    }

    /// The run's op kinds, in report order.
    pub fn kinds(&self) -> &'static [OpKind] {
        self.kinds
    }

    /// [`Live::snapshot`] and the merged figures it was made from (their
    /// histograms, for whoever exports them), so that counts and
    /// histograms agree.
    pub fn snapshot_and_stats(&self) -> (Snapshot, Stats) {
        let stats = self.merged();
        let mut ops = BTreeMap::new();
        let mut latency = BTreeMap::new();
        let kinds = self.kinds;
        for &k in kinds {
            ops.insert(
                k.name().to_string(),
                Counts {
                    ok: stats.count(k, CompletionType::Ok),
                    fail: stats.count(k, CompletionType::Fail),
                    info: stats.count(k, CompletionType::Info),
                },
            );
            latency.insert(
                k.name().to_string(),
                Latency::of(stats.histogram(k, CompletionType::Ok)),
            );
        }
        let (faults_injected, faults_active) = match &self.faults {
            Some(p) => (p.injected_by_kind(), p.active_kinds()),
            None => (BTreeMap::new(), Vec::new()),
        };
        let snapshot = Snapshot {
            info: self.info.clone(),
            phase: self.phase(),
            elapsed_s: self.load_ns.load(Ordering::Relaxed) as f64 / 1e9,
            generated: self.generated.load(Ordering::Relaxed),
            ops,
            latency,
            duplicates: stats.duplicates,
            resolved: stats.resolved,
            refused: stats.refused,
            regressed_seen: stats.regressed_seen,
            faults_injected,
            faults_active,
            verdicts: self.verdicts.lock().expect("verdicts").clone(),
            workload: self.workload.lock().expect("workload figures").clone(),
        };
        (snapshot, stats)
    }
}

/// A workload's own live figures, which the watchers render without
/// knowing the workload: the counts panel's title, its rows under the
/// kinds table, the one-line watcher's segment, and whether the verdict
/// panel shows stranded events.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadLive {
    /// The counts panel's title after `ops · `.
    pub title: String,
    /// Rows under the kinds table, each a row of figures.
    pub rows: Vec<Vec<LiveFigure>>,
    /// Its segment of `specstorm watch`'s line (after a space, before ` |`).
    pub line: String,
    /// The workload has stranded events to show with the verdicts.
    pub stranded: bool,
}

/// One figure of a row: its name, its value, and how it is toned.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveFigure {
    /// Its name, shown dim before the value.
    pub name: String,
    /// Its value, as shown.
    pub value: String,
    /// How the value is toned.
    pub tone: Tone,
}

/// How a figure's value is toned on the dashboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// As any text.
    Plain,
    /// Good news (green).
    Good,
    /// A warning when the count is above 0 (yellow).
    Warn(u64),
}

impl LiveFigure {
    /// The figure `name` of `value`, toned `tone`.
    pub fn new(name: &str, value: impl ToString, tone: Tone) -> LiveFigure {
        LiveFigure {
            name: name.to_string(),
            value: value.to_string(),
            tone,
        }
    }
}

/// Everything a watcher shows, at one instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// What the run is.
    pub info: RunInfo,
    /// Where the run is.
    pub phase: Phase,
    /// Load time so far, s.
    pub elapsed_s: f64,
    /// Fresh events generated so far.
    pub generated: u64,
    /// ok / fail / info per op kind (`ingest`, `resolve`).
    pub ops: BTreeMap<String, Counts>,
    /// Latency of `ok` ops per op kind, µs (p50, p90, p99, p99.9, max).
    pub latency: BTreeMap<String, Latency>,
    /// Ingests answered duplicate.
    pub duplicates: u64,
    /// Resolves that set a group resolved.
    pub resolved: u64,
    /// Refused resolves.
    pub refused: u64,
    /// Refused resolves whose probe read `regressed` (a regression seen).
    pub regressed_seen: u64,
    /// Faults injected so far per kind.
    pub faults_injected: BTreeMap<String, u64>,
    /// Timed faults active now (a held lock, a killed server), by kind.
    pub faults_active: Vec<String>,
    /// The verdicts, once the audit is done.
    pub verdicts: Option<Verdicts>,
    /// The workload's own figures (None: it has none beyond the common
    /// ones).
    pub workload: Option<WorkloadLive>,
}

impl Snapshot {
    /// Ops completed so far, all kinds.
    pub fn completed(&self) -> u64 {
        self.ops.values().map(|c| c.ok + c.fail + c.info).sum()
    }

    /// How far the load is, 0..=1, by whichever stop limit is nearer
    /// (events generated or time), and what is left of it, as text
    /// ("12.5s left", "8000 events left"); None without a limit.
    pub fn progress(&self) -> (Option<f64>, Option<String>) {
        let by_events = (self.info.stop_events > 0).then(|| {
            (
                (self.generated as f64 / self.info.stop_events as f64).min(1.0),
                format!(
                    "{} events left",
                    self.info.stop_events.saturating_sub(self.generated)
                ),
            )
        });
        let by_time = self.info.stop_duration.map(|d| {
            let total = d.as_secs_f64();
            (
                (self.elapsed_s / total).min(1.0),
                format!("{:.1}s left", (total - self.elapsed_s).max(0.0)),
            )
        });
        let best = match (by_events, by_time) {
            (Some(a), Some(b)) => Some(if a.0 >= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        match best {
            Some((f, left)) => (Some(f), Some(left)),
            None => (None, None),
        }
    }
}

/// Throughput over time: per op kind, ops/s in each of the last `keep`
/// seconds, from the completed counts of successive snapshots.
#[derive(Debug, Clone, Default)]
pub struct Rates {
    /// (elapsed s, completed ops per kind) of the samples kept.
    samples: Vec<(f64, BTreeMap<String, u64>)>,
    keep: usize,
}

impl Rates {
    /// Keeps about `keep_s` seconds of history.
    pub fn new(keep_s: usize) -> Self {
        Rates {
            samples: Vec::new(),
            keep: keep_s.max(2),
        }
    }

    /// Takes a snapshot's counts; kept samples are at least a second apart
    /// (the newest one is provisional until then).
    pub fn push(&mut self, s: &Snapshot) {
        let counts = s
            .ops
            .iter()
            .map(|(k, c)| (k.clone(), c.ok + c.fail + c.info))
            .collect();
        // The newest sample is provisional until it is a second past the
        // one before it; until then the next one replaces it.
        let n = self.samples.len();
        if n >= 2 && self.samples[n - 1].0 - self.samples[n - 2].0 < 1.0 {
            self.samples.pop();
        }
        self.samples.push((s.elapsed_s, counts));
        if self.samples.len() > self.keep + 1 {
            self.samples.remove(0);
        }
    }

    /// ops/s of `kind` between successive samples, oldest first.
    pub fn series(&self, kind: &str) -> Vec<f64> {
        self.samples
            .windows(2)
            .map(|w| {
                let dt = (w[1].0 - w[0].0).max(1e-9);
                let a = w[0].1.get(kind).copied().unwrap_or(0);
                let b = w[1].1.get(kind).copied().unwrap_or(0);
                b.saturating_sub(a) as f64 / dt
            })
            .collect()
    }

    /// The latest ops/s of `kind` (0 before two samples).
    pub fn latest(&self, kind: &str) -> f64 {
        self.series(kind).last().copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(elapsed_s: f64, ingest: u64) -> Snapshot {
        let live = Live::new(
            RunInfo {
                stop_events: 1000,
                stop_duration: Some(Duration::from_secs(10)),
                ingest_target: None,
                ..Default::default()
            },
            &[OpKind::Ingest, OpKind::Resolve],
            1,
            None,
        );
        let mut s = live.snapshot();
        s.elapsed_s = elapsed_s;
        s.ops.get_mut("ingest").unwrap().ok = ingest;
        s
    }

    #[test]
    fn rates_are_per_second_between_samples() {
        let mut r = Rates::new(60);
        r.push(&snap(0.0, 0));
        r.push(&snap(1.0, 500));
        r.push(&snap(1.5, 600)); // provisional: 0.5 s after the last
        r.push(&snap(2.0, 900)); // replaces it
        r.push(&snap(3.0, 1900));
        assert_eq!(r.series("ingest"), vec![500.0, 400.0, 1000.0]);
        assert_eq!(r.latest("ingest"), 1000.0);
        assert_eq!(r.latest("resolve"), 0.0);
    }

    #[test]
    fn progress_follows_the_nearer_limit() {
        let mut s = snap(2.0, 0);
        s.generated = 500; // half the events, a fifth of the time
        let (f, left) = s.progress();
        assert_eq!(f, Some(0.5));
        assert_eq!(left.as_deref(), Some("500 events left"));
        s.elapsed_s = 8.0;
        assert_eq!(s.progress().1.as_deref(), Some("2.0s left"));
        s.info.stop_events = 0;
        s.info.stop_duration = None;
        assert_eq!(s.progress(), (None, None));
    }

    #[test]
    fn slots_merge_into_the_snapshot() {
        let live = Live::new(RunInfo::default(), &[OpKind::Ingest], 2, None);
        live.slot(0)
            .lock()
            .unwrap()
            .record(OpKind::Ingest, CompletionType::Ok, 1000);
        live.slot(1)
            .lock()
            .unwrap()
            .record(OpKind::Ingest, CompletionType::Info, 1000);
        let s = live.snapshot();
        assert_eq!((s.ops["ingest"].ok, s.ops["ingest"].info), (1, 1));
        assert_eq!(s.completed(), 2);
        assert_eq!(s.phase, Phase::Load);
        live.set_phase(Phase::Audit);
        assert_eq!(live.snapshot().phase, Phase::Audit);
    }
}
