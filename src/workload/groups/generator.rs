//! The groups workload's generator: the ops of a run, fixed by the seed. Ingest ops come from
//! one sequence (fresh events and their duplicate-id retries, soon or
//! later) that ingesters pull from; each resolver draws its own sequence of
//! groups. Which worker runs which op depends on timing; what the ops are
//! does not. Every stream is a ChaCha8 RNG (stable across rand versions).
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use crate::history::Header;
use crate::scenario::limits::{LATER_WINDOW, MAX_RETRIES};
use crate::scenario::stages::Curve;
use crate::scenario::Scenario;
use crate::shard::Shard;
use crate::workload::groups::config::{EventIdShape, GroupsScenario, Keys, LoadModel, Retry, Skew};
use crate::workload::groups::id_bits;
use crate::workload::groups::{IngestOp, ResolveOp};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
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
        // Pushed, not formatted: this runs once per op on the load's hot
        // path, where `format!` showed in profiles. The same text as
        // `{namespace}p{g % projects}`, `fp{g / projects}` and
        // [`group_id`].
        let mut digits = itoa::Buffer::new();
        let p = digits.format(g % self.projects as u64);
        let mut project = String::with_capacity(self.namespace.len() + 1 + p.len());
        project.push_str(&self.namespace);
        project.push('p');
        project.push_str(p);
        let f = digits.format(g / self.projects as u64);
        let mut fingerprint = String::with_capacity(2 + f.len());
        fingerprint.push_str("fp");
        fingerprint.push_str(f);
        let mut gid = String::with_capacity(4 + project.len() + fingerprint.len());
        gid.push_str("g:");
        gid.push_str(&project);
        gid.push(':');
        gid.push_str(&fingerprint);
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
    /// Open model: the ingest target over time (`load.rate`, or the
    /// stages), and the clock time the load started (op 0's start).
    open: Option<(Curve, u64)>,
    /// How long the load lasts (ns), if it has a deadline: an op due at or
    /// after it is never due, so the load holds exactly the ops its curve
    /// puts in [0, end) and none waits on a race with the deadline's stop.
    load_ns: Option<u64>,
    ids: EventIds,
}

impl IngestGenerator {
    /// The ingest ops of `scenario`. `namespace` prefixes projects and
    /// (namespaced, the default) event ids, or keys plain ones (empty on a
    /// fresh database).
    pub fn new(scenario: &Scenario, namespace: &str) -> Self {
        Self::sharded(scenario, namespace, None)
    }

