//! The groups workload's own sections of a scenario: `[load]`, `[keys]`,
//! `[retry]`, `[resolve]` and `[min_evidence]`, their types (parts of the
//! resolved scenario, read with [`GroupsScenario`]), their keys, kinds and
//! defaults, and the checks that span their keys (the open model's rate,
//! retries' budget, the hot set, the key space over HTTP). They plug into
//! the loader through `crate::scenario::section::WORKLOADS`, so the loader
//! names none of them.
//!
//! These tables predate the registry: every scenario, of any workload,
//! has always been filled with their defaults (a summary's
//! `resolved_scenario` shows them), though only a groups scenario may set
//! them and only its saved `scenario.toml` writes them. Their specs say so
//! ([`Elsewhere::Filled`]), so that no figure or file changes.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::api::GroupsApi;
use super::api_compile;
use crate::fault_kind::FaultKind;
use crate::scenario::key_schema::{field, Field, Kind, Shape, MAX_WORKERS, U32_MAX};
use crate::scenario::limits::{MAX_HTTP_GROUPS, MAX_RETRIES};
use crate::scenario::part::{read_part, Section};
use crate::scenario::section::{
    ApiRequests, BuiltIn, Elsewhere, KeyPlace, SectionSpec, WorkloadSections, WORKLOADS,
};
use crate::scenario::stages::{Curve, Stage};
use crate::scenario::{
    humantime_serde_compat, CrashPer, FaultOps, Scenario, ScenarioError, TargetKind,
};
use crate::summary::{merge_figures, skeleton_common};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `load.model`: how ops are started.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum LoadModel {
    /// N workers, each starting its next op when the last one ended.
    Closed,
    /// A target rate of ingest ops/s; latency is measured from each op's
    /// intended start (no coordinated omission).
    Open,
}

/// `[load]`: how many workers, and how ops are started.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// closed (default) or open.
    pub model: LoadModel,
    /// Concurrent ingest workers, each with its own connection (default 8; 1..=1024).
    pub ingesters: u32,
    /// Concurrent resolve workers (default 1; 0..=1024).
    pub resolvers: u32,
    /// Open model only: target ingest ops/s (attempts, retries included). Required > 0 when open.
    pub rate: f64,
    /// Open model only: an op that starts later than its intended start by
    /// more than this is counted as late (default "1ms").
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub late_after: Duration,
    /// Open model only: resolve ops/s over all resolvers, each resolver
    /// starting its ops at intended times (as ingests at `rate`) instead
    /// of pausing `resolve.interval` between them. Unset: the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve_rate: Option<f64>,
    /// `[[load.stages]]`: the ingest target over time (ops/s when open,
    /// active ingesters when closed; see [`crate::scenario::stages`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<Stage>,
}

impl Load {
    /// The ingest target over the load's time: the stages, or (open
    /// model) `rate` from the start. None: closed, without stages.
    pub fn curve(&self) -> Option<Curve> {
        if !self.stages.is_empty() {
            Some(Curve::new(&self.stages))
        } else if self.model == LoadModel::Open {
            Some(Curve::constant(self.rate))
        } else {
            None
        }
    }
}

impl Section for Load {
    const TABLE: &'static str = "load";
}

/// `keys.skew`: how events and resolves pick their group.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Skew {
    /// Every group equally likely.
    Uniform,
    /// `hot_fraction` of picks go to `hot_groups` groups (contention on a few groups).
    Hot,
}

/// `keys.event_id`: the shape of the event ids a run sends. Whatever the
/// shape, a run's rows are told from other runs' by the project namespace
/// (the audit keeps only the projects that start with it), never by the id.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum EventIdShape {
    /// The run's namespace and shard prefix, then a random UUID (what a
    /// run sent before the key existed; the id alone says whose it is).
    Namespaced,
    /// A canonical version 4 UUID, lowercase, 36 characters: a keyed hash
    /// of the drawn bits and the run's namespace and shard.
    Uuid,
    /// The same UUID as 32 lowercase hex digits, without dashes (a Sentry
    /// event id).
    Hex32,
}

impl EventIdShape {
    /// The shapes as the key takes them.
    pub const NAMES: &'static [&'static str] = &["namespaced", "uuid", "hex32"];
}

