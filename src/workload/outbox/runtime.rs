//! The concurrent runtime of the outbox workload on the in-process SQLite
//! target: the bench's input queue (in memory, seeded shuffle, redelivery
//! of failed attempts up to a budget) and H handler threads, each owning
//! one connection (no blocking-pool hop per statement, which costs 5x),
//! each taking a delivery (LockInMsg, the op's invoke), driving the
//! `handle` step machine step by step, and acking the delivery when the
//! machine ran through `handle.ack`. Faults act between steps: a crash per
//! step or per attempt (`Fail()` of the spec: the attempt ends `info`, the
//! delivery comes back), a pause before a step; a lost compare-and-swap
//! (`fail-if`) ends the attempt as a natural failure (`fail`).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::statements::OutboxVariant;
use crate::clock::{wall_ms, Clock};
use crate::control::{AbortCause, Control};
use crate::draws::draw_rng;
use crate::fault_kind::FaultKind;
use crate::history::writer::{Batch, HistorySink};
use crate::history::{Completion, CompletionType, Delivery, Entry, Invoke, OpKind, OpResult, Step};
use crate::live::Live;
use crate::nemesis::Recorder;
use crate::scenario::{CrashPer, FaultOps, Scenario};
use crate::scheduler::{Scheduler, Worker};
use crate::shard::Shard;
use crate::target::sqlite::client::{Journal, StepError};
use crate::workload::outbox::config::OutboxConfig;
use crate::workload::outbox::lease::{Leases, Settle};
use crate::workload::outbox::live::OutboxLive;
use crate::workload::outbox::{attempt_result, end_after, AttemptEnd};
use crate::workload::{StepMachine, StepOutcome, Value};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::Connection;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One delivery of the queue: (msg_id, dup_id).
pub type Key = (i64, u32);

/// The bench's input queue: every (msg, dup) once (a shard's: those of its
/// own messages, [`Queue::sharded`]), shuffled by the seed; a
/// failed attempt puts its delivery back at the tail, until the delivery's
/// attempts reach `max_attempts` (then it is given up). With
/// `outbox.lease`, a delivery also goes back when its attempt outlives the
/// lease ([`crate::workload::outbox::lease`]).
#[derive(Debug)]
pub struct Queue {
    ready: VecDeque<Key>,
    /// Attempts started per delivery, indexed by (msg-1)*D + (dup-1).
    attempts: Vec<u32>,
    deliveries: u32,
    max_attempts: u32,
    in_flight: u64,
    /// Deliveries acked.
    pub acked: u64,
    /// Messages some delivery of which was handed out: the outbox's fresh
    /// events, for the live figures.
    pub messages_started: u64,
    /// Attempts started on a delivery that had been handed out before.
    pub redelivered: u64,
    /// Deliveries given up, in the order they were.
    pub given_up: Vec<Key>,
    total: u64,
    /// The lease book (None: no `outbox.lease`).
    pub leases: Option<Leases>,
}

impl Queue {
    /// The queue of M messages x D deliveries, shuffled by ChaCha8(`seed`).
    pub fn new(cfg: &OutboxConfig, seed: u64) -> Self {
        Queue::sharded(cfg, seed, None)
    }

    /// Shard i of n's part of [`Queue::new`]: the same shuffled queue,
    /// keeping only the deliveries of the messages the shard owns
    /// ([`Shard::owns_message`]), in the same order. The n shards' queues
    /// are disjoint and together hold the unsharded queue; `None` (or
    /// shard 0 of 1) is the unsharded queue itself.
    pub fn sharded(cfg: &OutboxConfig, seed: u64, shard: Option<Shard>) -> Self {
        let mut ready: Vec<Key> = (1..=cfg.messages as i64)
            .flat_map(|m| (1..=cfg.deliveries).map(move |d| (m, d)))
            .collect();
        ready.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
        // Slots are indexed by the run-wide (msg, dup), whoever owns it.
        let slots = ready.len();
        ready.retain(|&(m, _)| Shard::owns_message(shard, m));
        let total = ready.len() as u64;
        Queue {
            ready: ready.into(),
            attempts: vec![0; slots],
            deliveries: cfg.deliveries,
            max_attempts: cfg.max_attempts,
            in_flight: 0,
            acked: 0,
            messages_started: 0,
            redelivered: 0,
            given_up: Vec::new(),
            total,
            leases: cfg.lease.map(|l| Leases::new(l, slots)),
        }
    }

