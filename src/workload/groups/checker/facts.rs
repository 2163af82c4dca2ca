//! What the history says, reduced to the facts the checkers need: per event
//! id, Done / Maybe / acknowledged, how its inserting attempt ended, and a
//! brief of every attempt (when it may have inserted the event row, whether
//! it answered duplicate); per (project, fingerprint) key, the successful
//! and indeterminate resolves, the probes that read the group, and the
//! counting steps that changed it. Built in one pass over the history; an
//! op is finished when its completion arrives (an op invoked and never
//! completed is indeterminate). What needs every entry (fault records come
//! after the ops they hit; ops are written when they complete, not in
//! invoke order) is judged in [`Facts::finish`].
//!
//! `docs/groups.md` states these rules for users: "The history", "Done,
//! Maybe, A(G)", "Groups are known by (project, fingerprint)", "The fault
//! hook's report" and TypeOK's "Unexplained duplicate".
//!
//! Everything is keyed by (project, fingerprint), which both the history
//! (every invoke carries it) and the exported rows carry; group ids are
//! only shown. A design that computes its own group ids is judged like one
//! that uses the bench's.
//!
//! Duplicate answers (see [`Lost`]). An ingest answered duplicate (`ok`
//! with accepted = false; an `ok` whose answer did not say is none) claims
//! the event row was already there when it decided. Premises: event ids
//! are never reused across events, and the target held no rows of this
//! run's namespace before the run (`run` refuses a database with rows
//! unless it runs in a namespace of its own, and a sharded run whose run
//! id was used before; shards have disjoint event ids). Then in a correct
//! system the row was inserted by another attempt of the same id, whose
//! insert began before the duplicate's deciding point ended. Which
//! attempts may have inserted it: in-process, those whose event-insert step
//! (the header's `event_step`) applied or may have applied, from that
//! step's start; over HTTP, every attempt but a `fail`, a request the fault
//! proxy never forwarded, and one sent into a kill's down time, from its
//! invoke. Recorded starts are taken before the statement or request and
//! recorded ends after, and merged histories only move starts earlier and
//! ends later, so "started before the deciding point ended" is never
//! missed: a duplicate is reported unexplained only when no attempt can
//! have inserted the row in time.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::legacy;
use super::op_assembly::OpAssembly;
use super::op_fact::{HeldId, IngestOp, OpFact, ResolveOp, ResolveOutcome};
pub use super::op_types::{
    CountingStep, Effect, EventStep, Probe, ReadStep, ResolveFact, Span, UnknownResolve,
};
use super::step_fact::StepFact;
use crate::history::codec::InvokeView;
use crate::history::{codec, Completion, CompletionType, Entry, Header};
use std::collections::HashMap;

/// The facts' own maps, looked up per entry of a history of millions:
/// foldhash, seeded per map like std's, costs a fraction of SipHash.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// One attempt (ingest op) of an event, as the duplicate rules need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// The ingest op's id.
    pub op: u64,
    /// From when it may have changed what a duplicate check reads:
    /// in-process the start of its first step that changed (or may have
    /// changed) a row, its invoke if none did; remote its invoke.
    pub start: u64,
    /// A duplicate answer: the end of its deciding point ([`NONE`]: no
    /// duplicate answer; see [`Attempt::decided`]).
    decided: u64,
    /// In-process duplicate answer: index of its stop step (`u32::MAX`: none).
    stop: u32,
    /// What it may have done to the row.
    pub effect: Effect,
    /// In-process: its own event-insert step applied (changed a row).
    pub own_insert: bool,
    /// It certainly completed the counting step.
    pub counted: bool,
    /// It ended `info` or never completed: it may have stopped between
    /// two of its steps.
    pub indeterminate: bool,
}

/// "None" of a packed `Option<u64>`: an instant no history reaches. The
/// facts of an audit are held per event of the run, so every optional
/// instant is one word, not two.
const NONE: u64 = u64::MAX;

fn unpack(v: u64) -> Option<u64> {
    (v != NONE).then_some(v)
}

impl Attempt {
    /// A duplicate answer: the end of its deciding point (in-process the
    /// end of its stop step, remote its completion). None: no duplicate answer.
    pub fn decided(&self) -> Option<u64> {
        unpack(self.decided)
    }

    /// In-process duplicate answer: the index of its stop step.
    pub fn stop_step(&self) -> Option<u32> {
        (self.stop != u32::MAX).then_some(self.stop)
    }
}

/// The attempts of one event, the first kept inline (most events have one).
#[derive(Debug, Clone, Default)]
pub struct Attempts {
    first: Option<Attempt>,
    // A boxed vector: no retry costs one word, not a vector's three or a
    // boxed slice's two, in every event; retries are few, so the extra
    // allocation and a copy per retry are cheap.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Attempt>>>,
}

