//! Load stages (`[[load.stages]]`, k6's `stages`): a piecewise-linear
//! target curve over the load's time, each stage ramping linearly from the
//! previous stage's target (the first from 0) to its own over its
//! duration; a hold is a stage whose target is the previous one's, a jump
//! a stage of "0s". After the last stage its target holds.
//!
//! What the target means is the model's: in the open model ops/s, and op
//! n's intended start is the time at which the curve's integral (the ops
//! due so far) reaches n, inverted exactly per stage (a quadratic in
//! closed form), so latency measured from intended starts stays free of
//! coordinated omission; in the closed model the number of active
//! workers: worker w runs while the target is above w.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use crate::scenario::humantime_serde_compat;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One `[[load.stages]]` entry.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// How long the ramp to `target` takes ("0s": a jump).
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub duration: Duration,
    /// The target at the stage's end: ingest ops/s (open model) or active
    /// ingesters (closed model).
    pub target: f64,
}

/// One stage on the load's time line, in seconds and ops.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    start: f64,
    len: f64,
    from: f64,
    to: f64,
    /// Ops due before the segment starts.
    due_before: f64,
}

impl Segment {
    fn area(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.len
    }

    fn target_at(&self, t: f64) -> f64 {
        if self.len <= 0.0 {
            return self.to;
        }
        self.from + (self.to - self.from) * ((t - self.start) / self.len).clamp(0.0, 1.0)
    }
}

/// The stages as a curve over the load's time (seconds since its start).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Curve {
    segments: Vec<Segment>,
    /// The last target, held after the stages.
    last: f64,
    /// The stages' total time, s.
    end: f64,
    /// Ops due over all stages.
    total: f64,
}

impl Curve {
    /// The curve of `stages` (none: a curve at 0 everywhere).
    pub fn new(stages: &[Stage]) -> Self {
        let mut segments = Vec::with_capacity(stages.len());
        let (mut start, mut from, mut due) = (0.0, 0.0, 0.0);
        for s in stages {
            let seg = Segment {
                start,
                len: s.duration.as_secs_f64(),
                from,
                to: s.target,
                due_before: due,
            };
            due += seg.area();
            start += seg.len;
            from = s.target;
            segments.push(seg);
        }
        Curve {
            segments,
            last: from,
            end: start,
            total: due,
        }
    }

    /// A constant target from the start (`load.rate`).
    pub fn constant(target: f64) -> Self {
        Curve {
            segments: Vec::new(),
            last: target,
            end: 0.0,
            total: 0.0,
        }
    }

    /// The stages' total time (zero without stages).
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.end)
    }

    /// Every stage boundary as (s, target), from (0, first start): the
    /// points a plot joins with straight lines.
    pub fn points(&self) -> Vec<(f64, f64)> {
        let mut out = vec![(0.0, self.segments.first().map_or(self.last, |s| s.from))];
        out.extend(self.segments.iter().map(|s| (s.start + s.len, s.to)));
        out
    }

    /// The target at `t` s into the load.
    pub fn target_at(&self, t: f64) -> f64 {
        if t >= self.end {
            return self.last;
        }
        // The last segment that has started (a "0s" stage at `t` counts):
        // the segments are contiguous, so it holds `t`.
        let i = self.segments.partition_point(|s| s.start <= t);
        i.checked_sub(1)
            .map_or(0.0, |i| self.segments[i].target_at(t))
    }

    /// Open model: ops due by `t` s into the load (the curve's integral).
    pub fn due_by(&self, t: f64) -> f64 {
        if t >= self.end {
            return self.total + self.last * (t - self.end);
        }
        let i = self.segments.partition_point(|s| s.start <= t);
        let Some(s) = i.checked_sub(1).map(|i| &self.segments[i]) else {
            return 0.0;
        };
        let tau = t - s.start;
        s.due_before + (s.from + s.target_at(t)) / 2.0 * tau
    }

    /// Open model: op `n`'s intended start, ns after the load's start: the
    /// time at which [`Curve::due_by`] reaches `n`. None: never (the curve
    /// ends at 0 before `n` ops are due).
    pub fn intended_ns(&self, n: u64) -> Option<u64> {
        let n = n as f64;
        if self.segments.is_empty() && self.last > 0.0 {
            // A constant rate, in the form runs have always used.
            return Some((n * 1e9 / self.last).round() as u64);
        }
        let secs = if n >= self.total {
            if n > self.total && self.last <= 0.0 {
                return None;
            }
            // n == total with a last target of 0: the end of the stages.
            let after = if self.last > 0.0 {
                (n - self.total) / self.last
            } else {
                0.0
            };
            self.end + after
        } else {
            // The first stage that ends with more than n ops due.
            let i = self
                .segments
                .partition_point(|s| s.due_before + s.area() <= n);
            let s = &self.segments[i];
            s.start + solve(s, n - s.due_before)
        };
        Some((secs * 1e9).round() as u64)
    }

    /// Closed model: how many workers run at `t` s (worker w runs while
    /// the target is above w), at most `workers`.
    pub fn active_at(&self, t: f64, workers: u32) -> u32 {
        let target = self.target_at(t).max(0.0).ceil();
        (target as u32).min(workers)
    }
}