    fn slot(&self, (m, d): Key) -> usize {
        (m as usize - 1) * self.deliveries as usize + (d as usize - 1)
    }

    /// LockInMsg: the next delivery and its attempt number (1-based), or
    /// None when nothing is ready now (some may still come back).
    pub fn take(&mut self) -> Option<(Key, u32)> {
        self.take_at(Instant::now())
    }

    /// [`Queue::take`], and the messages started so far into `live`'s
    /// count of fresh events.
    pub fn take_counted(&mut self, live: &crate::live::Live) -> Option<(Key, u32)> {
        let taken = self.take();
        live.generated
            .store(self.messages_started, std::sync::atomic::Ordering::Relaxed);
        taken
    }

    /// [`Queue::take`] at `now` (leases expire by it; tests pass their own).
    pub fn take_at(&mut self, now: Instant) -> Option<(Key, u32)> {
        self.expire_leases(now);
        loop {
            let key = self.ready.pop_front()?;
            let i = self.slot(key);
            if self.leases.as_mut().is_some_and(|l| l.skip(i)) {
                continue;
            }
            let first = i - i % self.deliveries as usize;
            if self.attempts[first..first + self.deliveries as usize]
                .iter()
                .all(|&a| a == 0)
            {
                self.messages_started += 1;
            }
            self.attempts[i] += 1;
            self.in_flight += 1;
            if self.attempts[i] > 1 {
                self.redelivered += 1;
            }
            if let Some(l) = &mut self.leases {
                l.taken(i, self.attempts[i], now);
            }
            return Some((key, self.attempts[i]));
        }
    }

    /// Leases: deliveries whose attempt outlived the lease are handed out
    /// next, while that attempt keeps running. They go to the head, not
    /// the tail: an expired lease makes a message visible again where it
    /// was (as a visibility timeout does), ahead of deliveries queued
    /// after it; at the tail of a long queue the slow attempt would mostly
    /// end before the redelivery, and the overlap would rarely happen.
    fn expire_leases(&mut self, now: Instant) {
        let Some(l) = &mut self.leases else { return };
        let d = self.deliveries as usize;
        for i in l
            .expire(now, &self.attempts, self.max_attempts)
            .into_iter()
            .rev()
        {
            self.ready
                .push_front(((i / d) as i64 + 1, (i % d) as u32 + 1));
        }
    }

    /// Leases: what the end of attempt `attempt` on `key` does.
    fn settle_leased(&mut self, key: Key, attempt: u32, acked: bool) {
        let i = self.slot(key);
        let Some(l) = &mut self.leases else { return };
        match l.settle(i, attempt, acked, self.attempts[i], self.max_attempts) {
            Settle::Acked => self.acked += 1,
            Settle::Requeue => self.ready.push_back(key),
            Settle::GiveUp => self.given_up.push(key),
            Settle::Nothing => {}
        }
    }

    /// The attempt `attempt` on `key` ended: acked, or back to the tail
    /// (given up once its attempts reached the budget).
    pub fn settle(&mut self, key: Key, attempt: u32, acked: bool) {
        self.in_flight -= 1;
        if self.leases.is_some() {
            return self.settle_leased(key, attempt, acked);
        }
        if acked {
            self.acked += 1;
        } else if self.attempts[self.slot(key)] >= self.max_attempts {
            self.given_up.push(key);
        } else {
            self.ready.push_back(key);
        }
    }

    /// Every delivery acked or given up.
    pub fn drained(&self) -> bool {
        self.acked + self.given_up.len() as u64 == self.total
    }
}

/// What an outbox load produced, besides the history.
#[derive(Debug)]
pub struct OutboxOutcome {
    /// Per-kind counts and latency histograms (kind `handle`).
    pub stats: crate::stats::Stats,
    /// Wall time of the load, ns.
    pub elapsed_ns: u64,
    /// Attempts started (ops invoked).
    pub ops: u64,
    /// Deliveries acked.
    pub acked: u64,
    /// Deliveries given up after their budget.
    pub given_up: Vec<Key>,
    /// Every delivery was acked or given up.
    pub drained: bool,
    /// Attempts ended by a lost compare-and-swap (`fail-if`).
    pub cas_lost: u64,
    /// Attempts ended by a crash fault.
    pub crashed: u64,
    /// Attempts ended by a SQLite error or the step bound.
    pub errors: u64,
    /// Attempts started on a delivery handed out before.
    pub redelivered: u64,
    /// Leases: attempts started while an attempt of the same delivery
    /// still ran; leases that ran out; acks after the delivery's first
    /// (all 0 without `outbox.lease`).
    pub overlapping_attempts: u64,
    /// See `overlapping_attempts`.
    pub lease_expired: u64,
    /// See `overlapping_attempts`.
    pub late_acks: u64,
}

