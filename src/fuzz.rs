//! The schedule fuzzer: at randomly chosen points between two steps of an
//! op, the worker running it yields its thread or sleeps a short, randomly
//! drawn time ([`Delay`]), so that another worker's statements land in the
//! window between a read and the write that depends on it more often than
//! the OS scheduler alone lets them. The step driver
//! (`crate::step_driver`) asks its hooks for the point before each
//! executed step after an op's first, where [`point_allowed`] says
//! another worker's statements may run, performs it and lets the hooks
//! record it; over HTTP the bench draws an op's points up front
//! ([`Fuzzer::points`]) and the spawned reference server performs them
//! from the fault hook header (`crate::fault_hook`).
//!
//! Every draw comes from (seed, op key, executed step) alone, on a stream
//! salted apart from the fault plan's ([`SALT`]): the same seed makes the
//! same choices for every op whatever the timing, and a seed's ops and
//! faults are the same with the fuzzer on or off. The OS still schedules
//! the threads: a random delay widens windows, it carries none of the
//! guarantee of a controlled scheduler (PCT's d priority-change points),
//! and none is claimed.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use crate::draws::{draw_rng, ns};
use crate::history::writer::HistorySink;
use crate::history::{BenchAction, BenchEntry, Entry, FuzzChoice};
use crate::scenario::Scenario;
use crate::statements::OpProgram;
use rand::RngExt;
use std::time::Duration;

/// Mixed into the seed of every fuzzer draw, so that its stream is none
/// of the fault plan's (whose draws take the run's seed as it is).
pub const SALT: u64 = 0x6675_7a7a_5f73_6368;

/// What the worker does at a point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delay {
    /// `std::thread::yield_now`.
    Yield,
    /// A sleep of this long (never zero).
    Sleep(Duration),
}

impl Delay {
    /// The delay as the history and the header count it: ns, 0 a yield.
    pub fn ns(self) -> u64 {
        match self {
            Delay::Yield => 0,
            Delay::Sleep(d) => ns(d).max(1),
        }
    }

    /// The delay `ns` stands for (the inverse of [`Delay::ns`]).
    pub fn from_ns(ns: u64) -> Delay {
        match ns {
            0 => Delay::Yield,
            n => Delay::Sleep(Duration::from_nanos(n)),
        }
    }

    /// Holds the calling thread up. Sleeps are short (at most
    /// `scenario::fuzz::MAX_SLEEP`): a stop waits for them.
    pub fn perform(self) {
        match self {
            Delay::Yield => std::thread::yield_now(),
            Delay::Sleep(d) => std::thread::sleep(d),
        }
    }

    /// The delay in words, for the history's detail.
    pub fn words(self, step: &str) -> String {
        match self {
            Delay::Yield => format!("yield before {step}"),
            Delay::Sleep(d) => format!("sleep {d:?} before {step}"),
        }
    }
}

/// The fuzzer of one run: its seed and `[fuzz]`'s settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fuzzer {
    seed: u64,
    probability: f64,
    yield_share: f64,
    max_sleep_ns: u64,
}

impl Fuzzer {
    /// The fuzzer of `s`, if it acts: `[fuzz]` enabled, and steps the
    /// bench runs (the target's `steps` cap: in-process SQLite, or the
    /// spawned reference server).
    pub fn of(s: &Scenario) -> Option<Fuzzer> {
        let f = s.fuzz.as_ref().filter(|f| f.enabled)?;
        if !s.target.caps().steps {
            return None;
        }
        Some(Fuzzer {
            seed: s.seed ^ SALT,
            probability: f.probability,
            yield_share: f.yield_share,
            max_sleep_ns: ns(f.max_sleep),
        })
    }

    /// The point before executed step `n` (0-based) of the op with `key`,
    /// if any: none before an op's first step (that is no point between
    /// two of its steps).
    pub fn at(&self, key: u64, n: usize) -> Option<Delay> {
        if n == 0 {
            return None;
        }
        let mut rng = draw_rng(self.seed, 0, key, n as u32);
        if !rng.random_bool(self.probability) {
            return None;
        }
        if self.max_sleep_ns == 0 || rng.random_bool(self.yield_share) {
            return Some(Delay::Yield);
        }
        Some(Delay::Sleep(Duration::from_nanos(
            rng.random_range(1..=self.max_sleep_ns),
        )))
    }