/// `[keys]`: the (project, fingerprint) space, and the event ids' shape.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Keys {
    /// Number of projects (default 2; >= 1).
    pub projects: u32,
    /// Fingerprints per project (default 100; >= 1). Groups = projects * fingerprints.
    pub fingerprints: u32,
    /// uniform (default) or hot.
    pub skew: Skew,
    /// hot only: how many groups form the hot set (default 4; 1..=groups).
    pub hot_groups: u32,
    /// hot only: share of events (and resolves) that go to the hot set (default 0.9; 0..=1).
    pub hot_fraction: f64,
    /// The event ids' shape: namespaced (not set), uuid or hex32. Unset, it
    /// is left out of the saved scenario, which stays as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<EventIdShape>,
}

impl Keys {
    /// The event ids' shape (namespaced when not set).
    pub fn event_id(&self) -> EventIdShape {
        self.event_id.unwrap_or(EventIdShape::Namespaced)
    }
}

impl Section for Keys {
    const TABLE: &'static str = "keys";
}

/// `[retry]`: resending an event with the same id (duplicate-id retries).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// Probability that an event is sent again with the same id (default 0.2; 0..=1).
    pub probability: f64,
    /// Extra sends of one event at most (default 2; >= 1 when probability > 0).
    pub max_retries: u32,
    /// Share of retries sent soon (racing the first attempt, from another
    /// worker) rather than later (default 0.5; 0..=1).
    pub soon_fraction: f64,
}

impl Section for Retry {
    const TABLE: &'static str = "retry";
}

/// `[resolve]`: how often each resolver resolves.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Resolve {
    /// Pause of each resolver between two resolves (default "1ms"; "0s" = back to back).
    #[cfg_attr(test, schemars(with = "humantime_serde_compat::Humantime"))]
    #[serde(with = "humantime_serde_compat")]
    pub interval: Duration,
}

impl Section for Resolve {
    const TABLE: &'static str = "resolve";
}

/// `[min_evidence]`: the least evidence (as `checker::evidence` counts
/// it) each groups invariant needs for its `holds` to stand; below it the
/// verdict is `unknown`. A violation stands whatever the evidence.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct MinEvidence {
    /// TypeOK (default 1).
    #[serde(rename = "TypeOK")]
    pub type_ok: u64,
    /// OneGroupPerFingerprint (default 1).
    #[serde(rename = "OneGroupPerFingerprint")]
    pub one_group_per_fingerprint: u64,
    /// CountExact (default 20).
    #[serde(rename = "CountExact")]
    pub count_exact: u64,
    /// NoMissedRegression (default 20).
    #[serde(rename = "NoMissedRegression")]
    pub no_missed_regression: u64,
}

impl Section for MinEvidence {
    const TABLE: &'static str = "min_evidence";
}

impl Default for MinEvidence {
    /// Mirrors the loader's defaults (`scenarios/README.md`).
    fn default() -> Self {
        MinEvidence {
            type_ok: 1,
            one_group_per_fingerprint: 1,
            count_exact: 20,
            no_missed_regression: 20,
        }
    }
}

impl MinEvidence {
    /// The minimum for an invariant by its spec name (None: not a groups
    /// invariant).
    pub fn of(&self, invariant: &str) -> Option<u64> {
        match invariant {
            "TypeOK" => Some(self.type_ok),
            "OneGroupPerFingerprint" => Some(self.one_group_per_fingerprint),
            "CountExact" => Some(self.count_exact),
            "NoMissedRegression" => Some(self.no_missed_regression),
            _ => None,
        }
    }
}

/// The groups sections of a resolved scenario. The loader fills `[load]`,
/// `[keys]`, `[retry]` and `[resolve]` in every scenario, so they are
/// there whenever the loader made the scenario (or serde read one it
/// wrote); `[min_evidence]` may be missing from a run folder written
/// before it existed, and then has its defaults.
pub trait GroupsScenario {
    /// `[load]`.
    fn load(&self) -> &Load;
    /// `[load]`, mutably.
    fn load_mut(&mut self) -> &mut Load;
    /// `[keys]`.
    fn keys(&self) -> &Keys;
    /// `[retry]`.
    fn retry(&self) -> &Retry;
    /// `[retry]`, mutably.
    fn retry_mut(&mut self) -> &mut Retry;
    /// `[resolve]`.
    fn resolve(&self) -> &Resolve;
    /// The minimum evidence of each groups invariant: `[min_evidence]`,
    /// or its defaults where a saved scenario predates it.
    fn min_evidence(&self) -> MinEvidence;
    /// The number of error groups the keys span: projects * fingerprints.
    fn groups(&self) -> u64;
}