/// Everything the handlers share.
pub struct OutboxPlan<'a> {
    /// The resolved scenario (workload outbox).
    pub scenario: &'a Scenario,
    /// The checked statement file.
    pub variant: &'a OutboxVariant,
    /// Where the handlers send history entries.
    pub sink: HistorySink,
    /// The run's clock.
    pub clock: Clock,
    /// Stop, abort and interrupt signals.
    pub control: &'a Control,
    /// The fault plan and the history it records injections in.
    pub nemesis: Recorder,
    /// Live figures.
    pub live: Arc<Live>,
}

struct Shared<'a> {
    plan: &'a OutboxPlan<'a>,
    queue: Mutex<Queue>,
    next_op: AtomicU64,
    next_tx: AtomicI64,
    started: u64,
    cas_lost: AtomicU64,
    crashed: AtomicU64,
    errors: AtomicU64,
}

/// Runs the outbox load on `conns` (one handler each) until the queue
/// drains, `stop.duration` passes, or the user stops it.
pub fn run_outbox(plan: &OutboxPlan<'_>, conns: Vec<Connection>) -> OutboxOutcome {
    let s = plan.scenario;
    let cfg = s
        .part::<OutboxConfig>()
        .cloned()
        .expect("an outbox scenario has [outbox]");
    let sched = Scheduler::start(plan.clock, plan.control, &plan.live, s.stop.duration);
    let shared = Shared {
        plan,
        queue: Mutex::new(Queue::new(&cfg, s.seed)),
        next_op: AtomicU64::new(0),
        next_tx: AtomicI64::new(1),
        started: sched.started(),
        cas_lost: AtomicU64::new(0),
        crashed: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    };
    let sh = &shared;
    let handlers = conns
        .into_iter()
        .enumerate()
        .map(|(w, conn)| Worker::new(format!("handler-{w}"), move || handler(sh, w as u32, conn)))
        .collect();
    let span = sched.run_threads(handlers, || {
        let q = sh.queue.lock().expect("queue");
        plan.live.set_workload(live_figures(sh, &q).to_live());
        q.drained()
    });
    let q = shared.queue.into_inner().expect("queue");
    OutboxOutcome::of(
        q,
        plan.live.merged(),
        span.ended - span.started,
        [
            &shared.next_op,
            &shared.cas_lost,
            &shared.crashed,
            &shared.errors,
        ]
        .map(|c| c.load(Ordering::Relaxed)),
    )
}

impl OutboxOutcome {
    /// The outcome of a load that left queue `q`, with `stats`, that ran
    /// `elapsed_ns`, and its counts: attempts started, lost
    /// compare-and-swaps, crashes, errors.
    pub fn of(
        q: Queue,
        stats: crate::stats::Stats,
        elapsed_ns: u64,
        [ops, cas_lost, crashed, errors]: [u64; 4],
    ) -> Self {
        let (overlapping_attempts, lease_expired, late_acks) = q
            .leases
            .as_ref()
            .map_or((0, 0, 0), |l| (l.overlapping, l.expired, l.late_acks));
        OutboxOutcome {
            redelivered: q.redelivered,
            overlapping_attempts,
            lease_expired,
            late_acks,
            stats,
            elapsed_ns,
            ops,
            acked: q.acked,
            drained: q.drained(),
            given_up: q.given_up,
            cas_lost,
            crashed,
            errors,
        }
    }
}

/// The queue's and the handlers' figures now, for the watchers.
fn live_figures(shared: &Shared<'_>, q: &Queue) -> OutboxLive {
    OutboxLive {
        deliveries: q.total,
        attempts: shared.next_op.load(Ordering::Relaxed),
        acked: q.acked,
        redelivered: q.redelivered,
        given_up: q.given_up.len() as u64,
        cas_lost: shared.cas_lost.load(Ordering::Relaxed),
        crashed: shared.crashed.load(Ordering::Relaxed),
        overlapping: q.leases.as_ref().map_or(0, |l| l.overlapping),
    }
}