impl Attempts {
    fn push(&mut self, a: Attempt) {
        if self.first.is_none() {
            self.first = Some(a);
        } else {
            let more = self.more.get_or_insert_with(Default::default);
            // Exactly as many as there are, not a doubled capacity.
            more.reserve_exact(1);
            more.push(a);
        }
    }

    /// How many attempts.
    pub fn len(&self) -> u32 {
        let more = self.more.as_ref().map_or(0, |m| m.len());
        u32::from(self.first.is_some()) + u32::try_from(more).unwrap_or(u32::MAX)
    }

    /// No attempt.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// Every attempt, in completion order.
    pub fn iter(&self) -> impl Iterator<Item = &Attempt> {
        self.first
            .iter()
            .chain(self.more.iter().flat_map(|m| m.iter()))
    }

    fn get_mut(&mut self, op: u64) -> Option<&mut Attempt> {
        self.first
            .iter_mut()
            .chain(self.more.iter_mut().flat_map(|m| m.iter_mut()))
            .find(|a| a.op == op)
    }
}

/// Per event id (all attempts together), as `docs/groups.md` ("Done, Maybe,
/// A(G)") defines them.
#[derive(Debug, Clone)]
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
    /// [`EventFacts::insert`], packed: the op ([`NONE`]: none) and the
    /// cause (`u16::MAX`: none).
    insert_op: u64,
    insert_cause: u16,
    /// [`EventFacts::counted_by`], packed ([`NONE`]: none).
    counted_by: u64,
    /// [`EventFacts::count_from`], packed ([`NONE`]: none).
    count_from: u64,
    /// Every attempt, briefly.
    pub tries: Attempts,
    /// Its row is in the final `error_events` (set by a judge that joined
    /// the table's ids with the history's itself: [`Facts::mark_in_table`];
    /// else the tables' id set says).
    in_table: bool,
}

impl Default for EventFacts {
    fn default() -> Self {
        EventFacts {
            key: 0,
            done: false,
            maybe: false,
            acked: false,
            counted: 0,
            insert_op: NONE,
            insert_cause: u16::MAX,
            counted_by: NONE,
            count_from: NONE,
            tries: Attempts::default(),
            in_table: false,
        }
    }
}

impl EventFacts {
    /// The attempt whose event-insert step inserted the row, and how it
    /// ended (index into [`Facts::causes`]), if it did not count the event.
    pub fn insert(&self) -> Option<(u64, Option<u16>)> {
        let cause = (self.insert_cause != u16::MAX).then_some(self.insert_cause);
        unpack(self.insert_op).map(|op| (op, cause))
    }

    fn set_insert(&mut self, op: u64, cause: Option<u16>) {
        self.insert_op = op;
        self.insert_cause = cause.unwrap_or(u16::MAX);
    }

    /// The earliest instant by which some attempt had certainly counted it
    /// (the end of an applied counting step; an accepted answer's arrival).
    pub fn counted_by(&self) -> Option<u64> {
        unpack(self.counted_by)
    }

    /// The earliest instant from which an attempt that counted it or may
    /// have counted it can have done so (its counting step's start; remote:
    /// its invoke).
    pub fn count_from(&self) -> Option<u64> {
        unpack(self.count_from)
    }

    /// Whether event `id` (these facts') has a row in the final
    /// `error_events`.
    pub fn in_table(&self, id: super::event_map::Id<'_>, tables: &super::Tables) -> bool {
        self.in_table || (!tables.event_ids.is_empty() && tables.event_ids.contains(&id.text()))
    }

    /// Attempts (invokes) seen for this id, retries included.
    pub fn attempts(&self) -> u32 {
        self.tries.len()
    }

    /// Maybe in the sense of `docs/groups.md`: not Done, but possibly counted.
    pub fn is_maybe(&self) -> bool {
        !self.done && self.maybe
    }

    /// The ops that certainly counted it.
    pub fn counted_ops(&self) -> Vec<u64> {
        self.tries
            .iter()
            .filter(|a| a.counted)
            .map(|a| a.op)
            .collect()
    }

    fn note_count_from(&mut self, t: u64) {
        self.count_from = self.count_from.min(t);
    }

    fn note_counted_by(&mut self, t: u64) {
        self.counted_by = self.counted_by.min(t);
    }
}

