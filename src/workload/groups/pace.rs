//! The groups load's pacing besides the ingest generator's intended
//! starts: the closed model's staged worker count (an ingester beyond the
//! stages' target waits, each wait ending on a stop) and the resolvers'
//! open model (`load.resolve_rate`), shared by the SQLite and the HTTP
//! runtimes.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use super::config::{Load, LoadModel};
use crate::scenario::stages::Curve;
use crate::scheduler::TICK;
use std::time::Duration;

/// Closed model with stages: which ingesters may start an op when.
pub struct ClosedGate {
    curve: Curve,
    ingesters: u32,
    started: u64,
}

impl ClosedGate {
    /// The gate of `load`, whose load started at `started` on the run's
    /// clock. None: no gate (open model, or no stages).
    pub fn of(load: &Load, started: u64) -> Option<Self> {
        (load.model == LoadModel::Closed && !load.stages.is_empty()).then(|| ClosedGate {
            curve: Curve::new(&load.stages),
            ingesters: load.ingesters,
            started,
        })
    }

    /// How long ingester `worker` waits at `now` before it looks again
    /// (None: it may start its next op). A worker beyond the target looks
    /// every [`TICK`], as the coordinator does.
    pub fn wait(&self, worker: u32, now: u64) -> Option<Duration> {
        let t = now.saturating_sub(self.started) as f64 / 1e9;
        (worker >= self.curve.active_at(t, self.ingesters)).then_some(TICK)
    }
}

/// Open model: resolver `index`'s intended starts at `load.resolve_rate`
/// over all resolvers; the resolvers take turns, resolver r starting the
/// rate's ops r, r + R, r + 2R, ...
pub struct ResolvePace {
    curve: Curve,
    resolvers: u64,
    next: u64,
    origin: u64,
    /// The load's length (ns), if it has one: an op due at or after it is
    /// never due (the load is over then).
    load_ns: Option<u64>,
}

impl ResolvePace {
    /// Resolver `index`'s pace (None: `load.resolve_rate` is unset, the
    /// resolvers pause `resolve.interval`), counted from `origin`, for a
    /// load lasting `length` (None: until another stop).
    pub fn of(load: &Load, index: u32, origin: u64, length: Option<Duration>) -> Option<Self> {
        let rate = load.resolve_rate.filter(|r| *r > 0.0)?;
        Some(ResolvePace {
            curve: Curve::constant(rate),
            resolvers: u64::from(load.resolvers.max(1)),
            next: u64::from(index),
            origin,
            load_ns: length.map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64),
        })
    }

    /// The next op's intended start on the run's clock (u64::MAX: never,
    /// the resolver waits for the stop).
    pub fn next_intended(&mut self) -> u64 {
        let n = self.next;
        self.next += self.resolvers;
        match self.curve.intended_ns(n) {
            Some(t) if self.load_ns.is_none_or(|end| t < end) => self.origin.saturating_add(t),
            _ => u64::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::stages::Stage;

    fn load(model: LoadModel) -> Load {
        Load {
            model,
            ingesters: 4,
            resolvers: 2,
            rate: 0.0,
            late_after: Duration::from_millis(1),
            resolve_rate: Some(100.0),
            stages: vec![
                Stage {
                    duration: Duration::from_secs(4),
                    target: 4.0,
                },
                Stage {
                    duration: Duration::from_secs(4),
                    target: 0.0,
                },
            ],
        }
    }

    #[test]
    fn resolvers_take_turns_at_the_rate() {
        let l = load(LoadModel::Open);
        let mut r0 = ResolvePace::of(&l, 0, 1_000, None).expect("paced");
        let mut r1 = ResolvePace::of(&l, 1, 1_000, None).expect("paced");
        let starts0: Vec<u64> = (0..3).map(|_| r0.next_intended()).collect();
        let starts1: Vec<u64> = (0..3).map(|_| r1.next_intended()).collect();
        assert_eq!(starts0, [1_000, 20_001_000, 40_001_000]);
        assert_eq!(starts1, [10_001_000, 30_001_000, 50_001_000]);
    }

    #[test]
    fn no_resolve_is_due_once_the_load_is_over() {
        // 100/s over two resolvers for 50 ms: ops 0..=4 are due before the
        // end; op 5, due exactly at the end, is not (the load is [0, end)).
        let l = load(LoadModel::Open);
        let length = Some(Duration::from_millis(50));
        let mut r0 = ResolvePace::of(&l, 0, 1_000, length).expect("paced");
        let mut r1 = ResolvePace::of(&l, 1, 1_000, length).expect("paced");
        let starts0: Vec<u64> = (0..4).map(|_| r0.next_intended()).collect();
        let starts1: Vec<u64> = (0..3).map(|_| r1.next_intended()).collect();
        assert_eq!(starts0, [1_000, 20_001_000, 40_001_000, u64::MAX]);
        assert_eq!(starts1, [10_001_000, 30_001_000, u64::MAX]);
    }

    #[test]
    fn the_gate_holds_back_the_ingesters_beyond_the_target() {
        let gate = ClosedGate::of(&load(LoadModel::Closed), 5).expect("staged");
        let at = |s: f64| 5 + (s * 1e9) as u64;
        let running = |t: u64| (0..4).filter(|&w| gate.wait(w, t).is_none()).count();
        assert_eq!(running(at(0.0)), 0);
        assert_eq!(running(at(1.5)), 2);
        assert_eq!(running(at(4.0)), 4);
        assert_eq!(running(at(7.5)), 1);
        assert_eq!(running(at(9.0)), 0);
        assert!(ClosedGate::of(&load(LoadModel::Open), 5).is_none());
    }
}
