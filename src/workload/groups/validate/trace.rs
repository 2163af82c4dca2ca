//! A groups run's history as the steps of a trace of BacktalkGroups.tla:
//! each recorded step with its role (the spec action it takes), its worker,
//! the attempt it belongs to, what it touches (an event id or a group),
//! what it observed, and its interval. A history the spec cannot describe
//! (a failed statement, a crash, an abandoned op, a counting step that
//! changed nothing, a cut history) is inconclusive, naming the first such
//! step.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::design::{Design, SpecVariant};
use crate::history::{CompletionType, Entry, Invoke, OpKind, OpResult, Step};
use crate::workload::value::Value;
use std::collections::{BTreeMap, HashMap};

/// A spec action a recorded step takes (docs/validate.md, "Roles").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// s1, the event insert: `S1(w)`.
    S1,
    /// s2, the group insert: `S2(w)`.
    S2,
    /// s3, the counting update: `S3Atomic(w)`.
    S3,
    /// s3's read (naive): `S3ReadNaive(w)`.
    S3Read,
    /// s3's write (naive): `S3WriteNaive(w)`.
    S3Write,
    /// A successful resolve: `Resolve`, of this group.
    Resolve,
    /// A refused resolve's update: no action (a read of the group).
    Refused,
    /// A refused resolve's probe: no action (a read of the group).
    Probe,
}

impl Role {
    /// The name the trace module uses.
    pub fn name(self) -> &'static str {
        match self {
            Role::S1 => "s1",
            Role::S2 => "s2",
            Role::S3 => "s3",
            Role::S3Read => "s3r",
            Role::S3Write => "s3w",
            Role::Resolve => "res",
            Role::Refused => "ref",
            Role::Probe => "probe",
        }
    }
}

/// What a step observed.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// Rows changed (s1, s2, s3, s3 write).
    Changes(u64),
    /// The status read (s3 read); None: no row.
    Status(Option<String>),
    /// The count a successful resolve returned.
    Count(i64),
    /// The update found nothing to resolve.
    Refusal,
    /// A probe's status and count; None: no such group.
    Probe(Option<(String, i64)>),
    /// A read that returned a row the history does not hold (written
    /// before steps recorded what they returned): `validate` cannot judge
    /// it (inconclusive, [`Trace::unrecorded`]); `replay` re-executes it.
    Unrecorded,
}

/// One step of the trace.
#[derive(Debug, Clone)]
pub struct TraceStep {
    /// Its role.
    pub role: Role,
    /// The worker number of its op.
    pub worker: u32,
    /// Ingest: 1-based position of its op in its worker's queue.
    pub attempt: u32,
    /// The event id (s1) or group id (the others) it touches.
    pub touches: String,
    /// What it observed.
    pub observed: Observed,
    /// Start, ns since run start.
    pub start: u64,
    /// End, ns since run start.
    pub end: u64,
    /// The op and the step's name, for messages.
    pub op: u64,
    /// Its name in the statement file.
    pub name: String,
}

/// A history as a trace.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The steps, in start order (then end, op, step).
    pub steps: Vec<TraceStep>,
    /// Per ingester worker, its attempts' event ids in order.
    pub queues: BTreeMap<u32, Vec<String>>,
    /// Event id to group id, for every event ingested.
    pub group_of: BTreeMap<String, String>,
    /// Group ids of the resolves (some may have no event).
    pub resolved_groups: Vec<String>,
    /// Successful resolves.
    pub resolves: u32,
    /// The header's namespace (the final tables' projects begin with it).
    pub namespace: String,
}

impl Trace {
    /// The first read whose returned row the history does not hold, as
    /// the reason a check that compares it with the spec's state cannot
    /// judge the trace.
    pub fn unrecorded(&self) -> Option<OutsideSpec> {
        self.steps
            .iter()
            .find(|s| s.observed == Observed::Unrecorded)
            .map(|s| {
                OutsideSpec(format!(
                    "step `ingest.{}` of op {} returned a row the history does not hold \
                     (written before steps recorded what they returned)",
                    s.name, s.op
                ))
            })
    }
}

