//! [`OpFact`]: what one finished op of a groups history tells the facts,
//! taken from its invoke, its steps and its completion before anything
//! is recorded ([`summarize`]), and recorded by [`super::Facts`] apart
//! from that. The facts of a whole history take each op's summary at
//! once; an audit in parts ([`crate::workload::groups::audit_parts`])
//! summarizes every op in one pass and writes the summaries to the temp
//! file of its (project, fingerprint) key ([`encode`], [`decode`]), so the
//! op's records are read once and never copied. Both apply the same
//! summaries in the same order, so they hold the same facts.
//!
//! A summary depends only on its op's records and the header (which
//! steps count and insert, whether steps are logged): never on another
//! op or on a fault record. What needs those is decided when the summary
//! is recorded, or in [`super::Facts::finish`].
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::legacy;
use super::op_types::{Effect, EventStep, Probe, ReadStep, ResolveFact, Span, UnknownResolve};
use super::step_fact::StepFact;
use crate::control::AbortCause;
use crate::history::codec::CompletionView;
use crate::history::{CompletionType, OpKind, StepErrorKind};

/// What the summaries depend on, from the header.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// Steps are logged exactly (in-process target).
    pub step_log: bool,
    /// Index of the ingest op's counting step.
    pub counting_step: u32,
    /// Index of the ingest step that inserts the event row.
    pub event_step: EventStep,
    /// The ingest steps' names (None: no header yet).
    pub ingest_steps: Option<Vec<String>>,
}

impl Rules {
    /// A remote attempt the reference server's fault hook crashed after a
    /// step before the counting step (step names from the header).
    fn crashed_before_count(&self, c: &CompletionView<'_>) -> bool {
        let (Some(step), Some(steps)) = (c.crashed_after, &self.ingest_steps) else {
            return false;
        };
        steps
            .iter()
            .position(|s| s == step)
            .is_some_and(|i| i < self.counting_step as usize)
    }
}

/// What an op's facts need of its invoke: its (project, fingerprint,
/// group id) as the index of the triple the holder named it by, its event
/// id as its bits where the bench made it.
#[derive(Debug, Clone, PartialEq)]
pub struct InvokeFact {
    /// Invoke time, ns since run start.
    pub t: u64,
    /// The op's id.
    pub op: u64,
    /// Its kind.
    pub f: OpKind,
    /// Index of its (project, fingerprint, group id) triple.
    pub named: u32,
    /// Its event id.
    pub event: HeldId,
}

/// An invoke's event id (see [`crate::workload::groups::id_bits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldId {
    /// No event id.
    None,
    /// Its bits, and whether its text has a UUID's dashes.
    Bits(u128, bool),
    /// Its text, where it is not one the bench makes.
    Text(Box<str>),
}

impl HeldId {
    /// The id as held.
    pub fn of(id: Option<&str>) -> HeldId {
        match id {
            None => HeldId::None,
            Some(id) => match crate::workload::groups::id_bits::bits(id) {
                Some((dashed, v)) => HeldId::Bits(v, dashed),
                None => HeldId::Text(id.into()),
            },
        }
    }

    /// The id's text (empty for none).
    pub fn text(&self) -> String {
        match self {
            HeldId::None => String::new(),
            HeldId::Bits(v, dashed) => crate::workload::groups::id_bits::text(*v, *dashed),
            HeldId::Text(t) => t.to_string(),
        }
    }
}

/// One finished op's summary.
#[derive(Debug, Clone, PartialEq)]
pub enum OpFact {
    /// An ingest with an event id.
    Ingest(Box<IngestOp>),
    /// A resolve.
    Resolve(Box<ResolveOp>),
    /// Anything else (an ingest without an event id, another kind): no
    /// fact.
    Nothing,
}

