//! The outbox's own section of a scenario, `[outbox]` (its input queue
//! and its handlers): its type ([`OutboxConfig`], a part of the resolved
//! scenario), its keys, kinds and defaults, its checks (`outbox.lease`,
//! the queue's size), and the note the saved `scenario.toml` gives an
//! unset lease. It plugs into the loader through
//! `crate::scenario::section::WORKLOADS`, so the loader names no outbox
//! key.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::api::{self as outbox_api, OutboxApi};
use crate::fault_kind::FaultKind;
use crate::scenario::key_schema::{field, quoted_list, Field, Kind, Shape, MAX_WORKERS, U32_MAX};
use crate::scenario::part::{read_part, Section};
use crate::scenario::section::{
    self, ApiRequests, BuiltIn, Elsewhere, KeyPlace, SectionSpec, WorkloadSections, WORKLOADS,
};
use crate::scenario::{humantime_serde_compat, FaultOps, Scenario, ScenarioError};
use crate::summary::{merge_figures, skeleton_common};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `[outbox]`: the bench's input queue and its handlers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OutboxConfig {
    /// Distinct message ids M (default 1000; 1..=10,000,000).
    pub messages: u64,
    /// Deliveries of each message D: dup ids 1..=D (default 3; 1..=100).
    pub deliveries: u32,
    /// Concurrent handlers H, each with its own connection (default 8; 1..=1024).
    pub handlers: u32,
    /// Attempts one delivery (msg_id, dup_id) may take before the queue
    /// gives it up (default 100; >= 1). Every attempt counts: a crash, a
    /// lost compare-and-swap, an error.
    pub max_attempts: u32,
    /// How long an attempt holds its delivery (None / "0s": until the
    /// attempt ends, the default). With a lease, a delivery whose attempt
    /// has not ended within it is delivered again (a new attempt, a new
    /// tx_id) while the old attempt still runs: whichever acks first acks
    /// the delivery; a later ack is recorded and harmless. An expired
    /// lease counts as an attempt of the delivery's budget.
    #[cfg_attr(test, schemars(with = "Option<humantime_serde_compat::Humantime>"))]
    #[serde(
        default,
        with = "humantime_serde_compat::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub lease: Option<Duration>,
}

impl Section for OutboxConfig {
    const TABLE: &'static str = "outbox";
}

/// Most outbox deliveries (messages x deliveries): the bench's input
/// queue holds every delivery from the start (20 bytes each, shuffled
/// before the load begins), 600 MB at this bound. It admits the largest
/// message count with the default 3 deliveries.
pub const MAX_OUTBOX_DELIVERIES: u64 = 30_000_000;

/// `[outbox]`'s keys, kinds and defaults (`scenarios/README.md`).
const FIELDS: &[Field] = &[
    field(
        "messages",
        Kind::Int {
            min: 1,
            max: 10_000_000,
        },
        Some("1000"),
    ),
    field("deliveries", Kind::Int { min: 1, max: 100 }, Some("3")),
    field(
        "handlers",
        Kind::Int {
            min: 1,
            max: MAX_WORKERS,
        },
        Some("8"),
    ),
    field(
        "max_attempts",
        Kind::Int {
            min: 1,
            max: U32_MAX,
        },
        Some("100"),
    ),
    // "0s" is how the file says "no lease" (as `stop.duration`): an
    // attempt holds its delivery until it ends.
    field("lease", Kind::Duration, Some("\"0s\"")),
];

/// The invariants of the `outbox` workload (exactly_once_none_atomic.tla,
/// as `docs/outbox.md` defines them), by their spec names, in report
/// order: what `expect` may name, and what its checkers judge (its
/// checker module asserts the two lists agree when it compiles).
pub const OUTBOX_INVARIANTS: [&str; 5] = [
    "TypeOK",
    "AtMostOneStateChange",
    "AtMostOneOutQueueMsg",
    "ConsistentStateAndOutQueue",
    "NoLostOutput",
];