/// Why a history cannot be a trace of the spec: inconclusive (exit 4),
/// naming the first such step or op.
#[derive(Debug, Clone, thiserror::Error)]
#[error("inconclusive: {0}")]
pub struct OutsideSpec(pub String);

struct Op {
    invoke: Invoke,
    steps: Vec<Step>,
    end: Option<(CompletionType, OpResult)>,
}

/// The trace of `entries` for `design`. Errors: a history the spec does
/// not describe ([`OutsideSpec`]); an entry that cannot be read (the
/// iterator's error, as `Err(Err)`).
pub fn of_history(
    entries: impl Iterator<Item = anyhow::Result<Entry>>,
    design: &Design,
) -> anyhow::Result<Result<Trace, OutsideSpec>> {
    let mut ops: BTreeMap<u64, Op> = BTreeMap::new();
    let mut header = None;
    let mut footer = false;
    for e in entries {
        match e? {
            Entry::Header(h) => header = Some(h),
            Entry::Invoke(i) => {
                ops.insert(
                    i.op,
                    Op {
                        invoke: i,
                        steps: Vec::new(),
                        end: None,
                    },
                );
            }
            Entry::Step(s) => {
                if let Some(o) = ops.get_mut(&s.op) {
                    o.steps.push(s);
                }
            }
            Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) if !ops.contains_key(&c.op) => {
                anyhow::bail!("a completion of op {} that was never invoked", c.op)
            }
            e @ (Entry::Ok(_) | Entry::Fail(_) | Entry::Info(_)) => {
                let (kind, c) = match e {
                    Entry::Ok(c) => (CompletionType::Ok, c),
                    Entry::Fail(c) => (CompletionType::Fail, c),
                    Entry::Info(c) => (CompletionType::Info, c),
                    _ => unreachable!(),
                };
                if let Some(o) = ops.get_mut(&c.op) {
                    o.end = Some((kind, c.result));
                }
            }
            Entry::Footer(_) => footer = true,
            Entry::Fault(_) | Entry::Bench(_) => {}
        }
    }
    let Some(header) = header else {
        anyhow::bail!("no header: not a history a run wrote");
    };
    if !header.step_log {
        return Ok(Err(OutsideSpec(
            "the history has no step log (an HTTP target): validate reads each statement's \
             interval, which only the in-process SQLite target records"
                .into(),
        )));
    }
    if !footer {
        return Ok(Err(OutsideSpec(
            "the history has no footer (a killed run): any op may be missing from it".into(),
        )));
    }
    let mut t = Trace {
        namespace: header.namespace.clone(),
        ..Trace::default()
    };
    // Ops of one worker run one after the other: invoke order is queue order.
    let mut order: Vec<&Op> = ops.values().collect();
    order.sort_by_key(|o| (o.invoke.t, o.invoke.op));
    for o in order {
        if let Err(why) = add_op(&mut t, o, design) {
            return Ok(Err(why));
        }
    }
    t.steps.sort_by_key(|s| (s.start, s.end, s.op));
    Ok(Ok(t))
}

fn add_op(t: &mut Trace, o: &Op, design: &Design) -> Result<(), OutsideSpec> {
    let i = &o.invoke;
    let what = |s: &Step| format!("step `{}.{}` of op {}", i.f.name(), s.step, i.op);
    for s in &o.steps {
        if let Some(err) = &s.error {
            return Err(OutsideSpec(format!(
                "{} failed ({err}): the spec has no action for a failed statement",
                what(s)
            )));
        }
        if s.end.is_none() {
            return Err(OutsideSpec(format!(
                "{} never ended: the spec has no action for a statement that may or may not \
                 have taken effect",
                what(s)
            )));
        }
    }
    let Some((kind, result)) = &o.end else {
        return Err(OutsideSpec(format!(
            "op {} ({}) has no completion",
            i.op,
            i.f.name()
        )));
    };
    if let Some(after) = &result.crashed_after {
        return Err(OutsideSpec(format!(
            "op {} ({}) crashed after step `{after}`: the spec has no action for a crash",
            i.op,
            i.f.name()
        )));
    }
    // A refused resolve certainly changed nothing: `fail`, and a read.
    let refused = i.f == OpKind::Resolve && result.resolved == Some(false);
    if *kind != CompletionType::Ok && !(refused && *kind == CompletionType::Fail) {
        return Err(OutsideSpec(format!(
            "op {} ({}) ended {}{}: the spec has no action for an op that failed or was \
             abandoned",
            i.op,
            i.f.name(),
            kind.name(),
            result
                .error
                .as_ref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        )));
    }
    match i.f {
        OpKind::Ingest => add_ingest(t, o, design),
        OpKind::Resolve => add_resolve(t, o),
        other => Err(OutsideSpec(format!(
            "op {} is a `{}`: not an op of the groups spec",
            i.op,
            other.name()
        ))),
    }
}