impl OpFact {
    /// The index of its named triple, if it has one.
    pub fn named_mut(&mut self) -> Option<&mut u32> {
        match self {
            OpFact::Ingest(i) => Some(&mut i.named),
            OpFact::Resolve(r) => Some(&mut r.named),
            OpFact::Nothing => None,
        }
    }
}

/// An ingest attempt's summary (see [`super::Facts`]'s rules).
#[derive(Debug, Clone, PartialEq)]
pub struct IngestOp {
    /// The op's id.
    pub op: u64,
    /// Its invoke time.
    pub t: u64,
    /// Index of its named triple.
    pub named: u32,
    /// Its event id (never [`HeldId::None`]).
    pub event: HeldId,
    /// It certainly completed the counting step.
    pub done: bool,
    /// It may have completed it.
    pub maybe: bool,
    /// It was answered `ok` with accepted = true.
    pub acked: bool,
    /// From when it can have counted the event.
    pub count_from: Option<u64>,
    /// By when it had certainly counted it.
    pub counted_by: Option<u64>,
    /// Remote and indeterminate: settled once every fault entry is known
    /// (inside: its completion's time, if any).
    pub pending: Option<Option<u64>>,
    /// Its attempt's start ([`super::facts::Attempt::start`]).
    pub start: u64,
    /// A duplicate answer's deciding point.
    pub decided: Option<u64>,
    /// A duplicate answer's stop step.
    pub stop: Option<u32>,
    /// What it may have done to the row.
    pub effect: Effect,
    /// In-process: its own event-insert step applied.
    pub own_insert: bool,
    /// It ended `info` or never completed.
    pub indeterminate: bool,
    /// In-process: its event-insert step applied.
    pub inserted: bool,
    /// Why it stopped before counting an event it inserted.
    pub cause: Option<String>,
    /// Remote: the fault hook says it inserted the row and did not count
    /// it, and why.
    pub hook_insert: Option<String>,
    /// Its counting step, where it applied: start and end.
    pub counting: Option<(u64, Option<u64>)>,
    /// The last read before the counting step.
    pub read: Option<ReadStep>,
    /// When its accepted answer arrived.
    pub acked_at: Option<u64>,
}

/// A resolve's summary.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveOp {
    /// The op's id.
    pub op: u64,
    /// Index of its named triple.
    pub named: u32,
    /// The most rows one of its steps changed, where more than one.
    pub wide: Option<u64>,
    /// What it tells of its group.
    pub outcome: ResolveOutcome,
}

/// What a resolve tells of its group.
#[derive(Debug, Clone, PartialEq)]
pub enum ResolveOutcome {
    /// It resolved the group, with this count.
    Resolved(ResolveFact),
    /// Its effect is unknown.
    Unknown(UnknownResolve),
    /// Refused; its probe read the group resolved.
    Probe(Probe),
    /// Refused; its probe read the group with another status.
    Observation(Probe),
    /// Nothing.
    Nothing,
}

/// An op's completion as its summary reads it.
pub type Done<'a, 'b> = Option<(CompletionType, &'b CompletionView<'a>)>;

/// The summary of an op: its invoke, steps and completion (None: it
/// never completed).
pub fn summarize(
    rules: &Rules,
    invoke: InvokeFact,
    steps: &[StepFact],
    completion: Done<'_, '_>,
) -> OpFact {
    match summarize_unboxed(rules, invoke, steps, completion) {
        Ok(i) => OpFact::Ingest(Box::new(i)),
        Err(f) => f,
    }
}

/// [`summarize`], an ingest's summary given as it is (Ok), not boxed:
/// an audit summarizes one per event and writes it out at once.
pub fn summarize_unboxed(
    rules: &Rules,
    invoke: InvokeFact,
    steps: &[StepFact],
    completion: Done<'_, '_>,
) -> Result<IngestOp, OpFact> {
    match invoke.f {
        OpKind::Ingest if invoke.event != HeldId::None => {
            Ok(ingest(rules, invoke, steps, completion))
        }
        OpKind::Resolve => Err(OpFact::Resolve(Box::new(resolve(
            rules, invoke, steps, completion,
        )))),
        // Other workloads' ops are read by their own facts, never here.
        _ => Err(OpFact::Nothing),
    }
}

