//! Leases of the outbox input queue (`outbox.lease`, outbox.md: "a slow
//! handler whose lease ran out can still be running when the message is
//! delivered again ... That overlap is allowed and must be survivable").
//!
//! Without a lease the queue hands a delivery out again only after its
//! attempt ended (the queue's own code, untouched). With one, the queue
//! keeps this book beside it: which attempt holds each delivery and until
//! when, how many attempts of it are still running, and whether it was
//! acked. A delivery whose holder did not end within the lease goes back
//! to the tail of the queue while the holder keeps running: the next
//! attempt (its own tx_id) overlaps it. Whichever attempt acks first acks
//! the delivery; a later ack is counted (`late_acks`) and changes nothing.
//!
//! Kept apart from the queue so that the queue can move (an HTTP runtime
//! shares it) with these few calls: [`Leases::expire`] before a take,
//! [`Leases::skip`] and [`Leases::taken`] at a take, [`Leases::settle`]
//! when an attempt ends.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What the queue does when an attempt ends under leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// The first ack of the delivery: count it acked.
    Acked,
    /// The holder failed with budget left: put the delivery at the tail.
    Requeue,
    /// The delivery's budget is spent and no attempt of it still runs.
    GiveUp,
    /// Nothing changes: a late ack, or an attempt whose lease had expired
    /// (its delivery was handed out again), or one whose overlapping
    /// attempts still run.
    Nothing,
}

/// The lease state of one delivery.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Attempts of it running now.
    live: u32,
    /// Some attempt of it acked.
    acked: bool,
    /// It waits in the ready queue.
    queued: bool,
}

/// The lease book of a queue of `n` deliveries (slots `0..n`).
#[derive(Debug)]
pub struct Leases {
    lease: Duration,
    slots: Vec<Slot>,
    /// Slot -> (attempt number holding the lease, its deadline; None: it
    /// expired with the budget spent, so it holds the delivery to the end).
    held: HashMap<usize, (u32, Option<Instant>)>,
    /// Attempts started while another attempt of the same delivery ran.
    pub overlapping: u64,
    /// Leases that ran out while their attempt ran (deliveries handed out
    /// again, or kept by a spent budget).
    pub expired: u64,
    /// Acks of a delivery that an earlier-finishing attempt had acked.
    pub late_acks: u64,
}

impl Leases {
    /// A book for `n` deliveries, each attempt holding its delivery for
    /// `lease` (> 0).
    pub fn new(lease: Duration, n: usize) -> Self {
        Leases {
            lease,
            slots: vec![Slot::default(); n],
            held: HashMap::new(),
            overlapping: 0,
            expired: 0,
            late_acks: 0,
        }
    }

    /// The slots whose lease ran out by `now` and that go back to the
    /// queue (their holders keep running). `attempts` is the queue's
    /// attempts-started per slot: a delivery whose budget
    /// (`max_attempts`) is spent is not handed out again, its holder
    /// keeps it to the end.
    pub fn expire(&mut self, now: Instant, attempts: &[u32], max_attempts: u32) -> Vec<usize> {
        let due: Vec<usize> = self
            .held
            .iter()
            .filter(|(_, (_, d))| d.is_some_and(|d| d <= now))
            .map(|(&i, _)| i)
            .collect();
        let mut back = Vec::new();
        for i in due {
            self.expired += 1;
            if attempts[i] >= max_attempts {
                if let Some(h) = self.held.get_mut(&i) {
                    h.1 = None;
                }
                continue;
            }
            self.held.remove(&i);
            self.slots[i].queued = true;
            back.push(i);
        }
        back.sort_unstable();
        back
    }

    /// Whether the ready slot `i` just popped is to be dropped: it was
    /// acked (by an overlapping attempt) while it waited.
    pub fn skip(&mut self, i: usize) -> bool {
        let s = &mut self.slots[i];
        s.queued = false;
        s.acked
    }

    /// Attempt `attempt` of slot `i` starts at `now`; it holds the
    /// delivery until `now + lease`.
    pub fn taken(&mut self, i: usize, attempt: u32, now: Instant) {
        let s = &mut self.slots[i];
        if s.live > 0 {
            self.overlapping += 1;
        }
        s.live += 1;
        s.queued = false;
        // A lease beyond what an Instant holds never runs out.
        match now.checked_add(self.lease) {
            Some(until) => self.held.insert(i, (attempt, Some(until))),
            None => self.held.insert(i, (attempt, None)),
        };
    }

    /// Attempt `attempt` of slot `i` ended (`acked`: it ran through its
    /// ack); `used` is the slot's attempts started, `max_attempts` the
    /// budget. Says what the queue does.
    pub fn settle(
        &mut self,
        i: usize,
        attempt: u32,
        acked: bool,
        used: u32,
        max_attempts: u32,
    ) -> Settle {
        let holder = self.held.get(&i).is_some_and(|h| h.0 == attempt);
        if holder {
            self.held.remove(&i);
        }
        let s = &mut self.slots[i];
        s.live = s.live.saturating_sub(1);
        if acked {
            if s.acked {
                self.late_acks += 1;
                return Settle::Nothing;
            }
            s.acked = true;
            // A newer attempt may hold it: its lease must not hand out an
            // acked delivery again.
            self.held.remove(&i);
            return Settle::Acked;
        }
        if s.acked {
            return Settle::Nothing;
        }
        if holder && used < max_attempts {
            s.queued = true;
            return Settle::Requeue;
        }
        // Spent budget (or a failed attempt whose lease had expired): give
        // up only once nothing holds it, waits for it, or still runs.
        if s.live == 0 && !s.queued && !self.held.contains_key(&i) {
            return Settle::GiveUp;
        }
        Settle::Nothing
    }
}
