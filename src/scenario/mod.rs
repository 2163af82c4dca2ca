//! Scenarios: the TOML file that says what to run (workload, variant, target,
//! load, stop condition, keys, retries, seed, and the `[[faults]]` schedule).
//!
//! [`load`] reads a file (or the embedded default), applies `--set`
//! overrides, fills documented defaults, and refuses unknown keys, wrong
//! types and impossible values with file, line and reason before anything
//! runs. Every key and its default is documented in `scenarios/README.md`.
//! [`fault_line`] finds the line of a fault's key, for checks made after
//! loading. [`limits`] holds the bounds the loader enforces (the code they
//! protect imports them from there), [`invariants`] the names `expect` may
//! use. [`Workload`] is a workload's name, resolved through the
//! workloads' registries ([`section`] for the built-in ones,
//! [`registered`] for those registered at run time).
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

pub mod api;
mod caps;
mod expect;
pub mod figures;
pub mod fuzz;
pub mod invariants;
pub mod key_schema;
mod load;
pub mod mapping;
pub mod part;
pub mod parts;
pub mod registered;
pub mod section;
mod serialize;
pub mod stages;

pub use caps::Caps;
pub use expect::{lookup, Cmp, Expect, Threshold, VariantEntry, CATCH_RATE};
pub use fuzz::Fuzz;
pub use load::limits;
pub use load::{fault_line, key_line, load, load_str, ScenarioError, DEFAULT_SCENARIO};

use crate::fault_kind::FaultKind;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

// Here, not with the type (`expect`, in the model): the name comes from
// the statement file's, which the config knows.
impl VariantEntry {
    /// The name in tables and folder names: `name`, else the file's stem.
    pub fn name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| short_name(&self.variant))
    }
}

/// A variant's short name for results: the file stem, or the built-in's
/// name. (Here, not in `crate::variant`, which finds a built-in variant
/// through the workloads' sections and so imports the scenario.)
pub fn short_name(variant: &str) -> String {
    std::path::Path::new(variant)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| variant.to_string())
}

/// A resolved scenario: every key present, defaults filled in.
///
/// Serde refuses unknown keys through [`parts::Parts`] (which reads every
/// key the fields here leave): `deny_unknown_fields` cannot be had with
/// `flatten`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Scenario {
    /// Name shown in results (default: the file stem; `default` for the embedded one).
    pub name: String,
    /// The workload (default: the built-in one that declares itself the
    /// default, [`Workload::default_workload`]).
    pub workload: Workload,
    /// The variant: a statement file path (relative to the scenario file's
    /// folder), or the name of a built-in variant (each workload's
    /// `variants` in [`section::WorkloadSections`]).
    pub variant: String,
    /// Seed of every random choice (ops, keys, retries). Default 1.
    pub seed: u64,
    /// `expect`: the verdicts the run must reach (default: every invariant
    /// holds). A `[[variants]]` entry's own `expect` replaces it.
    #[serde(default)]
    pub expect: Expect,
    /// `thresholds`: figures of `summary.json` the run must meet, e.g.
    /// `"latency_us.ingest.p99 < 20000"` (default: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Threshold>,
    /// `[target]`: the system under test.
    pub target: Target,
    /// `[stop]`: when the load stops.
    pub stop: Stop,
    /// `[explore]`: the small world `specstorm explore` searches (default:
    /// the spec's own world). Absent from run folders written before it
    /// existed, hence the serde default.
    #[serde(default)]
    pub explore: Explore,
    /// The workloads' own sections (present, with their defaults, in a
    /// scenario of their workload, and where their spec says so in
    /// others'), each as its workload's type: read them with
    /// [`Scenario::part`]. Each is written right after the field its spec
    /// `follows` (the hand-written `Serialize` below), where the saved
    /// `scenario.toml` always had it.
    #[serde(flatten)]
    pub parts: parts::Parts,
    /// `[api]`: how to speak to an HTTP service with an API of its own
    /// (None: the HTTP contract).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<api::Api>,
    /// `[audit]`: where an HTTP target's final tables are read from (None:
    /// the contract's `GET /v1/export`, every event row kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<api::AuditConfig>,
    /// `[[faults]]`: the nemesis's fault schedule (default: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// `[fuzz]`: the schedule fuzzer (yields and sleeps between an op's
    /// steps), filled with its defaults; None (off) in run folders written
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuzz: Option<Fuzz>,
    /// `[[variants]]`: the variants `specstorm compare` runs, each with its
    /// expectation (default: none; `run` takes `variant`, which defaults to
    /// the first entry's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantEntry>,
}

