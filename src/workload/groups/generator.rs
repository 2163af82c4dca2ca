//! The groups workload's generator: the ops of a run, fixed by the seed. Ingest ops come from
//! one sequence (fresh events and their duplicate-id retries, soon or
//! later) that ingesters pull from; each resolver draws its own sequence of
//! groups. Which worker runs which op depends on timing; what the ops are
//! does not. Every stream is a ChaCha8 RNG (stable across rand versions).
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use crate::scenario::limits::{LATER_WINDOW, MAX_RETRIES};
use crate::scenario::Scenario;
use crate::shard::Shard;
use crate::workload::groups::config::{GroupsScenario, Keys, LoadModel, Retry, Skew};
use crate::workload::groups::{group_id, IngestOp, ResolveOp};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Arc;

/// How many times at most an event whose worker crashed is sent again
/// (by attempt number): a crash fault that hits every attempt must not
/// resend one event forever.
pub const CRASH_RESENDS: u32 = 8;

/// The key space: projects x fingerprints, with the scenario's skew. Group
/// index g is project `g % projects`, fingerprint `g / projects`, so a hot
/// set (groups `0..hot_groups`) spreads over the projects.
#[derive(Debug, Clone)]
pub struct KeySpace {
    projects: u32,
    groups: u64,
    hot: Option<(u64, f64)>,
    namespace: String,
}

impl KeySpace {
    /// `namespace` prefixes every project name (empty on a fresh database).
    pub fn new(keys: &Keys, namespace: &str) -> Self {
        let groups = keys.projects as u64 * keys.fingerprints as u64;
        KeySpace {
            projects: keys.projects,
            groups,
            hot: (keys.skew == Skew::Hot).then_some((keys.hot_groups as u64, keys.hot_fraction)),
            namespace: namespace.to_string(),
        }
    }

    /// Draws a group index following the skew.
    pub fn pick(&self, rng: &mut ChaCha8Rng) -> u64 {
        match self.hot {
            Some((hot, frac)) if hot < self.groups => {
                if rng.random_bool(frac) {
                    rng.random_range(0..hot)
                } else {
                    rng.random_range(hot..self.groups)
                }
            }
            _ => rng.random_range(0..self.groups),
        }
    }

    /// (project, fingerprint, group id) of group index `g`.
    pub fn names(&self, g: u64) -> (String, String, String) {
        let project = format!("{}p{}", self.namespace, g % self.projects as u64);
        let fingerprint = format!("fp{}", g / self.projects as u64);
        let gid = group_id(&project, &fingerprint);
        (project, fingerprint, gid)
    }

    /// The group index of (project, fingerprint), the inverse of
    /// [`KeySpace::names`]; None for names outside this key space (another
    /// run's namespace, or rows the bench did not write).
    pub fn index_of(&self, project: &str, fingerprint: &str) -> Option<u64> {
        let p: u64 = project
            .strip_prefix(self.namespace.as_str())?
            .strip_prefix('p')?
            .parse()
            .ok()?;
        let f: u64 = fingerprint.strip_prefix("fp")?.parse().ok()?;
        let g = f.checked_mul(self.projects as u64)?.checked_add(p)?;
        (p < self.projects as u64 && g < self.groups).then_some(g)
    }
}

/// An event as its sends share it: one copy, however many sends wait.
#[derive(Debug)]
struct Event {
    id: String,
    group: u64,
}

/// A send waiting in the queue: due at op index `at`, ordered by
/// (`at`, `tie`); `tie` (unique, in the order sends were queued) breaks
/// equal dues as it always did.
#[derive(Debug)]
struct Due {
    at: u64,
    tie: u64,
    event: Arc<Event>,
    attempt: u32,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.tie) == (other.at, other.tie)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.tie).cmp(&(other.at, other.tie))
    }
}

