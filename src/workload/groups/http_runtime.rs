//! The runtime of an HTTP target: ingesters and resolvers are tokio tasks
//! (one request in flight each) on a two-worker tokio runtime, sharing
//! the generator, the history sink and a map of the group ids the service
//! named. [`crate::scheduler`] runs them: the same stop rule as the SQLite
//! runtime's, and a target that stops answering ends the run; every request is
//! bounded by the client's timeouts, so a stop is never more than one
//! request timeout away.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::api_compile::GroupsRequests;
use super::config::GroupsScenario;
use crate::clock::Clock;
use crate::control::Control;
use crate::fault_hook::fault_header;
use crate::fault_kind::FaultKind;
use crate::history::writer::{Batch, HistorySink};
use crate::history::FaultAction;
use crate::history::{Completion, CompletionType, Entry, Invoke, OpKind};
use crate::live::Live;
use crate::nemesis::Recorder;
use crate::scenario::Scenario;
use crate::scheduler::{Scheduler, TargetWatch, Task};
use crate::statements::OpProgram;
use crate::stats::Stats;
use crate::target::http::client::{Answer, HttpClient, Tag};
use crate::target::http::nonconforming::Nonconforming;
use crate::workload::groups::generator::{IngestGenerator, ResolveGenerator};
use crate::workload::groups::http_client::{self, IngestEvent};
use crate::workload::groups::pace::{ClosedGate, ResolvePace};
use crate::workload::groups::runtime::{next_ingest, LoadOutcome, LoadPlan};
use crate::workload::groups::IngestOp;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Reads (group id, project, fingerprint) of the service's groups from
/// its own database (`api.group_ids = "audit"`).
pub type GroupIdReader =
    Arc<dyn Fn() -> Result<Vec<(String, String, String)>, String> + Send + Sync>;

/// How resolvers learn the group ids the service computed.
#[derive(Clone, Default)]
pub enum GroupIdSource {
    /// From the ingest answers only (the contract's way).
    #[default]
    Answers,
    /// Also by asking `[api.lookup]` for a group a resolver lacks.
    Lookup,
    /// Also from the service's database, read every 200 ms.
    Database(GroupIdReader),
}

/// What every task shares, owned, so that tasks can be spawned onto the
/// runtime's workers (next to the connections they use).
struct Shared {
    scenario: Scenario,
    namespace: String,
    /// This runner's part of a sharded run (its own resolver streams).
    shard: Option<crate::shard::Shard>,
    sink: HistorySink,
    clock: Clock,
    control: Arc<Control>,
    client: HttpClient,
    gen: Mutex<IngestGenerator>,
    /// Closed model with stages: the ingesters beyond the target wait.
    gate: Option<ClosedGate>,
    next_op: AtomicU64,
    ingesters_left: AtomicUsize,
    /// Per group index of the key space: the group id the service named
    /// (written once, then read without a lock).
    learned: Vec<OnceLock<String>>,
    nonconforming: Arc<Nonconforming>,
    /// Whether the target still answers (a silent or refusing one ends
    /// the run).
    target: TargetWatch,
    /// The fault plan and the history it records injections in.
    nemesis: Recorder,
    /// When the load started, ns (fault windows count from here).
    started: u64,
    /// The ingest and resolve programs (step names for the fault hook).
    programs: (OpProgram, OpProgram),
    /// Kill faults are scheduled: a refused connection or a silence of a
    /// few seconds is the nemesis at work, not a dead target.
    kills: bool,
    /// The live figures the tasks record into.
    live: Arc<Live>,
    /// Where resolvers learn group ids besides the answers.
    ids: GroupIdSource,
    /// The key space, to map a (project, fingerprint) read elsewhere to its group.
    keys: crate::workload::groups::generator::KeySpace,
}