impl Scenario {
    /// The `[[variants]]` entry of the variant this scenario runs (same
    /// `variant` text, or same `name`), if any.
    pub fn variant_entry(&self) -> Option<&VariantEntry> {
        self.variants
            .iter()
            .find(|v| v.variant == self.variant || v.name() == self.variant)
    }

    /// What this run must meet: the entry's `expect` (else the scenario's),
    /// and the scenario's thresholds followed by the entry's. An invariant
    /// a `catch_rate` threshold names is judged by that rate alone
    /// ([`Expect::rated_by`]).
    pub fn expectation(&self) -> (Expect, Vec<Threshold>) {
        let entry = self.variant_entry();
        let expect = entry
            .and_then(|e| e.expect.clone())
            .unwrap_or_else(|| self.expect.clone());
        let mut thresholds = self.thresholds.clone();
        thresholds.extend(entry.into_iter().flat_map(|e| e.thresholds.iter().cloned()));
        (expect.rated_by(&thresholds), thresholds)
    }

    /// The workload section of type `T` (a workload's own table, as its
    /// `config` module defines it), if this scenario has it.
    pub fn part<T: part::Section>(&self) -> Option<&T> {
        self.parts.get::<T>()
    }

    /// The workload section of type `T`, mutably.
    pub fn part_mut<T: part::Section>(&mut self) -> Option<&mut T> {
        self.parts.get_mut::<T>()
    }

    /// Sets the workload section of type `T` (None: takes it out).
    pub fn set_part<T: part::Section>(&mut self, part: Option<T>) {
        self.parts.set(part);
    }
}

/// The workload a scenario runs, by its name: a built-in one (found in
/// the workloads' link-time list of sections, [`section::WORKLOADS`]) or
/// one registered at run time ([`registered`]). Only those two make one,
/// so a `Workload` always names a workload of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload(&'static str);

impl Workload {
    /// Lowercase name, as in scenarios, histories and summaries.
    pub fn name(self) -> &'static str {
        self.0
    }

    /// The workload named `name`: a built-in one or a registered one.
    pub fn named(name: &str) -> Option<Workload> {
        section::of(name)
            .map(|w| w.workload)
            .or_else(|| registered::find(name).map(|r| r.name))
            .map(Workload)
    }

    /// The workload a scenario runs when it names none: the built-in one
    /// that declares itself the default ([`section::default_workload`]).
    pub fn default_workload() -> Workload {
        Workload(section::default_workload().workload)
    }

    /// Whether it is built into the binary (it brings its own sections).
    pub fn is_built_in(self) -> bool {
        section::of(self.0).is_some()
    }
}

impl Serialize for Workload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Workload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Workload::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!("{name:?} is no workload of this build"))
        })
    }
}

/// The built-in workloads' names, as the key schema's drift test reads
/// `workload`'s type: the registered ones are no part of the schema.
#[cfg(test)]
impl schemars::JsonSchema for Workload {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Workload".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = section::workloads().iter().map(|w| w.workload).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

/// `target.kind`: what the load runs against.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// The in-process SQLite target: statements run on the bench's own connections.
    Sqlite,
    /// A service that speaks the HTTP contract (`http-contract.md`, version 1).
    Http,
}

