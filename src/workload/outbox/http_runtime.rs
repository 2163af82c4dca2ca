//! The runtime of the outbox workload on an HTTP target: the same
//! in-memory queue and delivery budget as the SQLite runtime
//! ([`crate::workload::outbox::runtime::Queue`]), and H handler clients, tokio tasks
//! on a two-worker runtime, each taking a delivery (LockInMsg, the op's
//! invoke) and POSTing it to `/v1/messages` (one request in flight each).
//!
//! Answers, per the contract: 200 `acked` is `ok` (the delivery is acked,
//! `sent` recorded in the result); 5xx, a timeout or a reset is `info`
//! (the server may have run any prefix of its steps) and the delivery
//! comes back; 4xx (or a refused connection) is `fail` and it comes back
//! too; a 200 not of the contract's shape is `info` and reported as
//! non-conforming. The server's steps are not seen: the history has no
//! step log, and the attempt's tx_id is recorded as 0 (the server assigns
//! its own).
//!
//! Crash and pause faults go to the server through the fault hook header
//! (`--fault-hooks`, [`crate::fault_hook::HandleHook`]): a per-step
//! crash is sent as its probability and a seed, and the server draws after
//! every step it runs, so the spec's Fail() can follow any step on the
//! path the attempt actually took.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::statements::OutboxVariant;
use crate::clock::Clock;
use crate::control::Control;
use crate::draws::draw_rng;
use crate::fault_hook::HandleHook;
use crate::fault_kind::FaultKind;
use crate::history::writer::{Batch, HistorySink};
use crate::history::{Completion, CompletionType, Delivery, Entry, FaultAction, Invoke, OpKind};
use crate::live::Live;
use crate::nemesis::Recorder;
use crate::scenario::{CrashPer, FaultOps, Scenario};
use crate::scheduler::{Scheduler, TargetWatch, Task};
use crate::target::http::client::{Answer, HttpClient, Tag};
use crate::target::http::nonconforming::Nonconforming;
use crate::workload::outbox::config::OutboxConfig;
use crate::workload::outbox::http_client;
use crate::workload::outbox::runtime::{OutboxOutcome, Queue};
use crate::workload::outbox::AttemptEnd;
use rand::RngExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Everything the handler clients need.
pub struct OutboxHttpPlan {
    /// The resolved scenario (workload outbox).
    pub scenario: Scenario,
    /// The checked statement file (step names for the fault hook).
    pub variant: Arc<OutboxVariant>,
    /// Where the clients send history entries.
    pub sink: HistorySink,
    /// The run's clock.
    pub clock: Clock,
    /// Stop, abort and interrupt signals.
    pub control: Arc<Control>,
    /// The fault plan and the history it records injections in.
    pub nemesis: Recorder,
    /// Live figures.
    pub live: Arc<Live>,
    /// A client of the service (or of the fault proxy in front of it).
    pub client: HttpClient,
    /// Answers that were not the contract's shape.
    pub nonconforming: Arc<Nonconforming>,
    /// This runner's part of a sharded run (`--shard i/n`): its queue
    /// holds only its own messages' deliveries ([`Queue::sharded`]).
    pub shard: Option<crate::shard::Shard>,
}

/// What the HTTP load produced: the queue's outcome, and whether the
/// target stopped answering (the run then ends early, exit 3).
pub struct OutboxHttpOutcome {
    /// As for the SQLite runtime.
    pub outcome: OutboxOutcome,
    /// Why the target was given up, if it was.
    pub dead: Option<String>,
}

struct Shared {
    plan: OutboxHttpPlan,
    queue: Mutex<Queue>,
    next_op: AtomicU64,
    started: u64,
    cas_lost: AtomicU64,
    crashed: AtomicU64,
    errors: AtomicU64,
    /// Whether the target still answers (a silent or refusing one ends
    /// the run).
    target: TargetWatch,
    /// Kill faults are scheduled: refused connections are the nemesis.
    kills: bool,
}