fn handler(shared: &Shared<'_>, worker: u32, conn: Connection) {
    let plan = shared.plan;
    let slot = plan.live.slot(worker as usize);
    let deliveries = plan
        .scenario
        .part::<OutboxConfig>()
        .map_or(1, |c| c.deliveries);
    let journal = Journal::of(&conn);
    while !plan.control.stopped() {
        let taken = shared.queue.lock().expect("queue").take_counted(&plan.live);
        let Some((key, attempt)) = taken else {
            // Nothing ready: failed attempts of others may still come back.
            std::thread::sleep(Duration::from_micros(500));
            continue;
        };
        let op = shared.next_op.fetch_add(1, Ordering::Relaxed);
        let delivery = Delivery {
            msg_id: key.0,
            dup_id: key.1,
            attempt,
            tx_id: shared.next_tx.fetch_add(1, Ordering::Relaxed),
        };
        // The attempt's identity for the fault plan: timing-free.
        let index = (key.0 as u64 - 1) * deliveries as u64 + (key.1 as u64 - 1);
        let fault_key = (index << 20) | attempt as u64;
        let (kind, t0, t1, end, result) =
            attempt_once(shared, (&conn, journal), worker, op, delivery, fault_key);
        match end {
            AttemptEnd::CasLost => shared.cas_lost.fetch_add(1, Ordering::Relaxed),
            AttemptEnd::Crashed => shared.crashed.fetch_add(1, Ordering::Relaxed),
            AttemptEnd::Error => shared.errors.fetch_add(1, Ordering::Relaxed),
            AttemptEnd::Acked | AttemptEnd::Aborted => 0,
        };
        shared
            .queue
            .lock()
            .expect("queue")
            .settle(key, attempt, end == AttemptEnd::Acked);
        slot.lock().expect("stats slot").record_op(
            OpKind::Handle,
            kind,
            t1.saturating_sub(t0),
            &result,
        );
    }
}

/// The faults decided for one attempt: a crash after a given executed
/// step (per op) or a probability after every step (per step), and pauses.
struct AttemptFaults<'a> {
    shared: &'a Shared<'a>,
    key: u64,
    since: Duration,
    /// Per-op crash: after the n-th executed step (0-based), fault index.
    crash_at: Option<(usize, u32)>,
    /// The schedule fuzzer, drawing by (key, executed step).
    fuzz: Option<crate::fuzz::Fuzzer>,
}

impl<'a> AttemptFaults<'a> {
    fn new(shared: &'a Shared<'a>, key: u64) -> Self {
        let plan = shared.plan;
        let since = Duration::from_nanos(plan.clock.now().saturating_sub(shared.started));
        let mut crash_at = None;
        let steps = plan.variant.handle.steps.len();
        for (i, f) in plan.nemesis.plan.faults().iter().enumerate() {
            if f.kind != FaultKind::Crash
                || f.per == Some(CrashPer::Step)
                || !hits_handle(f)
                || !f.active(since)
            {
                continue;
            }
            let mut rng = draw_rng(plan.scenario.seed, i as u32, key, u32::MAX);
            if rng.random_bool(f.probability.unwrap_or(0.0)) {
                // A named step: after its first execution; else a random
                // position among the program's steps.
                let at = match &f.step {
                    Some(_) => usize::MAX,
                    None => rng.random_range(0..steps),
                };
                crash_at = Some((at, i as u32));
                break;
            }
        }
        AttemptFaults {
            shared,
            key,
            since,
            crash_at,
            fuzz: crate::fuzz::Fuzzer::of(plan.scenario),
        }
    }

    /// Whether the handler dies after executed step `n` (step name `name`).
    fn crash_after(&self, n: usize, name: &str) -> Option<u32> {
        let plan = self.shared.plan;
        if let Some((at, fi)) = self.crash_at {
            let f = &plan.nemesis.plan.faults()[fi as usize];
            let hit = match &f.step {
                Some(s) => s == name,
                None => at == n,
            };
            if hit {
                return Some(fi);
            }
        }
        for (i, f) in plan.nemesis.plan.faults().iter().enumerate() {
            if f.kind != FaultKind::Crash
                || f.per != Some(CrashPer::Step)
                || !hits_handle(f)
                || !f.active(self.since)
                || f.step.as_deref().is_some_and(|s| s != name)
            {
                continue;
            }
            let mut rng = draw_rng(plan.scenario.seed, i as u32, self.key, n as u32);
            if rng.random_bool(f.probability.unwrap_or(0.0)) {
                return Some(i as u32);
            }
        }
        None
    }

