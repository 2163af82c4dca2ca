//! [`OpAssembly`]: a groups history's ops put together from their
//! records (an invoke, its steps, its completion) while in flight, and
//! handed out as an [`OpFact`] once finished: when the completion arrives,
//! or at the end of the history for an op never completed (in op order).
//! [`super::Facts`] records each at once; an audit in parts writes each to
//! the temp file of its key.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::op_fact::{summarize, summarize_unboxed, HeldId, IngestOp, InvokeFact, OpFact, Rules};
use super::op_types::EventStep;
use super::step_fact::StepFact;
use crate::history::codec::{CompletionView, InvokeView};
use crate::history::{Completion, CompletionType, Header};
use std::collections::HashMap;
use std::hash::BuildHasher;

/// An op record out of place: the history is not one a run wrote.
#[derive(Debug, thiserror::Error)]
pub enum OutOfPlace {
    /// A step of an op never invoked.
    #[error("step of op {0} which was not invoked")]
    Step(u64),
    /// A completion of an op never invoked.
    #[error("completion of op {0} which was not invoked")]
    Completion(u64),
}

/// The ops in flight, and every (project, fingerprint, group id) an
/// invoke named (see the module's doc).
#[derive(Debug, Clone, Default)]
pub struct OpAssembly {
    /// From the header.
    pub rules: Rules,
    inflight: InFlight,
    /// Every (project, fingerprint, group id) an invoke named, each once
    /// (an op in flight holds its index, not three texts of its own).
    named: Vec<(String, String, String)>,
    named_index: hashbrown::HashTable<u32>,
    named_hasher: foldhash::fast::RandomState,
}

/// Slots of [`InFlight`].
const SLOTS: usize = 1024;

/// The ops in flight, each with its invoke and its steps so far. They
/// are few at once (about one per worker) and op ids are dense, so an
/// op lies in the slot of its id modulo [`SLOTS`] (no hashing, and the
/// slot's step list is filled again by the next op, not allocated
/// anew); an op whose slot is taken lies in a map.
#[derive(Debug, Clone, Default)]
struct InFlight {
    slots: Vec<Slot>,
    more: HashMap<u64, Slot, foldhash::fast::RandomState>,
}

/// An op in flight (None: a free slot) and its steps so far.
#[derive(Debug, Clone, Default)]
struct Slot {
    invoke: Option<InvokeFact>,
    steps: Vec<StepFact>,
}

impl Slot {
    fn holds(&self, op: u64) -> bool {
        self.invoke.as_ref().is_some_and(|i| i.op == op)
    }
}

impl InFlight {
    fn slot(op: u64) -> usize {
        (op % SLOTS as u64) as usize
    }

    /// An op invoked; one invoked again starts over (its steps so far
    /// dropped).
    fn insert(&mut self, fact: InvokeFact) {
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, Slot::default);
        }
        let op = fact.op;
        let slot = &mut self.slots[Self::slot(op)];
        if slot.holds(op) || (slot.invoke.is_none() && !self.more.contains_key(&op)) {
            slot.invoke = Some(fact);
            slot.steps.clear();
            return;
        }
        self.more.insert(
            op,
            Slot {
                invoke: Some(fact),
                steps: Vec::new(),
            },
        );
    }

    /// The steps so far of op `op`, if in flight.
    fn steps(&mut self, op: u64) -> Option<&mut Vec<StepFact>> {
        match self.slots.get_mut(Self::slot(op)) {
            Some(slot) if slot.holds(op) => Some(&mut slot.steps),
            _ => self.more.get_mut(&op).map(|s| &mut s.steps),
        }
    }

    /// `f` of op `op`'s invoke and steps, the op taken out of flight;
    /// None: it is not in flight.
    fn take<R>(&mut self, op: u64, f: impl FnOnce(InvokeFact, &[StepFact]) -> R) -> Option<R> {
        match self.slots.get_mut(Self::slot(op)) {
            Some(slot) if slot.holds(op) => {
                let invoke = slot.invoke.take()?;
                let r = f(invoke, &slot.steps);
                slot.steps.clear();
                // A rare op of many steps does not keep its room.
                if slot.steps.capacity() > 64 {
                    slot.steps = Vec::new();
                }
                Some(r)
            }
            _ => {
                let Slot { invoke, steps } = self.more.remove(&op)?;
                Some(f(invoke?, &steps))
            }
        }
    }

    /// Every op in flight, taken out, in op order.
    fn drain(&mut self) -> Vec<(InvokeFact, Vec<StepFact>)> {
        let mut left: Vec<_> = (self.slots.iter_mut())
            .chain(self.more.values_mut())
            .filter_map(|s| Some((s.invoke.take()?, std::mem::take(&mut s.steps))))
            .collect();
        self.more.clear();
        left.sort_by_key(|(i, _)| i.op);
        left
    }
}

impl OpAssembly {
    /// Takes the header's rules.
    pub fn header(&mut self, h: &Header) {
        self.rules = Rules {
            step_log: h.step_log,
            counting_step: h.counting_step,
            event_step: match h.event_step {
                Some(i) => EventStep::Known(i),
                // Before the field existed, step 0 was taken for it.
                None if h.schema_version < 3 => EventStep::Assumed(0),
                None => EventStep::Unknown,
            },
            ingest_steps: Some(h.ingest_steps.clone()),
        };
    }