impl Shared {
    /// The tag of one request: op id, key, and the fault hook's decisions
    /// (crash, pause, the schedule fuzzer's points), recorded as injected
    /// (requested) when requested.
    /// Also returns the crash fault asked for, if any (its index).
    fn tag(&self, op: u64, key: u64, ingest: bool) -> (Tag, Option<u32>) {
        let plan = &self.nemesis.plan;
        let mut tag = Tag {
            op,
            key,
            hook: None,
        };
        let fuzz = crate::fuzz::Fuzzer::of(&self.scenario);
        if !(plan.has(FaultKind::Crash) || plan.has(FaultKind::Pause) || fuzz.is_some()) {
            return (tag, None);
        }
        let program = if ingest {
            &self.programs.0
        } else {
            &self.programs.1
        };
        let names: Vec<&str> = program.steps.iter().map(|s| s.name.as_str()).collect();
        let since = Duration::from_nanos(self.clock.now().saturating_sub(self.started));
        let mut faults = plan.for_op(key, ingest, &names, since);
        if let Some(f) = fuzz {
            faults.fuzz = f.requested((op, key), program, &self.sink, self.clock.now());
        }
        for (i, d, f) in &faults.pauses {
            self.nemesis.record(
                *f,
                FaultAction::Inject,
                Some(op),
                Some(names[*i].to_string()),
                None,
                // Counted when asked of the server: it pauses if the op
                // gets as far as that step.
                Some(format!(
                    "pause {d:?} before {} requested (fault hook)",
                    names[*i]
                )),
            );
        }
        tag.hook = fault_header(&faults, program);
        (tag, faults.crash_after.map(|(_, f)| f))
    }
}

/// Runs the load against an HTTP target. Returns when the stop condition
/// held and every request in flight was answered or timed out, with why
/// the target was given up on, if it was (it stopped answering, or refused
/// connections): the run is then not what was asked, whatever the audit
/// finds (exit 3).
pub fn run_load_http(
    plan: &LoadPlan<'_>,
    control: Arc<Control>,
    client: HttpClient,
    nonconforming: Arc<Nonconforming>,
    ids: GroupIdSource,
) -> (LoadOutcome, Option<String>) {
    let s = plan.scenario;
    let sched = Scheduler::start(
        plan.clock,
        plan.control,
        &plan.live,
        crate::scenario::section::load_duration(s),
    );
    let mut gen = IngestGenerator::sharded(s, plan.namespace, plan.shard);
    gen.set_origin(sched.started());
    let kills = plan.nemesis.plan.has(FaultKind::Kill);
    let shared = Arc::new(Shared {
        scenario: s.clone(),
        namespace: plan.namespace.to_string(),
        shard: plan.shard,
        sink: plan.sink.clone(),
        clock: plan.clock,
        control,
        client,
        gen: Mutex::new(gen),
        gate: ClosedGate::of(s.load(), sched.started()),
        next_op: AtomicU64::new(0),
        ingesters_left: AtomicUsize::new(s.load().ingesters as usize),
        learned: (0..s.groups()).map(|_| OnceLock::new()).collect(),
        nonconforming,
        target: TargetWatch::new(s, kills, sched.started()),
        nemesis: plan.nemesis.clone(),
        started: sched.started(),
        programs: (plan.variant.ingest.clone(), plan.variant.resolve.clone()),
        kills,
        live: plan.live.clone(),
        ids,
        keys: crate::workload::groups::generator::KeySpace::new(s.keys(), plan.namespace),
    });
    let mut tasks: Vec<Task> = Vec::new();
    for w in 0..s.load().ingesters {
        tasks.push(Box::pin(ingester(shared.clone(), w)));
    }
    for r in 0..s.load().resolvers {
        tasks.push(Box::pin(resolver(
            shared.clone(),
            s.load().ingesters + r,
            r,
        )));
    }
    let mut background: Vec<Task> = Vec::new();
    if let GroupIdSource::Database(read) = &shared.ids {
        background.push(Box::pin(poll_group_ids(shared.clone(), read.clone())));
    }
    let span = sched.run_tasks(
        tasks,
        background,
        || shared.ingesters_left.load(Ordering::Acquire) == 0,
        Some(&shared.target),
    );
    let gone = shared.target.is_dead().then(|| {
        format!(
            "the target stopped answering {:.1}s into the load (no answer for two request \
             timeouts, or connections refused): the load ended early",
            span.stopped_at.saturating_sub(span.started) as f64 / 1e9
        )
    });
    let outcome = LoadOutcome::new(
        s,
        plan.live.merged(),
        &shared.gen,
        shared.next_op.load(Ordering::Relaxed),
        span,
    );
    (outcome, gone)
}

