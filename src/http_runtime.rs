//! The runtime of an HTTP target: ingesters and resolvers are tokio tasks
//! (one request in flight each) on a two-worker tokio runtime, sharing
//! the generator, the history sink and a map of the group ids the service
//! named. The same stop rules as the SQLite runtime; every request is
//! bounded by the client's timeouts, so a stop is never more than one
//! request timeout away.

use crate::client::http::{Answer, HttpClient};
use crate::generator::{IngestGenerator, ResolveGenerator};
use crate::history::writer::{Batch, HistorySink};
use crate::history::{Completion, CompletionType, Entry, Invoke, OpKind};
use crate::runtime::{Clock, Control, LoadOutcome, LoadPlan, Progress};
use crate::scenario::Scenario;
use crate::stats::Stats;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Non-conforming answers: how many, and the first few examples.
#[derive(Debug, Default)]
pub struct Nonconforming {
    /// Answers that were not the contract's shape.
    pub count: AtomicU64,
    /// The first few, as "what: status body".
    pub examples: Mutex<Vec<String>>,
}

impl Nonconforming {
    fn note(&self, example: &str) {
        if self.count.fetch_add(1, Ordering::Relaxed) < 5 {
            self.examples
                .lock()
                .expect("examples")
                .push(example.to_string());
        }
    }
}

/// What every task shares, owned, so that tasks can be spawned onto the
/// runtime's workers (next to the connections they use).
struct Shared {
    scenario: Scenario,
    namespace: String,
    sink: HistorySink,
    clock: Clock,
    control: Arc<Control>,
    client: HttpClient,
    gen: Mutex<IngestGenerator>,
    next_op: AtomicU64,
    ingesters_left: AtomicUsize,
    /// Per group index of the key space: the group id the service named
    /// (written once, then read without a lock).
    learned: Vec<OnceLock<String>>,
    nonconforming: Arc<Nonconforming>,
    /// The target stopped answering: the run ends.
    dead: AtomicBool,
    /// When the service last answered anything (ns since run start).
    last_answer: AtomicU64,
}

/// Runs the load against an HTTP target. Returns when the stop condition
/// held and every request in flight was answered or timed out.
pub fn run_load_http(
    plan: &LoadPlan<'_>,
    control: Arc<Control>,
    client: HttpClient,
    nonconforming: Arc<Nonconforming>,
    progress_every: Option<Duration>,
) -> LoadOutcome {
    let s = plan.scenario;
    let shared = Arc::new(Shared {
        scenario: s.clone(),
        namespace: plan.namespace.to_string(),
        sink: plan.sink.clone(),
        clock: plan.clock,
        control,
        client,
        gen: Mutex::new(IngestGenerator::new(s, plan.namespace)),
        next_op: AtomicU64::new(0),
        ingesters_left: AtomicUsize::new(s.load.ingesters as usize),
        learned: (0..s.groups()).map(|_| OnceLock::new()).collect(),
        nonconforming,
        dead: AtomicBool::new(false),
        last_answer: AtomicU64::new(plan.clock.now()),
    });
    // Two workers: each task runs next to the connection it uses.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let started = plan.clock.now();
    let deadline = s.stop.duration.map(|d| started + d.as_nanos() as u64);
    let (total, stopped_at, exhausted) = rt.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..s.load.ingesters {
            tasks.push(tokio::spawn(ingester(shared.clone(), w)));
        }
        for r in 0..s.load.resolvers {
            tasks.push(tokio::spawn(resolver(
                shared.clone(),
                s.load.ingesters + r,
                r,
            )));
        }
        let work = async {
            let mut total = Stats::default();
            for t in tasks {
                total.merge(&t.await.expect("a load task panicked"));
            }
            total
        };
        let shared = &shared;
        let coordinator = async {
            let mut progress = Progress::new(progress_every);
            loop {
                let now = plan.clock.now();
                let exhausted = shared.ingesters_left.load(Ordering::Acquire) == 0;
                // A service that answers nothing for two request timeouts
                // (hung, stopped) ends the run instead of letting it time
                // out request after request until its duration.
                let silent = now.saturating_sub(shared.last_answer.load(Ordering::Relaxed));
                if silent > 2 * s.target.request_timeout.as_nanos() as u64 {
                    shared.dead.store(true, Ordering::Release);
                }
                if exhausted
                    || deadline.is_some_and(|d| now >= d)
                    || plan.control.stop.load(Ordering::Acquire)
                    || shared.dead.load(Ordering::Acquire)
                {
                    plan.control.stop.store(true, Ordering::Release);
                    return (now, exhausted);
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                progress.tick(
                    plan.control.completed.load(Ordering::Relaxed),
                    now - started,
                );
            }
        };
        let (total, (stopped_at, exhausted)) = tokio::join!(work, coordinator);
        (total, stopped_at, exhausted)
    });
    LoadOutcome::new(
        s,
        total,
        &shared.gen,
        shared.next_op.load(Ordering::Relaxed),
        (started, stopped_at, plan.clock.now()),
        exhausted,
    )
}