    /// The points of the op with `key` before its executed steps
    /// `1..bound(program)`: what a request's header carries.
    /// A program that cannot branch runs its n-th step as executed step
    /// n, so no point is asked for inside one of its transaction blocks
    /// ([`point_allowed`]; the server would not perform it).
    pub fn points(&self, key: u64, program: &OpProgram) -> Vec<(usize, Delay)> {
        let linear = bound(program) == program.steps.len();
        (1..bound(program))
            .filter(|&n| !linear || point_allowed(program, n))
            .filter_map(|n| self.at(key, n).map(|d| (n, d)))
            .collect()
    }

    /// The points of the op with `key` (op id `op`) for the spawned
    /// server's fault hook header, each recorded in `sink` at `now` as
    /// requested (with its step's name where the program cannot branch:
    /// the n-th executed step is then its n-th step).
    pub fn requested(
        &self,
        (op, key): (u64, u64),
        program: &OpProgram,
        sink: &HistorySink,
        now: u64,
    ) -> Vec<(usize, Delay)> {
        let points = self.points(key, program);
        let linear = bound(program) == program.steps.len();
        for (n, d) in &points {
            let step = linear.then(|| program.steps[*n].name.as_str());
            sink.send_entry(&entry(op, (*n, step), *d, (now, now), true));
        }
        points
    }
}

/// The history's record of the point before executed step `n` (`step`,
/// when known) of op `op`: performed from `start` to `end`, or, over
/// HTTP, asked of the server (`requested`; it performs it if the op gets
/// that far).
pub fn entry(
    op: u64,
    (n, step): (usize, Option<&str>),
    delay: Delay,
    (start, end): (u64, u64),
    requested: bool,
) -> Entry {
    let words = delay.words(&step.map_or_else(|| format!("executed step {n}"), str::to_string));
    Entry::Bench(BenchEntry {
        t: start,
        end,
        action: BenchAction::Fuzz,
        detail: Some(if requested {
            format!("{words} requested (fault hook)")
        } else {
            words
        }),
        op: Some(op),
        fuzz: Some(FuzzChoice {
            step: step.map(str::to_string),
            n: n as u32,
            ns: delay.ns(),
        }),
        txn: None,
    })
}

/// How many executed steps a request's header names points for: a
/// program without branches runs each step at most once; one that can
/// branch back (the outbox's compare-and-swap retry) is fuzzed on its
/// first turns too, up to twice its steps.
pub fn bound(program: &OpProgram) -> usize {
    let branches = program
        .steps
        .iter()
        .any(|s| s.goto.is_some() || s.goto_if.is_some());
    program.steps.len() * if branches { 2 } else { 1 }
}

/// Whether another worker's statements may run between program step `i`
/// and the step executed before it: where a point may fall. Not inside a
/// transaction block (a step of one after its first): the block holds
/// its snapshot or the write lock across its steps, and a delay there
/// would only hold other workers up (IMMEDIATE) or fail the block more
/// often (DEFERRED), never interleave a statement the block's atomicity
/// lets in. Before a block's first step, and between autocommit steps,
/// it may.
pub fn point_allowed(program: &OpProgram, i: usize) -> bool {
    program.txn_of(i).is_none_or(|t| t.first == i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{load_str, Fuzz};

    fn fuzzer(seed: u64, probability: f64) -> Fuzzer {
        let mut s = load_str("t", None, "", &[]).unwrap();
        s.seed = seed;
        s.fuzz = Some(Fuzz {
            enabled: true,
            probability,
            ..Fuzz::default()
        });
        Fuzzer::of(&s).unwrap()
    }

    #[test]
    fn draws_depend_on_seed_key_and_step_alone() {
        let f = fuzzer(7, 0.3);
        let a: Vec<_> = (0..500u64).map(|k| f.at(k, 1)).collect();
        let mut b: Vec<_> = (0..500u64).rev().map(|k| f.at(k, 1)).collect();
        b.reverse();
        assert_eq!(a, b);
        assert_ne!(
            a,
            (0..500u64)
                .map(|k| fuzzer(8, 0.3).at(k, 1))
                .collect::<Vec<_>>()
        );
        let hits = a.iter().filter(|d| d.is_some()).count();
        assert!(
            (100..200).contains(&hits),
            "{hits} points of 500 at p = 0.3"
        );
        assert!(a.contains(&Some(Delay::Yield)));
        assert!(a.iter().flatten().all(|d| d.ns() <= 500_000));
        assert!((0..500u64).all(|k| f.at(k, 0).is_none()));
        assert!((0..500u64).all(|k| fuzzer(7, 0.0).at(k, 3).is_none()));
    }

    #[test]
    fn a_delay_reads_back_from_its_ns() {
        for d in [Delay::Yield, Delay::Sleep(Duration::from_micros(3))] {
            assert_eq!(Delay::from_ns(d.ns()), d);
        }
    }
}