impl Shared {
    /// A crash the reference server's fault hook reports: recorded as injected.
    fn note_crash(&self, op: u64, fault: Option<u32>, answer: &Answer) {
        let (Some(step), Some(f)) = (&answer.result.crashed_after, fault) else {
            return;
        };
        self.nemesis.record(
            f,
            FaultAction::Inject,
            Some(op),
            Some(step.clone()),
            None,
            Some(format!("crash after {step} (fault hook)")),
        );
    }
}

/// Records one request as an op (invoke and completion) and its latency.
fn record(
    shared: &Shared,
    slot: &Mutex<Stats>,
    invoke: Invoke,
    answer: Answer,
    measured_from: Option<u64>,
) {
    let plan = shared;
    let (op, worker, f, t0) = (invoke.op, invoke.worker, invoke.f, invoke.t);
    let t1 = plan.clock.now();
    if !answer.transport {
        shared.target.answered(t1);
    }
    slot.lock().expect("stats slot").record_op(
        f,
        answer.kind,
        t1.saturating_sub(measured_from.unwrap_or(t0)),
        &answer.result,
    );
    if let Some(example) = &answer.nonconforming {
        shared.nonconforming.note(example);
    }
    let mut batch = Batch::with_capacity(OP_RECORD_BYTES);
    batch.push(&Entry::Invoke(invoke));
    batch.push(&Entry::completion(
        answer.kind,
        Completion {
            t: t1,
            op,
            worker,
            f,
            result: answer.result,
        },
    ));
    plan.sink.send(batch);
}

/// Room for one op's records (invoke and completion) as a batch starts:
/// most fit, and the batch does not grow several times per op.
const OP_RECORD_BYTES: usize = 192;

async fn ingester(shared: Arc<Shared>, worker: u32) {
    let shared = &*shared;
    let plan = shared;
    let slot = shared.live.slot(worker as usize);
    let late_after = plan.scenario.load().late_after.as_nanos() as u64;
    let batch = GroupsRequests::of(shared.client.mapping())
        .ingest
        .batch
        .max(1) as usize;
    'ops: while !plan.control.stopped() {
        if let Some(wait) = shared
            .gate
            .as_ref()
            .and_then(|g| g.wait(worker, plan.clock.now()))
        {
            plan.control.sleep_async(wait).await;
            continue;
        }
        // Up to `batch` ops per request (envelope APIs); one otherwise.
        let mut ops = Vec::with_capacity(batch);
        while ops.len() < batch {
            match next_ingest(&shared.gen, &shared.live) {
                Some(op) => ops.push(op),
                None => break,
            }
        }
        if ops.is_empty() {
            break;
        }
        // Open model: the batch leaves when its last op is due.
        if let Some(intended) = ops.iter().filter_map(|o| o.intended_ns).max() {
            let now = plan.clock.now();
            if intended > now
                && !plan
                    .control
                    .sleep_async(Duration::from_nanos(intended - now))
                    .await
            {
                break;
            }
            let now = plan.clock.now();
            let late = ops
                .iter()
                .filter_map(|o| o.intended_ns)
                .filter(|&i| now.saturating_sub(i) > late_after)
                .count() as u64;
            slot.lock().expect("stats slot").late += late;
        }
        // One op per request (the default): no grouping to do.
        if ops.len() == 1 {
            if !send_with_retries(shared, slot, worker, ops).await {
                break 'ops;
            }
            continue;
        }
        // The events of one request share their project (the request's
        // path or envelope may name it).
        let mut groups: Vec<Vec<IngestOp>> = Vec::new();
        for op in ops {
            match groups.iter_mut().find(|g| g[0].project == op.project) {
                Some(g) => g.push(op),
                None => groups.push(vec![op]),
            }
        }
        for group in groups {
            if !send_with_retries(shared, slot, worker, group).await {
                break 'ops;
            }
        }
    }
    shared.ingesters_left.fetch_sub(1, Ordering::AcqRel);
}

