//! What a groups run recorded of its ops, as `replay` re-executes them:
//! each op's invoke (its parameters), each step with its interval, what it
//! changed and returned, and its role in the spec. The roles and the
//! refusals of what cannot be re-executed (a failed statement, a crash, an
//! abandoned op, a cut history) are `validate`'s ([`trace::of_history`]);
//! this module only keeps, beside that trace, what re-execution needs.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use crate::history::{Entry, Header, Invoke, OpKind, OpResult};
use crate::workload::groups::validate::design::Design;
use crate::workload::groups::validate::trace::{self, OutsideSpec, TraceStep};
use crate::workload::value::Value;
use std::collections::{BTreeMap, HashMap};

/// One recorded step.
#[derive(Debug, Clone)]
pub struct RecStep {
    /// Its index in the op's program.
    pub idx: u32,
    /// What the trace made of it: role, interval, what it observed.
    pub trace: TraceStep,
    /// Rows it changed.
    pub changes: u64,
    /// Rows it returned.
    pub rows: u64,
    /// The first row it returned (None: none, or not recorded).
    pub returned: Option<Vec<Value>>,
}

/// One recorded op.
#[derive(Debug, Clone)]
pub struct RecOp {
    /// Its invoke: kind, worker, event, group.
    pub invoke: Invoke,
    /// Its steps, in the order they ran.
    pub steps: Vec<RecStep>,
    /// What it answered.
    pub result: OpResult,
}

impl RecOp {
    /// The (project, fingerprint) of its group: the key the checkers
    /// compare groups by.
    pub fn key(&self) -> (&str, &str) {
        (&self.invoke.project, &self.invoke.fingerprint)
    }

    /// Whether it is an ingest.
    pub fn is_ingest(&self) -> bool {
        self.invoke.f == OpKind::Ingest
    }
}

/// A run's recorded ops, in invoke order.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The history's header.
    pub header: Header,
    /// The ops.
    pub ops: Vec<RecOp>,
    /// The run's UTC start, ms since the epoch (`:now_ms` of an op is this
    /// plus its invoke time: the wall clock the run read is not recorded).
    pub started_ms: i64,
}

impl Recording {
    /// `:now_ms` for op `i`.
    pub fn now_ms(&self, i: usize) -> i64 {
        self.started_ms + (self.ops[i].invoke.t / 1_000_000) as i64
    }
}

/// Why a history cannot be replayed, before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum NotReplayable {
    /// It records no steps (an HTTP run, or a history without step
    /// records): exit 2.
    #[error("{0}")]
    NoSteps(String),
    /// A step or op the re-execution cannot take (validate's reasons):
    /// exit 4.
    #[error("{0}")]
    Outside(OutsideSpec),
}

/// The recording of `entries` (a whole history, in file order) for the
/// design `d`. Errors: an entry out of place (the outer error); a history
/// that cannot be replayed (the inner one).
pub fn of_entries(
    entries: Vec<Entry>,
    d: &Design,
) -> anyhow::Result<Result<Recording, NotReplayable>> {
    let Some(header) = entries.iter().find_map(|e| match e {
        Entry::Header(h) => Some(h.clone()),
        _ => None,
    }) else {
        anyhow::bail!("no header: not a history a run wrote");
    };
    let has_steps = entries.iter().any(|e| matches!(e, Entry::Step(_)));
    if !header.step_log || !has_steps {
        return Ok(Err(NotReplayable::NoSteps(
            "the history records no steps (an HTTP run, or a run whose history holds no step \
             records): replay re-executes each recorded statement in an order its interval \
             allows, which only the in-process SQLite target records"
                .into(),
        )));
    }
    let t = match trace::of_history(entries.iter().cloned().map(Ok), d)? {
        Ok(t) => t,
        Err(o) => return Ok(Err(NotReplayable::Outside(o))),
    };
    let mut by_step: HashMap<(u64, &str), &TraceStep> = HashMap::new();
    for s in &t.steps {
        by_step.insert((s.op, s.name.as_str()), s);
    }
    let mut ops: BTreeMap<u64, RecOp> = BTreeMap::new();
    for e in &entries {
        match e {
            Entry::Invoke(i) => {
                ops.insert(
                    i.op,
                    RecOp {
                        invoke: i.clone(),
                        steps: Vec::new(),
                        result: OpResult::default(),
                    },
                );
            }
            Entry::Step(s) => {
                let (Some(o), Some(ts)) = (ops.get_mut(&s.op), by_step.get(&(s.op, &s.step)))
                else {
                    anyhow::bail!("step `{}` of op {} has no place in the trace", s.step, s.op);
                };
                o.steps.push(RecStep {
                    idx: s.idx,
                    trace: (*ts).clone(),
                    changes: s.changes,
                    rows: s.rows,
                    returned: s.returned.clone(),
                });
            }
            Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) => {
                if let Some(o) = ops.get_mut(&c.op) {
                    o.result = c.result.clone();
                }
            }
            _ => {}
        }
    }
    let mut ops: Vec<RecOp> = ops.into_values().collect();
    ops.sort_by_key(|o| (o.invoke.t, o.invoke.op));
    let started_ms = humantime::parse_rfc3339(&header.started_utc)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    Ok(Ok(Recording {
        header,
        ops,
        started_ms,
    }))
}
