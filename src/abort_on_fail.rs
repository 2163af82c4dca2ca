//! Thresholds that stop the load (`abort_on_fail`, k6's `abortOnFail`):
//! judged on the live figures every [`EVAL_INTERVAL`] of the load, each
//! once its `delay_abort_eval` has passed; the first breach is kept, and
//! the scheduler, which asks here on its tick, stops the load as on any
//! other stop (ops in flight finish, the audit runs on what ran).
//!
//! The live figures are `summary.json`'s own, by the same arithmetic
//! ([`crate::summary::live_figures`]): a threshold means the same live as
//! at the end. A figure the load has not produced yet (a latency of no
//! ops) is not judged live, so a threshold cannot abort before its first
//! sample; at the end it is judged as every threshold is.
//!
//! Layer: engine. May import the modules of its own layer and of the
//! layers below it (core, model and config).

use crate::history::OpKind;
use crate::scenario::Threshold;
use crate::stats::Stats;
use crate::summary::{judge_thresholds, live_figures, AbortedBy};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How often the live figures are judged, from the load's start (the
/// first judgement one interval in). Fixed, as k6's evaluation period is.
pub const EVAL_INTERVAL: Duration = Duration::from_secs(1);

/// The first live breach: which threshold (its index among the run's
/// thresholds, `Scenario::expectation`'s order) and its figure then.
#[derive(Debug, Clone, PartialEq)]
pub struct Breach {
    /// Index of the threshold among the run's thresholds.
    pub index: usize,
    /// What `summary.json` records of it.
    pub by: AbortedBy,
}

/// The live judgement of one run's `abort_on_fail` thresholds.
#[derive(Debug)]
pub struct AbortWatch {
    /// The run's thresholds, all of them (indices are theirs).
    thresholds: Vec<Threshold>,
    /// The load time of the next judgement, ns.
    next_ns: AtomicU64,
    breach: Mutex<Option<Breach>>,
}

impl AbortWatch {
    /// The watch of a run whose thresholds are `thresholds`; None when
    /// none of them aborts on failure.
    pub fn new(thresholds: &[Threshold]) -> Option<AbortWatch> {
        thresholds
            .iter()
            .any(|t| t.abort_on_fail)
            .then(|| AbortWatch {
                thresholds: thresholds.to_vec(),
                next_ns: AtomicU64::new(interval_ns()),
                breach: Mutex::new(None),
            })
    }

    /// Judges the live figures if a judgement is due `elapsed_ns` into the
    /// load (`stats`: the load's figures so far, asked only then); true
    /// once a breach is found (this time or before): the load must stop.
    pub fn check(&self, elapsed_ns: u64, stats: impl FnOnce() -> Stats, kinds: &[OpKind]) -> bool {
        let next = self.next_ns.load(Ordering::Acquire);
        if elapsed_ns >= next {
            // The next judgement is on the interval's grid, however late
            // this one came.
            let grid = elapsed_ns / interval_ns() * interval_ns();
            self.next_ns
                .store(grid.saturating_add(interval_ns()), Ordering::Release);
            let mut breach = self.breach.lock().expect("abort watch");
            if breach.is_none() {
                *breach = first_breach(&self.thresholds, &stats(), elapsed_ns, kinds);
            }
        }
        self.breach().is_some()
    }

    /// The breach that stopped the load, if any.
    pub fn breach(&self) -> Option<Breach> {
        self.breach.lock().expect("abort watch").clone()
    }
}

fn interval_ns() -> u64 {
    EVAL_INTERVAL.as_nanos() as u64
}

