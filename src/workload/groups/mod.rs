//! The groups workload (BacktalkGroups.tla): the ops an ingester and a
//! resolver run, and how a finished step machine becomes an op's result,
//! following the rules of `targets/README.md` ("What the groups workload
//! makes of the steps"). Its implementation of the `Workload` trait is
//! [`run`], with its load phase in [`load`].
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

pub mod api;
pub mod api_compile;
pub mod compare;
pub mod config;
pub mod coverage;
pub mod figures;
pub mod generator;
pub mod human;
pub mod id_bits;
pub(crate) mod load;
pub mod origin;
pub mod pace;
pub mod run;
pub mod statements;

use super::machine::{Next, StepMachine};
use super::value::Value;
use crate::history::{CompletionType, OpResult};

/// One ingest attempt of one event (a retry reuses `event_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct IngestOp {
    /// Client-chosen UUID-shaped id, reused by retries (s1's duplicate check).
    pub event_id: String,
    /// Project of the event.
    pub project: String,
    /// Fingerprint of the event.
    pub fingerprint: String,
    /// Deterministic, injective function of (project, fingerprint).
    pub group_id: String,
    /// Event message (`:message`).
    pub message: String,
    /// 0 for the first send, n for the n-th retry.
    pub attempt: u32,
    /// Open model: ns since run start at which the op should start.
    pub intended_ns: Option<u64>,
    /// Index of the group in the scenario's key space (0 outside a run).
    pub group: u64,
    /// The op's deterministic identity for the fault plan
    /// ([`crate::draws::op_key`]; 0 outside a run).
    pub key: u64,
}

impl IngestOp {
    /// Built-in parameters in `INGEST_BUILTINS` order.
    pub fn builtins(&self, now_ms: i64) -> Vec<Value> {
        vec![
            Value::Text(self.event_id.clone()),
            Value::Text(self.project.clone()),
            Value::Text(self.fingerprint.clone()),
            Value::Text(self.group_id.clone()),
            Value::Text(self.message.clone()),
            Value::Int(now_ms),
        ]
    }
}

/// One resolve of one group.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveOp {
    /// Project of the group.
    pub project: String,
    /// Fingerprint of the group.
    pub fingerprint: String,
    /// Group id (deterministic hash of project and fingerprint).
    pub group_id: String,
    /// Index of the group in the scenario's key space (0 outside a run).
    pub group: u64,
    /// The op's deterministic identity for the fault plan
    /// ([`crate::draws::op_key`]; 0 outside a run).
    pub key: u64,
}

impl ResolveOp {
    /// Built-in parameters in `RESOLVE_BUILTINS` order.
    pub fn builtins(&self, now_ms: i64) -> Vec<Value> {
        vec![
            Value::Text(self.group_id.clone()),
            Value::Int(now_ms),
            Value::Text(self.project.clone()),
            Value::Text(self.fingerprint.clone()),
        ]
    }
}

/// The group id of (project, fingerprint): `g:{project}:{fingerprint}`.
/// Injective because generated project names never contain `:`; the spec's
/// `GroupId` must be injective or CountExact is meaningless.
pub fn group_id(project: &str, fingerprint: &str) -> String {
    format!("g:{project}:{fingerprint}")
}

/// An ingest that ended normally (`next` is the machine's last answer).
/// - stop before the counting step: duplicate, `ok` with accepted = false;
/// - ran through the counting step and it changed a row: `ok`, accepted;
/// - the counting step changed no row (group missing): `fail`, unless an
///   earlier step changed rows (then `info`: it partly happened);
/// - more than one row from a step: `fail` likewise.
pub fn ingest_result(
    m: &StepMachine<'_>,
    next: Next,
    counting_step: usize,
) -> (CompletionType, OpResult) {
    let partial = if m.changed_any() {
        CompletionType::Info
    } else {
        CompletionType::Fail
    };
    match next {
        Next::Stopped { at } if at < counting_step => (
            CompletionType::Ok,
            OpResult {
                accepted: Some(false),
                ..Default::default()
            },
        ),
        Next::TooManyRows { at, rows } => (
            partial,
            OpResult {
                error: Some(format!(
                    "step {} returned {rows} rows (at most one allowed)",
                    m.program().steps[at].name
                )),
                ..Default::default()
            },
        ),
        _ => {
            if m.changes(counting_step).unwrap_or(0) > 0 {
                (
                    CompletionType::Ok,
                    OpResult {
                        accepted: Some(true),
                        ..Default::default()
                    },
                )
            } else {
                (
                    partial,
                    OpResult {
                        error: Some(format!(
                            "counting step {} changed no row (group missing)",
                            m.program().steps[counting_step].name
                        )),
                        ..Default::default()
                    },
                )
            }
        }
    }
}