/// Why a part [`GroupsScenario`] reads is always there.
const FILLED: &str = "the loader fills the groups tables in every scenario";

impl GroupsScenario for Scenario {
    fn load(&self) -> &Load {
        self.part::<Load>().expect(FILLED)
    }

    fn load_mut(&mut self) -> &mut Load {
        self.part_mut::<Load>().expect(FILLED)
    }

    fn keys(&self) -> &Keys {
        self.part::<Keys>().expect(FILLED)
    }

    fn retry(&self) -> &Retry {
        self.part::<Retry>().expect(FILLED)
    }

    fn retry_mut(&mut self) -> &mut Retry {
        self.part_mut::<Retry>().expect(FILLED)
    }

    fn resolve(&self) -> &Resolve {
        self.part::<Resolve>().expect(FILLED)
    }

    fn min_evidence(&self) -> MinEvidence {
        self.part::<MinEvidence>().copied().unwrap_or_default()
    }

    fn groups(&self) -> u64 {
        let keys = self.keys();
        u64::from(keys.projects) * u64::from(keys.fingerprints)
    }
}

const LOAD_FIELDS: &[Field] = &[
    field(
        "model",
        Kind::OneOf(&["closed", "open"]),
        Some("\"closed\""),
    ),
    field(
        "ingesters",
        Kind::Int {
            min: 1,
            max: MAX_WORKERS,
        },
        Some("8"),
    ),
    field(
        "resolvers",
        Kind::Int {
            min: 0,
            max: MAX_WORKERS,
        },
        Some("1"),
    ),
    field("rate", Kind::Rate, Some("0.0")),
    field("late_after", Kind::Duration, Some("\"1ms\"")),
    // Not set: resolvers pause `resolve.interval`, and the saved scenario
    // stays as it always was.
    field("resolve_rate", Kind::Rate, None),
    field("stages", Kind::Stages, None),
];

const KEYS_FIELDS: &[Field] = &[
    field(
        "projects",
        Kind::Int {
            min: 1,
            max: U32_MAX,
        },
        Some("2"),
    ),
    field(
        "fingerprints",
        Kind::Int {
            min: 1,
            max: U32_MAX,
        },
        Some("100"),
    ),
    field(
        "skew",
        Kind::OneOf(&["uniform", "hot"]),
        Some("\"uniform\""),
    ),
    // 0 is refused only with skew = hot, where the hot set is used.
    field(
        "hot_groups",
        Kind::Int {
            min: 0,
            max: U32_MAX,
        },
        Some("4"),
    ),
    field("hot_fraction", Kind::Fraction, Some("0.9")),
    // Not set: namespaced, and the saved scenario stays as it always was.
    field("event_id", Kind::OneOf(EventIdShape::NAMES), None),
];

const RETRY_FIELDS: &[Field] = &[
    field("probability", Kind::Fraction, Some("0.2")),
    field(
        "max_retries",
        Kind::Int {
            min: 0,
            max: MAX_RETRIES as i64,
        },
        Some("2"),
    ),
    field("soon_fraction", Kind::Fraction, Some("0.5")),
];

const RESOLVE_FIELDS: &[Field] = &[field("interval", Kind::Duration, Some("\"1ms\""))];

/// A `[min_evidence]` entry: a count of evidence (`checker::evidence`).
const MIN_EVIDENCE: Kind = Kind::Int {
    min: 0,
    max: i64::MAX,
};

// Mirrors `MinEvidence::default()`.
const MIN_EVIDENCE_FIELDS: &[Field] = &[
    field("TypeOK", MIN_EVIDENCE, Some("1")),
    field("OneGroupPerFingerprint", MIN_EVIDENCE, Some("1")),
    field("CountExact", MIN_EVIDENCE, Some("20")),
    field("NoMissedRegression", MIN_EVIDENCE, Some("20")),
];

/// `[load]`, `[keys]`, `[retry]` and `[resolve]` in another workload's
/// scenario: filled, as they always were (that workload's checks refuse
/// them when given).
fn filled(_: &str) -> Elsewhere {
    Elsewhere::Filled
}