    /// The pause before executed step `n` (step name `name`), if any.
    fn pause_before(&self, n: usize, name: &str) -> Option<(Duration, u32)> {
        let plan = self.shared.plan;
        for (i, f) in plan.nemesis.plan.faults().iter().enumerate() {
            if f.kind != FaultKind::Pause
                || !hits_handle(f)
                || !f.active(self.since)
                || f.step.as_deref().is_some_and(|s| s != name)
            {
                continue;
            }
            // Salted apart from the crash draws of the same fault index.
            let mut rng = draw_rng(plan.scenario.seed, i as u32, self.key, (1 << 30) | n as u32);
            if rng.random_bool(f.probability.unwrap_or(0.0)) {
                let j = f.jitter.unwrap_or_default().as_nanos() as u64;
                let extra = if j == 0 { 0 } else { rng.random_range(0..=j) };
                return Some((
                    f.delay.unwrap_or_default() + Duration::from_nanos(extra),
                    i as u32,
                ));
            }
        }
        None
    }
}

fn hits_handle(f: &crate::scenario::Fault) -> bool {
    matches!(f.ops, None | Some(FaultOps::All | FaultOps::Handle))
}

/// One attempt, end to end: invoke, steps, completion, as one history
/// batch. Returns (completion type, invoke ns, completion ns, how it
/// ended, result).
fn attempt_once(
    shared: &Shared<'_>,
    (conn, journal): (&Connection, Journal),
    worker: u32,
    op: u64,
    delivery: Delivery,
    fault_key: u64,
) -> (CompletionType, u64, u64, AttemptEnd, OpResult) {
    let plan = shared.plan;
    let program = &plan.variant.handle;
    let mut batch = Batch::default();
    let t0 = plan.clock.now();
    batch.push(&Entry::Invoke(Invoke {
        t: t0,
        op,
        worker,
        f: OpKind::Handle,
        delivery: Some(delivery),
        event_id: None,
        project: String::new(),
        fingerprint: String::new(),
        group_id: String::new(),
        attempt: None,
        intended: None,
    }));
    let faults = AttemptFaults::new(shared, fault_key);
    let builtins = vec![
        Value::Int(delivery.msg_id),
        Value::Int(delivery.dup_id as i64),
        Value::Int(delivery.tx_id),
        Value::Int(wall_ms()),
    ];
    let (end, kind, result) = crate::step_driver::drive(
        (conn, journal),
        program,
        builtins,
        AttemptHooks {
            plan,
            program,
            faults: &faults,
            op,
            batch: &mut batch,
        },
    );
    let t1 = plan.clock.now();
    batch.push(&Entry::completion(
        kind,
        Completion {
            t: t1,
            op,
            worker,
            f: OpKind::Handle,
            result: result.clone(),
        },
    ));
    plan.sink.send(batch);
    (kind, t0, t1, end, result)
}

/// An in-process attempt's hooks for the step driver: the abort of a
/// stop's grace, its pause and crash faults (drawn by executed step and
/// step name, recorded in the attempt's batch), the step log, and its end
/// read as an attempt's completion.
struct AttemptHooks<'a, 'p> {
    plan: &'a OutboxPlan<'a>,
    program: &'p crate::statements::OpProgram,
    faults: &'a AttemptFaults<'a>,
    op: u64,
    batch: &'a mut Batch,
}

impl<'p> crate::step_driver::StepHooks<'p> for AttemptHooks<'_, 'p> {
    type Out = (AttemptEnd, CompletionType, OpResult);

    fn abort(&mut self) -> Option<(AbortCause, String)> {
        let c = &self.plan.control;
        c.abort_cause().map(|cause| (cause, c.reason(cause)))
    }