    /// An op invoked: in flight until its completion.
    pub fn invoke(&mut self, i: &InvokeView<'_>) {
        self.invoke_held(i, HeldId::of(i.event_id));
    }

    /// [`OpAssembly::invoke`] with its event id already read as held.
    pub fn invoke_held(&mut self, i: &InvokeView<'_>, event: HeldId) {
        let named = self.name(i.project, i.fingerprint, i.group_id);
        self.invoke_named(i, named, event);
    }

    /// [`OpAssembly::invoke_held`] with its triple already named
    /// ([`OpAssembly::name`]).
    pub fn invoke_named(&mut self, i: &InvokeView<'_>, named: u32, event: HeldId) {
        self.invoke_fact(InvokeFact {
            t: i.t,
            op: i.op,
            f: i.f,
            named,
            event,
        });
    }

    /// An op invoked, as its facts need it (its triple already named).
    pub fn invoke_fact(&mut self, fact: InvokeFact) {
        self.inflight.insert(fact);
    }

    /// A step of an op in flight. Errors: no such op.
    pub fn step(&mut self, op: u64, s: StepFact) -> Result<(), OutOfPlace> {
        match self.inflight.steps(op) {
            Some(steps) => {
                steps.push(s);
                Ok(())
            }
            None => Err(OutOfPlace::Step(op)),
        }
    }

    /// An op's completion: its summary. Errors: no such op in flight.
    pub fn complete(&mut self, kind: CompletionType, c: Completion) -> Result<OpFact, OutOfPlace> {
        self.complete_view(kind, &CompletionView::of(&c))
    }

    /// [`OpAssembly::complete`] of a completion read where it lies.
    pub fn complete_view(
        &mut self,
        kind: CompletionType,
        c: &CompletionView<'_>,
    ) -> Result<OpFact, OutOfPlace> {
        Ok(match self.complete_with(kind, c, |fact| fact)? {
            Ok(i) => OpFact::Ingest(Box::new(i)),
            Err(f) => f,
        })
    }

    /// `f` of the summary of [`OpAssembly::complete_view`], an ingest's
    /// not boxed ([`summarize_unboxed`]), handed to `f` where it was made
    /// (not moved out and back).
    pub fn complete_with<R>(
        &mut self,
        kind: CompletionType,
        c: &CompletionView<'_>,
        f: impl FnOnce(Result<IngestOp, OpFact>) -> R,
    ) -> Result<R, OutOfPlace> {
        let rules = &self.rules;
        self.inflight
            .take(c.op, |invoke, steps| {
                f(summarize_unboxed(rules, invoke, steps, Some((kind, c))))
            })
            .ok_or(OutOfPlace::Completion(c.op))
    }

    /// The ops still in flight at the end of the history, which never
    /// completed (indeterminate): each op and its summary, in op order.
    pub fn finish(&mut self) -> Vec<(u64, OpFact)> {
        (self.inflight.drain().into_iter())
            .map(|(invoke, steps)| (invoke.op, summarize(&self.rules, invoke, &steps, None)))
            .collect()
    }

    /// The index of a (project, fingerprint, group id) triple, added if new.
    pub fn name(&mut self, project: &str, fingerprint: &str, group_id: &str) -> u32 {
        if let Some(i) = self.named_bytes(
            project.as_bytes(),
            fingerprint.as_bytes(),
            group_id.as_bytes(),
        ) {
            return i;
        }
        let hash = self
            .named_hasher
            .hash_one(triple_bytes((project, fingerprint, group_id)));
        let i = u32::try_from(self.named.len()).expect("fewer than 2^32 keys");
        self.named.push((
            project.to_string(),
            fingerprint.to_string(),
            group_id.to_string(),
        ));
        let OpAssembly {
            named,
            named_index,
            named_hasher,
            ..
        } = self;
        named_index.insert_unique(hash, i, |&j| {
            let (p, f, g) = &named[j as usize];
            named_hasher.hash_one(triple_bytes((p, f, g)))
        });
        i
    }

    /// The index of a triple already named, found by its bytes (None: not
    /// named yet). Bytes found are those of a named triple's text.
    pub fn named_bytes(&self, project: &[u8], fingerprint: &[u8], group_id: &[u8]) -> Option<u32> {
        let hash = self.named_hasher.hash_one((project, fingerprint, group_id));
        let named = &self.named;
        self.named_index
            .find(hash, |&i| {
                let (p, f, g) = &named[i as usize];
                triple_bytes((p, f, g)) == (project, fingerprint, group_id)
            })
            .copied()
    }

    /// The triple of index `i` ([`OpAssembly::name`]).
    pub fn named(&self, i: u32) -> &(String, String, String) {
        &self.named[i as usize]
    }

    /// Every triple named, by index.
    pub fn into_named(self) -> Vec<(String, String, String)> {
        self.named
    }

    /// Triples named so far.
    pub fn named_len(&self) -> usize {
        self.named.len()
    }
}

/// A triple's texts as bytes: hashed and compared alike whether read as
/// text or as bytes.
fn triple_bytes<'a>((p, f, g): (&'a str, &'a str, &'a str)) -> (&'a [u8], &'a [u8], &'a [u8]) {
    (p.as_bytes(), f.as_bytes(), g.as_bytes())
}
