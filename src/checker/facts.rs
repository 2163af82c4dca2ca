//! What the history says, reduced to the facts the checkers need: per event
//! id, Done / Maybe / acknowledged and how its inserting attempt ended; per
//! group id, the successful and indeterminate resolves, the probes that saw
//! it `resolved`, and the counting steps that changed it. Built in one pass
//! over the history; an op is finished when its completion arrives (an op
//! invoked and never completed is indeterminate).

use crate::history::{Completion, CompletionType, Entry, Header, Invoke, OpKind, Step};
use std::collections::HashMap;

/// A closed interval of ns since run start. `end = None`: it never ended
/// (it may take effect at any later time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First instant, ns since run start.
    pub start: u64,
    /// Last instant, ns since run start; None: never ended.
    pub end: Option<u64>,
}

/// Per event id (all attempts together), as `groups.md` defines them.
#[derive(Debug, Clone, Default)]
pub struct EventFacts {
    /// Index into [`Facts::keys`]: the event's (project, fingerprint).
    pub key: u32,
    /// Some attempt is known to have completed the counting step.
    pub done: bool,
    /// Some attempt may have completed it (meaningful only when not done).
    pub maybe: bool,
    /// Some attempt answered `ok` with accepted = true.
    pub acked: bool,
    /// How many attempts certainly completed the counting step (> 1 is a
    /// double count).
    pub counted: u32,
    /// Attempts (invokes) seen for this id, retries included.
    pub attempts: u32,
    /// The attempt whose first step inserted the row, and how it ended
    /// (index into [`Facts::causes`]), if it did not count the event.
    pub insert: Option<(u64, Option<u16>)>,
    /// Ops that counted it, at most a few (for explanations).
    pub counted_ops: Vec<u64>,
}

impl EventFacts {
    /// Maybe in the sense of `groups.md`: not Done, but possibly counted.
    pub fn is_maybe(&self) -> bool {
        !self.done && self.maybe
    }
}

/// A resolve that changed the group to resolved and returned its count.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveFact {
    /// The resolve op's id.
    pub op: u64,
    /// Interval of the step that returned the count (where steps are logged), else of the whole op.
    pub span: Span,
    /// `event_count` it returned: the group's count at the resolve.
    pub count: i64,
}

/// A resolve whose effect is unknown (info, never completed, or an ok
/// without a count).
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownResolve {
    /// The resolve op's id.
    pub op: u64,
    /// When the client saw it end (None: never).
    pub completed: Option<u64>,
    /// When it may have taken effect: from its invoke to its completion
    /// (in-process: nothing runs after the completion), or open-ended.
    pub span: Span,
}

/// An observation of the group as (`resolved`, count).
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The refused resolve that probed, or None for the final row.
    pub op: Option<u64>,
    /// Interval of the probing step (else of the whole op); the final read's transaction for the final row.
    pub span: Span,
    /// `event_count` observed with status `resolved`.
    pub count: i64,
}

/// A counting step that certainly changed the group's row.
#[derive(Debug, Clone, PartialEq)]
pub struct CountingStep {
    /// The ingest op's id.
    pub op: u64,
    /// When the ingest op was invoked (before its earlier steps ran).
    pub op_start: u64,
    /// Step start, ns since run start.
    pub start: u64,
    /// Step end, ns since run start.
    pub end: u64,
}

/// Per group id.
#[derive(Debug, Clone, Default)]
pub struct GroupFacts {
    /// Successful resolves (status set to resolved, count returned).
    pub resolves: Vec<ResolveFact>,
    /// Resolves whose effect is unknown (NoMissedRegression's reason for `unknown`).
    pub unknown_resolves: Vec<UnknownResolve>,
    /// Observations of the group as (`resolved`, count), final row excluded.
    pub probes: Vec<Probe>,
    /// Counting steps that certainly changed the group's row.
    pub counting_steps: Vec<CountingStep>,
    /// Index into [`Facts::keys`]: the group's (project, fingerprint), as
    /// its ops named it (None only for a group no op named).
    pub key: Option<u32>,
    /// Ingest ops of the group answered `ok` with accepted = true, as
    /// (invoke, completion) in ns since run start: what the target
    /// acknowledged, and where no steps are logged, the only interval
    /// known to hold the op's counting step.
    pub acked: Vec<(u64, u64)>,
}