    fn before(&mut self, n: usize, _i: usize, step: &'p crate::statements::StepDef) {
        if let Some((delay, fi)) = self.faults.pause_before(n, &step.name) {
            self.batch.push(&self.plan.nemesis.inject_entry(
                fi,
                self.op,
                Some(step.name.clone()),
                Some(format!("pause {delay:?} before {}", step.name)),
            ));
            // A stopping load cuts a pause short (faults act while it runs).
            self.plan.control.sleep(delay);
        }
    }

    fn fuzz(&mut self, n: usize) -> Option<crate::fuzz::Delay> {
        self.faults.fuzz?.at(self.faults.key, n)
    }

    fn fuzzed(
        &mut self,
        n: usize,
        step: &'p crate::statements::StepDef,
        delay: crate::fuzz::Delay,
        start: u64,
        end: u64,
    ) {
        let e = crate::fuzz::entry(self.op, (n, Some(&step.name)), delay, (start, end), false);
        self.batch.push(&e);
    }

    fn now(&self) -> u64 {
        self.plan.clock.now()
    }

    fn txn_policy(&self) -> crate::txn_backoff::TxnPolicy {
        let s = self.plan.scenario;
        crate::txn_backoff::TxnPolicy::of(&s.target, s.seed, self.faults.key)
    }

    fn wait(&mut self, d: Duration) {
        // A stopping load cuts the backoff short.
        self.plan.control.sleep(d);
    }

    fn after(&mut self, i: usize, start: u64, end: u64, r: &Result<StepOutcome, StepError>) {
        let step = &self.program.steps[i];
        let (changes, rows, error, error_kind, maybe_applied) = match r {
            Ok(out) => (out.changes, out.rows.len() as u64, None, None, false),
            Err(e) => (
                0,
                0,
                Some(e.message.clone()),
                Some(e.kind()),
                e.maybe_applied,
            ),
        };
        self.batch.push(&Entry::Step(Step {
            op: self.op,
            idx: i as u32,
            step: step.name.clone(),
            start,
            end: Some(end),
            changes,
            rows,
            error,
            error_kind,
            maybe_applied,
            // Only groups validation reads returned values so far.
            returned: None,
        }));
        if let Err(e) = r {
            if e.storage {
                self.plan
                    .control
                    .fail(crate::target::sqlite::client::storage_failure(
                        &step.name, e,
                    ));
            }
        }
    }

    fn crash(&mut self, n: usize, _i: usize, step: &'p crate::statements::StepDef) -> bool {
        let Some(fi) = self.faults.crash_after(n, &step.name) else {
            return false;
        };
        // The handler dies here: what its steps did stays; nobody acks.
        self.batch.push(&self.plan.nemesis.inject_entry(
            fi,
            self.op,
            Some(step.name.clone()),
            Some(format!("crash after {}", step.name)),
        ));
        true
    }

    fn end(self, m: &StepMachine<'p>, end: crate::step_driver::End) -> Self::Out {
        outbox_end(m, self.program, end, "crash fault after step")
    }
}

/// How an outbox attempt that ended as `end` reads, in every place its
/// steps run (in process, the reference server): `crashed` words a crash.
pub fn outbox_end(
    m: &StepMachine<'_>,
    program: &crate::statements::OpProgram,
    end: crate::step_driver::End,
    crashed: &str,
) -> (AttemptEnd, CompletionType, OpResult) {
    use crate::step_driver::End;
    match end {
        End::Aborted(_, why) => attempt_result(m, AttemptEnd::Aborted, None, &why),
        End::Failed {
            step,
            message,
            maybe_applied,
        } => attempt_result(
            m,
            AttemptEnd::Error,
            Some(maybe_applied),
            &format!("step {}: {message}", program.steps[step].name),
        ),
        End::Crashed { step, .. } => {
            let name = &program.steps[step].name;
            let (end, kind, mut result) =
                attempt_result(m, AttemptEnd::Crashed, None, &format!("{crashed} {name}"));
            result.crashed_after = Some(name.clone());
            (end, kind, result)
        }
        End::Done(next) => end_after(m, program, next).expect("the machine ended the attempt"),
    }
}

impl crate::workload::ran::LoadFigures for OutboxOutcome {
    fn ops(&self) -> u64 {
        self.ops
    }
    fn elapsed_ns(&self) -> u64 {
        self.elapsed_ns
    }
    fn take_stats(&mut self) -> crate::stats::Stats {
        std::mem::take(&mut self.stats)
    }
}