/// The sequence of ingest ops: fresh events, and retries of earlier ones
/// scheduled a few ops ahead (soon: racing the first send) or up to
/// [`LATER_WINDOW`] ops ahead (later).
///
/// Every retry of an event is drawn when the event is first sent, from
/// the one shared stream: drawing them later (when due, or from a stream
/// of the event's own) would be lazier but would change every existing
/// seed's plan, which `tests/engine/op_plan_golden.rs` pins. What is bounded
/// instead: an event draws at most [`MAX_RETRIES`] retries (whatever the
/// scenario says; the loader refuses more), each queued send is one small
/// heap entry (32 bytes) sharing one copy of its event, and a queued send
/// is due within [`LATER_WINDOW`] ops of its first send. The queue holds
/// at most `MAX_RETRIES * LATER_WINDOW` sends (plus crash requeues) even
/// if every lag came out longest; with the lags drawn uniformly it holds
/// about `LATER_WINDOW / 2` (Little's law: about one send queued per op,
/// each waiting half the window), up to about `LATER_WINDOW` while the
/// first window fills, as a unit test below checks.
pub struct IngestGenerator {
    rng: ChaCha8Rng,
    seed: u64,
    keys: KeySpace,
    retry: Retry,
    soon_window: u64,
    max_events: u64,
    fresh: u64,
    seq: u64,
    /// The sends waiting, soonest due first.
    pending: BinaryHeap<Reverse<Due>>,
    tie: u64,
    open_rate: Option<f64>,
    namespace: String,
}

impl IngestGenerator {
    /// The ingest ops of `scenario`. `namespace` prefixes event ids and
    /// projects (empty on a fresh database).
    pub fn new(scenario: &Scenario, namespace: &str) -> Self {
        Self::sharded(scenario, namespace, None)
    }

    /// The ingest ops of one shard of a sharded run: its own random stream
    /// and event ids disjoint from every other shard's (see [`Shard`]).
    /// The scenario is this shard's (`stop.events` and `load.rate` already
    /// its share); the keys stay the run's, so shards contend on groups.
    pub fn sharded(scenario: &Scenario, namespace: &str, shard: Option<Shard>) -> Self {
        let open_rate = (scenario.load().model == LoadModel::Open).then_some(scenario.load().rate);
        IngestGenerator {
            rng: ChaCha8Rng::seed_from_u64(Shard::seed(shard, scenario.seed)),
            seed: Shard::seed(shard, scenario.seed),
            keys: KeySpace::new(scenario.keys(), namespace),
            retry: scenario.retry().clone(),
            soon_window: 2 * scenario.load().ingesters.max(1) as u64,
            max_events: scenario.stop.events,
            fresh: 0,
            seq: 0,
            pending: BinaryHeap::new(),
            tie: 0,
            open_rate,
            namespace: format!("{namespace}{}", Shard::id_prefix(shard)),
        }
    }

    /// Fresh events generated so far.
    pub fn fresh_events(&self) -> u64 {
        self.fresh
    }

    /// The next ingest op, or None once `stop.events` fresh events and all
    /// their retries were handed out (never None when `stop.events` = 0).
    pub fn next_op(&mut self) -> Option<IngestOp> {
        let seq = self.seq;
        let exhausted = self.max_events != 0 && self.fresh >= self.max_events;
        let due = match self.pending.peek() {
            Some(Reverse(d)) => d.at <= seq || exhausted,
            None => false,
        };
        let (event, attempt) = if due {
            let Reverse(d) = self.pending.pop().expect("peeked");
            (d.event, d.attempt)
        } else if exhausted {
            return None;
        } else {
            (self.fresh_event(), 0)
        };
        self.seq += 1;
        let (project, fingerprint, gid) = self.keys.names(event.group);
        let message = format!(
            "TypeError: cannot read properties of undefined (reading 'x{}')",
            self.rng.random_range(0..1000u32)
        );
        Some(IngestOp {
            event_id: event.id.clone(),
            project,
            fingerprint,
            group_id: gid,
            message,
            attempt,
            intended_ns: self
                .open_rate
                .map(|rate| (seq as f64 * 1e9 / rate).round() as u64),
            group: event.group,
            key: crate::draws::op_key(0, seq, 0),
        })
    }