/// The outbox's built-in variants (the files shipped in `targets/sqlite/`).
const VARIANTS: &[BuiltIn] = &[
    BuiltIn {
        name: "outbox-protocol",
        path: "targets/sqlite/outbox-protocol.sql",
        text: include_str!("../../../targets/sqlite/outbox-protocol.sql"),
    },
    BuiltIn {
        name: "outbox-naive-no-outbox",
        path: "targets/sqlite/outbox-naive-no-outbox.sql",
        text: include_str!("../../../targets/sqlite/outbox-naive-no-outbox.sql"),
    },
    BuiltIn {
        name: "outbox-naive-no-redo",
        path: "targets/sqlite/outbox-naive-no-redo.sql",
        text: include_str!("../../../targets/sqlite/outbox-naive-no-redo.sql"),
    },
];

const REQUEST: Shape = Shape::Val(Kind::Str);
const MAP: Shape = Shape::Val(Kind::StrMap);
const STR: Shape = Shape::Val(Kind::Str);

const HANDLE: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("body", STR),
    ("acked", STR),
    ("sent_msg_id", STR),
    ("sent_ver", STR),
    ("codes", MAP),
];
/// `[api]` of an outbox scenario: groups' request kinds and group ids
/// mean nothing there, and are unknown keys.
pub const OUTBOX_API: &[(&str, Shape)] = &[
    ("health", REQUEST),
    ("headers", MAP),
    ("handle", Shape::Table(HANDLE)),
];
/// The contract's outbox export request (`http-contract.md`): an outbox
/// scenario's `[audit] request` by default.
pub const CONTRACT_OUTBOX_EXPORT: &str = "GET /v1/outbox/export";

/// The outbox's canonical tables (`docs/outbox.md`, "The tables").
const OUTBOX_EXPORT: &[(&str, Shape)] = &[
    ("state_log", STR),
    ("outbox", STR),
    ("out_queue", STR),
    ("processed", STR),
];
/// `[audit]` of an outbox scenario (no `events`: it has no event rows).
pub const OUTBOX_AUDIT: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("sqlite", STR),
    ("export", Shape::Table(OUTBOX_EXPORT)),
];
/// The export queries `audit.sqlite` needs: all but `export.outbox`,
/// which a design without an outbox lacks.
const OUTBOX_QUERIES: &[(&str, &str, &str)] = &[
    (
        "state_log",
        "state_log",
        "\"SELECT ver, msg_id, tx_id, kind FROM state_log\"",
    ),
    (
        "out_queue",
        "out_queue",
        "\"SELECT seq, msg_id, ver FROM out_queue\"",
    ),
    (
        "processed",
        "processed",
        "\"SELECT msg_id, dup_id FROM processed\"",
    ),
];

#[linkme::distributed_slice(WORKLOADS)]
static OUTBOX_SECTIONS: WorkloadSections = WorkloadSections {
    workload: "outbox",
    default: false,
    sections: &[SectionSpec {
        table: OutboxConfig::TABLE,
        follows: "explore",
        listed_after: "explore",
        elsewhere: |_| Elsewhere::Refused(None),
        fields: FIELDS,
        read: read_part::<OutboxConfig>,
        #[cfg(test)]
        schema: || schemars::schema_for!(OutboxConfig),
    }],
    check: check_scenario,
    keys: |_, _| Ok(()),
    limits: check_queue,
    unset_note,
    // The queue's size ends an outbox load.
    run_length: |_| None,
    variants: VARIANTS,
    default_variant: Some("outbox-protocol"),
    invariants: &OUTBOX_INVARIANTS,
    stop_events: false,
    api: OUTBOX_API,
    requests: ApiRequests {
        read: read_part::<OutboxApi>,
        compile: outbox_api::compile_part,
        secret_keys: outbox_api::secret_keys,
        #[cfg(test)]
        schema: || schemars::schema_for!(OutboxApi),
    },
    // Every request of the outbox (a delivery, the health request, the
    // export) has its clock, and no other placeholder.
    api_header_vars: &["now_ms"],
    audit: OUTBOX_AUDIT,
    audit_request: Some(CONTRACT_OUTBOX_EXPORT),
    export_queries: (OUTBOX_QUERIES, "docs/outbox.md"),
    // A crash hits the only op there is.
    crash_ops: Some("\"handle\""),
    explore_keys: &[
        "messages",
        "deliveries",
        "handlers",
        "fails",
        "redeliveries",
    ],
    // The world's keys are checked by their ranges.
    explore_check: |_, _| Ok(()),
    skeleton,
};