/// Per (project, fingerprint) key.
#[derive(Debug, Clone, Default)]
pub struct GroupFacts {
    /// Successful resolves (status set to resolved, count returned).
    pub resolves: Vec<ResolveFact>,
    /// Resolves whose effect is unknown (NoMissedRegression's reason for `unknown`).
    pub unknown_resolves: Vec<UnknownResolve>,
    /// Observations of the group as (`resolved`, count), final row excluded.
    pub probes: Vec<Probe>,
    /// Refused resolves whose probe read the group with another status
    /// (open, regressed), with the count read: observations of the count
    /// only (CountExact).
    pub observations: Vec<Probe>,
    /// Counting steps that certainly changed the group's row (by start,
    /// ties in recorded order, once [`Facts::finish`] ran).
    pub counting_steps: Vec<CountingStep>,
    /// Per counting step that has one, by its place in
    /// [`GroupFacts::counting_steps`]: the op's last step before the
    /// counting step that returned rows and changed none (a read whose
    /// value the counting step may have used). Beside the steps, not in
    /// each: most designs have none, and a counting step is held per
    /// event of the run.
    pub reads: Vec<(u32, ReadStep)>,
    /// Index into [`Facts::keys`]: the group's (project, fingerprint), as
    /// its ops named it (None only for a group no op named).
    pub key: Option<u32>,
    /// Ingest ops of the group answered `ok` with accepted = true, as
    /// (invoke, completion) in ns since run start: what the target
    /// acknowledged, and where no steps are logged, the only interval
    /// known to hold the op's counting step. Emptied once the history is
    /// read where steps are logged and no fault has a window (nothing
    /// reads it then: [`Facts::finish`]).
    pub acked: Vec<(u64, u64)>,
}

/// Which rule a lost event breaks (both under TypeOK: nothing
/// acknowledged is lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LostRule {
    /// A duplicate answer no other attempt can have caused.
    UnexplainedDuplicate,
    /// An attempt that inserted the row itself, then answered duplicate
    /// without counting it.
    InsertIgnored,
}

impl LostRule {
    /// The rule's name, as reported.
    pub fn name(self) -> &'static str {
        match self {
            LostRule::UnexplainedDuplicate => "unexplained duplicate",
            LostRule::InsertIgnored => "insert ignored by its own op",
        }
    }
}

/// An event the client was told was already stored, though no attempt
/// can have stored it before (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// Which rule.
    pub rule: LostRule,
    /// The event.
    pub event_id: String,
    /// The op that answered duplicate.
    pub op: u64,
    /// The end of its deciding point, ns since run start.
    pub decided: u64,
}

/// Everything the checkers take from the history.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Whether the history holds every op the run invoked (set by whoever
    /// read it: a history without a footer is cut, and the checkers then
    /// apply only the rules that stay sound when any op is missing).
    pub completeness: crate::history::completeness::Completeness,
    /// The history's header; None until read (a history without one is refused).
    pub header: Option<Header>,
    /// Steps are logged exactly (in-process target).
    pub step_log: bool,
    /// Index of the ingest op's counting step, from the header.
    pub counting_step: u32,
    /// Index of the ingest step that inserts the event row, and where it
    /// comes from (the header).
    pub event_step: EventStep,
    /// Distinct (project, fingerprint) keys, indexed by [`EventFacts::key`],
    /// [`GroupFacts::key`] and by [`Facts::groups`].
    pub keys: Vec<(String, String)>,
    /// Per key (same index): the group id the bench sent first, for display.
    pub key_group_ids: Vec<String>,
    // Project, then fingerprint: looked up by &str, so an op's key is
    // found without building a (String, String) for it.
    key_index: FastMap<String, FastMap<String, u32>>,
    /// Per event id.
    pub events: super::event_map::EventMap<EventFacts>,
    /// Per key index (see [`Facts::keys`]).
    pub groups: FastMap<u32, GroupFacts>,
    /// Events the client was told were already stored, though no attempt
    /// can have stored them (judged in [`Facts::finish`]), by time.
    pub lost: Vec<Lost>,
    /// Ops a crash fault abandoned.
    pub crashed_ops: FastSet<u64>,
    /// In-process resolves with a step that changed more than one row, and
    /// how many: a resolve must change only the group it names
    /// (NoMissedRegression's premise; the other groups it changed are
    /// credited to no resolve).
    pub wide_resolves: Vec<(u64, u64)>,
    /// Texts of the ways an inserting attempt ended without counting.
    pub causes: Vec<String>,
    cause_index: FastMap<String, u16>,
    /// The ops in flight, and the triples their invokes named.
    asm: OpAssembly,
    /// Per named triple: its key index, once an op of it was done
    /// ([`Facts::key`] gave it; `u32::MAX`: not yet).
    named_key: Vec<u32>,
    /// Ops invoked.
    pub ops: u64,
    /// Ops invoked and never completed (counted as indeterminate).
    pub unfinished: u64,
    /// Kills of the server: (the instant the old process was gone, the
    /// instant just before the new one was spawned; None: never restarted).
    pub kills: Vec<(u64, Option<u64>)>,
    /// Per op the fault proxy hit: whether it forwarded the request, and
    /// when it recorded that (after the server's answer, if forwarded).
    pub proxied: FastMap<u64, (bool, u64)>,
    /// Per op whose answer the fault proxy dropped: what the server had
    /// answered (it did that, though the client never heard it).
    pub dropped_answers: FastMap<u64, DroppedAnswer>,
    /// Indeterminate ingest attempts of a remote target, judged Maybe or
    /// not once every fault entry is known: (event id, op, invoke, completion).
    pending_maybe: Vec<(String, u64, u64, Option<u64>)>,
    /// Faults with a duration (kill, lock), each window from its `start`
    /// entry to its `stop` entry, in history order.
    pub fault_windows: Vec<FaultWindow>,
    /// Set by a reader that knows beforehand that the history has no
    /// fault window: where steps are logged, the acknowledged intervals
    /// are then never read ([`Facts::finish`] drops them), so they are not
    /// kept at all (a hot group's are millions).
    pub acked_unread: bool,
    /// Ingests per (project, fingerprint), where a reader counted them
    /// beforehand: a group's counting steps (at most one per ingest) are
    /// then sized once, not grown by doubling (which holds the old list
    /// and one twice as large at once). Capacity only: no fact depends
    /// on it.
    pub ingest_hint: FastMap<String, FastMap<String, u64>>,
    /// Room for counting steps a judge in parts kept from its last part
    /// ([`Facts::take_room`]): the first group hinted at least half as
    /// many takes it. Capacity only: no fact depends on it.
    pub spare_steps: Vec<CountingStep>,
}