/// Sends `ops` (one project) in one request; an indeterminate answer is
/// sent again with the same event ids, as a real client would, up to the
/// retry budget. Returns false when the target is gone (the ingester ends).
async fn send_with_retries(
    shared: &Shared,
    slot: &Mutex<Stats>,
    worker: u32,
    mut ops: Vec<IngestOp>,
) -> bool {
    let plan = shared;
    let retries = plan.scenario.target.retries;
    for attempt in 0..=retries {
        let first = shared
            .next_op
            .fetch_add(ops.len() as u64, Ordering::Relaxed);
        let (tag, crash) = shared.tag(first, ops[0].key ^ ((attempt as u64 & 0xff) << 40), true);
        // What the invokes say is taken before the request leaves; they
        // are made after it, from the ops (moved, but for a retry's).
        let t = plan.clock.now();
        let known: Vec<String> = ops
            .iter()
            .map(|op| {
                shared.learned[op.group as usize]
                    .get()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        let events: Vec<IngestEvent<'_>> = ops.iter().map(event).collect();
        // A second Ctrl-C, or the end of `stop.grace`, abandons the request
        // (however long its timeout).
        let answers = plan
            .control
            .or_abort(http_client::ingest_batch(
                &shared.client,
                &events,
                Some(&tag),
            ))
            .await
            .unwrap_or_else(|| {
                let why = plan.control.abort_reason();
                events
                    .iter()
                    .map(|_| Answer::abandoned(why.clone()))
                    .collect()
            });
        drop(events);
        let mut again: Vec<IngestOp> = Vec::new();
        let mut wait = None::<Duration>;
        let mut refused = false;
        for (i, ((mut answer, op), group_id)) in answers.into_iter().zip(ops).zip(known).enumerate()
        {
            let op_id = first + i as u64;
            shared.note_crash(op_id, crash, &answer);
            // A transport `fail` is a refused connection (typed by the
            // client: nothing was written), never read from its text.
            let this_refused = answer.kind == CompletionType::Fail && answer.transport;
            refused |= this_refused;
            let w = match (answer.kind, answer.retry_after) {
                (CompletionType::Info, _) => Some(Duration::from_millis(5 << attempt.min(6))),
                (CompletionType::Fail, Some(w)) => Some(w),
                // The nemesis killed the server: wait for its restart.
                (CompletionType::Fail, None) if this_refused && shared.kills => {
                    Some(Duration::from_millis(50))
                }
                _ => None,
            };
            let from = if attempt == 0 { op.intended_ns } else { None };
            let invoke = |event_id: String, project: String, fingerprint: String| Invoke {
                delivery: None,
                t,
                op: op_id,
                worker,
                f: OpKind::Ingest,
                event_id: Some(event_id),
                project,
                fingerprint,
                group_id,
                attempt: Some(op.attempt),
                intended: from,
            };
            // Taken, not copied: the record does not read it.
            let (group, learned) = (op.group as usize, answer.group_id.take());
            match w {
                Some(w) => {
                    wait = Some(wait.map_or(w, |m| m.max(w)));
                    let i = invoke(
                        op.event_id.clone(),
                        op.project.clone(),
                        op.fingerprint.clone(),
                    );
                    record(shared, slot, i, answer, from);
                    again.push(op);
                }
                None => {
                    let IngestOp {
                        event_id,
                        project,
                        fingerprint,
                        ..
                    } = op;
                    record(
                        shared,
                        slot,
                        invoke(event_id, project, fingerprint),
                        answer,
                        from,
                    );
                }
            }
            if let Some(g) = learned {
                if shared.learned[group].get().is_none() {
                    let _ = shared.learned[group].set(g);
                }
            }
        }
        match wait {
            Some(w) if attempt < retries && !plan.control.stopped() => {
                // A backoff or a Retry-After of any length ends on a stop,
                // and then nothing is sent again (as when the stop came first).
                if !plan.control.sleep_async(w).await {
                    return true;
                }
                ops = again;
            }
            // Refused connections: the target is gone.
            _ if refused && !shared.kills => {
                shared.target.give_up();
                return false;
            }
            _ => return true,
        }
    }
    true
}

/// What an ingest sends of its op: the request's variables, borrowed.
fn event(op: &IngestOp) -> IngestEvent<'_> {
    IngestEvent {
        event_id: &op.event_id,
        project: &op.project,
        fingerprint: &op.fingerprint,
        message: &op.message,
    }
}

async fn resolver(shared: Arc<Shared>, worker: u32, index: u32) {
    let shared = &*shared;
    let plan = shared;
    let slot = shared.live.slot(worker as usize);
    let mut gen = ResolveGenerator::sharded(&plan.scenario, &plan.namespace, index, plan.shard);
    let interval = plan.scenario.resolve().interval;
    let mut pace = ResolvePace::of(
        plan.scenario.load(),
        index,
        shared.started,
        crate::scenario::section::load_duration(&plan.scenario),
    );
    let late_after = plan.scenario.load().late_after.as_nanos() as u64;
    while !plan.control.stopped() {
        let op = gen.next_op();
        // Group ids are the service's: resolve only groups it has named.
        let known = shared.learned[op.group as usize].get().cloned();
        // A group not named yet takes no turn of the pace.
        let intended = known
            .as_ref()
            .and(pace.as_mut())
            .map(ResolvePace::next_intended);
        if let Some(intended) = intended {
            let now = plan.clock.now();
            if intended > now {
                if !plan
                    .control
                    .sleep_async(Duration::from_nanos(intended - now))
                    .await
                {
                    break;
                }
            } else if now - intended > late_after {
                slot.lock().expect("stats slot").late += 1;
            }
        }
        let Some(group_id) = known else {
            if matches!(shared.ids, GroupIdSource::Lookup) {
                learn_by_lookup(shared, &op.project, &op.fingerprint, op.group).await;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        };
        let id = shared.next_op.fetch_add(1, Ordering::Relaxed);
        let (tag, crash) = shared.tag(id, op.key, false);
        let invoke = Invoke {
            delivery: None,
            t: plan.clock.now(),
            op: id,
            worker,
            f: OpKind::Resolve,
            event_id: None,
            project: op.project.clone(),
            fingerprint: op.fingerprint.clone(),
            group_id: group_id.clone(),
            attempt: None,
            intended,
        };
        let answer = plan
            .control
            .or_abort(http_client::resolve(
                &shared.client,
                &group_id,
                &op.project,
                &op.fingerprint,
                Some(&tag),
            ))
            .await
            .unwrap_or_else(|| Answer::abandoned(plan.control.abort_reason()));
        shared.note_crash(id, crash, &answer);
        if answer.kind == CompletionType::Info
            || (answer.transport && answer.kind == CompletionType::Fail && shared.kills)
        {
            // A target in trouble (down, 5xx, timeouts): back off a little
            // instead of spinning on it, as a real client would.
            plan.control.sleep_async(Duration::from_millis(20)).await;
        }
        record(shared, slot, invoke, answer, intended);
        if pace.is_some() {
            tokio::task::yield_now().await;
        } else if !interval.is_zero() {
            // However long the interval, a stop ends it.
            plan.control.sleep_async(interval).await;
        } else {
            // Back to back, but never starving the ingesters' tasks.
            tokio::task::yield_now().await;
        }
    }
}

/// Asks `[api.lookup]` for a group's id; an answer that is not the
/// mapping's is reported as non-conforming (a lookup that never works would
/// otherwise silently starve the resolvers).
async fn learn_by_lookup(shared: &Shared, project: &str, fingerprint: &str, group: u64) {
    match http_client::lookup(&shared.client, project, fingerprint).await {
        Ok(Some(id)) => {
            let _ = shared.learned[group as usize].set(id);
        }
        Ok(None) => {}
        Err(e) => shared.nonconforming.note(&format!("lookup: {e}")),
    }
    // At most one lookup per resolver every 10 ms.
    tokio::time::sleep(Duration::from_millis(10)).await;
}

/// Reads the service's group ids from its database every 200 ms until the
/// load stops. A database not there yet (nothing ingested) is retried.
async fn poll_group_ids(shared: Arc<Shared>, read: GroupIdReader) {
    while !shared.control.stopped() {
        let r = read.clone();
        if let Ok(Ok(rows)) = tokio::task::spawn_blocking(move || r()).await {
            for (id, project, fingerprint) in rows {
                if let Some(g) = shared.keys.index_of(&project, &fingerprint) {
                    let _ = shared.learned[g as usize].set(id);
                }
            }
        }
        shared.control.sleep_async(Duration::from_millis(200)).await;
    }
}