/// `[min_evidence]` in another workload's scenario: filled as it always
/// was, except in an outbox scenario, which has never had it (its
/// evidence is its queue) and refuses it with the keys.
fn min_evidence_elsewhere(workload: &str) -> Elsewhere {
    if workload == "outbox" {
        Elsewhere::Refused(Some(
            "[min_evidence] applies to the groups workload's invariants; the outbox \
             workload's evidence is its queue (every message delivered)",
        ))
    } else {
        Elsewhere::Filled
    }
}

/// The invariants of the `groups` workload (BacktalkGroups.tla), by their
/// spec names, in report order: what `expect` may name, and what its
/// checkers judge (its checker module asserts the two lists agree when it
/// compiles).
pub const GROUPS_INVARIANTS: [&str; 4] = [
    "TypeOK",
    "OneGroupPerFingerprint",
    "CountExact",
    "NoMissedRegression",
];

/// The groups' built-in variants (the files shipped in `targets/sqlite/`).
const VARIANTS: &[BuiltIn] = &[
    BuiltIn {
        name: "groups-atomic",
        path: "targets/sqlite/groups-atomic.sql",
        text: include_str!("../../../targets/sqlite/groups-atomic.sql"),
    },
    BuiltIn {
        name: "groups-naive",
        path: "targets/sqlite/groups-naive.sql",
        text: include_str!("../../../targets/sqlite/groups-naive.sql"),
    },
];

const REQUEST: Shape = Shape::Val(Kind::Str);
const MAP: Shape = Shape::Val(Kind::StrMap);
const STR: Shape = Shape::Val(Kind::Str);

const INGEST: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("body", STR),
    ("batch", Shape::Val(Kind::Int { min: 1, max: 1000 })),
    ("envelope", STR),
    ("items", STR),
    ("item_id", STR),
    ("accepted", STR),
    ("duplicate", STR),
    ("group_id", STR),
    ("codes", MAP),
    ("may_drop", Shape::Val(Kind::Bool)),
];
const RESOLVE: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("body", STR),
    ("resolved", STR),
    ("event_count", STR),
    ("status", STR),
    ("codes", MAP),
];
const LOOKUP: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("group_id", STR),
    ("codes", MAP),
];
/// `[api]` of a groups scenario.
pub const API: &[(&str, Shape)] = &[
    ("health", REQUEST),
    ("headers", MAP),
    (
        "group_ids",
        Shape::Val(Kind::OneOf(&["answer", "lookup", "audit"])),
    ),
    ("release", STR),
    ("ingest", Shape::Table(INGEST)),
    ("resolve", Shape::Table(RESOLVE)),
    ("lookup", Shape::Table(LOOKUP)),
];
const EXPORT: &[(&str, Shape)] = &[("events", STR), ("groups", STR)];
/// `[audit]` of a groups scenario.
pub const AUDIT: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("sqlite", STR),
    ("export", Shape::Table(EXPORT)),
    ("events", Shape::Val(Kind::OneOf(&["complete", "pruned"]))),
];
/// The export queries `audit.sqlite` needs: both.
const GROUPS_QUERIES: &[(&str, &str, &str)] = &[
    (
        "events",
        "error_events",
        "\"SELECT id, project, fingerprint, group_id, received_at FROM events\"",
    ),
    (
        "groups",
        "error_groups",
        "\"SELECT id, project, fingerprint, status, event_count FROM groups\"",
    ),
];