/// A resolve that ended normally.
/// - stop at a step that returned an `event_count` column: resolved (`ok`)
///   with that count;
/// - otherwise refused (`fail`: nothing changed), and the last `status` and
///   `event_count` columns seen are its probe.
pub fn resolve_result(m: &StepMachine<'_>, next: Next) -> (CompletionType, OpResult) {
    let last = m.program().steps.len() - 1;
    match next {
        Next::Stopped { at } => {
            if let Some((s, v)) = m.column("event_count", at).filter(|(s, _)| *s == at) {
                return (
                    CompletionType::Ok,
                    OpResult {
                        resolved: Some(true),
                        event_count: v.as_i64(),
                        effect_step: Some(s as u32),
                        ..Default::default()
                    },
                );
            }
            refused(m, at)
        }
        Next::Finished => refused(m, last),
        Next::TooManyRows { at, rows } => (
            if m.changed_any() {
                CompletionType::Info
            } else {
                CompletionType::Fail
            },
            OpResult {
                error: Some(format!(
                    "step {} returned {rows} rows (at most one allowed)",
                    m.program().steps[at].name
                )),
                ..Default::default()
            },
        ),
        Next::Continue => unreachable!("resolve_result on a running machine"),
        // Groups refuses branch directives, and a straight-line program
        // never reaches the step bound.
        Next::FailedIf { .. } | Next::StepLimit { .. } => {
            unreachable!("groups ops have no branches")
        }
    }
}

fn refused(m: &StepMachine<'_>, upto: usize) -> (CompletionType, OpResult) {
    let status = m.column("status", upto);
    let count = m.column("event_count", upto);
    // A probe is one observation: status and count must come from the same
    // statement, whose interval is the probe's instant.
    let same_step = match (status, count) {
        (Some((a, _)), Some((b, _))) => (a == b).then_some(a),
        _ => None,
    };
    // A refused update that nonetheless changed rows is no clean refusal.
    let changed = m.changed_any();
    let error = if changed {
        Some("refused resolve changed rows".to_string())
    } else if status.is_some() && count.is_some() && same_step.is_none() {
        Some("status and event_count read by different steps: not a probe".to_string())
    } else {
        None
    };
    (
        if changed {
            CompletionType::Info
        } else {
            CompletionType::Fail
        },
        OpResult {
            accepted: None,
            resolved: Some(false),
            status: status.and_then(|(_, v)| v.as_str().map(str::to_owned)),
            event_count: count.and_then(|(_, v)| v.as_i64()),
            effect_step: same_step.map(|s| s as u32),
            error,
            aborted: None,
            crashed_after: None,
            sent: None,
            ambiguous: None,
            hook_steps: Vec::new(),
        },
    )
}
pub mod audit;
pub mod audit_parts;
pub mod audit_route;
pub mod audit_spill;
pub mod checker;
pub mod explore;
pub mod explore_constants;
pub mod explore_invariants;
pub mod explore_main;
pub mod export;
pub mod http_client;
pub mod http_runtime;
pub mod judge_parts;
pub mod merge;
pub mod prepare;
pub mod probe;
pub mod replay;
pub mod runtime;
pub mod server;
pub mod server_ops;
pub mod service_db;
pub mod tables_read;
pub mod validate;