fn step_of(o: &Op, s: &Step, role: Role, touches: &str, observed: Observed) -> TraceStep {
    TraceStep {
        role,
        worker: o.invoke.worker,
        attempt: 0,
        touches: touches.to_string(),
        observed,
        start: s.start,
        end: s.end.unwrap_or(s.start),
        op: o.invoke.op,
        name: s.step.clone(),
    }
}

fn add_ingest(t: &mut Trace, o: &Op, design: &Design) -> Result<(), OutsideSpec> {
    let i = &o.invoke;
    let (Some(event), group) = (i.event_id.as_ref(), &i.group_id) else {
        return Err(OutsideSpec(format!("ingest op {} names no event id", i.op)));
    };
    let queue = t.queues.entry(i.worker).or_default();
    queue.push(event.clone());
    let attempt = queue.len() as u32;
    t.group_of.insert(event.clone(), group.clone());
    let roles: &[Role] = match design.variant {
        SpecVariant::Atomic => &[Role::S1, Role::S2, Role::S3],
        SpecVariant::Naive => &[Role::S1, Role::S2, Role::S3Read, Role::S3Write],
    };
    let duplicate = o
        .steps
        .first()
        .is_some_and(|s| s.idx == 0 && s.changes == 0);
    let want = if duplicate { 1 } else { roles.len() };
    let ran: Vec<u32> = o.steps.iter().map(|s| s.idx).collect();
    if ran != (0..want as u32).collect::<Vec<_>>() {
        return Err(OutsideSpec(format!(
            "ingest op {} ran steps {ran:?}, not the spec's attempt (steps 0..{want})",
            i.op
        )));
    }
    for (s, role) in o.steps.iter().zip(roles) {
        rows_changed_fit(i.f, i.op, s, *role)?;
        let touches = if *role == Role::S1 { event } else { group };
        let observed = match role {
            Role::S3Read => match (&s.returned, s.rows) {
                (_, 0) => Observed::Status(None),
                // The first value is the status: validate refuses a design
                // whose read's first column is not the status
                // (`design::read_observes_status`) before this is built;
                // replay, which re-executes the statements, does not read it.
                (Some(r), _) => {
                    Observed::Status(r.first().and_then(Value::as_str).map(str::to_string))
                }
                (None, _) => Observed::Unrecorded,
            },
            _ => Observed::Changes(s.changes),
        };
        let mut ts = step_of(o, s, *role, touches, observed);
        ts.attempt = attempt;
        t.steps.push(ts);
    }
    Ok(())
}