fn ingest(
    rules: &Rules,
    invoke: InvokeFact,
    steps: &[StepFact],
    completion: Done<'_, '_>,
) -> IngestOp {
    let counting = rules.counting_step;
    let mut hook_insert = None;
    let mut count_from = None;
    let mut counted_by = None;
    let mut pending = None;
    let mut effect = Effect::May;
    let (done, maybe, counting_span) = if rules.step_log {
        let s = steps.iter().find(|s| s.idx == counting);
        let done = s.is_some_and(StepFact::applied);
        // With an exact step log only a counting step that started and
        // did not surely end (or failed in a way that may have applied)
        // is a maybe; an op that crashed before it is no maybe.
        let maybe = s.is_some_and(StepFact::maybe_applied);
        if let Some(s) = s.filter(|_| done || maybe) {
            count_from = Some(s.start);
            counted_by = s.end.filter(|_| done);
        }
        (
            done,
            maybe,
            s.filter(|s| s.applied()).map(|s| (s.start, s.end)),
        )
    } else {
        match &completion {
            Some((CompletionType::Ok, c)) => match c.accepted {
                Some(a) => {
                    if a {
                        count_from = Some(invoke.t);
                        counted_by = Some(c.t);
                    }
                    (a, false, None)
                }
                None => {
                    count_from = Some(invoke.t);
                    (false, true, None)
                }
            },
            Some((CompletionType::Fail, _)) => {
                effect = Effect::Failed;
                (false, false, None)
            }
            // The reference server's fault hook reported every step the
            // op ran (none ran after): counted iff the counting step
            // changed a row; a row the event-insert step applied and
            // nothing counted is stranded.
            Some((CompletionType::Info, c)) if !c.hook_steps.is_empty() => {
                let counted = c.accepted == Some(true);
                let inserted = rules
                    .event_step
                    .index()
                    .and_then(|i| c.hook_steps.get(i as usize))
                    .is_some_and(|s| s.changes > 0);
                if counted {
                    count_from = Some(invoke.t);
                    counted_by = Some(c.t);
                }
                if !counted && inserted {
                    let step = c.crashed_after.unwrap_or_default();
                    hook_insert = Some(format!("crash after step {step} (fault hook)"));
                }
                (counted, false, None)
            }
            Some((CompletionType::Info, c)) if rules.crashed_before_count(c) => {
                // The reference server's fault hook crashed it before
                // the counting step (and ran nothing after): certainly
                // not counted; if its row is there, it is stranded.
                let step = c.crashed_after.unwrap_or_default();
                hook_insert = Some(format!("crash after step {step} (fault hook)"));
                (false, false, None)
            }
            Some((CompletionType::Info, c)) => {
                // Other indeterminate attempts are judged at the end,
                // once every fault entry is known.
                pending = Some(Some(c.t));
                effect = Effect::Pending;
                (false, false, None)
            }
            None => {
                pending = Some(None);
                effect = Effect::Pending;
                (false, false, None)
            }
        }
    };
    let acked = matches!(completion, Some((CompletionType::Ok, c)) if c.accepted == Some(true));
    // In-process, what the op did to the event row, from its steps.
    let mut start = invoke.t;
    let mut own_insert = false;
    if rules.step_log {
        // Any step that may have changed a row may have caused another
        // attempt's duplicate answer, not only the event insert: a
        // design may decide "duplicate" on a table of its own (a seen-ids
        // table before or after the event insert), and its insert may
        // write through a trigger whose rows changes() does not count.
        (effect, start) = match steps
            .iter()
            .filter(|s| s.applied() || s.maybe_applied())
            .map(|s| s.start)
            .min()
        {
            Some(t) => (Effect::May, t),
            None => (Effect::NothingChanged, invoke.t),
        };
        own_insert = matches!(rules.event_step, EventStep::Known(i)
            if steps.iter().any(|s| s.idx == i && s.applied()));
    }
    // A duplicate answer and its deciding point: in-process the end of
    // the step whose stop condition ended the op (its last), remote the
    // answer's arrival. An `ok` that does not say is no duplicate.
    let (decided, stop) = match completion {
        Some((CompletionType::Ok, c)) if c.accepted == Some(false) && c.ambiguous.is_none() => {
            let last = steps
                .iter()
                .filter(|_| rules.step_log)
                .max_by_key(|s| s.idx);
            (
                Some(last.and_then(|s| s.end).unwrap_or(c.t)),
                last.map(|s| s.idx),
            )
        }
        _ => (None, None),
    };
    // The attempt that inserted the event row, when it did not count it:
    // a candidate for a stranded event.
    let inserted = rules.step_log
        && rules
            .event_step
            .index()
            .is_some_and(|i| steps.iter().any(|s| s.idx == i && s.applied()));
    let cause = (inserted && !done && !maybe).then(|| stop_cause(steps, completion, counting));
    // The last read before the counting step (where a stale value
    // comes from, in a read-then-write design).
    let read = counting_span.and_then(|_| {
        steps
            .iter()
            .filter(|s| {
                s.idx < counting
                    && s.error.is_none()
                    && s.changes == 0
                    && s.rows > 0
                    && s.end.is_some()
            })
            .max_by_key(|s| s.idx)
            .map(|s| ReadStep {
                idx: s.idx,
                start: s.start,
                end: s.end.unwrap_or(s.start),
            })
    });
    let acked_at = match completion {
        Some((CompletionType::Ok, c)) if acked => Some(c.t),
        _ => None,
    };
    IngestOp {
        op: invoke.op,
        t: invoke.t,
        named: invoke.named,
        event: invoke.event,
        done,
        maybe,
        acked,
        count_from,
        counted_by,
        pending,
        start,
        decided,
        stop,
        effect,
        own_insert,
        indeterminate: !matches!(
            completion,
            Some((CompletionType::Ok | CompletionType::Fail, _))
        ),
        inserted,
        cause,
        hook_insert,
        counting: counting_span,
        read,
        acked_at,
    }
}