    /// Sends `op`'s event again later with the same id (attempt + 1), as a
    /// client whose worker died mid-request does: due a few thousand ops
    /// after the op itself (the lag drawn from the seed and the op's key,
    /// so it is the same whatever the timing; at once if that is past).
    /// Used for crash faults; the retry is still handed out after
    /// `stop.events` is reached. Returns false, and sends nothing, once the
    /// event reached [`CRASH_RESENDS`] attempts.
    pub fn requeue(&mut self, op: &IngestOp) -> bool {
        if op.attempt >= CRASH_RESENDS {
            return false;
        }
        let lag = crate::draws::draw_rng(self.seed, u32::MAX, op.key, 0)
            .random_range(1..=LATER_WINDOW / 4);
        let due = op.key & ((1 << 40) - 1);
        let event = Arc::new(Event {
            id: op.event_id.clone(),
            group: op.group,
        });
        self.queue(due + lag, event, op.attempt + 1);
        true
    }

    fn queue(&mut self, at: u64, event: Arc<Event>, attempt: u32) {
        self.tie += 1;
        self.pending.push(Reverse(Due {
            at,
            tie: self.tie,
            event,
            attempt,
        }));
    }

    /// Sends waiting in the queue (retries and crash requeues).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn fresh_event(&mut self) -> Arc<Event> {
        self.fresh += 1;
        let group = self.keys.pick(&mut self.rng);
        let id = uuid_like(&mut self.rng, &self.namespace);
        let event = Arc::new(Event { id, group });
        if self.retry.probability > 0.0 && self.rng.random_bool(self.retry.probability) {
            // Drawn as they always were (plans stay); clamped for a
            // scenario that did not come through the loader.
            let most = self.retry.max_retries.clamp(1, MAX_RETRIES);
            let retries = self.rng.random_range(1..=most);
            for attempt in 1..=retries {
                let lag = if self.rng.random_bool(self.retry.soon_fraction) {
                    self.rng.random_range(1..=self.soon_window)
                } else {
                    self.rng.random_range(self.soon_window..=LATER_WINDOW)
                };
                self.queue(self.seq + lag, event.clone(), attempt);
            }
        }
        event
    }
}

/// A resolver's own sequence of groups to resolve.
pub struct ResolveGenerator {
    rng: ChaCha8Rng,
    keys: KeySpace,
    stream: u32,
    n: u64,
}

impl ResolveGenerator {
    /// Resolver number `index`'s sequence; independent of the ingest stream.
    pub fn new(scenario: &Scenario, namespace: &str, index: u32) -> Self {
        Self::sharded(scenario, namespace, index, None)
    }

    /// Resolver `index` of one shard: a stream of its own per shard.
    pub fn sharded(scenario: &Scenario, namespace: &str, index: u32, shard: Option<Shard>) -> Self {
        let seed = Shard::seed(shard, scenario.seed) ^ (0x5EED_0000_0000_0000 | (index as u64 + 1));
        ResolveGenerator {
            rng: ChaCha8Rng::seed_from_u64(seed.rotate_left(17)),
            keys: KeySpace::new(scenario.keys(), namespace),
            stream: index + 1,
            n: 0,
        }
    }

    /// The next group to resolve (uniform or hot, as `keys.skew` says).
    pub fn next_op(&mut self) -> ResolveOp {
        let group = self.keys.pick(&mut self.rng);
        let (project, fingerprint, group_id) = self.keys.names(group);
        self.n += 1;
        ResolveOp {
            project,
            fingerprint,
            group_id,
            group,
            key: crate::draws::op_key(self.stream, self.n - 1, 0),
        }
    }
}