#[linkme::distributed_slice(WORKLOADS)]
static GROUPS_SECTIONS: WorkloadSections = WorkloadSections {
    workload: "groups",
    // A scenario that names no workload runs this one (as it always did).
    default: true,
    sections: &[
        SectionSpec {
            table: Load::TABLE,
            follows: "target",
            listed_after: "target",
            elsewhere: filled,
            fields: LOAD_FIELDS,
            read: read_part::<Load>,
            #[cfg(test)]
            schema: || schemars::schema_for!(Load),
        },
        SectionSpec {
            table: Keys::TABLE,
            follows: "stop",
            listed_after: "stop",
            elsewhere: filled,
            fields: KEYS_FIELDS,
            read: read_part::<Keys>,
            #[cfg(test)]
            schema: || schemars::schema_for!(Keys),
        },
        SectionSpec {
            table: Retry::TABLE,
            follows: "stop",
            listed_after: "stop",
            elsewhere: filled,
            fields: RETRY_FIELDS,
            read: read_part::<Retry>,
            #[cfg(test)]
            schema: || schemars::schema_for!(Retry),
        },
        SectionSpec {
            table: Resolve::TABLE,
            follows: "stop",
            listed_after: "stop",
            elsewhere: filled,
            fields: RESOLVE_FIELDS,
            read: read_part::<Resolve>,
            #[cfg(test)]
            schema: || schemars::schema_for!(Resolve),
        },
        SectionSpec {
            table: MinEvidence::TABLE,
            // Written after `[audit]` (where the saved scenario always had
            // it), named after `[fuzz]` in the list of tables.
            follows: "audit",
            listed_after: "fuzz",
            elsewhere: min_evidence_elsewhere,
            fields: MIN_EVIDENCE_FIELDS,
            read: read_part::<MinEvidence>,
            #[cfg(test)]
            schema: || schemars::schema_for!(MinEvidence),
        },
    ],
    check: check_faults,
    keys: check_keys,
    limits: check_key_space,
    unset_note: |_, _| None,
    run_length,
    variants: VARIANTS,
    // The default workload's: the key schema's default `variant`.
    default_variant: Some("groups-atomic"),
    invariants: &GROUPS_INVARIANTS,
    stop_events: true,
    api: API,
    requests: ApiRequests {
        read: read_part::<GroupsApi>,
        compile: api_compile::compile,
        secret_keys: api_compile::secret_keys,
        #[cfg(test)]
        schema: || schemars::schema_for!(GroupsApi),
    },
    // The placeholders every request of groups can fill in (a batch's
    // events share their project).
    api_header_vars: &["project", "release", "now_ms"],
    audit: AUDIT,
    audit_request: None,
    export_queries: (GROUPS_QUERIES, "docs/groups.md"),
    crash_ops: None,
    explore_keys: &["queues", "fingerprints", "resolves", "project"],
    explore_check,
    skeleton,
};

/// Every figure `summary.json` has for a groups scenario, as zeros.
fn skeleton(s: &Scenario, faults: &[FaultKind], wal: bool) -> serde_json::Value {
    let mut v = skeleton_common(&super::figures::OP_KINDS, &GROUPS_INVARIANTS, faults, wal);
    let open = s.load().model == LoadModel::Open;
    merge_figures(
        &mut v,
        super::figures::skeleton(&GROUPS_INVARIANTS, faults, open),
    );
    v
}

/// A groups fault hits its own ops, once per op.
fn check_faults(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    for (i, f) in s.faults.iter().enumerate() {
        let i = i.to_string();
        if f.ops == Some(FaultOps::Handle) {
            return Err(at.error(
                &["faults", &i, "ops"],
                format!("`faults[{i}].ops` = \"handle\" is the outbox workload's op; groups has ingest and resolve"),
            ));
        }
        if f.per == Some(CrashPer::Step) {
            return Err(at.error(
                &["faults", &i, "per"],
                format!("`faults[{i}].per` = \"step\" is supported by the outbox workload only (for now)"),
            ));
        }
    }
    Ok(())
}

