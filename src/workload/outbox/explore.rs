//! The outbox world (exactly_once_none_atomic.tla, as
//! `docs/outbox.md` states its intent): H handlers take
//! deliveries (msg_id, dup_id) of M messages x D duplicates from the
//! bench's input queue (LockInMsg, a bench action) and run the `handle`
//! step machine of the user's statement file, one real statement per
//! step, on the explorer's database; the bench acks a delivery after
//! `handle.ack`. The spec's `Fail()` is a branch at every step: a handler
//! may die right after any step (its attempt ends, the delivery returns to
//! the queue). A failed attempt (a `Fail()`, a lost compare-and-swap, an
//! error) brings its delivery back while the redelivery budget lasts, and
//! gives it up after, so the world is finite.
//!
//! Abstractions (each keeps every behaviour; see the README):
//! - **tx_id** is fresh per attempt: `msg * 10000 + dup * 100 + k`, `k` the
//!   smallest number >= 1 whose id no row and no live attempt holds. The
//!   seed's `(id - 1) * DupCount + dupId`, made unique per attempt without
//!   a run-wide counter in the state (which would split states by the
//!   order in which attempts started).
//! - **Handlers are interchangeable**: the key lists their states sorted,
//!   and only the first idle handler takes a delivery (the others' takes
//!   give states equal up to a renaming of handlers).
//! - **Fail() after the step**: "step, then die" is one choice. Dying has
//!   no effect on the rows, so dying later instead is the same as dying at
//!   once and then not taking the delivery until later.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::statements::OutboxVariant;
use crate::explore::db::{encode_value, rows_of};
use crate::explore::machine::{machine_key, run_step, statement};
use crate::explore::world::{ExploreError, StepLabel, Violation, World};
use crate::scenario::Explore;
use crate::workload::outbox::checker::OutboxTables;
use crate::workload::outbox::explore_constants::{Constants, Delivery};
use crate::workload::outbox::explore_invariants;
use crate::workload::{Next, StepMachine, Value};
use rusqlite::Connection;
use std::collections::BTreeSet;

/// The tx_id of the `k`-th traced attempt (k >= 1) on delivery `(m, d)`.
pub fn tx_id((m, d): Delivery, k: i64) -> i64 {
    m * 10_000 + i64::from(d) * 100 + k
}

/// One attempt in flight: its delivery, its tx_id, its step machine (whose
/// position is the spec's `pc` and whose values read are the spec's
/// `stateVer`, `txId` of the head...).
#[derive(Debug, Clone)]
pub struct Attempt<'v> {
    /// The message id.
    pub msg: i64,
    /// The dup id.
    pub dup: u32,
    /// This attempt's tx_id.
    pub tx: i64,
    /// The `handle` machine.
    pub machine: StepMachine<'v>,
}

/// A state of the outbox world besides the rows.
#[derive(Debug, Clone)]
pub struct OutboxState<'v> {
    /// Per handler: its attempt in flight (None: idle, at LockInMsg).
    pub handlers: Vec<Option<Attempt<'v>>>,
    /// The input queue: deliveries ready to be taken (a set: a delivery is
    /// in the queue or in flight, never twice).
    pub queue: BTreeSet<Delivery>,
    /// Deliveries the bench acked (after their attempt ran `handle.ack`).
    pub acked: BTreeSet<Delivery>,
    /// Deliveries given up: failed with no redelivery left.
    pub given_up: BTreeSet<Delivery>,
    /// `Fail()` branches left.
    pub fails_left: u32,
    /// Redeliveries left.
    pub redeliveries_left: u32,
}

impl OutboxState<'_> {
    /// A complete path's end: the queue is empty and every handler idle.
    pub fn is_final(&self) -> bool {
        self.queue.is_empty() && self.handlers.iter().all(Option::is_none)
    }
}

/// One scheduling choice of the outbox world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// LockInMsg: idle handler `h` takes delivery `d` from the queue.
    Take(usize, Delivery),
    /// Handler `h` runs the next step of its attempt.
    Step(usize),
    /// Handler `h` runs the next step of its attempt, then dies (`Fail()`).
    StepThenFail(usize),
}

/// The outbox world over one statement file.
pub struct OutboxWorld<'v> {
    /// The statement file under test.
    pub variant: &'v OutboxVariant,
    /// The world's constants.
    pub c: Constants,
}