/// Every figure `summary.json` has for an outbox scenario, as zeros.
fn skeleton(_: &Scenario, faults: &[FaultKind], wal: bool) -> serde_json::Value {
    let mut v = skeleton_common(&super::figures::OP_KINDS, &OUTBOX_INVARIANTS, faults, wal);
    merge_figures(&mut v, super::figures::skeleton());
    v
}

/// What an outbox scenario may not hold: another workload's tables (that
/// its scenarios are filled with) or `stop.events` given, another
/// workload's built-in variant, a fault on another workload's ops; then
/// `outbox.lease`'s bound.
fn check_scenario(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    for w in section::workloads() {
        for spec in w.sections {
            if w.workload == "outbox" || (spec.elsewhere)("outbox") != Elsewhere::Filled {
                continue;
            }
            let table = spec.table;
            if at.is_given(&[table]) {
                return Err(at.error(
                    &[table],
                    format!(
                        "[{table}] does not apply to workload = \"outbox\" (its load is set in \
                         [outbox]: messages, deliveries, handlers, max_attempts, lease)"
                    ),
                ));
            }
        }
    }
    if at.is_given(&["stop", "events"]) {
        return Err(at.error(
            &["stop", "events"],
            "`stop.events` does not apply to workload = \"outbox\": the run ends when its \
             queue drains (outbox.messages x outbox.deliveries), or at `stop.duration`"
                .into(),
        ));
    }
    if let Some(other) = section::built_in_owner(&s.variant).filter(|o| *o != "outbox") {
        let own: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
        return Err(at.error(
            &["variant"],
            format!(
                "{:?} is a {other} variant; workload = \"outbox\" runs an outbox statement \
                 file or one of {}",
                s.variant,
                quoted_list(&own)
            ),
        ));
    }
    for (i, f) in s.faults.iter().enumerate() {
        let i = i.to_string();
        if matches!(f.ops, Some(FaultOps::Ingest | FaultOps::Resolve)) {
            return Err(at.error(
                &["faults", &i, "ops"],
                format!(
                    "`faults[{i}].ops`: the outbox workload's only op is \"handle\" (or \"all\")"
                ),
            ));
        }
    }
    check_lease(at, s)
}

/// `outbox.lease`: at least 1ms when set. A shorter lease would expire
/// during nearly every attempt's first statement, so every delivery would
/// run as a crowd of overlapping attempts: no longer the protocol's
/// occasional slow handler but a different, pathological load.
fn check_lease(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    let lease = s.part::<OutboxConfig>().and_then(|o| o.lease);
    if lease.is_some_and(|l| l < Duration::from_millis(1)) {
        return Err(at.error(
            &["outbox", "lease"],
            "`outbox.lease` must be at least 1ms (or \"0s\": no lease, an attempt holds its \
             delivery until it ends)"
                .into(),
        ));
    }
    Ok(())
}

/// The queue's size: at most [`MAX_OUTBOX_DELIVERIES`] deliveries.
fn check_queue(at: &dyn KeyPlace, s: &Scenario) -> Result<(), ScenarioError> {
    let Some(o) = s.part::<OutboxConfig>() else {
        return Ok(());
    };
    let total = o.messages.saturating_mul(u64::from(o.deliveries));
    if total <= MAX_OUTBOX_DELIVERIES {
        return Ok(());
    }
    let path: &[&str] = if at.is_given(&["outbox", "deliveries"]) {
        &["outbox", "deliveries"]
    } else {
        &["outbox", "messages"]
    };
    Err(at.error(
        path,
        format!(
            "`outbox.messages` x `outbox.deliveries` may be at most \
             {MAX_OUTBOX_DELIVERIES}, found {} x {} = {total}: the bench's queue holds \
             every delivery from the start, shuffled before the load",
            o.messages, o.deliveries
        ),
    ))
}

/// Serde leaves out an unset lease; the saved scenario says what it means.
fn unset_note(s: &Scenario, header: &str) -> Option<&'static str> {
    let unset = s.part::<OutboxConfig>().is_some_and(|o| o.lease.is_none());
    (header == "[outbox]" && unset)
        .then_some("# lease: not set (an attempt holds its delivery until it ends)\n")
}