/// `[target]`: the system under test. The SQLite keys configure the
/// database of the `sqlite` target and of a spawned reference server; the
/// HTTP keys apply to `kind = "http"` only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// sqlite (default) or http.
    pub kind: TargetKind,
    /// Database file. Default (None): `target.db` inside the run folder.
    pub path: Option<PathBuf>,
    /// `PRAGMA journal_mode`: wal (default), delete, truncate, persist, memory, off.
    pub journal_mode: String,
    /// `PRAGMA synchronous`: off, normal (default), full, extra.
    pub synchronous: String,
    /// `PRAGMA busy_timeout`, as a duration string (default "5s").
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub busy_timeout: Duration,
    /// A transaction block rolled back on SQLITE_BUSY, BUSY_SNAPSHOT or
    /// LOCKED runs again from BEGIN up to this many times within one op
    /// (default 16; 0..=1000).
    pub txn_retries: u32,
    /// The wait between such a rollback and the next BEGIN before the first
    /// rerun, doubling per rerun up to `txn_backoff_max`, half of it drawn
    /// from the seed (default "0s": no wait).
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub txn_backoff: Duration,
    /// The cap of that doubling wait (default "100ms"; at least `txn_backoff`).
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub txn_backoff_max: Duration,
    /// Allow a database that already holds rows; the run then works in its
    /// own namespace of projects (default false: such a database is refused).
    pub reuse: bool,
    /// http: the service's base URL (`http://host:port`); the run works in a
    /// namespace of projects of its own, so a reused service never mixes runs.
    pub url: Option<String>,
    /// http: start the reference server (`specstorm serve`) with the
    /// scenario's variant on a free loopback port, and stop it after the audit.
    pub spawn: bool,
    /// http: connect timeout (default "2s").
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub connect_timeout: Duration,
    /// http: request timeout; an unanswered request is `info` (default "10s").
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub request_timeout: Duration,
    /// http: an ingest answered `info` (timeout, 5xx, reset) is sent again
    /// with the same event id, up to this many times (default 3).
    pub retries: u32,
    /// http with spawn: the reference server's worker threads (default 8).
    pub server_workers: u32,
    /// http with url: a shell command that starts the service for this run
    /// (`{variant}`, `{run_dir}` filled in); stopped after the final read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's working folder, relative to the scenario file's
    /// folder (default: that folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// How long the started service may take to answer its health request
    /// (default "60s").
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub startup_timeout: Duration,
    /// http: a PEM bundle of CA certificates trusted besides the system's
    /// roots for an `https://` service (relative to the scenario file's
    /// folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// http: do not verify the service's TLS certificate (a staging
    /// service); every summary that names the target says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_verify: bool,
}

impl Target {
    /// The SQLite settings (path and pragmas) of this target.
    pub fn sqlite(&self) -> SqliteTarget {
        SqliteTarget {
            path: self.path.clone(),
            journal_mode: self.journal_mode.clone(),
            synchronous: self.synchronous.clone(),
            busy_timeout: self.busy_timeout,
            reuse: self.reuse,
        }
    }
}

/// A SQLite database and its pragmas: of the `sqlite` target, or of the
/// reference server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqliteTarget {
    /// Database file. Default (None): `target.db` inside the run folder.
    pub path: Option<PathBuf>,
    /// `PRAGMA journal_mode`: wal (default), delete, truncate, persist, memory, off.
    pub journal_mode: String,
    /// `PRAGMA synchronous`: off, normal (default), full, extra.
    pub synchronous: String,
    /// `PRAGMA busy_timeout`, as a duration string (default "5s").
    #[serde(with = "humantime_serde_compat")]
    pub busy_timeout: Duration,
    /// Allow a database that already holds rows; the run then works in its
    /// own namespace of projects (default false: such a database is refused).
    pub reuse: bool,
}

/// `[stop]`: when the load stops (the first limit reached wins).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Stop {
    /// Stop after this many distinct events were generated (0 = no limit; default 10000).
    pub events: u64,
    /// Stop after this wall time (None / "0s" = no limit; default none).
    /// At least one of `events` and `duration` must be set.
    #[cfg_attr(test, schemars(with = "Option<humantime_serde_compat::Humantime>"))]
    #[serde(default, with = "humantime_serde_compat::option")]
    pub duration: Option<Duration>,
    /// How long ops in flight at the stop may go on before they are
    /// abandoned and recorded `info` (default "30s", k6's `gracefulStop`):
    /// a target that holds a request for hours cannot hold the run.
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub grace: Duration,
}

/// `[explore]`: the world of `specstorm explore`. For groups,
/// BacktalkGroups.tla's constants made keys: every ingest worker runs its
/// queue of event ids in order, one ingest op per id (a repeated id is a
/// retry); one resolver resolves any open or regressed group, at most
/// `resolves` times. For outbox (exactly_once_none_atomic.tla): M
/// messages delivered D times each to H handlers, with budgets of
/// `Fail()` branches and redeliveries. Each workload's keys are refused on
/// the other's scenario when given.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Explore {
    /// One queue of event ids per ingest worker, in the order it ingests
    /// them (default `[["e1", "e2"], ["e1", "e3"]]`: the spec's `Queue`).
    pub queues: Vec<Vec<String>>,
    /// The fingerprint of each event id (default e1, e2 -> f1; e3 -> f2:
    /// the spec's `FpOf`). Every queued id needs one; others are ignored.
    pub fingerprints: std::collections::BTreeMap<String, String>,
    /// Resolves the resolver may make in one behaviour (the spec's
    /// `MaxResolves`; default 2).
    pub resolves: u32,
    /// The project of every event (default "p1").
    pub project: String,
    /// The constant `:now_ms` (unix ms) of every op, so that states repeat
    /// exactly (default 1700000000000).
    pub now_ms: i64,
    /// Outbox world (`workload = "outbox"`): message ids M, 1..=9
    /// (default 2; the seed's `MessageCount`).
    pub messages: u32,
    /// Outbox world: deliveries of each message D, dup ids 1..=D, 1..=9
    /// (default 2; the seed's `DupCount`).
    pub deliveries: u32,
    /// Outbox world: handlers H, 1..=6 (default 2; the seed's `Processes`).
    pub handlers: u32,
    /// Outbox world: the spec's `Fail()` branches a behaviour may take in
    /// all, 0..=20 (default 1): after any step a handler may die, its
    /// attempt ends and its delivery returns to the queue.
    pub fails: u32,
    /// Outbox world: failed attempts (a `Fail()`, a lost compare-and-swap,
    /// an error) whose delivery comes back, in all, 0..=20 (default 0);
    /// beyond that a failed delivery is given up, as after the load run's
    /// `max_attempts`.
    pub redeliveries: u32,
    /// Stop after this many steps from the initial state (0: no bound;
    /// default 0). `--max-depth` overrides it.
    pub max_depth: u64,
    /// Stop after this many distinct states (0: no bound; default 0).
    /// `--max-states` overrides it.
    pub max_states: u64,
}

