//! What the history of an outbox run says: every `handle` attempt (its
//! delivery, its steps, how it ended), which deliveries the bench acked,
//! which it gave up, and whether the queue drained. Built in one pass over
//! the history; the checkers join it with the final tables by message
//! id, by tx_id and by the steps' times.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::fault_kind::FaultKind;
use crate::history::{CompletionType, Delivery, Entry, FaultAction, ShardHeader, Step};
use crate::shard::Shard;
use crate::verdict::Evidence;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One `handle` attempt: one delivery taken from the queue and run.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// Op id.
    pub op: u64,
    /// The delivery (msg_id, dup_id, attempt number, tx_id).
    pub delivery: Delivery,
    /// Invoke time, ns since run start.
    pub t0: u64,
    /// Completion time; None: the history ends before it completed.
    pub t1: Option<u64>,
    /// How it ended (None: never completed).
    pub completion: Option<CompletionType>,
    /// The error or reason it did not succeed.
    pub error: Option<String>,
    /// A crash fault ended it after this step.
    pub crashed_after: Option<String>,
    /// Its steps as executed, in order (a step run twice appears twice).
    pub steps: Vec<Step>,
}

impl Attempt {
    /// `op N (msg m dup d attempt a, tx t)`, for findings.
    pub fn describe(&self) -> String {
        let d = &self.delivery;
        format!(
            "op {} (msg {} dup {} attempt {}, tx {})",
            self.op, d.msg_id, d.dup_id, d.attempt, d.tx_id
        )
    }

    /// How it ended, in words.
    pub fn outcome(&self) -> String {
        match (self.completion, &self.crashed_after, &self.error) {
            (None, _, _) => "never completed".into(),
            (Some(CompletionType::Ok), _, _) => "ok (acked)".into(),
            (Some(c), Some(s), _) => format!("{} (crashed after {s})", c.name()),
            (Some(c), None, Some(e)) => format!("{} ({e})", c.name()),
            (Some(c), None, None) => c.name().to_string(),
        }
    }

    /// Evidence: each step of this attempt that changed rows (what it
    /// wrote), then how the attempt ended.
    pub fn evidence(&self) -> Vec<Evidence> {
        let mut out: Vec<Evidence> = self
            .steps
            .iter()
            .filter(|s| s.changes > 0 || s.maybe_applied())
            .map(|s| Evidence {
                t: s.end.unwrap_or(s.start),
                op: Some(self.op),
                what: format!(
                    "{}: step {} changed {} row(s){}",
                    self.describe(),
                    s.step,
                    s.changes,
                    if s.maybe_applied() {
                        " (may have applied: it failed or never ended)"
                    } else {
                        ""
                    }
                ),
            })
            .collect();
        out.push(Evidence {
            t: self.t1.unwrap_or(self.t0),
            op: Some(self.op),
            what: format!("{} ended {}", self.describe(), self.outcome()),
        });
        out
    }
}

/// The history of an outbox run, as the checkers read it.
#[derive(Debug, Clone, Default)]
pub struct OutboxFacts {
    /// The queue's shape (messages, deliveries, delivery budget).
    pub header: Option<crate::workload::outbox::header::OutboxHeader>,
    /// The history is one shard's of a sharded run (its header's record;
    /// None for a whole run, and for a merged one): its queue held only
    /// the messages the shard owns ([`Shard::owns_message`]).
    pub shard: Option<ShardHeader>,
    /// Every attempt, in invoke order.
    pub attempts: Vec<Attempt>,
    /// Attempts (indexes into `attempts`) per message id.
    pub by_msg: BTreeMap<i64, Vec<usize>>,
    /// The attempt of each tx_id.
    pub by_tx: HashMap<i64, usize>,
    /// Deliveries the bench acked ((msg, dup) -> the `ok` attempt's op).
    pub acked_history: BTreeMap<(i64, u32), u64>,
    /// Deliveries given up: no `ok` after the delivery budget.
    pub given_up: BTreeSet<(i64, u32)>,
    /// The load was interrupted (footer `partial`).
    pub partial: bool,
    /// Faults were injected (some fault entry in the history).
    pub faults_seen: bool,
    /// Attempts (op ids) whose request the fault proxy never forwarded
    /// (a `reset` or `error` toxic: its fault entry says `forwarded:
    /// false`): the server never saw them, so they ran no step, whatever
    /// their `info` completion says. See [`OutboxFacts::may_have_run`].
    pub never_forwarded: BTreeSet<u64>,
    /// The history has no step log (an HTTP target: the server ran the
    /// steps). Then an attempt that is neither `ok` nor `fail` may have
    /// run any prefix of its steps, and its recorded tx_id is 0 (the
    /// server's own tx ids are unknown to the bench): no row is joined to
    /// an attempt by tx_id.
    pub no_step_log: bool,
    /// Whether the history holds every attempt the run invoked (set by
    /// whoever read it: a history without a footer is cut).
    pub completeness: crate::history::completeness::Completeness,
}

