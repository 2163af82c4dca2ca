//! [`OpAssembly`]: a groups history's ops put together from their
//! records (an invoke, its steps, its completion) while in flight, and
//! handed out as an [`OpFact`] once finished: when the completion arrives,
//! or at the end of the history for an op never completed (in op order).
//! [`super::Facts`] records each at once; an audit in parts writes each to
//! the temp file of its key.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::op_fact::{summarize, HeldId, InvokeFact, OpFact, Rules};
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
    inflight: HashMap<u64, (InvokeFact, Vec<StepFact>), foldhash::fast::RandomState>,
    /// Every (project, fingerprint, group id) an invoke named, each once
    /// (an op in flight holds its index, not three texts of its own).
    named: Vec<(String, String, String)>,
    named_index: hashbrown::HashTable<u32>,
    named_hasher: foldhash::fast::RandomState,
    /// Step lists of finished ops, emptied, for the next ops to fill (an
    /// op's steps are not allocated and grown anew for each op).
    spare: Vec<Vec<StepFact>>,
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
        let steps = self.spare.pop().unwrap_or_default();
        if let Some((_, old)) = self.inflight.insert(fact.op, (fact, steps)) {
            self.keep(old);
        }
    }

    /// A step of an op in flight. Errors: no such op.
    pub fn step(&mut self, op: u64, s: StepFact) -> Result<(), OutOfPlace> {
        match self.inflight.get_mut(&op) {
            Some((_, steps)) => {
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
        let Some((invoke, steps)) = self.inflight.remove(&c.op) else {
            return Err(OutOfPlace::Completion(c.op));
        };
        let fact = summarize(&self.rules, invoke, &steps, Some((kind, c)));
        self.keep(steps);
        Ok(fact)
    }

    /// Keeps an emptied step list for a later op (a few: ops in flight at
    /// once are few).
    fn keep(&mut self, mut steps: Vec<StepFact>) {
        if self.spare.len() < 256 && steps.capacity() <= 64 {
            steps.clear();
            self.spare.push(steps);
        }
    }

    /// The ops still in flight at the end of the history, which never
    /// completed (indeterminate): each op and its summary, in op order.
    pub fn finish(&mut self) -> Vec<(u64, OpFact)> {
        let mut left: Vec<_> = self.inflight.drain().collect();
        left.sort_by_key(|(op, _)| *op);
        left.into_iter()
            .map(|(op, (invoke, steps))| (op, summarize(&self.rules, invoke, &steps, None)))
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