impl Default for Explore {
    /// The spec's own world (BacktalkGroups.tla with MaxResolves = 2).
    fn default() -> Self {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Explore {
            queues: vec![ids(&["e1", "e2"]), ids(&["e1", "e3"])],
            fingerprints: [("e1", "f1"), ("e2", "f1"), ("e3", "f2")]
                .into_iter()
                .map(|(e, f)| (e.to_string(), f.to_string()))
                .collect(),
            resolves: 2,
            project: "p1".into(),
            now_ms: 1_700_000_000_000,
            messages: 2,
            deliveries: 2,
            handlers: 2,
            fails: 1,
            redeliveries: 0,
            max_depth: 0,
            max_states: 0,
        }
    }
}

/// `faults[].ops`: which ops a per-op fault may hit.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum FaultOps {
    /// Ingest ops only.
    Ingest,
    /// Resolve ops only.
    Resolve,
    /// Every op.
    All,
    /// The outbox workload's `handle` op.
    Handle,
}

/// `faults[].per`: what a crash's probability is per.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum CrashPer {
    /// One draw per op (attempt).
    Op,
    /// One draw after each executed step.
    Step,
}

/// `faults[].toxic`: what the fault proxy does to a request (Toxiproxy's
/// toxics, at the level of one HTTP request).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Toxic {
    /// Delay the request by `delay` ± `jitter` before forwarding it.
    Latency,
    /// Forward the request, let the server answer, then drop the
    /// connection instead of answering (committed but unanswered).
    DropResponse,
    /// Reset the connection before forwarding (not committed).
    Reset,
    /// Answer `status` (a 5xx) without forwarding (not committed).
    Error,
}

impl Toxic {
    /// snake_case name, as in scenarios and the history.
    pub fn name(self) -> &'static str {
        match self {
            Toxic::Latency => "latency",
            Toxic::DropResponse => "drop_response",
            Toxic::Reset => "reset",
            Toxic::Error => "error",
        }
    }
}