/// The time into segment `s` at which `c` (0 <= c < its area) of its ops
/// are due: the root of from*x + (to-from)/(2 len)*x^2 = c, in the form
/// that loses no precision when the ramp is flat or the rate starts at 0.
fn solve(s: &Segment, c: f64) -> f64 {
    let a = (s.to - s.from) / (2.0 * s.len);
    let b = s.from;
    let denominator = b + (b * b + 4.0 * a * c).max(0.0).sqrt();
    if denominator <= 0.0 {
        0.0
    } else {
        (2.0 * c / denominator).min(s.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(secs: u64, target: f64) -> Stage {
        Stage {
            duration: Duration::from_secs(secs),
            target,
        }
    }

    /// The acceptance's shape: 0 -> 2000 ops/s over 10 s, hold 10 s, down
    /// to 0 over 10 s.
    fn ramp() -> Curve {
        Curve::new(&[stage(10, 2000.0), stage(10, 2000.0), stage(10, 0.0)])
    }

    #[test]
    fn a_ramp_from_zero_starts_op_n_at_the_root_of_its_integral() {
        // Due by t: 100 t^2 on the way up, so op n is due at sqrt(n / 100) s.
        let c = ramp();
        assert_eq!(c.intended_ns(0), Some(0));
        assert_eq!(c.intended_ns(1), Some(100_000_000));
        assert_eq!(c.intended_ns(100), Some(1_000_000_000));
        assert_eq!(c.intended_ns(400), Some(2_000_000_000));
        assert_eq!(c.intended_ns(2_500), Some(5_000_000_000));
    }

    #[test]
    fn the_hold_and_the_ramp_down_follow_the_integral() {
        let c = ramp();
        // 10,000 ops are due by the end of the ramp, then 2,000 a second.
        assert_eq!(c.intended_ns(10_000), Some(10_000_000_000));
        assert_eq!(c.intended_ns(10_001), Some(10_000_500_000));
        assert_eq!(c.intended_ns(12_000), Some(11_000_000_000));
        assert_eq!(c.intended_ns(30_000), Some(20_000_000_000));
        // Down: 30,000 + 2000 x - 100 x^2 due, so op 39,000 is due at
        // x = 10 - sqrt(10) s into the ramp down.
        let x = 10.0 - 10f64.sqrt();
        assert_eq!(
            c.intended_ns(39_000),
            Some(((20.0 + x) * 1e9).round() as u64)
        );
        assert_eq!(c.intended_ns(39_999), Some(29_900_000_000));
        assert_eq!(c.intended_ns(40_000), Some(30_000_000_000));
        // The curve ends at 0: no op is ever due after the last.
        assert_eq!(c.intended_ns(40_001), None);
    }

    #[test]
    fn starts_are_in_order_and_match_the_count_due() {
        let c = ramp();
        let mut last = 0;
        for n in 0..40_000u64 {
            let t = c.intended_ns(n).expect("due");
            assert!(t >= last, "op {n} at {t} before {last}");
            last = t;
            let due = c.due_by(t as f64 / 1e9);
            assert!(
                (due - n as f64).abs() < 1e-3,
                "op {n}: {due} due at its start"
            );
        }
    }

    #[test]
    fn a_constant_rate_is_n_over_rate() {
        let c = Curve::constant(250.0);
        assert_eq!(c.intended_ns(0), Some(0));
        assert_eq!(c.intended_ns(1), Some(4_000_000));
        assert_eq!(c.intended_ns(1000), Some(4_000_000_000));
        assert_eq!(c.due_by(2.0), 500.0);
    }

    #[test]
    fn a_jump_and_a_hold_after_the_stages() {
        let c = Curve::new(&[
            Stage {
                duration: Duration::ZERO,
                target: 100.0,
            },
            stage(2, 100.0),
        ]);
        assert_eq!(c.target_at(0.0), 100.0);
        assert_eq!(c.intended_ns(100), Some(1_000_000_000));
        // After 2 s the last target holds.
        assert_eq!(c.intended_ns(300), Some(3_000_000_000));
        assert_eq!(c.duration(), Duration::from_secs(2));
    }

    #[test]
    fn closed_workers_follow_the_target() {
        // 0 -> 4 workers over 4 s, hold, down to 1.
        let c = Curve::new(&[stage(4, 4.0), stage(2, 4.0), stage(3, 1.0)]);
        assert_eq!(c.active_at(0.0, 8), 0);
        assert_eq!(c.active_at(0.5, 8), 1);
        assert_eq!(c.active_at(1.0, 8), 1);
        assert_eq!(c.active_at(1.5, 8), 2);
        assert_eq!(c.active_at(3.9, 8), 4);
        assert_eq!(c.active_at(5.0, 8), 4);
        assert_eq!(c.active_at(7.5, 8), 3);
        assert_eq!(c.active_at(9.0, 8), 1);
        assert_eq!(c.active_at(100.0, 8), 1);
        // Never more than the ingesters there are.
        assert_eq!(c.active_at(5.0, 3), 3);
    }

    #[test]
    fn the_plot_points_are_the_stage_boundaries() {
        assert_eq!(
            ramp().points(),
            vec![(0.0, 0.0), (10.0, 2000.0), (20.0, 2000.0), (30.0, 0.0)]
        );
    }
}