/// One window of a fault with a duration: from its `start` entry to its
/// `stop` entry (None: still active when the history ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultWindow {
    /// Index of the fault in the scenario's `[[faults]]`.
    pub fault: u32,
    /// Its kind.
    pub kind: crate::fault_kind::FaultKind,
    /// `start`, ns since run start.
    pub start: u64,
    /// `stop`, ns since run start; None: never stopped.
    pub stop: Option<u64>,
}

impl Facts {
    /// Events acknowledged (an ingest answered ok) at least once.
    pub fn acked_events(&self) -> u64 {
        self.events.values().filter(|e| e.acked).count() as u64
    }

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
                self.asm.header(&h);
                self.step_log = self.asm.rules.step_log;
                self.counting_step = self.asm.rules.counting_step;
                self.event_step = self.asm.rules.event_step;
                self.header = Some(h);
            }
            Entry::Invoke(i) => self.invoke(&InvokeView::of(&i)),
            Entry::Step(s) => self.asm.step(s.op, StepFact::from_step(&s))?,
            Entry::Ok(c) => self.complete(CompletionType::Ok, c)?,
            Entry::Fail(c) => self.complete(CompletionType::Fail, c)?,
            Entry::Info(c) => self.complete(CompletionType::Info, c)?,
            Entry::Fault(f) => self.fault(f),
            // The bench's own checkpoints change no row: nothing to judge.
            Entry::Bench(_) | Entry::Footer(_) => {}
        }
        Ok(())
    }

    /// Takes one record of a binary history (its payload, as
    /// [`codec::decode`] takes it): a step is read where it lies, with no
    /// entry built (steps are most of a history's records); any other
    /// record is decoded and taken as [`Facts::add`] takes it. Errors: the
    /// codec refuses the record, or as [`Facts::add`].
    pub fn add_payload(&mut self, payload: &[u8]) -> anyhow::Result<()> {
        match codec::step_view(payload)? {
            Some(s) => Ok(self.asm.step(s.op, StepFact::from_view(&s))?),
            None => self.add_other(payload),
        }
    }

    /// A record that is no step: an invoke read where it lies, any other
    /// decoded.
    fn add_other(&mut self, payload: &[u8]) -> anyhow::Result<()> {
        match codec::invoke_view(payload)? {
            Some(i) => {
                self.invoke(&i);
                Ok(())
            }
            None => self.add(codec::decode(payload)?),
        }
    }

    /// An op invoked: in flight until its completion.
    fn invoke(&mut self, i: &InvokeView<'_>) {
        self.ops += 1;
        self.asm.invoke(i);
    }

    /// The index of a (project, fingerprint, group id) triple in these
    /// facts, added if new: what an [`OpFact`] recorded here names its
    /// triple by.
    pub fn name(&mut self, project: &str, fingerprint: &str, group_id: &str) -> u32 {
        self.asm.name(project, fingerprint, group_id)
    }

    /// [`Facts::key`] of a named triple (looked up once per triple).
    fn named_key(&mut self, named: u32) -> u32 {
        if self.named_key.len() < self.asm.named_len() {
            self.named_key.resize(self.asm.named_len(), u32::MAX);
        }
        let k = self.named_key[named as usize];
        if k != u32::MAX {
            return k;
        }
        let (p, f, g) = self.asm.named(named).clone();
        let k = self.key(&p, &f, &g);
        self.named_key[named as usize] = k;
        k
    }

    /// [`Facts::add_payload`] of a record [`codec::peek`] already
    /// accepted (see [`codec::step_view_peeked`]).
    pub fn add_peeked(&mut self, payload: &[u8]) -> anyhow::Result<()> {
        match codec::step_view_peeked(payload)? {
            Some(s) => Ok(self.asm.step(s.op, StepFact::from_view(&s))?),
            None => self.add_other(payload),
        }
    }

    fn fault(&mut self, f: crate::history::FaultEntry) {
        use crate::fault_kind::FaultKind;
        use crate::history::FaultAction;
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
            (FaultKind::Crash, FaultAction::Inject) => {
                if let Some(op) = f.op {
                    self.crashed_ops.insert(op);
                }
            }
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
                match (f.op, f.forwarded) {
                    (Some(op), Some(false)) => {
                        self.proxied.insert(op, (false, f.t));
                    }
                    (Some(op), Some(true)) => {
                        let drop = match &f.dropped {
                            Some(d) => Some(d.body.as_deref().map(|b| (d.status, b))),
                            None => legacy::dropped(f.detail.as_deref()),
                        };
                        if let Some(answer) = drop {
                            self.proxied.insert(op, (true, f.t));
                            if let Some(a) = answer.and_then(dropped_answer) {
                                self.dropped_answers.insert(op, a);
                            }
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
        let fact = self.asm.complete(kind, c)?;
        self.apply(fact);
        Ok(())
    }

    /// Ops still in flight at the end of the history never completed: they
    /// are indeterminate. Then what needs every entry: remote attempts and
    /// resolves against the fault records, and every duplicate answer
    /// against every other attempt of its event.
    pub fn finish(&mut self) {
        for (_, fact) in self.asm.finish() {
            self.unfinished += 1;
            self.apply(fact);
        }
        if !self.step_log {
            self.settle_remote();
        }
        self.judge_duplicates();
        self.trim();
    }

    /// Gives back what the checkers will not read, before they run (they
    /// hold their own lists beside these): each group's lists at their
    /// length (a hot group's grew by doubling), and, where steps are
    /// logged and no fault has a window, the acknowledged intervals, which
    /// only the evidence reads, and there only for a run without a step
    /// log or inside a fault's window.
    fn trim(&mut self) {
        let drop_acked = self.step_log && self.fault_windows.is_empty();
        for g in self.groups.values_mut() {
            if drop_acked {
                g.acked = Vec::new();
            }
            g.acked.shrink_to_fit();
            // Sized from a hint or kept room: given back only where much
            // of it is unused (a copy holds both at once).
            if g.counting_steps.len() < g.counting_steps.capacity() / 4 * 3 {
                g.counting_steps.shrink_to_fit();
            }
            if g.reads.is_empty() {
                sort_by_start(&mut g.counting_steps);
            } else {
                sort_with_reads(g);
            }
            g.reads.shrink_to_fit();
            g.probes.shrink_to_fit();
            g.observations.shrink_to_fit();
        }
    }

    /// Remote indeterminate attempts and resolves, once every fault entry
    /// is known: whether (and until when) each can have taken effect.
    fn settle_remote(&mut self) {
        for (id, op, invoke, completed) in std::mem::take(&mut self.pending_maybe) {
            let dropped = self.dropped_answers.get(&op).copied();
            let proxied = self.proxied.get(&op).copied();
            let may = self.effect_window(op, invoke, completed).is_some();
            let Some(e) = self.events.get_mut(&id) else {
                continue;
            };
            let counted = matches!(dropped, Some(DroppedAnswer::Ingest(true)));
            if let Some(a) = e.tries.get_mut(op) {
                a.effect = match proxied {
                    Some((false, _)) => Effect::NeverForwarded,
                    _ if !may => Effect::KillDown,
                    _ => Effect::May,
                };
                a.counted = counted;
            }
            match dropped {
                // The server said it counted the event (the client never
                // heard it, so it is not acknowledged).
                Some(DroppedAnswer::Ingest(true)) => {
                    e.done = true;
                    e.counted += 1;
                    e.note_count_from(invoke);
                    if let Some((_, t)) = proxied {
                        e.note_counted_by(t);
                    }
                }
                Some(DroppedAnswer::Ingest(false)) => {}
                _ => {
                    e.maybe |= may;
                    if may {
                        e.note_count_from(invoke);
                    }
                }
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

    /// Every duplicate answer against every other attempt of its event
    /// (see the module's doc): unexplained ones go to [`Facts::lost`].
    fn judge_duplicates(&mut self) {
        let mut lost = Vec::new();
        for (id, e) in &self.events {
            for d in e.tries.iter() {
                let Some(decided) = d.decided() else {
                    continue;
                };
                let explained = e
                    .tries
                    .iter()
                    .any(|a| a.op != d.op && a.effect == Effect::May && a.start < decided);
                if explained {
                    continue;
                }
                // The op inserted the row itself (so nothing else can have
                // before it decided), unless a crash fault hit it.
                // An event some attempt counted was not lost: this answer
                // was still wrong at its instant (no attempt could have
                // stored the event before it), so it is unexplained.
                let rule = if d.own_insert && !e.done && !self.crashed_ops.contains(&d.op) {
                    LostRule::InsertIgnored
                } else {
                    LostRule::UnexplainedDuplicate
                };
                lost.push(Lost {
                    rule,
                    event_id: id.to_string(),
                    op: d.op,
                    decided,
                });
            }
        }
        lost.sort_by_key(|a| (a.decided, a.op));
        self.lost = lost;
    }

    fn key(&mut self, project: &str, fingerprint: &str, group_id: &str) -> u32 {
        if let Some(&i) = self.key_index.get(project).and_then(|f| f.get(fingerprint)) {
            return i;
        }
        let i = self.keys.len() as u32;
        self.keys
            .push((project.to_string(), fingerprint.to_string()));
        self.key_group_ids.push(group_id.to_string());
        self.key_index
            .entry(project.to_string())
            .or_default()
            .insert(fingerprint.to_string(), i);
        i
    }

    /// The room of the largest lists, emptied, for the next part of a
    /// judge in parts: its event map and its largest group's counting
    /// steps ([`Facts::spare_steps`]).
    pub fn take_room(&mut self) -> (super::event_map::EventMap<EventFacts>, Vec<CountingStep>) {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let mut steps = self
            .groups
            .values_mut()
            .max_by_key(|g| g.counting_steps.capacity())
            .map(|g| std::mem::take(&mut g.counting_steps))
            .unwrap_or_default();
        if steps.capacity() < self.spare_steps.capacity() {
            steps = std::mem::take(&mut self.spare_steps);
        }
        steps.clear();
        (events, steps)
    }

    /// Event id per counting op. Built on demand: counting steps do not
    /// carry their event id, which would double the audit's memory.
    pub fn events_by_counting_op(&self) -> HashMap<u64, super::event_map::Id<'_>> {
        let mut m = HashMap::new();
        for (id, e) in &self.events {
            for a in e.tries.iter().filter(|a| a.counted) {
                m.insert(a.op, id);
            }
        }
        m
    }

    /// Records that event `id` has a row in the final `error_events`, for
    /// a judge that joined the table's ids with the history's itself and
    /// holds no id set of the table (the rows of a long run's events are
    /// millions). False: the history has no such event.
    pub fn mark_in_table(&mut self, id: &str) -> bool {
        match self.events.get_mut(id) {
            Some(e) => {
                e.in_table = true;
                true
            }
            None => false,
        }
    }

    /// [`Facts::mark_in_table`] of an id as an [`OpFact`] holds it;
    /// `near`: where the last one marked lay (ids marked in about the
    /// order the history had them are found fastest).
    pub fn mark_in_table_held(&mut self, id: &HeldId, near: &mut usize) -> bool {
        let e = match id {
            HeldId::Bits(v, dashed) => self.events.get_mut_bits_near(*v, *dashed, near),
            HeldId::Text(t) => self.events.get_mut(t),
            HeldId::None => None,
        };
        match e {
            Some(e) => {
                e.in_table = true;
                true
            }
            None => false,
        }
    }

    /// The name of ingest step `idx` (from the header), or `step idx`.
    pub fn ingest_step_name(&self, idx: u32) -> String {
        self.header
            .as_ref()
            .and_then(|h| h.ingest_steps.get(idx as usize))
            .cloned()
            .unwrap_or_else(|| format!("step {idx}"))
    }

    /// The key index of (project, fingerprint), if any op had it.
    pub fn key_of(&self, project: &str, fingerprint: &str) -> Option<u32> {
        self.key_index
            .get(project)
            .and_then(|f| f.get(fingerprint))
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

    /// Records one finished op's summary ([`OpFact`]): what its event
    /// and its group learn from it. `fact`'s named triple is an index of
    /// these facts' own ([`Facts::name`]).
    pub fn apply(&mut self, fact: OpFact) {
        match fact {
            OpFact::Ingest(i) => self.apply_ingest(&i),
            OpFact::Resolve(r) => self.apply_resolve(*r),
            OpFact::Nothing => {}
        }
    }

    /// [`Facts::apply`] of an ingest's summary.
    pub fn apply_ingest(&mut self, i: &IngestOp) {
        let key = self.named_key(i.named);
        let hook_insert = i.hook_insert.clone().map(|c| self.cause(c));
        if let Some(completed) = i.pending {
            self.pending_maybe
                .push((i.event.text(), i.op, i.t, completed));
        }
        let cause = i.cause.clone().map(|c| self.cause(c));
        let ev = match &i.event {
            HeldId::Bits(v, dashed) => self.events.or_default_bits(*v, *dashed),
            HeldId::Text(id) => self.events.or_default(id),
            HeldId::None => unreachable!("an ingest without an event id has no summary"),
        };
        ev.key = key;
        ev.done |= i.done;
        ev.maybe |= i.maybe;
        ev.acked |= i.acked;
        if i.done {
            ev.counted += 1;
        }
        if let Some(t) = i.count_from {
            ev.note_count_from(t);
        }
        if let Some(t) = i.counted_by {
            ev.note_counted_by(t);
        }
        ev.tries.push(Attempt {
            op: i.op,
            start: i.start,
            decided: i.decided.unwrap_or(NONE),
            stop: i.stop.unwrap_or(u32::MAX),
            effect: i.effect,
            own_insert: i.own_insert,
            counted: i.done,
            indeterminate: i.indeterminate,
        });
        if i.inserted {
            ev.set_insert(i.op, cause);
        } else if let (Some(c), None) = (hook_insert, ev.insert()) {
            // Without a step log: if the row is there and nothing counted
            // it, an attempt that crashed before counting inserted it.
            ev.set_insert(i.op, Some(c));
        }
        if i.counting.is_some() || i.acked_at.is_some() {
            let g = self.groups.entry(key).or_default();
            g.key = Some(key);
            if let Some((start, Some(end))) = i.counting {
                if g.counting_steps.capacity() == 0 {
                    let (p, f) = &self.keys[key as usize];
                    let hint = self.ingest_hint.get(p).and_then(|m| m.get(f));
                    let n = hint.map_or(0, |&n| n as usize);
                    let room = self.spare_steps.capacity();
                    if n > 0 && n <= room && n >= room / 2 {
                        g.counting_steps = std::mem::take(&mut self.spare_steps);
                    } else {
                        g.counting_steps.reserve_exact(n);
                    }
                }
                if let Some(r) = i.read {
                    let at = u32::try_from(g.counting_steps.len())
                        .expect("fewer than 2^32 counting steps");
                    g.reads.push((at, r));
                }
                g.counting_steps.push(CountingStep {
                    op: i.op,
                    op_start: i.t,
                    start,
                    end,
                });
            }
            if let Some(t) = i.acked_at.filter(|_| !(self.acked_unread && self.step_log)) {
                g.acked.push((i.t, t));
            }
        }
    }

    fn apply_resolve(&mut self, r: ResolveOp) {
        if let Some(most) = r.wide {
            self.wide_resolves.push((r.op, most));
        }
        let key = self.named_key(r.named);
        let g = self.groups.entry(key).or_default();
        g.key = Some(key);
        match r.outcome {
            ResolveOutcome::Resolved(f) => g.resolves.push(f),
            ResolveOutcome::Unknown(u) => g.unknown_resolves.push(u),
            ResolveOutcome::Probe(p) => g.probes.push(p),
            ResolveOutcome::Observation(p) => g.observations.push(p),
            ResolveOutcome::Nothing => {}
        }
    }
}

/// Sorts a group's counting steps by start, ties kept in their order (as
/// a stable sort does), in place: steps are recorded as their ops
/// complete, so each lies at most a few places after its place by start,
/// and moving each back there costs no scratch copy (a stable sort of a
/// hot group's millions would take half as much again). A list further
/// out of order than that is sorted by the stable sort, to the same order.
fn sort_by_start(v: &mut [CountingStep]) {
    let mut budget = v.len().saturating_mul(32);
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && v[j - 1].start > v[j].start {
            if budget == 0 {
                v.sort_by_key(|s| s.start);
                return;
            }
            budget -= 1;
            v.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// [`sort_by_start`] of a group whose steps have reads: each read moves
/// with its step (a stable sort of the pairs, to the same order).
fn sort_with_reads(g: &mut GroupFacts) {
    let (steps, reads) = with_reads_by_start(&g.counting_steps, &g.reads);
    g.counting_steps = steps;
    g.reads = reads;
}

/// Counting steps and their reads (by place) sorted by start, ties in
/// their order, each read at its step's new place.
pub(super) fn with_reads_by_start(
    steps: &[CountingStep],
    reads: &[(u32, ReadStep)],
) -> (Vec<CountingStep>, Vec<(u32, ReadStep)>) {
    let mut pairs: Vec<(CountingStep, Option<ReadStep>)> =
        steps.iter().map(|s| (s.clone(), None)).collect();
    for &(at, r) in reads {
        if let Some(p) = pairs.get_mut(at as usize) {
            p.1 = Some(r);
        }
    }
    pairs.sort_by_key(|p| p.0.start);
    let mut out = Vec::with_capacity(pairs.len());
    let mut moved = Vec::with_capacity(reads.len());
    for (i, (s, r)) in pairs.into_iter().enumerate() {
        if let Some(r) = r {
            moved.push((i as u32, r));
        }
        out.push(s);
    }
    (out, moved)
}

/// What the server answered to a request whose answer the proxy dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DroppedAnswer {
    /// `200 {"accepted": b, ...}` to an ingest.
    Ingest(bool),
    /// `200 {"resolved": true, "event_count": n}` to a resolve.
    Resolved(i64),
}

/// The contract's answer in a dropped answer's (status, body), if it is
/// one of the two that tell what happened (anything else narrows nothing).
fn dropped_answer((status, body): (u16, &str)) -> Option<DroppedAnswer> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(op: u64) -> Attempt {
        Attempt {
            op,
            start: op,
            decided: NONE,
            stop: u32::MAX,
            effect: Effect::May,
            own_insert: false,
            counted: false,
            indeterminate: false,
        }
    }

    #[test]
    fn packed_instants_read_back_as_options_and_a_marked_event_is_in_the_table() {
        let mut f = Facts::default();
        let e = f.events.or_default("e1");
        assert_eq!(
            (e.insert(), e.counted_by(), e.count_from()),
            (None, None, None)
        );
        e.note_counted_by(9);
        e.note_counted_by(4);
        e.note_count_from(3);
        e.set_insert(17, None);
        assert_eq!((e.counted_by(), e.count_from()), (Some(4), Some(3)));
        assert_eq!(e.insert(), Some((17, None)));
        e.set_insert(18, Some(2));
        assert_eq!(e.insert(), Some((18, Some(2))));
        // Held per event of a run: the layout is the audit's memory.
        assert!(std::mem::size_of::<EventFacts>() <= 80);
        e.tries.push(attempt(3));
        e.tries.push(attempt(4));
        e.tries.push(attempt(5));
        assert_eq!(e.attempts(), 3);
        assert_eq!(e.tries.iter().map(|a| a.op).collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(e.tries.get_mut(4).map(|a| a.op), Some(4));
        let tables = super::super::Tables::default();
        assert!(!f.events["e1"].in_table(super::super::event_map::Id::Text("e1"), &tables));
        assert!(f.mark_in_table("e1"));
        assert!(!f.mark_in_table("e2"));
        assert!(f.events["e1"].in_table(super::super::event_map::Id::Text("e1"), &tables));
        // The tables' own id set still answers for an unmarked event.
        let tables = super::super::Tables::from_rows(&[("e3", "p", "f")], vec![], 0);
        assert!(f
            .events
            .or_default("e3")
            .in_table(super::super::event_map::Id::Text("e3"), &tables));
    }

    /// Steps a little out of order (as ops complete) and far out of
    /// order (the stable sort's fallback): the same order as a stable
    /// sort by start, ties in their recorded order.
    #[test]
    fn counting_steps_sort_by_start_as_a_stable_sort_does() {
        let step = |op: u64, start: u64| CountingStep {
            op,
            op_start: 0,
            start,
            end: start + 1,
        };
        let mut x: u64 = 7;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for spread in [0u64, 3, 40, 100_000] {
            let v: Vec<CountingStep> = (0..5000u64)
                .map(|i| step(i, i / 2 + if spread == 0 { 0 } else { next() % spread }))
                .collect();
            let mut want = v.clone();
            want.sort_by_key(|s| s.start);
            let mut got = v;
            sort_by_start(&mut got);
            assert_eq!(got, want, "spread {spread}");
        }
    }
}