impl<'v> OutboxWorld<'v> {
    /// The world of `x` over `variant`.
    pub fn new(variant: &'v OutboxVariant, x: &Explore) -> Self {
        OutboxWorld {
            variant,
            c: Constants::new(x),
        }
    }

    /// The name of handler `h` (h1, h2, ...).
    pub fn handler_name(h: usize) -> String {
        format!("h{}", h + 1)
    }

    /// One line naming the world.
    pub fn describe_world(&self) -> String {
        let c = &self.c;
        format!(
            "{} message(s) x {} delivery(ies), {} handler(s), Fail() budget {}, \
             redelivery budget {}",
            c.messages, c.deliveries, c.handlers, c.fails, c.redeliveries
        )
    }

    /// A failed attempt's delivery: back to the queue, or given up.
    fn settle_failed(&self, s: &mut OutboxState<'v>, d: Delivery) -> String {
        if s.redeliveries_left > 0 {
            s.redeliveries_left -= 1;
            s.queue.insert(d);
            format!("delivery ({}, {}) back to the queue", d.0, d.1)
        } else {
            s.given_up.insert(d);
            format!("delivery ({}, {}) given up (no redelivery left)", d.0, d.1)
        }
    }

    /// The smallest traced-attempt number whose tx_id no row and no live
    /// attempt holds.
    fn fresh_tx(&self, s: &OutboxState<'v>, d: Delivery, db: &Connection) -> i64 {
        let mut used: BTreeSet<i64> = s.handlers.iter().flatten().map(|a| a.tx).collect();
        if let Ok(rows) = rows_of(db) {
            for t in &rows.tables {
                for (_, row) in &t.rows {
                    used.extend(row.iter().filter_map(|v| match v {
                        Value::Int(i) => Some(*i),
                        _ => None,
                    }));
                }
            }
        }
        (1..)
            .map(|k| tx_id(d, k))
            .find(|t| !used.contains(t))
            .expect("some k is free")
    }

    fn step(&self, s: &mut OutboxState<'v>, h: usize, fail: bool, db: &Connection) -> StepLabel {
        let a = s.handlers[h]
            .as_mut()
            .expect("choices offers running handlers");
        let d = (a.msg, a.dup);
        let name = statement(&self.variant.handle, &a.machine);
        let (next, _, mut said) = run_step(&mut a.machine, db);
        // A step that ended the attempt as a failure leaves nothing for
        // Fail() to do: the branch is the plain step (no budget spent).
        let dies = fail && matches!(next, Some(Next::Continue | Next::Finished));
        if dies {
            s.fails_left -= 1;
        }
        let ended = match next {
            Some(Next::Continue) if !dies => None,
            Some(Next::Finished) if !dies => {
                s.acked.insert(d);
                Some("acked: the bench acks the delivery".to_string())
            }
            Some(Next::Continue | Next::Finished) => Some(format!(
                "Fail(): {} dies after this step; {}",
                Self::handler_name(h),
                self.settle_failed(s, d)
            )),
            Some(Next::FailedIf { .. }) => Some(format!(
                "fail-if holds (a lost compare-and-swap); {}",
                self.settle_failed(s, d)
            )),
            Some(other) => Some(format!("{other:?}; {}", self.settle_failed(s, d))),
            None => Some(format!("fail; {}", self.settle_failed(s, d))),
        };
        if let Some(how) = ended {
            said.push_str(&format!("; attempt ends: {how}"));
            s.handlers[h] = None;
        }
        StepLabel {
            actor: Self::handler_name(h),
            statement: name,
            subject: format!("msg {} dup {}", d.0, d.1),
            outcome: said,
        }
    }
}

/// Reads the canonical tables with the file's exports (as the load run's
/// checkers read them, `crate::workload::outbox::checker::tables`).
///
/// # Errors
/// An export statement failed.
pub fn read_tables(db: &Connection, variant: &OutboxVariant) -> Result<OutboxTables, ExploreError> {
    Ok(crate::workload::outbox::checker::tables::read_rows(
        db, variant,
    )?)
}

fn encode_set(set: &BTreeSet<Delivery>, out: &mut Vec<u8>) {
    out.extend_from_slice(&(set.len() as u32).to_le_bytes());
    for (m, d) in set {
        out.extend_from_slice(&m.to_le_bytes());
        out.extend_from_slice(&d.to_le_bytes());
    }
}

fn show_set(set: &BTreeSet<Delivery>) -> String {
    let v: Vec<String> = set.iter().map(|(m, d)| format!("({m}, {d})")).collect();
    format!("{{{}}}", v.join(", "))
}