impl OutboxFacts {
    /// Reads a whole outbox history (entries in file order): the attempts
    /// with their steps and completions, then the acks, the given-up
    /// deliveries and the indexes. Entries of other op kinds are ignored.
    /// Errors: a read error of an entry.
    pub fn read<E: std::fmt::Display>(
        entries: impl Iterator<Item = Result<Entry, E>>,
    ) -> anyhow::Result<OutboxFacts> {
        let mut f = OutboxFacts::default();
        let mut open: HashMap<u64, usize> = HashMap::new();
        for e in entries {
            let e = e.map_err(|e| anyhow::anyhow!("{e}"))?;
            let (kind, c) = match e {
                Entry::Header(h) => {
                    f.header = crate::workload::outbox::header::of(&h);
                    f.shard = h.shard;
                    f.no_step_log = !h.step_log;
                    continue;
                }
                Entry::Invoke(i) => {
                    let Some(delivery) = i.delivery else { continue };
                    open.insert(i.op, f.attempts.len());
                    f.attempts.push(Attempt {
                        op: i.op,
                        delivery,
                        t0: i.t,
                        t1: None,
                        completion: None,
                        error: None,
                        crashed_after: None,
                        steps: Vec::new(),
                    });
                    continue;
                }
                Entry::Step(s) => {
                    if let Some(&a) = open.get(&s.op) {
                        f.attempts[a].steps.push(s);
                    }
                    continue;
                }
                Entry::Fault(fault) => {
                    f.faults_seen = true;
                    // Written by the proxy before the attempt's own
                    // entries (it records before the client hears
                    // anything): kept by op id, read once all is known.
                    if let (FaultKind::Proxy, FaultAction::Inject, Some(false), Some(op)) =
                        (fault.kind, fault.action, fault.forwarded, fault.op)
                    {
                        f.never_forwarded.insert(op);
                    }
                    continue;
                }
                Entry::Footer(ft) => {
                    f.partial = ft.partial;
                    continue;
                }
                // The bench's own checkpoints change no row.
                Entry::Bench(_) => continue,
                Entry::Ok(c) => (CompletionType::Ok, c),
                Entry::Fail(c) => (CompletionType::Fail, c),
                Entry::Info(c) => (CompletionType::Info, c),
            };
            if let Some(&i) = open.get(&c.op) {
                let a = &mut f.attempts[i];
                a.t1 = Some(c.t);
                a.completion = Some(kind);
                a.error = c.result.error;
                a.crashed_after = c.result.crashed_after;
            }
        }
        f.index();
        Ok(f)
    }

    /// Builds the indexes, the acks and the given-up set from `attempts`
    /// (public so that tests can build facts by hand).
    pub fn index(&mut self) {
        self.by_msg.clear();
        self.by_tx.clear();
        self.acked_history.clear();
        self.given_up.clear();
        let mut tries: BTreeMap<(i64, u32), u32> = BTreeMap::new();
        for (i, a) in self.attempts.iter().enumerate() {
            let d = a.delivery;
            self.by_msg.entry(d.msg_id).or_default().push(i);
            if !self.no_step_log {
                self.by_tx.insert(d.tx_id, i);
            }
            *tries.entry((d.msg_id, d.dup_id)).or_default() += 1;
            if a.completion == Some(CompletionType::Ok) {
                self.acked_history.insert((d.msg_id, d.dup_id), a.op);
            }
        }
        if let Some(h) = self.header {
            for (key, n) in tries {
                if n >= h.max_attempts && !self.acked_history.contains_key(&key) {
                    self.given_up.insert(key);
                }
            }
        }
    }