/// Every queued event id needs a fingerprint (the spec's `FpOf` is total
/// on `Events`); the project must not be empty.
fn explore_check(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    let x = &s.explore;
    if x.project.trim().is_empty() {
        return Err(at.error(
            &["explore", "project"],
            "`explore.project` must not be empty".into(),
        ));
    }
    for (w, queue) in x.queues.iter().enumerate() {
        for (i, id) in queue.iter().enumerate() {
            if !x.fingerprints.contains_key(id) {
                let (w, i) = (w.to_string(), i.to_string());
                return Err(at.error(
                    &["explore", "queues", &w, &i],
                    format!(
                        "event {id:?} of `explore.queues[{w}]` has no fingerprint: add `{id} = \"f1\"` (say) to `explore.fingerprints`"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The open model needs a rate and the closed one has none; retries need
/// a budget; a hot set lies within the groups.
fn check_keys(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    let load = s.load();
    let staged = !load.stages.is_empty();
    match load.model {
        LoadModel::Open if staged && load.rate != 0.0 => {
            return Err(at.error(
                &["load", "rate"],
                "`load.rate` and `[[load.stages]]` both set the ingest rate: keep one (the \
                 stages' targets are ops/s in the open model)"
                    .into(),
            ));
        }
        LoadModel::Open if !staged && load.rate <= 0.0 => {
            // Point at the rate when one was written, else at the model.
            let path: &[&str] = if at.is_given(&["load", "rate"]) {
                &["load", "rate"]
            } else {
                &["load", "model"]
            };
            return Err(at.error(
                path,
                format!(
                    "model = \"open\" needs `load.rate` > 0 (target ingest ops/s), found {}",
                    load.rate
                ),
            ));
        }
        LoadModel::Closed if load.rate != 0.0 => {
            return Err(at.error(
                &["load", "rate"],
                "rate only applies to model = open (set load.model = \"open\", or remove the rate)"
                    .into(),
            ));
        }
        _ => {}
    }
    check_stages(at, load)?;
    check_resolve_rate(at, s)?;
    let retry = s.retry();
    if retry.probability > 0.0 && retry.max_retries == 0 {
        return Err(at.error(
            &["retry", "max_retries"],
            format!(
                "`retry.max_retries` must be at least 1 when `retry.probability` > 0 (it is {})",
                retry.probability
            ),
        ));
    }
    let keys = s.keys();
    if keys.skew == Skew::Hot {
        let groups = s.groups();
        let hot = u64::from(keys.hot_groups);
        if hot == 0 || hot > groups {
            return Err(at.error(
                &["keys", "hot_groups"],
                format!(
                    "`keys.hot_groups` must be from 1 to the number of groups \
                     (projects * fingerprints = {groups}) when skew = \"hot\", found {hot}"
                ),
            ));
        }
    }
    Ok(())
}

/// Stages must start some op; in the closed model each target is a whole
/// number of ingesters, at most `load.ingesters`.
fn check_stages(at: &dyn KeyPlace, load: &Load) -> Result<(), ScenarioError> {
    if load.stages.is_empty() {
        return Ok(());
    }
    if load.stages.iter().all(|st| st.target == 0.0) {
        let unit = match load.model {
            LoadModel::Open => "ingest ops/s in the open model",
            LoadModel::Closed => "active ingesters in the closed model",
        };
        return Err(at.error(
            &["load", "stages"],
            format!("every stage's target is 0: no op would ever start (the targets are {unit})"),
        ));
    }
    match load.model {
        LoadModel::Open => {}
        LoadModel::Closed => {
            for (i, st) in load.stages.iter().enumerate() {
                if st.target.fract() != 0.0 || st.target > f64::from(load.ingesters) {
                    let i = i.to_string();
                    return Err(at.error(
                        &["load", "stages", &i, "target"],
                        format!(
                            "`load.stages[{i}].target` is a number of active ingesters in the \
                             closed model: a whole number from 0 to `load.ingesters` ({}), found {}",
                            load.ingesters, st.target
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `load.resolve_rate` paces resolvers in the open model: it needs the
/// open model and a resolver. It replaces `resolve.interval`, which the
/// saved scenario still writes (so a rate beside it is no mistake).
fn check_resolve_rate(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    let load = s.load();
    let Some(rate) = load.resolve_rate else {
        return Ok(());
    };
    let path = &["load", "resolve_rate"];
    let reason = if load.model != LoadModel::Open {
        "`load.resolve_rate` only applies to model = open (in the closed model resolvers \
         pause `resolve.interval` between resolves)"
            .to_owned()
    } else if rate <= 0.0 {
        format!("`load.resolve_rate` must be > 0 (resolve ops/s over all resolvers), found {rate}")
    } else if load.resolvers == 0 {
        "`load.resolve_rate` needs `load.resolvers` >= 1".to_owned()
    } else {
        return Ok(());
    };
    Err(at.error(path, reason))
}

/// How long a groups load runs when `stop.duration` is unset: its
/// stages' total time.
fn run_length(s: &Scenario) -> Option<Duration> {
    let stages = &s.load().stages;
    (!stages.is_empty()).then(|| Curve::new(stages).duration())
}

/// Over HTTP, at most [`MAX_HTTP_GROUPS`] groups.
fn check_key_space(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    if s.target.kind != TargetKind::Http || s.groups() <= MAX_HTTP_GROUPS {
        return Ok(());
    }
    let path: &[&str] = if at.is_given(&["keys", "fingerprints"]) {
        &["keys", "fingerprints"]
    } else {
        &["keys", "projects"]
    };
    Err(at.error(
        path,
        format!(
            "over HTTP the key space may hold at most {MAX_HTTP_GROUPS} groups, found \
             projects * fingerprints = {}: the bench keeps a slot per group for the id \
             the service names, allocated before the load",
            s.groups()
        ),
    ))
}