/// Runs the outbox load against `plan.client` until the queue drains,
/// `stop.duration` passes, the user stops it, or the target goes silent.
pub fn run_outbox_http(plan: OutboxHttpPlan) -> OutboxHttpOutcome {
    let s = plan.scenario.clone();
    let cfg = s
        .part::<OutboxConfig>()
        .cloned()
        .expect("an outbox scenario has [outbox]");
    let (control, live) = (plan.control.clone(), plan.live.clone());
    let sched = Scheduler::start(plan.clock, &control, &live, s.stop.duration);
    let kills = plan.nemesis.plan.has(FaultKind::Kill);
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::sharded(&cfg, s.seed, plan.shard)),
        next_op: AtomicU64::new(0),
        started: sched.started(),
        cas_lost: AtomicU64::new(0),
        crashed: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        target: TargetWatch::new(&s, kills, sched.started()),
        kills,
        plan,
    });
    let tasks: Vec<Task> = (0..cfg.handlers)
        .map(|w| Box::pin(handler(shared.clone(), w)) as Task)
        .collect();
    let span = sched.run_tasks(
        tasks,
        Vec::new(),
        || shared.queue.lock().expect("queue").drained(),
        Some(&shared.target),
    );
    let shared = Arc::into_inner(shared).expect("the tasks have ended");
    let dead = shared.target.is_dead().then(|| {
        format!(
            "the target stopped answering (no answer for {:?}, or connections refused)",
            shared.target.limit()
        )
    });
    let q = shared.queue.into_inner().expect("queue");
    let counts = [
        &shared.next_op,
        &shared.cas_lost,
        &shared.crashed,
        &shared.errors,
    ];
    OutboxHttpOutcome {
        outcome: OutboxOutcome::of(
            q,
            live.merged(),
            span.ended - span.started,
            counts.map(|c| c.load(Ordering::Relaxed)),
        ),
        dead,
    }
}