/// Everything the checkers take from the history.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The history's header; None until read (a history without one is refused).
    pub header: Option<Header>,
    /// Steps are logged exactly (in-process target).
    pub step_log: bool,
    /// Index of the ingest op's counting step, from the header.
    pub counting_step: u32,
    /// Distinct (project, fingerprint) keys of the ops, indexed by
    /// [`EventFacts::key`] and [`GroupFacts::key`].
    pub keys: Vec<(String, String)>,
    key_index: HashMap<(String, String), u32>,
    /// Per event id.
    pub events: HashMap<String, EventFacts>,
    /// Per group id.
    pub groups: HashMap<String, GroupFacts>,
    /// Texts of the ways an inserting attempt ended without counting.
    pub causes: Vec<String>,
    cause_index: HashMap<String, u16>,
    inflight: HashMap<u64, (Invoke, Vec<Step>)>,
    /// Ops invoked.
    pub ops: u64,
    /// Ops invoked and never completed (counted as indeterminate).
    pub unfinished: u64,
    /// Kills of the server: (the instant the old process was gone, the
    /// instant just before the new one was spawned; None: never restarted).
    pub kills: Vec<(u64, Option<u64>)>,
    /// Per op the fault proxy hit: whether it forwarded the request, and
    /// when it recorded that (after the server's answer, if forwarded).
    pub proxied: HashMap<u64, (bool, u64)>,
    /// Per op whose answer the fault proxy dropped: what the server had
    /// answered (it did that, though the client never heard it).
    pub dropped_answers: HashMap<u64, DroppedAnswer>,
    /// Indeterminate ingest attempts of a remote target, judged Maybe or
    /// not once every fault entry is known: (event id, op, invoke, completion).
    pending_maybe: Vec<(String, u64, u64, Option<u64>)>,
    /// Faults with a duration (kill, lock), each window from its `start`
    /// entry to its `stop` entry, in history order.
    pub fault_windows: Vec<FaultWindow>,
}

/// One window of a fault with a duration: from its `start` entry to its
/// `stop` entry (None: still active when the history ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultWindow {
    /// Index of the fault in the scenario's `[[faults]]`.
    pub fault: u32,
    /// Its kind.
    pub kind: crate::scenario::FaultKind,
    /// `start`, ns since run start.
    pub start: u64,
    /// `stop`, ns since run start; None: never stopped.
    pub stop: Option<u64>,
}

impl Facts {
    /// Facts of a history given as entries in file order.
    /// Errors: an entry out of place (a step or completion of an unknown op,
    /// two headers): the history is not one a run wrote.
    pub fn from_entries(
        entries: impl IntoIterator<Item = anyhow::Result<Entry>>,
    ) -> anyhow::Result<Facts> {
        let mut f = Facts::default();
        for e in entries {
            f.add(e?)?;
        }
        f.finish();
        Ok(f)
    }

    /// Takes one entry.
    pub fn add(&mut self, e: Entry) -> anyhow::Result<()> {
        match e {
            Entry::Header(h) => {
                anyhow::ensure!(self.header.is_none(), "a second history header");
                self.step_log = h.step_log;
                self.counting_step = h.counting_step;
                self.header = Some(h);
            }
            Entry::Invoke(i) => {
                self.ops += 1;
                self.inflight.insert(i.op, (i, Vec::new()));
            }
            Entry::Step(s) => match self.inflight.get_mut(&s.op) {
                Some((_, steps)) => steps.push(s),
                None => anyhow::bail!("step of op {} which was not invoked", s.op),
            },
            Entry::Ok(c) => self.complete(CompletionType::Ok, c)?,
            Entry::Fail(c) => self.complete(CompletionType::Fail, c)?,
            Entry::Info(c) => self.complete(CompletionType::Info, c)?,
            Entry::Fault(f) => self.fault(f),
            Entry::Footer(_) => {}
        }
        Ok(())
    }

    /// A remote attempt the reference server's fault hook crashed after a
    /// step before the counting step (step names from the header).
    fn crashed_before_count(&self, r: &crate::history::OpResult) -> bool {
        let (Some(step), Some(h)) = (&r.crashed_after, &self.header) else {
            return false;
        };
        h.ingest_steps
            .iter()
            .position(|s| s == step)
            .is_some_and(|i| i < self.counting_step as usize)
    }