/// The first of `thresholds` (in their order) that aborts on failure, is
/// past its delay `elapsed_ns` into the load, and whose live figure from
/// `stats` breaches it. A figure absent live (a latency of no ops) is no
/// breach.
pub fn first_breach(
    thresholds: &[Threshold],
    stats: &Stats,
    elapsed_ns: u64,
    kinds: &[OpKind],
) -> Option<Breach> {
    let elapsed = Duration::from_nanos(elapsed_ns);
    let elapsed_s = elapsed.as_secs_f64();
    let figures = live_figures(stats, elapsed_s, kinds);
    let outcomes = judge_thresholds(&figures, thresholds);
    thresholds
        .iter()
        .zip(outcomes)
        .enumerate()
        .find_map(|(index, (t, o))| {
            let due = t.abort_on_fail && elapsed >= t.delay_abort_eval;
            let actual = o.actual.filter(|_| due && !o.passed)?;
            Some(Breach {
                index,
                by: AbortedBy {
                    threshold: o.threshold,
                    actual,
                    at_s: (elapsed_s * 1000.0).round() / 1000.0,
                },
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::CompletionType;

    const KINDS: &[OpKind] = &[OpKind::Ingest, OpKind::Resolve];

    fn threshold(text: &str, delay_s: u64) -> Threshold {
        Threshold {
            abort_on_fail: true,
            delay_abort_eval: Duration::from_secs(delay_s),
            ..Threshold::parse(text).unwrap()
        }
    }

    /// Stats of `n` ok ingests of `us` µs each.
    fn ingests(n: u64, us: u64) -> Stats {
        let mut s = Stats::default();
        for _ in 0..n {
            s.record(OpKind::Ingest, CompletionType::Ok, us * 1000);
        }
        s
    }

    const S: u64 = 1_000_000_000;

    /// The live figures are the summary's, under the same paths: those
    /// of the skeleton a threshold is checked against, and nothing else.
    #[test]
    fn the_live_figures_are_the_summary_s_live_ones() {
        let skeleton = crate::summary::skeleton_common(KINDS, &["TypeOK"], &[], true);
        let live = live_figures(&Stats::default(), 0.0, KINDS);
        let kept: serde_json::Map<String, serde_json::Value> = skeleton
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| crate::summary::LIVE_FIGURES.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(live, serde_json::Value::Object(kept));
    }

    #[test]
    fn a_breach_counts_only_after_its_delay() {
        let slow = ingests(100, 5000);
        let ts = [threshold("latency_us.ingest.p99 < 1000", 3)];
        assert_eq!(first_breach(&ts, &slow, 2 * S, KINDS), None);
        let b = first_breach(&ts, &slow, 3 * S, KINDS).expect("breached after the delay");
        assert_eq!(b.index, 0);
        assert_eq!(b.by.threshold, "latency_us.ingest.p99 < 1000");
        assert!(b.by.actual >= 4000.0, "{b:?}");
        assert_eq!(b.by.at_s, 3.0);
        // Fast ops meet it.
        assert_eq!(first_breach(&ts, &ingests(100, 10), 5 * S, KINDS), None);
    }

    #[test]
    fn only_abort_on_fail_thresholds_and_present_figures_are_judged() {
        let plain = Threshold::parse("latency_us.ingest.p99 < 1000").unwrap();
        let slow = ingests(10, 5000);
        assert_eq!(
            first_breach(std::slice::from_ref(&plain), &slow, 9 * S, KINDS),
            None
        );
        // A latency of no ops is no figure yet: no breach.
        let resolve = threshold("latency_us.resolve.p99 < 1000", 0);
        assert_eq!(
            first_breach(std::slice::from_ref(&resolve), &slow, 9 * S, KINDS),
            None
        );
        // Throughput is cumulative: 10 ops in 10 s is 1 op/s.
        let tput = threshold("throughput_ops_per_s.total > 2", 0);
        let b = first_breach(&[plain, resolve, tput], &slow, 10 * S, KINDS).unwrap();
        assert_eq!((b.index, b.by.actual), (2, 1.0));
    }

    #[test]
    fn the_watch_judges_once_per_interval_and_keeps_the_first_breach() {
        assert!(AbortWatch::new(&[Threshold::parse("ops.ingest.ok > 0").unwrap()]).is_none());
        let w = AbortWatch::new(&[threshold("ops.ingest.fail < 1", 0)]).unwrap();
        let asked = std::cell::Cell::new(0);
        let stats = |fails: u64| {
            asked.set(asked.get() + 1);
            let mut s = Stats::default();
            for _ in 0..fails {
                s.record(OpKind::Ingest, CompletionType::Fail, 1000);
            }
            s
        };
        // Not due before the first interval: the stats are not even read.
        assert!(!w.check(S / 2, || stats(5), KINDS));
        assert_eq!(asked.get(), 0);
        assert!(!w.check(S, || stats(0), KINDS));
        assert!(!w.check(S + 1, || stats(5), KINDS), "not due again yet");
        assert!(w.check(2 * S + 7, || stats(3), KINDS));
        let b = w.breach().unwrap();
        assert_eq!((b.by.actual, b.by.at_s), (3.0, 2.0));
        // Kept: a later judgement does not replace it.
        assert!(w.check(3 * S, || stats(9), KINDS));
        assert_eq!(w.breach().unwrap().by.actual, 3.0);
        assert_eq!(asked.get(), 2);
    }
}