async fn handler(shared: Arc<Shared>, worker: u32) {
    let sh = &*shared;
    let p = &sh.plan;
    let slot = p.live.slot(worker as usize);
    let deliveries = p
        .scenario
        .part::<OutboxConfig>()
        .map_or(1, |c| c.deliveries);
    while !p.control.stopped() {
        let taken = sh.queue.lock().expect("queue").take_counted(&p.live);
        let Some((key, attempt)) = taken else {
            // Nothing ready: attempts in flight may still bring some back.
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        let op = sh.next_op.fetch_add(1, Ordering::Relaxed);
        // The attempt's identity for the fault plan, as the SQLite
        // runtime's: timing-free.
        let index = (key.0 as u64 - 1) * deliveries as u64 + (key.1 as u64 - 1);
        let fault_key = (index << 20) | attempt as u64;
        let (hook, crash_fault) = sh.hook(op, fault_key);
        let tag = Tag {
            op,
            key: fault_key,
            hook: hook.header(),
        };
        let t0 = p.clock.now();
        let invoke = Invoke {
            t: t0,
            op,
            worker,
            f: OpKind::Handle,
            delivery: Some(Delivery {
                msg_id: key.0,
                dup_id: key.1,
                attempt,
                // The server's tx id is its own (not in the answer).
                tx_id: 0,
            }),
            event_id: None,
            project: String::new(),
            fingerprint: String::new(),
            group_id: String::new(),
            attempt: None,
            intended: None,
        };
        // A second Ctrl-C, or the end of `stop.grace`, abandons the request
        // (however long its timeout).
        let answer = p
            .control
            .or_abort(http_client::handle(&p.client, key.0, key.1, Some(&tag)))
            .await
            .unwrap_or_else(|| Answer::abandoned(p.control.abort_reason()));
        let t1 = p.clock.now();
        if !answer.transport {
            sh.target.answered(t1);
        }
        let mut batch = Batch::default();
        batch.push(&Entry::Invoke(invoke));
        if let (Some(step), Some(fi)) = (&answer.result.crashed_after, crash_fault) {
            batch.push(&p.nemesis.inject_entry(
                fi,
                op,
                Some(step.clone()),
                Some(format!("crash after {step} (fault hook)")),
            ));
        }
        batch.push(&Entry::completion(
            answer.kind,
            Completion {
                t: t1,
                op,
                worker,
                f: OpKind::Handle,
                result: answer.result.clone(),
            },
        ));
        p.sink.send(batch);
        let acked = answer.kind == CompletionType::Ok;
        sh.count(&answer);
        sh.queue.lock().expect("queue").settle(key, attempt, acked);
        slot.lock().expect("stats slot").record_op(
            OpKind::Handle,
            answer.kind,
            t1.saturating_sub(t0),
            &answer.result,
        );
        if let Some(example) = &answer.nonconforming {
            p.nonconforming.note(example);
        }
        if answer.transport {
            let refused = answer.kind == CompletionType::Fail;
            if refused && !sh.kills {
                // Refused connections, no nemesis at work: the target is gone.
                sh.target.give_up();
                break;
            }
            // A target in trouble (down, timeouts): back off a little.
            p.control
                .sleep_async(Duration::from_millis(if refused { 50 } else { 20 }))
                .await;
        }
    }
}

impl Shared {
    /// Counts how a not-ok attempt ended: a hook crash, a lost
    /// compare-and-swap (as the reference server names the end), anything
    /// else.
    fn count(&self, a: &Answer) {
        if a.kind == CompletionType::Ok {
            return;
        }
        let counter = if a.result.crashed_after.is_some() {
            &self.crashed
        } else if a.attempt_end == Some(AttemptEnd::CasLost) {
            &self.cas_lost
        } else {
            &self.errors
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The fault hook's decisions for one attempt (its `fault_key`), drawn
    /// as the SQLite runtime draws them: a per-op crash after a step (a
    /// named one, or a random one of the program's), a per-step crash as
    /// (probability, seed) for the server to draw after every step, pauses
    /// before steps and the schedule fuzzer's points (recorded now: the
    /// server pauses if it gets there).
    /// Also returns the crash fault's index, to record a reported crash.
    fn hook(&self, op: u64, fault_key: u64) -> (HandleHook, Option<u32>) {
        let p = &self.plan;
        let mut hook = HandleHook::default();
        let mut crash = None;
        let faults = p.nemesis.plan.faults();
        if let Some(f) = crate::fuzz::Fuzzer::of(&p.scenario) {
            hook.fuzz = f.requested((op, fault_key), &p.variant.handle, &p.sink, p.clock.now());
        }
        if !(p.nemesis.plan.has(FaultKind::Crash) || p.nemesis.plan.has(FaultKind::Pause)) {
            return (hook, None);
        }
        let since = Duration::from_nanos(p.clock.now().saturating_sub(self.started));
        let steps = &p.variant.handle.steps;
        let seed = p.scenario.seed;
        let hits = |f: &crate::scenario::Fault| {
            matches!(f.ops, None | Some(FaultOps::All | FaultOps::Handle)) && f.active(since)
        };
        for (i, f) in faults.iter().enumerate() {
            if f.kind != FaultKind::Crash || !hits(f) || crash.is_some() {
                continue;
            }
            let prob = f.probability.unwrap_or(0.0);
            if f.per == Some(CrashPer::Step) {
                let salt = draw_rng(seed, i as u32, fault_key, u32::MAX - 1).random::<u64>();
                hook.crash_p = Some((prob, salt, f.step.clone()));
                crash = Some(i as u32);
            } else {
                let mut rng = draw_rng(seed, i as u32, fault_key, u32::MAX);
                if rng.random_bool(prob) {
                    let name = match &f.step {
                        Some(s) => s.clone(),
                        None => steps[rng.random_range(0..steps.len())].name.clone(),
                    };
                    hook.crash_after = Some(name);
                    crash = Some(i as u32);
                }
            }
        }
        for (i, f) in faults.iter().enumerate() {
            if f.kind != FaultKind::Pause || !hits(f) {
                continue;
            }
            for (j, step) in steps.iter().enumerate() {
                if f.step.as_deref().is_some_and(|s| s != step.name) {
                    continue;
                }
                let mut rng = draw_rng(seed, i as u32, fault_key, (1 << 30) | j as u32);
                if rng.random_bool(f.probability.unwrap_or(0.0)) {
                    let jit = f.jitter.unwrap_or_default().as_nanos() as u64;
                    let extra = if jit == 0 {
                        0
                    } else {
                        rng.random_range(0..=jit)
                    };
                    let d = f.delay.unwrap_or_default() + Duration::from_nanos(extra);
                    p.nemesis.record(
                        i as u32,
                        FaultAction::Inject,
                        Some(op),
                        Some(step.name.clone()),
                        None,
                        Some(format!(
                            "pause {d:?} before {} requested (fault hook)",
                            step.name
                        )),
                    );
                    hook.pauses.push((step.name.clone(), d));
                    break;
                }
            }
        }
        (hook, crash)
    }
}