/// The rows a step of `role` may have changed: each of the spec's actions
/// writes at most one row of one table (S1 an event, S2, S3 and Resolve
/// the group's row), and the reads write none. A statement that changed
/// more took several of the spec's steps at one instant, or one it has
/// none for; a counting step or a successful resolve that changed nothing
/// took none of its action (S3Atomic, S3WriteNaive and Resolve always
/// write the row); a refused resolve that changed a row was no refusal.
/// Each is outside the spec: inconclusive, naming the step.
fn rows_changed_fit(f: OpKind, op: u64, s: &Step, role: Role) -> Result<(), OutsideSpec> {
    let allowed: &[u64] = match role {
        Role::S1 | Role::S2 => &[0, 1],
        Role::S3 | Role::S3Write | Role::Resolve => &[1],
        Role::Refused => &[0],
        // Reads: SELECTs, whose changes the bench records as 0.
        Role::S3Read | Role::Probe => return Ok(()),
    };
    if allowed.contains(&s.changes) {
        return Ok(());
    }
    let what = format!("step `{}.{}` of op {op}", f.name(), s.step);
    Err(OutsideSpec(match (role, s.changes) {
        (Role::S3 | Role::S3Write, 0) => format!(
            "the counting {what} changed nothing: the spec has no action for it (its \
             counting actions always write the group's row)"
        ),
        (Role::Resolve, 0) => format!(
            "{what} resolved and changed nothing: the spec's Resolve always writes the \
             group's row"
        ),
        (_, n) => format!(
            "{what} changed {n} rows: each of the spec's actions writes at most one row \
             (its `{}` action {}), so none takes this step",
            role.name(),
            if role == Role::Refused {
                "is a read and writes none"
            } else {
                "writes one"
            }
        ),
    }))
}

fn add_resolve(t: &mut Trace, o: &Op) -> Result<(), OutsideSpec> {
    let i = &o.invoke;
    let r = &o.end.as_ref().expect("checked").1;
    let group = &i.group_id;
    t.resolved_groups.push(group.clone());
    let ran: Vec<u32> = o.steps.iter().map(|s| s.idx).collect();
    match (r.resolved, ran.as_slice()) {
        (Some(true), [0]) => {
            // The completion's count is the `event_count` column by name;
            // the step's first returned value is the fallback.
            let count = r.event_count.or_else(|| {
                o.steps[0]
                    .returned
                    .as_ref()
                    .and_then(|v| v.first().and_then(Value::as_i64))
            });
            let Some(count) = count else {
                return Err(OutsideSpec(format!(
                    "resolve op {} resolved and returned no count",
                    i.op
                )));
            };
            rows_changed_fit(i.f, i.op, &o.steps[0], Role::Resolve)?;
            t.resolves += 1;
            t.steps.push(step_of(
                o,
                &o.steps[0],
                Role::Resolve,
                group,
                Observed::Count(count),
            ));
        }
        (Some(false), [0] | [0, 1]) => {
            rows_changed_fit(i.f, i.op, &o.steps[0], Role::Refused)?;
            t.steps.push(step_of(
                o,
                &o.steps[0],
                Role::Refused,
                group,
                Observed::Refusal,
            ));
            if let Some(p) = o.steps.get(1) {
                let seen = match (&r.status, r.event_count) {
                    (None, _) => None,
                    (Some(s), Some(n)) => Some((s.clone(), n)),
                    (Some(s), None) => Some((s.clone(), -1)),
                };
                t.steps
                    .push(step_of(o, p, Role::Probe, group, Observed::Probe(seen)));
            }
        }
        _ => {
            return Err(OutsideSpec(format!(
                "resolve op {} ran steps {ran:?} and answered {:?}: not the spec's resolve",
                i.op, r.resolved
            )))
        }
    }
    Ok(())
}

/// Short names for the trace module: `e1`, `g1`, ... in order of first
/// use, so that any id (quotes, backslashes, length) is safe in TLA+.
#[derive(Debug, Default)]
pub struct Names {
    map: HashMap<String, String>,
    /// (short, original), in order.
    pub list: Vec<(String, String)>,
}

impl Names {
    /// The short name of `id`, prefixed `prefix`, made on first use.
    pub fn of(&mut self, prefix: &str, id: &str) -> String {
        if let Some(n) = self.map.get(id) {
            return n.clone();
        }
        let n = format!("{prefix}{}", self.list.len() + 1);
        self.map.insert(id.to_string(), n.clone());
        self.list.push((n.clone(), id.to_string()));
        n
    }

    /// The short name of `id`, if it has one.
    pub fn get(&self, id: &str) -> Option<&String> {
        self.map.get(id)
    }
}