/// One `[[faults]]` entry. `kind` says which other keys apply (the loader
/// refuses the rest and fills the kind's defaults, so a resolved scenario
/// has exactly the keys of its kind):
///
/// | kind | keys (default) |
/// |---|---|
/// | crash | probability (0.01, per op), ops (ingest), step (none: a random step) |
/// | pause | probability (0.1, per matching step), ops (all), step (none: every step), delay (2ms), jitter (1ms) |
/// | proxy | toxic (required), probability (0.01 per request; latency 1.0), ops (all), delay (latency: 5ms), jitter (latency: 0s), status (error: 503) |
/// | kill | every (5s), delay (500ms: down time before the restart) |
/// | lock | every (2s), hold (200ms) |
///
/// Every kind: start (0s) and stop (none), the window in which the fault
/// is active, measured from the start of the load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// What the fault does.
    pub kind: FaultKind,
    /// The fault is active from this long after the load started (default 0s).
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub start: Duration,
    /// ... until this long after the load started (None: until the end).
    #[cfg_attr(test, schemars(with = "Option<humantime_serde_compat::Humantime>"))]
    #[serde(
        default,
        with = "humantime_serde_compat::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub stop: Option<Duration>,
    /// crash: per op; pause: per matching step; proxy: per request (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// crash, pause, proxy: which ops it may hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<FaultOps>,
    /// crash (outbox only): `op` (one draw per attempt, after a random or
    /// named step) or `step` (after every executed step, with
    /// `probability`: the spec's Fail() at any step). None: `op`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<CrashPer>,
    /// crash: the step after which the worker abandons the op; pause: the
    /// step before which it waits. None: a random step (crash), every step
    /// (pause). Checked against the variant's step names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// pause, proxy latency: the delay; kill: down time before the restart.
    #[cfg_attr(test, schemars(with = "Option<humantime_serde_compat::Humantime>"))]
    #[serde(
        default,
        with = "humantime_serde_compat::option_keep",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay: Option<Duration>,
    /// pause, proxy latency: uniform jitter added to `delay`, 0..=jitter.
    #[cfg_attr(test, schemars(with = "Option<humantime_serde_compat::Humantime>"))]
    #[serde(
        default,
        with = "humantime_serde_compat::option_keep",
        skip_serializing_if = "Option::is_none"
    )]
    pub jitter: Option<Duration>,
    /// proxy: what it does to a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toxic: Option<Toxic>,
    /// proxy error: the status answered (500..=599).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// kill, lock: period (the first injection comes one period after `start`).
    #[cfg_attr(test, schemars(with = "Option<humantime_serde_compat::Humantime>"))]
    #[serde(
        default,
        with = "humantime_serde_compat::option_keep",
        skip_serializing_if = "Option::is_none"
    )]
    pub every: Option<Duration>,
    /// lock: how long the write lock is held each time.
    #[cfg_attr(test, schemars(with = "Option<humantime_serde_compat::Humantime>"))]
    #[serde(
        default,
        with = "humantime_serde_compat::option_keep",
        skip_serializing_if = "Option::is_none"
    )]
    pub hold: Option<Duration>,
}

impl Fault {
    /// Whether the fault is active `since_load` after the load started.
    pub fn active(&self, since_load: Duration) -> bool {
        since_load >= self.start && self.stop.is_none_or(|s| since_load < s)
    }

    /// Whether a per-op fault may hit an op of this kind (ingest = true).
    pub fn hits(&self, ingest: bool) -> bool {
        match self.ops.unwrap_or(FaultOps::All) {
            FaultOps::All => true,
            FaultOps::Ingest => ingest,
            FaultOps::Resolve => !ingest,
            FaultOps::Handle => false,
        }
    }
}

/// Where a loaded scenario came from.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file, or None for the embedded default.
    pub path: Option<PathBuf>,
    /// The text as read (before overrides).
    pub text: String,
}

/// Durations as humantime strings ("5s", "250ms") in TOML and JSON.
pub mod humantime_serde_compat {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// How the key schema's drift test sees a field written through this
    /// module (`#[schemars(with = ...)]`): a humantime string, told apart
    /// from other strings by its format.
    #[cfg(test)]
    pub struct Humantime;

    #[cfg(test)]
    impl schemars::JsonSchema for Humantime {
        fn inline_schema() -> bool {
            true
        }

        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Humantime".into()
        }

        fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
            schemars::json_schema!({ "type": "string", "format": "duration" })
        }
    }

    /// Writes a duration as a humantime string ("5s").
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    /// Reads a humantime string; errors: not a valid duration.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid duration {text:?}: {e} (write e.g. \"30s\", \"250ms\", \"2m\")"
            ))
        })
    }

    /// `Option<Duration>`: None and a zero duration both mean "no limit".
    pub mod option {
        use super::*;

        /// Writes None as null, else as a humantime string.
        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        /// `None` (JSON null) and a zero duration both mean "no limit".
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            let Some(text) = Option::<String>::deserialize(d)? else {
                return Ok(None);
            };
            let d = humantime::parse_duration(&text).map_err(|e| {
                serde::de::Error::custom(format!(
                    "invalid duration {text:?}: {e} (write e.g. \"30s\", \"250ms\", \"2m\")"
                ))
            })?;
            Ok(if d.is_zero() { None } else { Some(d) })
        }
    }

    /// `Option<Duration>` where a zero duration is a value (a 0s jitter).
    pub mod option_keep {
        use super::*;

        /// Writes None as null, else as a humantime string.
        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            super::option::serialize(d, s)
        }

        /// `None` (JSON null) or a duration string, zero included.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            match Option::<String>::deserialize(d)? {
                None => Ok(None),
                Some(text) => humantime::parse_duration(&text).map(Some).map_err(|e| {
                    serde::de::Error::custom(format!(
                        "invalid duration {text:?}: {e} (write e.g. \"30s\", \"250ms\", \"2m\")"
                    ))
                }),
            }
        }
    }
}