    fn fault(&mut self, f: crate::history::FaultEntry) {
        use crate::history::FaultAction;
        use crate::scenario::FaultKind;
        match f.action {
            FaultAction::Start => self.fault_windows.push(FaultWindow {
                fault: f.fault,
                kind: f.kind,
                start: f.t,
                stop: None,
            }),
            FaultAction::Stop => {
                // A stop closes the latest window of the same fault still open.
                if let Some(w) = self
                    .fault_windows
                    .iter_mut()
                    .rev()
                    .find(|w| w.fault == f.fault && w.stop.is_none())
                {
                    w.stop = Some(f.t);
                }
            }
            FaultAction::Inject => {}
        }
        match (f.kind, f.action) {
            (FaultKind::Kill, FaultAction::Start) => self.kills.push((f.t, None)),
            (FaultKind::Kill, FaultAction::Stop) => {
                // A stop closes the latest kill still open.
                if let Some(k) = self.kills.iter_mut().rev().find(|k| k.1.is_none()) {
                    k.1 = Some(f.t);
                }
            }
            (FaultKind::Proxy, FaultAction::Inject) => {
                // Only two toxics say something about the server: a request
                // never forwarded, and an answer dropped after it arrived
                // (recorded after the server answered). A delayed request
                // is recorded before it is forwarded: it narrows nothing.
                let dropped = f
                    .detail
                    .as_deref()
                    .is_some_and(|d| d.starts_with("drop_response"));
                match (f.op, f.forwarded) {
                    (Some(op), Some(false)) => {
                        self.proxied.insert(op, (false, f.t));
                    }
                    (Some(op), Some(true)) if dropped => {
                        self.proxied.insert(op, (true, f.t));
                        if let Some(a) = f.detail.as_deref().and_then(dropped_answer) {
                            self.dropped_answers.insert(op, a);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// When an indeterminate op of a remote target can have taken effect,
    /// from what the nemesis recorded: None if it certainly had no effect,
    /// else the latest instant (None inside: open-ended).
    ///
    /// Sound because every fault entry is written from the bench's own
    /// view: a proxy that did not forward a request kept it from the
    /// server; one that forwarded it recorded after the server's answer
    /// arrived, so the server was done with it by then; a killed process
    /// runs nothing after the kill's `start` (taken once it was gone), and
    /// a request that began after the kill and ended before the restart's
    /// `stop` (taken before the new process was spawned) reached no server.
    pub fn effect_window(
        &self,
        op: u64,
        invoke: u64,
        completed: Option<u64>,
    ) -> Option<Option<u64>> {
        let mut end: Option<u64> = None;
        let mut narrow = |t: u64| end = Some(end.map_or(t, |e| e.min(t)));
        if let Some(&(forwarded, t)) = self.proxied.get(&op) {
            if !forwarded {
                return None;
            }
            narrow(t);
        }
        if let Some(c) = completed {
            for &(killed, restarted) in &self.kills {
                if restarted.is_some_and(|r| c >= r) {
                    continue;
                }
                if invoke >= killed {
                    return None;
                }
                narrow(killed);
            }
        }
        Some(end)
    }

    fn complete(&mut self, kind: CompletionType, c: Completion) -> anyhow::Result<()> {
        let Some((invoke, steps)) = self.inflight.remove(&c.op) else {
            anyhow::bail!("completion of op {} which was not invoked", c.op);
        };
        self.op_done(invoke, steps, Some((kind, c)));
        Ok(())
    }

    /// Ops still in flight at the end of the history never completed: they
    /// are indeterminate.
    pub fn finish(&mut self) {
        let mut left: Vec<_> = self.inflight.drain().collect();
        left.sort_by_key(|(op, _)| *op);
        for (_, (invoke, steps)) in left {
            self.unfinished += 1;
            self.op_done(invoke, steps, None);
        }
        if self.step_log {
            return;
        }
        for (id, op, invoke, completed) in std::mem::take(&mut self.pending_maybe) {
            let dropped = self.dropped_answers.get(&op).copied();
            let may = self.effect_window(op, invoke, completed).is_some();
            let Some(e) = self.events.get_mut(&id) else {
                continue;
            };
            match dropped {
                // The server said it counted the event (the client never
                // heard it, so it is not acknowledged).
                Some(DroppedAnswer::Ingest(true)) => {
                    e.done = true;
                    e.counted += 1;
                }
                Some(DroppedAnswer::Ingest(false)) => {}
                _ => e.maybe |= may,
            }
        }
        let mut groups = std::mem::take(&mut self.groups);
        for g in groups.values_mut() {
            let mut known = Vec::new();
            g.unknown_resolves.retain_mut(|u| {
                if let (Some(DroppedAnswer::Resolved(count)), Some(&(_, t))) =
                    (self.dropped_answers.get(&u.op), self.proxied.get(&u.op))
                {
                    // It resolved, with this count, before the drop.
                    known.push(ResolveFact {
                        op: u.op,
                        span: Span {
                            start: u.span.start,
                            end: Some(t),
                        },
                        count: *count,
                    });
                    return false;
                }
                if u.span.end.is_some() {
                    return true;
                }
                match self.effect_window(u.op, u.span.start, u.completed) {
                    None => false,
                    Some(end) => {
                        u.span.end = end;
                        true
                    }
                }
            });
            g.resolves.extend(known);
        }
        self.groups = groups;
    }

    fn key(&mut self, project: &str, fingerprint: &str) -> u32 {
        let k = (project.to_string(), fingerprint.to_string());
        if let Some(&i) = self.key_index.get(&k) {
            return i;
        }
        let i = self.keys.len() as u32;
        self.keys.push(k.clone());
        self.key_index.insert(k, i);
        i
    }

    /// Event id per counting op (the first few counting ops of each event,
    /// see [`EventFacts::counted_ops`]). Built on demand: counting steps do
    /// not carry their event id, which would double the audit's memory.
    pub fn events_by_counting_op(&self) -> HashMap<u64, &str> {
        let mut m = HashMap::new();
        for (id, e) in &self.events {
            for op in &e.counted_ops {
                m.insert(*op, id.as_str());
            }
        }
        m
    }

    /// The key index of (project, fingerprint), if any op had it.
    pub fn key_of(&self, project: &str, fingerprint: &str) -> Option<u32> {
        self.key_index
            .get(&(project.to_string(), fingerprint.to_string()))
            .copied()
    }

    fn cause(&mut self, text: String) -> u16 {
        if let Some(&i) = self.cause_index.get(&text) {
            return i;
        }
        let i = self.causes.len().min(u16::MAX as usize) as u16;
        if (i as usize) == self.causes.len() {
            self.causes.push(text.clone());
        }
        self.cause_index.insert(text, i);
        i
    }

    fn op_done(
        &mut self,
        invoke: Invoke,
        steps: Vec<Step>,
        completion: Option<(CompletionType, Completion)>,
    ) {
        match invoke.f {
            OpKind::Ingest => self.ingest_done(invoke, steps, completion),
            OpKind::Resolve => self.resolve_done(invoke, steps, completion),
            // Outbox ops are read by `checker::outbox::facts`, never here.
            OpKind::Handle => {}
        }
    }

    fn ingest_done(
        &mut self,
        invoke: Invoke,
        steps: Vec<Step>,
        completion: Option<(CompletionType, Completion)>,
    ) {
        let Some(id) = invoke.event_id.clone() else {
            return;
        };
        let key = self.key(&invoke.project, &invoke.fingerprint);
        let counting = self.counting_step;
        let mut hook_insert = None;
        let (done, maybe, counting_span) = if self.step_log {
            let s = steps.iter().find(|s| s.idx == counting);
            let done = s.is_some_and(Step::applied);
            // With an exact step log only a counting step that started and
            // did not surely end (or failed in a way that may have applied)
            // is a maybe; an op that crashed before it is no maybe.
            let maybe = s.is_some_and(Step::maybe_applied);
            (
                done,
                maybe,
                s.filter(|s| s.applied()).map(|s| (s.start, s.end)),
            )
        } else {
            match &completion {
                Some((CompletionType::Ok, c)) => match c.result.accepted {
                    Some(a) => (a, false, None),
                    None => (false, true, None),
                },
                Some((CompletionType::Fail, _)) => (false, false, None),
                // The reference server's fault hook reported every step the
                // op ran (none ran after): counted iff the counting step
                // changed a row; a row the insert step applied and nothing
                // counted is stranded.
                Some((CompletionType::Info, c)) if !c.result.hook_steps.is_empty() => {
                    let (r, counted) = (&c.result, c.result.accepted == Some(true));
                    if !counted && r.hook_steps[0].changes > 0 {
                        let step = r.crashed_after.clone().unwrap_or_default();
                        hook_insert =
                            Some(self.cause(format!("crash after step {step} (fault hook)")));
                    }
                    (counted, false, None)
                }
                Some((CompletionType::Info, c)) if self.crashed_before_count(&c.result) => {
                    // The reference server's fault hook crashed it before
                    // the counting step (and ran nothing after): certainly
                    // not counted; if its row is there, it is stranded.
                    let step = c.result.crashed_after.clone().unwrap_or_default();
                    let cause = self.cause(format!("crash after step {step} (fault hook)"));
                    hook_insert = Some(cause);
                    (false, false, None)
                }
                Some((CompletionType::Info, c)) => {
                    // Other indeterminate attempts are judged at the end,
                    // once every fault entry is known.
                    self.pending_maybe
                        .push((id.clone(), invoke.op, invoke.t, Some(c.t)));
                    (false, false, None)
                }
                None => {
                    self.pending_maybe
                        .push((id.clone(), invoke.op, invoke.t, None));
                    (false, false, None)
                }
            }
        };
        let acked =
            matches!(&completion, Some((CompletionType::Ok, c)) if c.result.accepted == Some(true));
        // The attempt that inserted the event row, when it did not count it:
        // a candidate for a stranded event.
        let inserted = self.step_log && steps.iter().any(|s| s.idx == 0 && s.applied());
        let cause = if inserted && !done && !maybe {
            Some(self.cause(stop_cause(&steps, &completion, counting)))
        } else {
            None
        };
        let ev = self.events.entry(id.clone()).or_default();
        ev.key = key;
        ev.attempts += 1;
        ev.done |= done;
        ev.maybe |= maybe;
        ev.acked |= acked;
        if done {
            ev.counted += 1;
            if ev.counted_ops.len() < 4 {
                ev.counted_ops.push(invoke.op);
            }
        }
        if inserted {
            ev.insert = Some((invoke.op, cause));
        } else if let (Some(c), None) = (hook_insert, ev.insert) {
            // Without a step log: if the row is there and nothing counted
            // it, an attempt that crashed before counting inserted it.
            ev.insert = Some((invoke.op, Some(c)));
        }
        let acked_at = match &completion {
            Some((CompletionType::Ok, c)) if acked => Some(c.t),
            _ => None,
        };
        if counting_span.is_some() || acked_at.is_some() {
            let g = self.groups.entry(invoke.group_id).or_default();
            g.key = Some(key);
            if let Some((start, Some(end))) = counting_span {
                g.counting_steps.push(CountingStep {
                    op: invoke.op,
                    op_start: invoke.t,
                    start,
                    end,
                });
            }
            if let Some(t) = acked_at {
                g.acked.push((invoke.t, t));
            }
        }
    }

    fn resolve_done(
        &mut self,
        invoke: Invoke,
        steps: Vec<Step>,
        completion: Option<(CompletionType, Completion)>,
    ) {
        let op_span = Span {
            start: invoke.t,
            end: completion.as_ref().map(|(_, c)| c.t),
        };
        // In-process, nothing of an op runs after its completion, so an
        // indeterminate resolve's window closes there; a remote target may
        // still run it later (open-ended).
        let completed = completion.as_ref().map(|(_, c)| c.t);
        let crashed = completion
            .as_ref()
            .is_some_and(|(_, c)| c.result.crashed_after.is_some());
        // Where steps are logged, the statements that may have changed the
        // group bound the window; none of them: the op changed nothing.
        let logged = self.step_log.then(|| {
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
            _ if self.step_log => op_span,
            _ => Span {
                start: invoke.t,
                end: None,
            },
        };
        let key = self.key(&invoke.project, &invoke.fingerprint);
        let g = self.groups.entry(invoke.group_id.clone()).or_default();
        g.key = Some(key);
        // The instant of the statement that produced the answer: its step's
        // interval where steps are logged, else the whole op's.
        let effect_span = |c: &Completion| {
            c.result
                .effect_step
                .and_then(|i| steps.iter().find(|s| s.idx == i))
                .map(|s| Span {
                    start: s.start,
                    end: s.end,
                })
                .unwrap_or(op_span)
        };
        match &completion {
            Some((CompletionType::Ok, c)) if c.result.resolved == Some(true) => {
                match c.result.event_count {
                    Some(count) => g.resolves.push(ResolveFact {
                        op: invoke.op,
                        span: effect_span(c),
                        count,
                    }),
                    None => g.unknown_resolves.push(UnknownResolve {
                        op: invoke.op,
                        completed,
                        span: unknown_span,
                    }),
                }
            }
            Some((CompletionType::Fail, c)) => {
                if c.result.resolved == Some(false)
                    && c.result.error.is_none()
                    && c.result.status.as_deref() == Some("resolved")
                {
                    if let Some(count) = c.result.event_count {
                        g.probes.push(Probe {
                            op: Some(invoke.op),
                            span: effect_span(c),
                            count,
                        });
                    }
                }
            }
            Some((CompletionType::Ok, _)) => {}
            // A worker that crashed right after the resolving statement:
            // the step log (in-process) or the fault hook's report (over
            // HTTP) holds what that statement returned.
            Some((CompletionType::Info, c))
                if (self.step_log || !c.result.hook_steps.is_empty())
                    && c.result.crashed_after.is_some()
                    && c.result.resolved == Some(true)
                    && c.result.event_count.is_some()
                    && c.result.effect_step.is_some() =>
            {
                g.resolves.push(ResolveFact {
                    op: invoke.op,
                    span: effect_span(c),
                    count: c.result.event_count.unwrap_or_default(),
                })
            }
            Some((CompletionType::Info, _)) | None if no_effect => {}
            // The fault hook's report: no step it ran changed a row.
            Some((CompletionType::Info, c))
                if !c.result.hook_steps.is_empty()
                    && c.result.hook_steps.iter().all(|s| s.changes == 0) => {}
            Some((CompletionType::Info, _)) | None => g.unknown_resolves.push(UnknownResolve {
                op: invoke.op,
                completed,
                span: unknown_span,
            }),
        }
    }
}

/// What the server answered to a request whose answer the proxy dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DroppedAnswer {
    /// `200 {"accepted": b, ...}` to an ingest.
    Ingest(bool),
    /// `200 {"resolved": true, "event_count": n}` to a resolve.
    Resolved(i64),
}

/// The contract's answer in a dropped answer's detail, if it is one of the
/// two that tell what happened (anything else narrows nothing).
fn dropped_answer(detail: &str) -> Option<DroppedAnswer> {
    let (status, body) = crate::nemesis::proxy::parse_drop_detail(detail)?;
    if status != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    if let Some(a) = v.get("accepted").and_then(|a| a.as_bool()) {
        return Some(DroppedAnswer::Ingest(a));
    }
    match (
        v.get("resolved")?.as_bool()?,
        v.get("event_count")?.as_i64(),
    ) {
        (true, Some(n)) => Some(DroppedAnswer::Resolved(n)),
        _ => None,
    }
}

/// Why an attempt that inserted its event row stopped before counting it.
fn stop_cause(
    steps: &[Step],
    completion: &Option<(CompletionType, Completion)>,
    counting: u32,
) -> String {
    if let Some(s) = steps.iter().find(|s| s.error.is_some()) {
        let e = s.error.as_deref().unwrap_or_default();
        let kind = if e.contains("locked") || e.contains("busy") {
            "busy"
        } else {
            "error"
        };
        return format!("{kind} at step {}", s.step);
    }
    if steps
        .iter()
        .any(|s| s.idx == counting && s.end.is_some() && s.changes == 0)
    {
        return "counting step changed no row (group missing)".into();
    }
    if let Some((_, c)) = completion {
        if let Some(step) = &c.result.crashed_after {
            return format!("crash after step {step}");
        }
    }
    match completion {
        None => "never completed (run aborted)".into(),
        Some((_, c)) => match &c.result.error {
            Some(e) if e.contains("aborted") => "aborted between steps".into(),
            Some(e) => format!("stopped: {e}"),
            None => "stopped before the counting step".into(),
        },
    }
}