/// A UUID-shaped (version 4 layout) id drawn from `rng`, prefixed by `namespace`.
fn uuid_like(rng: &mut impl Rng, namespace: &str) -> String {
    let v: u128 = rng.random();
    let v = (v & !(0xF000 << 64)) | (0x4000 << 64);
    let v = (v & !(0xC000 << 48)) | (0x8000 << 48);
    let h = format!("{v:032x}");
    format!(
        "{namespace}{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    fn scenario(extra: &[&str]) -> Scenario {
        let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        load_str("t", None, "", &o).unwrap()
    }

    #[test]
    fn same_seed_same_ops_other_seed_other_ops() {
        let s = scenario(&["stop.events=500"]);
        let a: Vec<_> = std::iter::from_fn({
            let mut g = IngestGenerator::new(&s, "");
            move || g.next_op()
        })
        .collect();
        let b: Vec<_> = std::iter::from_fn({
            let mut g = IngestGenerator::new(&s, "");
            move || g.next_op()
        })
        .collect();
        assert_eq!(a, b);
        let s2 = scenario(&["stop.events=500", "seed=2"]);
        let mut g = IngestGenerator::new(&s2, "");
        assert_ne!(a[0], g.next_op().unwrap());
    }

    #[test]
    fn every_event_sent_once_plus_at_most_max_retries() {
        let s = scenario(&[
            "stop.events=2000",
            "retry.probability=0.5",
            "retry.max_retries=3",
        ]);
        let mut g = IngestGenerator::new(&s, "");
        let mut counts = std::collections::HashMap::<String, u32>::new();
        while let Some(op) = g.next_op() {
            *counts.entry(op.event_id).or_default() += 1;
        }
        assert_eq!(counts.len(), 2000);
        assert!(counts.values().all(|&n| (1..=4).contains(&n)));
        let retried = counts.values().filter(|&&n| n > 1).count();
        assert!(retried > 800 && retried < 1200, "{retried}");
    }

    /// The queue's size with every event retried, as often as allowed,
    /// over 100k ops stays within 2 * [`LATER_WINDOW`] (measured at most:
    /// 6,240 with half the retries soon, 20,091 with none soon, while the
    /// first window fills, 1,166 with 90% soon); a scenario that asks for
    /// more retries than [`MAX_RETRIES`] (not through the loader) gets
    /// that many at most. (Before the bound, 10^6 retries queued half a
    /// million sends at the first event.)
    #[test]
    fn the_queue_stays_bounded_whatever_max_retries_says() {
        let bound = 2 * LATER_WINDOW as usize;
        for (seed, soon) in [(1, 0.5), (2, 0.0), (42, 0.9)] {
            for most in [MAX_RETRIES, 1_000_000] {
                let mut s = scenario(&[
                    "stop.events=0",
                    "stop.duration=\"1s\"",
                    "retry.probability=1",
                    &format!("retry.soon_fraction={soon}"),
                    &format!("seed={seed}"),
                ]);
                s.retry_mut().max_retries = most;
                let mut g = IngestGenerator::new(&s, "");
                let mut peak = 0;
                for _ in 0..100_000 {
                    g.next_op().expect("no event limit");
                    peak = peak.max(g.pending());
                }
                assert!(
                    peak <= bound,
                    "seed {seed}, max_retries {most}: {peak} sends queued, more than {bound}"
                );
            }
        }
    }

    #[test]
    fn hot_set_takes_its_share() {
        let s = scenario(&[
            "stop.events=10000",
            "keys.skew=\"hot\"",
            "keys.hot_groups=4",
            "keys.hot_fraction=0.9",
        ]);
        let mut g = IngestGenerator::new(&s, "");
        let mut hot = 0;
        let mut n = 0;
        while let Some(op) = g.next_op() {
            n += 1;
            if op.fingerprint == "fp0" || op.fingerprint == "fp1" {
                hot += 1;
            }
        }
        let share = hot as f64 / n as f64;
        assert!(share > 0.85 && share < 0.95, "{share}");
    }
}