fn resolve(
    rules: &Rules,
    invoke: InvokeFact,
    steps: &[StepFact],
    completion: Done<'_, '_>,
) -> ResolveOp {
    let op_span = Span {
        start: invoke.t,
        end: completion.map(|(_, c)| c.t),
    };
    let wide = steps.iter().map(|s| s.changes).max().filter(|&n| n > 1);
    // In-process, nothing of an op runs after its completion, so an
    // indeterminate resolve's window closes there; a remote target may
    // still run it later (open-ended).
    let completed = completion.map(|(_, c)| c.t);
    let crashed = completion.is_some_and(|(_, c)| c.crashed_after.is_some());
    // Where steps are logged, the statements that may have changed the
    // group bound the window; none of them: the op changed nothing.
    let logged = rules.step_log.then(|| {
        let mut touched = steps.iter().filter(|s| s.applied() || s.maybe_applied());
        touched.next().map(|first| Span {
            start: first.start,
            end: steps
                .iter()
                .filter(|s| s.applied() || s.maybe_applied())
                .map(|s| s.end)
                .try_fold(0u64, |m, e| e.map(|e| m.max(e)))
                .or(op_span.end),
        })
    });
    // An indeterminate resolve whose logged steps changed nothing
    // certainly had no effect.
    let no_effect = logged == Some(None) && completion.is_some();
    let unknown_span = match logged {
        Some(Some(span)) => span,
        // A crash the reference server's fault hook reports: nothing of
        // the op ran after its answer.
        _ if crashed => op_span,
        _ if rules.step_log => op_span,
        _ => Span {
            start: invoke.t,
            end: None,
        },
    };
    // The instant of the statement that produced the answer: its step's
    // interval where steps are logged, else the whole op's.
    let effect_span = |c: &CompletionView<'_>| {
        c.effect_step
            .and_then(|i| steps.iter().find(|s| s.idx == i))
            .map(|s| Span {
                start: s.start,
                end: s.end,
            })
            .unwrap_or(op_span)
    };
    let unknown = || {
        ResolveOutcome::Unknown(UnknownResolve {
            op: invoke.op,
            completed,
            span: unknown_span,
        })
    };
    let outcome = match completion {
        Some((CompletionType::Ok, c)) if c.resolved == Some(true) => match c.event_count {
            Some(count) => ResolveOutcome::Resolved(ResolveFact {
                op: invoke.op,
                span: effect_span(c),
                count,
            }),
            None => unknown(),
        },
        Some((CompletionType::Fail, c)) => match (c.resolved, c.error, c.status, c.event_count) {
            (Some(false), None, Some(status), Some(count)) => {
                let p = Probe {
                    op: Some(invoke.op),
                    span: effect_span(c),
                    count,
                };
                if status == "resolved" {
                    ResolveOutcome::Probe(p)
                } else {
                    ResolveOutcome::Observation(p)
                }
            }
            _ => ResolveOutcome::Nothing,
        },
        Some((CompletionType::Ok, _)) => ResolveOutcome::Nothing,
        // A worker that crashed right after the resolving statement:
        // the step log (in-process) or the fault hook's report (over
        // HTTP) holds what that statement returned.
        Some((CompletionType::Info, c))
            if (rules.step_log || !c.hook_steps.is_empty())
                && c.crashed_after.is_some()
                && c.resolved == Some(true)
                && c.event_count.is_some()
                && c.effect_step.is_some() =>
        {
            ResolveOutcome::Resolved(ResolveFact {
                op: invoke.op,
                span: effect_span(c),
                count: c.event_count.unwrap_or_default(),
            })
        }
        Some((CompletionType::Info, _)) | None if no_effect => ResolveOutcome::Nothing,
        // The fault hook's report: no step it ran changed a row.
        Some((CompletionType::Info, c))
            if !c.hook_steps.is_empty() && c.hook_steps.iter().all(|s| s.changes == 0) =>
        {
            ResolveOutcome::Nothing
        }
        Some((CompletionType::Info, _)) | None => unknown(),
    };
    ResolveOp {
        op: invoke.op,
        named: invoke.named,
        wide,
        outcome,
    }
}