    /// The attempts of message `m`.
    pub fn attempts_of(&self, m: i64) -> impl Iterator<Item = &Attempt> {
        self.by_msg
            .get(&m)
            .into_iter()
            .flatten()
            .map(|&i| &self.attempts[i])
    }

    /// Message ids acked: some delivery of it acked in the history AND held
    /// by `processed` (`docs/outbox.md`'s "acked").
    pub fn acked_msgs(&self, tables: &super::OutboxTables) -> BTreeSet<i64> {
        let rows = tables.by_msg();
        self.acked_history
            .keys()
            .filter(|&&(m, d)| rows.processed_holds(m, d))
            .map(|&(m, _)| m)
            .collect()
    }

    /// Message ids given up: no delivery of it acked, at least one given up.
    pub fn given_up_msgs(&self) -> BTreeSet<i64> {
        self.given_up
            .iter()
            .map(|&(m, _)| m)
            .filter(|&m| {
                self.acked_history
                    .range((m, 0)..=(m, u32::MAX))
                    .next()
                    .is_none()
            })
            .collect()
    }

    /// Whether every delivery of the queue was acked or given up.
    pub fn drained(&self) -> bool {
        let Some(h) = self.header else { return false };
        let settled = self.acked_history.len() + self.given_up.len();
        settled as u64 == self.message_ids().count() as u64 * h.deliveries as u64
    }

    /// The shard of several this history is one part of (None: a whole
    /// run, a merged one, or a shard 0 of 1).
    pub fn shard_of_several(&self) -> Option<Shard> {
        self.shard.as_ref().filter(|s| s.count > 1).map(|s| Shard {
            index: s.index,
            count: s.count,
        })
    }

    /// The message ids of the queue: 1..=M, or a shard's own among them.
    pub fn message_ids(&self) -> impl Iterator<Item = i64> + '_ {
        let m = self.header.map_or(0, |h| h.messages as i64);
        let shard = self.shard_of_several();
        (1..=m).filter(move |&id| Shard::owns_message(shard, id))
    }

    /// Evidence for message `m`: for every attempt of it, the steps that
    /// changed rows and how it ended; the attempt whose tx_id a state_log
    /// row carries is named by the caller. Without a step log, a first
    /// line says what an `info` attempt may have done.
    pub fn evidence_of(&self, m: i64) -> Vec<crate::verdict::Evidence> {
        let mut ev: Vec<Evidence> = self.attempts_of(m).flat_map(Attempt::evidence).collect();
        ev.extend(
            self.attempts_of(m)
                .filter(|a| self.never_forwarded.contains(&a.op))
                .map(|a| Evidence {
                    t: a.t1.unwrap_or(a.t0),
                    op: Some(a.op),
                    what: format!(
                        "{}: the fault proxy never forwarded its request (it ran no step)",
                        a.describe()
                    ),
                }),
        );
        ev.sort_by_key(|e| e.t);
        if self.no_step_log {
            ev.insert(
                0,
                Evidence {
                    t: 0,
                    op: None,
                    what: "no step log (HTTP target): an attempt that ended info (or never \
                           completed) may have run any prefix of its steps"
                        .into(),
                },
            );
        }
        ev
    }

    /// Whether attempt `a` may have run step `name` with effect: its step
    /// log says so, or there is no step log and it ended `ok` (it ran
    /// everything) or indeterminately (`info`, never completed: any
    /// prefix), unless the fault proxy never forwarded its request.
    ///
    /// The proxy's narrowing is sound: it records `forwarded: false` only
    /// for a request it answered itself (a reset, an injected 5xx) without
    /// opening any connection to the server, and an attempt is one
    /// request (a redelivery is a new attempt, with an op id of its own),
    /// so no step of the attempt ran. A request it forwarded and whose
    /// answer it dropped narrows nothing: the server ran the attempt, and
    /// the bench never heard how it ended (`docs/outbox.md`, "Proxy
    /// faults").
    pub fn may_have_run(&self, a: &Attempt, name: &str) -> bool {
        if self.no_step_log {
            return a.completion != Some(CompletionType::Fail)
                && !self.never_forwarded.contains(&a.op);
        }
        a.steps
            .iter()
            .any(|s| s.step == name && (s.changes > 0 || s.maybe_applied()))
    }
}