    /// The ingest ops of one shard of a sharded run: its own random stream
    /// and event ids disjoint from every other shard's (see [`Shard`]).
    /// The scenario is this shard's (`stop.events` and `load.rate` already
    /// its share); the keys stay the run's, so shards contend on groups.
    pub fn sharded(scenario: &Scenario, namespace: &str, shard: Option<Shard>) -> Self {
        let load = scenario.load();
        let open = (load.model == LoadModel::Open)
            .then(|| load.curve())
            .flatten()
            .map(|c| (c, 0));
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
            open,
            load_ns: crate::scenario::section::load_duration(scenario)
                .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64),
            ids: EventIds::new(scenario.keys().event_id(), namespace, shard),
        }
    }

    /// Open model: intended starts count from `origin` on the run's clock
    /// (the load's start; 0 until set).
    pub fn set_origin(&mut self, origin: u64) {
        if let Some((_, o)) = &mut self.open {
            *o = origin;
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
            // An op the curve never reaches (it ends at 0), or reaches only
            // when the load is over, is due at no time: its ingester waits
            // for the stop.
            intended_ns: self.open.as_ref().map(|(curve, origin)| {
                curve
                    .intended_ns(seq)
                    .filter(|t| self.load_ns.is_none_or(|end| *t < end))
                    .map_or(u64::MAX, |t| origin.saturating_add(t))
            }),
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
        // One draw whatever the shape: the plan stays the seed's.
        let id = self.ids.make(self.rng.random());
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

/// The event ids of one run, or of one shard of a sharded run: their
/// shape (`keys.event_id`) and their key, the run's project namespace and
/// the shard's prefix ([`Shard::id_prefix`]), which keeps them apart from
/// every other run's and shard's ids on one target.
///
/// - namespaced: the key, then a UUID of the 128 drawn bits (version 4
///   layout: 122 of them kept), as every run sent before the key existed.
/// - uuid, hex32: the id carries no key a reader could see, so the key
///   goes into a hash instead: the high 88 bits are SHA-256 of (key,
///   drawn bits), the version 4 bits set over them (82 bits left), and
///   the low 40 bits are a tag, SHA-256 of (key, the high bits). Two runs
///   with one seed draw the same bits, but in different namespaces they
///   get unrelated ids (a shared one by chance about once in 2^82 pairs),
///   and likewise two shards of one run; a retry reuses its event's id.
///   The tag lets a shard tell the ids of its key from any others
///   ([`EventIds::is_own`]; a foreign id passes once in 2^40).
///
/// Either way the audit keeps a run's rows apart from other runs' by
/// their project, never by the id: the final tables keep only the
/// projects that start with the run's namespace.
#[derive(Debug, Clone)]
pub struct EventIds {
    shape: EventIdShape,
    key: String,
}

/// The low bits of a plain id that hold its tag.
const TAG_BITS: u32 = 40;

impl EventIds {
    /// The ids of a run in `namespace` (empty on a fresh database), shard
    /// `shard` of it if sharded.
    pub fn new(shape: EventIdShape, namespace: &str, shard: Option<Shard>) -> Self {
        EventIds {
            shape,
            key: format!("{namespace}{}", Shard::id_prefix(shard)),
        }
    }

    /// The id of the event whose drawn bits are `drawn`.
    pub fn make(&self, drawn: u128) -> String {
        match self.shape {
            EventIdShape::Namespaced => format!("{}{}", self.key, id_bits::text(v4(drawn), true)),
            EventIdShape::Uuid => id_bits::text(self.keyed(drawn), true),
            EventIdShape::Hex32 => format!("{:032x}", self.keyed(drawn)),
        }
    }

    /// Whether `id` may be one of these ids, whatever the shape it was
    /// made in: it starts with the (non-empty) key, or it is a plain id
    /// (36-character UUID or 32 hex digits) that carries the key's tag.
    /// A sharded run asks it of the target's rows in its namespace before
    /// its load: any such row is an earlier run's with the same run id.
    pub fn is_own(&self, id: &str) -> bool {
        (!self.key.is_empty() && id.starts_with(&self.key))
            || id_bits::bits(id).is_some_and(|(_, v)| {
                let high = v >> TAG_BITS << TAG_BITS;
                v4(high) == high && self.tag(high) == v ^ high
            })
    }

    /// A plain id: the hashed high bits, then their tag.
    fn keyed(&self, drawn: u128) -> u128 {
        let high = v4(digest(b"event id", &self.key, drawn) >> TAG_BITS << TAG_BITS);
        high | self.tag(high)
    }

    fn tag(&self, high: u128) -> u128 {
        digest(b"event id tag", &self.key, high) >> (128 - TAG_BITS)
    }
}

/// The groups' key of the history's header: the event ids' shape, written
/// only when `keys.event_id` is set, so a default run's header is what it
/// always was.
#[derive(Debug, Default, Serialize, Deserialize)]
struct IdsHeader {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_id: Option<EventIdShape>,
}

/// Records the event ids' shape (`keys.event_id`, when set) in `h`.
pub fn put_event_id(h: &mut Header, shape: Option<EventIdShape>) {
    h.put(&IdsHeader { event_id: shape });
}

/// The event ids' shape a history's header records: namespaced when it
/// records none (a default run, or a history older than the key).
pub fn event_id_of(h: &Header) -> EventIdShape {
    h.part::<IdsHeader>()
        .and_then(|p| p.event_id)
        .unwrap_or(EventIdShape::Namespaced)
}

/// The first 128 bits of SHA-256 over (`domain`, `key`, `v`), each
/// delimited so that no two inputs run into each other.
fn digest(domain: &[u8], key: &str, v: u128) -> u128 {
    let mut h = Sha256::new();
    h.update(domain);
    h.update([0]);
    h.update((key.len() as u64).to_be_bytes());
    h.update(key.as_bytes());
    h.update(v.to_be_bytes());
    let out = h.finalize();
    u128::from_be_bytes(out[..16].try_into().expect("SHA-256 has 32 bytes"))
}

/// `v` with the version 4 UUID's version and variant bits set.
fn v4(v: u128) -> u128 {
    let v = (v & !(0xF000 << 64)) | (0x4000 << 64);
    (v & !(0xC000 << 48)) | (0x8000 << 48)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    /// The pushed names are the formatted ones, namespace included.
    #[test]
    fn names_are_the_formatted_names() {
        let s = scenario(&["keys.projects=3", "keys.fingerprints=50"]);
        for ns in ["", "r1-ab."] {
            let k = KeySpace::new(s.keys(), ns);
            for g in [0u64, 1, 2, 3, 149] {
                let (p, f, gid) = k.names(g);
                assert_eq!(p, format!("{ns}p{}", g % 3));
                assert_eq!(f, format!("fp{}", g / 3));
                assert_eq!(gid, crate::workload::groups::group_id(&p, &f));
            }
        }
    }

    fn scenario(extra: &[&str]) -> Scenario {
        let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        load_str("t", None, "", &o).unwrap()
    }

    #[test]
    fn an_open_load_holds_only_the_ops_due_before_its_end() {
        let s = scenario(&[
            "load.model=\"open\"",
            "load.rate=100",
            "stop.duration=\"1s\"",
            "stop.events=0",
        ]);
        let mut g = IngestGenerator::new(&s, "");
        g.set_origin(7);
        let due: Vec<u64> = (0..101)
            .map(|_| g.next_op().unwrap().intended_ns.unwrap())
            .collect();
        assert_eq!(due[0], 7);
        assert_eq!(due[99], 7 + 990_000_000);
        // Op 100 would be due at 1 s, when the load is over: never.
        assert_eq!(due[100], u64::MAX);
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

    /// Whether `id` is a canonical lowercase version 4 UUID: `h` a hex
    /// digit, `v` the variant's.
    fn is_v4_uuid(id: &str) -> bool {
        let template = "hhhhhhhh-hhhh-4hhh-vhhh-hhhhhhhhhhhh";
        id.len() == template.len()
            && id.chars().zip(template.chars()).all(|(c, t)| match t {
                'h' => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
                'v' => "89ab".contains(c),
                t => c == t,
            })
    }

    fn ingest_ops(extra: &[&str], namespace: &str, shard: Option<Shard>) -> Vec<IngestOp> {
        let s = scenario(extra);
        let mut g = IngestGenerator::sharded(&s, namespace, shard);
        std::iter::from_fn(move || g.next_op()).collect()
    }

    #[test]
    fn namespaced_ids_are_the_namespace_then_the_drawn_uuid() {
        let ids = EventIds::new(EventIdShape::Namespaced, "r1-ab.", None);
        let drawn = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
        assert_eq!(
            ids.make(drawn),
            "r1-ab.01234567-89ab-4def-bedc-ba9876543210"
        );
        let shard = Some(Shard { index: 1, count: 2 });
        let ids = EventIds::new(EventIdShape::Namespaced, "s-x.", shard);
        assert_eq!(
            ids.make(drawn),
            "s-x.k1-01234567-89ab-4def-bedc-ba9876543210"
        );
    }

    #[test]
    fn plain_ids_have_their_shape_and_the_plan_stays_the_seeds() {
        let base = ["stop.events=2000", "retry.probability=0.5"];
        let namespaced = ingest_ops(&base, "r1-ab.", None);
        for (shape, ok) in [
            ("uuid", is_v4_uuid as fn(&str) -> bool),
            ("hex32", |id: &str| {
                id.len() == 32
                    && id
                        .bytes()
                        .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
            }),
        ] {
            let set = format!("keys.event_id=\"{shape}\"");
            let ops = ingest_ops(&[base[0], base[1], &set], "r1-ab.", None);
            assert_eq!(ops.len(), namespaced.len(), "{shape}");
            // One id per event, as before: the same ops in the same order,
            // the same duplicates, only the ids' text differs.
            let mut map = std::collections::HashMap::new();
            for (a, b) in namespaced.iter().zip(&ops) {
                assert!(ok(&b.event_id), "{shape}: {}", b.event_id);
                let mut b2 = b.clone();
                b2.event_id = a.event_id.clone();
                assert_eq!(&b2, a, "{shape}");
                assert_eq!(
                    map.entry(a.event_id.clone()).or_insert(b.event_id.clone()),
                    &b.event_id
                );
            }
            let distinct: std::collections::HashSet<_> = map.values().collect();
            assert_eq!(distinct.len(), map.len(), "{shape}: two events share an id");
            assert_eq!(map.len(), 2000);
        }
    }

    #[test]
    fn plain_ids_differ_between_namespaces_and_shards_with_one_seed() {
        let uuid = ["stop.events=3000", "keys.event_id=\"uuid\""];
        let ids = |ns: &str, shard: Option<Shard>| -> std::collections::HashSet<String> {
            ingest_ops(&uuid, ns, shard)
                .into_iter()
                .map(|o| o.event_id)
                .collect()
        };
        let fresh = ids("", None);
        let again = ids("", None);
        assert_eq!(fresh, again, "the ids are the seed's");
        let reused = ids("r1700000000000-0badf00d.", None);
        let k0 = ids("s-run.", Some(Shard { index: 0, count: 2 }));
        let k1 = ids("s-run.", Some(Shard { index: 1, count: 2 }));
        let k0_of_3 = ids("s-run.", Some(Shard { index: 0, count: 3 }));
        for (name, set) in [("reused", &reused), ("k0", &k0), ("k1", &k1)] {
            assert_eq!(set.len(), 3000, "{name}");
            assert!(
                set.is_disjoint(&fresh),
                "{name} shares ids with the first run"
            );
        }
        assert!(k0.is_disjoint(&k1) && reused.is_disjoint(&k0) && reused.is_disjoint(&k1));
        // A shard's key is its index (`k<i>-`): shard 0 of 3 draws other
        // bits (its seed), so its ids differ anyway; the check of a used
        // run id reads the key, not the count.
        assert!(k0_of_3.is_disjoint(&k1));
    }

    #[test]
    fn a_shard_knows_its_own_ids_in_either_shape() {
        let shard = |i| Some(Shard { index: i, count: 2 });
        for shape in [
            EventIdShape::Uuid,
            EventIdShape::Hex32,
            EventIdShape::Namespaced,
        ] {
            let mine = EventIds::new(shape, "s-run.", shard(0));
            for other in [
                EventIdShape::Uuid,
                EventIdShape::Hex32,
                EventIdShape::Namespaced,
            ] {
                let theirs = EventIds::new(other, "s-run.", shard(1));
                let earlier = EventIds::new(other, "s-run.", shard(0));
                let elsewhere = EventIds::new(other, "s-other.", shard(0));
                let mut rng = ChaCha8Rng::seed_from_u64(7);
                for _ in 0..2000 {
                    let drawn: u128 = rng.random();
                    assert!(mine.is_own(&mine.make(drawn)));
                    assert!(mine.is_own(&earlier.make(drawn)), "{other:?}");
                    assert!(!mine.is_own(&theirs.make(drawn)), "{other:?}");
                    assert!(!mine.is_own(&elsewhere.make(drawn)), "{other:?}");
                }
            }
        }
        let mine = EventIds::new(EventIdShape::Uuid, "s-run.", shard(0));
        for id in ["", "x", "0123456789abcdef0123456789ABCDEF", "s-run.k1-00"] {
            assert!(!mine.is_own(id), "{id}");
        }
    }

    #[test]
    fn the_header_records_a_set_shape_and_defaults_to_namespaced() {
        // A header as a groups run before the key wrote it.
        let line = r#"{"schema_version":3,"workload":"groups","scenario":"s","variant":"v","seed":7,"started_utc":"2026-01-01T00:00:00Z","step_log":true,"counting_step":0,"namespace":""}"#;
        let mut h: Header = serde_json::from_str(line).unwrap();
        assert_eq!(event_id_of(&h), EventIdShape::Namespaced);
        put_event_id(&mut h, None);
        assert_eq!(serde_json::to_string(&h).unwrap(), line);
        assert!(
            h.workload_part.is_empty(),
            "a default run's header is unchanged"
        );
        assert_eq!(event_id_of(&h), EventIdShape::Namespaced);
        put_event_id(&mut h, Some(EventIdShape::Hex32));
        assert_eq!(event_id_of(&h), EventIdShape::Hex32);
        let text = serde_json::to_string(&h).unwrap();
        assert!(text.contains(r#""event_id":"hex32""#), "{text}");
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