/// Why an attempt that inserted its event row stopped before counting it.
fn stop_cause(steps: &[StepFact], completion: Done<'_, '_>, counting: u32) -> String {
    if let Some((s, e)) = steps.iter().find_map(|s| s.error.as_ref().map(|e| (s, e))) {
        let kind = s
            .error_kind
            .unwrap_or_else(|| legacy::step_error_kind(&e.text));
        let kind = match kind {
            StepErrorKind::Busy => "busy",
            StepErrorKind::Other => "error",
        };
        return format!("{kind} at step {}", e.step);
    }
    if steps
        .iter()
        .any(|s| s.idx == counting && s.end.is_some() && s.changes == 0)
    {
        return "counting step changed no row (group missing)".into();
    }
    if let Some((_, c)) = completion {
        if let Some(step) = c.crashed_after {
            return format!("crash after step {step}");
        }
    }
    match completion {
        None => "never completed (run aborted)".into(),
        Some((_, c)) => {
            let aborted = c.aborted.or_else(|| c.error.and_then(legacy::abort_cause));
            match (aborted, c.error) {
                (Some(AbortCause::ByUser), _) => "aborted between steps".into(),
                (_, Some(e)) => format!("stopped: {e}"),
                (_, None) => "stopped before the counting step".into(),
            }
        }
    }
}