/// Records one request as an op (invoke and completion) and its latency.
fn record(
    shared: &Shared,
    stats: &mut Stats,
    invoke: Invoke,
    answer: &Answer,
    measured_from: Option<u64>,
) {
    let plan = shared;
    let (op, worker, f, t0) = (invoke.op, invoke.worker, invoke.f, invoke.t);
    let t1 = plan.clock.now();
    let mut batch = Batch::default();
    batch.push(&Entry::Invoke(invoke));
    batch.push(&Entry::completion(
        answer.kind,
        Completion {
            t: t1,
            op,
            worker,
            f,
            result: answer.result.clone(),
        },
    ));
    plan.sink.send(batch);
    plan.control.completed.fetch_add(1, Ordering::Relaxed);
    if !answer.transport {
        shared.last_answer.fetch_max(t1, Ordering::Relaxed);
    }
    stats.record(
        f,
        answer.kind,
        t1.saturating_sub(measured_from.unwrap_or(t0)),
    );
    if let Some(example) = &answer.nonconforming {
        shared.nonconforming.note(example);
    }
}

async fn ingester(shared: Arc<Shared>, worker: u32) -> Stats {
    let shared = &*shared;
    let plan = shared;
    let mut stats = Stats::default();
    let late_after = plan.scenario.load.late_after.as_nanos() as u64;
    let retries = plan.scenario.target.retries;
    'ops: while !plan.control.stop.load(Ordering::Acquire) {
        let next = shared.gen.lock().expect("generator lock").next_op();
        let Some(op) = next else { break };
        if let Some(intended) = op.intended_ns {
            let now = plan.clock.now();
            if intended > now {
                tokio::time::sleep(Duration::from_nanos(intended - now)).await;
                if plan.control.stop.load(Ordering::Acquire) {
                    break;
                }
            } else if now - intended > late_after {
                stats.late += 1;
            }
        }
        // An indeterminate answer is sent again with the same event id, as
        // a real client would, up to the retry budget.
        for attempt in 0..=retries {
            let invoke = Invoke {
                t: plan.clock.now(),
                op: shared.next_op.fetch_add(1, Ordering::Relaxed),
                worker,
                f: OpKind::Ingest,
                event_id: Some(op.event_id.clone()),
                project: op.project.clone(),
                fingerprint: op.fingerprint.clone(),
                group_id: shared.learned[op.group as usize]
                    .get()
                    .cloned()
                    .unwrap_or_default(),
                attempt: Some(op.attempt),
                intended: if attempt == 0 { op.intended_ns } else { None },
            };
            let answer = shared.client.ingest(&op).await;
            record(
                shared,
                &mut stats,
                invoke,
                &answer,
                if attempt == 0 { op.intended_ns } else { None },
            );
            if answer.result.accepted == Some(false) {
                stats.duplicates += 1;
            }
            if let Some(g) = &answer.group_id {
                if shared.learned[op.group as usize].get().is_none() {
                    let _ = shared.learned[op.group as usize].set(g.clone());
                }
            }
            let again = match (answer.kind, answer.retry_after) {
                (CompletionType::Info, _) => Some(Duration::from_millis(5 << attempt.min(6))),
                (CompletionType::Fail, Some(wait)) => Some(wait),
                _ => None,
            };
            match again {
                Some(wait) if attempt < retries && !plan.control.stop.load(Ordering::Acquire) => {
                    tokio::time::sleep(wait).await;
                }
                _ => {
                    if answer.kind == CompletionType::Fail
                        && answer
                            .result
                            .error
                            .as_deref()
                            .is_some_and(|e| e.contains("connect"))
                    {
                        // Refused connections: the target is gone.
                        shared.dead.store(true, Ordering::Release);
                        break 'ops;
                    }
                    continue 'ops;
                }
            }
        }
    }
    shared.ingesters_left.fetch_sub(1, Ordering::AcqRel);
    stats
}

async fn resolver(shared: Arc<Shared>, worker: u32, index: u32) -> Stats {
    let shared = &*shared;
    let plan = shared;
    let mut stats = Stats::default();
    let mut gen = ResolveGenerator::new(&plan.scenario, &plan.namespace, index);
    let interval = plan.scenario.resolve.interval;
    while !plan.control.stop.load(Ordering::Acquire) {
        let op = gen.next_op();
        // Group ids are the service's: resolve only groups it has named.
        let known = shared.learned[op.group as usize].get().cloned();
        let Some(group_id) = known else {
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        let invoke = Invoke {
            t: plan.clock.now(),
            op: shared.next_op.fetch_add(1, Ordering::Relaxed),
            worker,
            f: OpKind::Resolve,
            event_id: None,
            project: op.project.clone(),
            fingerprint: op.fingerprint.clone(),
            group_id: group_id.clone(),
            attempt: None,
            intended: None,
        };
        let answer = shared.client.resolve(&group_id).await;
        record(shared, &mut stats, invoke, &answer, None);
        match answer.result.resolved {
            Some(true) => stats.resolved += 1,
            Some(false) => stats.refused += 1,
            None => {}
        }
        if !interval.is_zero() {
            tokio::time::sleep(interval).await;
        } else {
            // Back to back, but never starving the ingesters' tasks.
            tokio::task::yield_now().await;
        }
    }
    stats
}