impl<'v> World for OutboxWorld<'v> {
    type State = OutboxState<'v>;
    type Choice = Choice;
    type View = OutboxTables;

    fn schema(&self) -> &str {
        &self.variant.schema
    }

    fn init(&self) -> OutboxState<'v> {
        OutboxState {
            handlers: vec![None; self.c.handlers],
            queue: (1..=self.c.messages)
                .flat_map(|m| (1..=self.c.deliveries).map(move |d| (m, d)))
                .collect(),
            acked: BTreeSet::new(),
            given_up: BTreeSet::new(),
            fails_left: self.c.fails,
            redeliveries_left: self.c.redeliveries,
        }
    }

    fn view(&self, db: &Connection) -> Result<OutboxTables, ExploreError> {
        read_tables(db, self.variant)
    }

    fn choices(&self, s: &OutboxState<'v>, _view: &OutboxTables) -> Vec<Choice> {
        let mut out = Vec::new();
        for (h, a) in s.handlers.iter().enumerate() {
            if a.is_some() {
                out.push(Choice::Step(h));
                if s.fails_left > 0 {
                    out.push(Choice::StepThenFail(h));
                }
            }
        }
        if let Some(h) = s.handlers.iter().position(Option::is_none) {
            out.extend(s.queue.iter().map(|&d| Choice::Take(h, d)));
        }
        out
    }

    fn take(&self, s: &mut OutboxState<'v>, choice: &Choice, db: &Connection) -> StepLabel {
        match *choice {
            Choice::Take(h, d) => {
                let tx = self.fresh_tx(s, d, db);
                s.queue.remove(&d);
                let builtins = vec![
                    Value::Int(d.0),
                    Value::Int(i64::from(d.1)),
                    Value::Int(tx),
                    Value::Int(self.c.now_ms),
                ];
                s.handlers[h] = Some(Attempt {
                    msg: d.0,
                    dup: d.1,
                    tx,
                    machine: StepMachine::new(&self.variant.handle, builtins),
                });
                StepLabel {
                    actor: Self::handler_name(h),
                    statement: "LockInMsg (the bench's queue)".into(),
                    subject: format!("msg {} dup {}", d.0, d.1),
                    outcome: format!("takes the delivery; tx_id = {tx}"),
                }
            }
            Choice::Step(h) => self.step(s, h, false, db),
            Choice::StepThenFail(h) => self.step(s, h, true, db),
        }
    }

    fn key(&self, s: &OutboxState<'v>, out: &mut Vec<u8>) {
        // Handlers sorted: they are interchangeable.
        let mut hs: Vec<Vec<u8>> = s
            .handlers
            .iter()
            .map(|a| {
                let mut k = Vec::new();
                if let Some(a) = a {
                    k.push(1);
                    encode_value(&Value::Int(a.msg), &mut k);
                    encode_value(&Value::Int(i64::from(a.dup)), &mut k);
                    encode_value(&Value::Int(a.tx), &mut k);
                    machine_key(&a.machine, &mut k);
                } else {
                    k.push(0);
                }
                k
            })
            .collect();
        hs.sort();
        for k in hs {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(&k);
        }
        encode_set(&s.queue, out);
        encode_set(&s.acked, out);
        encode_set(&s.given_up, out);
        out.extend_from_slice(&s.fails_left.to_le_bytes());
        out.extend_from_slice(&s.redeliveries_left.to_le_bytes());
    }

    fn describe(&self, s: &OutboxState<'v>) -> String {
        let hs: Vec<String> = s
            .handlers
            .iter()
            .enumerate()
            .map(|(h, a)| match a {
                None => format!("{} idle", Self::handler_name(h)),
                Some(a) => format!(
                    "{} at {} (msg {} dup {}, tx_id {})",
                    Self::handler_name(h),
                    statement(&self.variant.handle, &a.machine),
                    a.msg,
                    a.dup,
                    a.tx
                ),
            })
            .collect();
        format!(
            "{}; queue {}; acked {}; given up {}; Fail() left {}; redeliveries left {}",
            hs.join(", "),
            show_set(&s.queue),
            show_set(&s.acked),
            show_set(&s.given_up),
            s.fails_left,
            s.redeliveries_left
        )
    }

    fn check(&self, s: &OutboxState<'v>, view: &OutboxTables) -> Vec<Violation> {
        explore_invariants::check(&self.c, &s.acked, s.is_final(), view)
    }
}
