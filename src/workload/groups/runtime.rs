//! The concurrent runtime of the groups workload on the in-process SQLite
//! target. Each ingester and resolver is an OS thread
//! ([`crate::scheduler`] runs them and decides the stop) that owns one
//! connection and drives step machines one step at a time, logging every
//! step, until the stop. Nothing is shared on the hot path but the generator's lock,
//! the op counter and the history channel.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::config::{GroupsScenario, LoadModel};
use super::statements::GroupsVariant;
use crate::clock::{wall_ms, Clock};
use crate::control::{AbortCause, Control};
use crate::fuzz::Delay;
use crate::history::writer::{Batch, HistorySink};
use crate::history::{Completion, CompletionType, Entry, Invoke, OpKind, OpResult, Step};
use crate::live::Live;
use crate::nemesis::{OpFaults, Recorder};
use crate::scenario::Scenario;
use crate::scheduler::{Scheduler, Span, Worker};
use crate::statements::{OpProgram, StepDef};
use crate::stats::Stats;
use crate::target::sqlite::client::{Journal, StepError};
use crate::txn_backoff::TxnPolicy;
use crate::workload::groups::generator::{IngestGenerator, ResolveGenerator};
use crate::workload::groups::pace::{ClosedGate, ResolvePace};
use crate::workload::groups::{ingest_result, resolve_result, IngestOp};
use crate::workload::{Next, StepMachine, StepOutcome, Value};
use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::workload::groups::generator::CRASH_RESENDS;

/// What a load run produced, besides the history.
#[derive(Debug)]
pub struct LoadOutcome {
    /// Per-kind counts and latency histograms, merged over workers.
    pub stats: Stats,
    /// Wall time of the load, ns.
    pub elapsed_ns: u64,
    /// Fresh events generated.
    pub fresh_events: u64,
    /// Ops invoked.
    pub ops: u64,
    /// Open model: ops due before the stop that never started.
    pub missed: u64,
}

impl LoadOutcome {
    /// The outcome of a load that ran `span`, with `ops` invoked (the
    /// span's `exhausted`, the ingesters ran out of ops, is read for the
    /// open model's missed count).
    pub fn new(
        s: &Scenario,
        stats: Stats,
        gen: &Mutex<IngestGenerator>,
        ops: u64,
        span: Span,
    ) -> Self {
        let missed = missed_ops(s, &stats, span.stopped_at - span.started, span.exhausted);
        LoadOutcome {
            fresh_events: gen.lock().expect("generator lock").fresh_events(),
            stats,
            elapsed_ns: span.ended - span.started,
            ops,
            missed,
        }
    }
}

/// Everything the workers share.
pub struct LoadPlan<'a> {
    /// The resolved scenario.
    pub scenario: &'a Scenario,
    /// The checked statement file the workers run.
    pub variant: &'a GroupsVariant,
    /// Prefix of every project of this run (empty on a fresh database).
    pub namespace: &'a str,
    /// Where the workers send history entries.
    pub sink: HistorySink,
    /// The run's clock (history times are ns on it).
    pub clock: Clock,
    /// Stop, abort and interrupt signals.
    pub control: &'a Control,
    /// The fault plan and the history it records injections in.
    pub nemesis: Recorder,
    /// The live figures the workers record into (and watchers read).
    pub live: Arc<Live>,
    /// This runner's part of a sharded run (`--shard i/n`), if any.
    pub shard: Option<crate::shard::Shard>,
}

struct Shared<'a> {
    plan: &'a LoadPlan<'a>,
    gen: Mutex<IngestGenerator>,
    next_op: AtomicU64,
    ingesters_left: AtomicUsize,
    /// When the load started (fault windows count from here), ns.
    started: u64,
    /// Closed model with stages: the ingesters beyond the target wait.
    gate: Option<ClosedGate>,
    ingest_steps: Vec<&'a str>,
    resolve_steps: Vec<&'a str>,
}

impl Shared<'_> {
    /// The nemesis's decisions for an op with `key` starting now.
    /// With the schedule fuzzer's points (`crate::fuzz`).
    fn faults(&self, key: u64, ingest: bool) -> OpFaults {
        let n = &self.plan.nemesis;
        let mut out = if n.plan.faults().is_empty() {
            OpFaults::default()
        } else {
            let since = Duration::from_nanos(self.plan.clock.now().saturating_sub(self.started));
            let steps = if ingest {
                &self.ingest_steps
            } else {
                &self.resolve_steps
            };
            n.plan.for_op(key, ingest, steps, since)
        };
        if let Some(f) = crate::fuzz::Fuzzer::of(self.plan.scenario) {
            let v = self.plan.variant;
            out.fuzz = f.points(key, if ingest { &v.ingest } else { &v.resolve });
        }
        out
    }
}

/// Runs the load: `ingest_conns` and `resolve_conns` are the workers'
/// connections (one worker each). Returns when the stop condition held and
/// every op in flight ended. Figures go to `plan.live` as ops complete.
pub fn run_load<'a>(
    plan: &'a LoadPlan<'a>,
    ingest_conns: Vec<Connection>,
    resolve_conns: Vec<Connection>,
) -> LoadOutcome {
    let s = plan.scenario;
    let sched = Scheduler::start(
        plan.clock,
        plan.control,
        &plan.live,
        crate::scenario::section::load_duration(s),
    );
    let mut gen = IngestGenerator::sharded(s, plan.namespace, plan.shard);
    gen.set_origin(sched.started());
    let names = |p: &'a OpProgram| p.steps.iter().map(|s| s.name.as_str()).collect();
    let shared = Shared {
        plan,
        gen: Mutex::new(gen),
        next_op: AtomicU64::new(0),
        ingesters_left: AtomicUsize::new(ingest_conns.len()),
        started: sched.started(),
        gate: ClosedGate::of(s.load(), sched.started()),
        ingest_steps: names(&plan.variant.ingest),
        resolve_steps: names(&plan.variant.resolve),
    };
    let shared = &shared;
    let base = ingest_conns.len() as u32;
    let ingesters = ingest_conns.into_iter().enumerate().map(|(w, conn)| {
        Worker::new(format!("ingester-{w}"), move || {
            ingester(shared, w as u32, conn)
        })
    });
    let resolvers = resolve_conns.into_iter().enumerate().map(|(r, conn)| {
        Worker::new(format!("resolver-{r}"), move || {
            resolver(shared, base + r as u32, r as u32, conn)
        })
    });
    let span = sched.run_threads(ingesters.chain(resolvers).collect(), || {
        shared.ingesters_left.load(Ordering::Acquire) == 0
    });
    LoadOutcome::new(
        s,
        plan.live.merged(),
        &shared.gen,
        shared.next_op.load(Ordering::Relaxed),
        span,
    )
}

/// The next ingest op of the run's one generator (None: it ran out),
/// keeping the live count of fresh events generated.
pub fn next_ingest(gen: &Mutex<IngestGenerator>, live: &Live) -> Option<IngestOp> {
    let mut gen = gen.lock().expect("generator lock");
    let op = gen.next_op();
    live.generated.store(gen.fresh_events(), Ordering::Relaxed);
    op
}

/// Open model: ingest ops due before the stop (`load_ns` after the start)
/// that never started. When the ingesters ran out of ops (`exhausted`),
/// every op was started; otherwise op n was due when the target curve's
/// integral reached n (n / rate at a constant rate). Closed model: 0.
pub fn missed_ops(s: &Scenario, total: &Stats, load_ns: u64, exhausted: bool) -> u64 {
    match (s.load().model, s.load().curve()) {
        (LoadModel::Open, Some(curve)) if !exhausted => {
            let due = curve.due_by(load_ns as f64 / 1e9) as u64;
            let started = CompletionType::ALL
                .iter()
                .map(|&c| total.count(OpKind::Ingest, c))
                .sum::<u64>();
            due.saturating_sub(started)
        }
        _ => 0,
    }
}

/// Counts an ingester out when it ends, even by a panic, so the
/// coordinator never waits for a worker that is gone.
struct Leaving<'a>(&'a AtomicUsize);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn ingester(shared: &Shared<'_>, worker: u32, conn: Connection) {
    let _leaving = Leaving(&shared.ingesters_left);
    let plan = shared.plan;
    let slot = plan.live.slot(worker as usize);
    let late_after = plan.scenario.load().late_after.as_nanos() as u64;
    let journal = Journal::of(&conn);
    while !plan.control.stopped() {
        if let Some(wait) = shared
            .gate
            .as_ref()
            .and_then(|g| g.wait(worker, plan.clock.now()))
        {
            plan.control.sleep(wait);
            continue;
        }
        let Some(mut op) = next_ingest(&shared.gen, &plan.live) else {
            break;
        };
        if let Some(intended) = op.intended_ns {
            // A worker that is late measures from the intended start (wrk2's
            // answer to coordinated omission).
            if !await_intended(plan, slot, intended, late_after) {
                break;
            }
        }
        let id = shared.next_op.fetch_add(1, Ordering::Relaxed);
        let builtins = op.builtins(wall_ms());
        // The invoke takes the op's names (a requeue needs only its id,
        // group, key and attempt): three fewer copies per op.
        let invoke = Invoke {
            delivery: None,
            t: plan.clock.now(),
            op: id,
            worker,
            f: OpKind::Ingest,
            event_id: Some(op.event_id.clone()),
            project: std::mem::take(&mut op.project),
            fingerprint: std::mem::take(&mut op.fingerprint),
            group_id: std::mem::take(&mut op.group_id),
            attempt: Some(op.attempt),
            intended: op.intended_ns,
        };
        let program = &plan.variant.ingest;
        let counting = plan.variant.counting_step;
        let faults = shared.faults(op.key, true);
        let (kind, result) = drive(
            plan,
            (&conn, journal),
            program,
            builtins,
            invoke,
            (&faults, op.key),
            |m, n| ingest_result(m, n, counting),
        );
        if result.2.crashed_after.is_some() {
            // The client of a dead worker sends the event again later.
            shared.gen.lock().expect("generator lock").requeue(&op);
        }
        let from = op.intended_ns.unwrap_or(result.0);
        slot.lock().expect("stats slot").record_op(
            OpKind::Ingest,
            kind,
            result.1.saturating_sub(from),
            &result.2,
        );
    }
}

fn resolver(shared: &Shared<'_>, worker: u32, index: u32, conn: Connection) {
    let plan = shared.plan;
    let slot = plan.live.slot(worker as usize);
    let mut gen = ResolveGenerator::sharded(plan.scenario, plan.namespace, index, plan.shard);
    let interval = plan.scenario.resolve().interval;
    let mut pace = ResolvePace::of(
        plan.scenario.load(),
        index,
        shared.started,
        crate::scenario::section::load_duration(plan.scenario),
    );
    let late_after = plan.scenario.load().late_after.as_nanos() as u64;
    let journal = Journal::of(&conn);
    while !plan.control.stopped() {
        let op = gen.next_op();
        let intended = pace.as_mut().map(ResolvePace::next_intended);
        if let Some(intended) = intended {
            if !await_intended(plan, slot, intended, late_after) {
                break;
            }
        }
        let id = shared.next_op.fetch_add(1, Ordering::Relaxed);
        let invoke = Invoke {
            delivery: None,
            t: plan.clock.now(),
            op: id,
            worker,
            f: OpKind::Resolve,
            event_id: None,
            project: op.project.clone(),
            fingerprint: op.fingerprint.clone(),
            group_id: op.group_id.clone(),
            attempt: None,
            intended,
        };
        let faults = shared.faults(op.key, false);
        let (kind, (start, end, result)) = drive(
            plan,
            (&conn, journal),
            &plan.variant.resolve,
            op.builtins(wall_ms()),
            invoke,
            (&faults, op.key),
            resolve_result,
        );
        slot.lock().expect("stats slot").record_op(
            OpKind::Resolve,
            kind,
            end.saturating_sub(intended.unwrap_or(start)),
            &result,
        );
        if pace.is_none() {
            // However long the interval, a stop ends it.
            plan.control.sleep(interval);
        }
    }
}

/// Drives one op's step machine to its end on `conn`, logging the invoke,
/// every step and the completion as one history batch. Returns the
/// completion type and (invoke ns, completion ns, result).
fn drive<'p>(
    plan: &LoadPlan<'_>,
    conn: (&Connection, Journal),
    program: &'p OpProgram,
    builtins: Vec<Value>,
    invoke: Invoke,
    (faults, key): (&OpFaults, u64),
    interpret: impl Fn(&StepMachine<'p>, Next) -> (CompletionType, OpResult),
) -> (CompletionType, (u64, u64, OpResult)) {
    let policy = TxnPolicy::of(&plan.scenario.target, plan.scenario.seed, key);
    let (op, worker, f, t0) = (invoke.op, invoke.worker, invoke.f, invoke.t);
    let batch = std::cell::RefCell::new(Batch::default());
    batch.borrow_mut().push(&Entry::Invoke(invoke));
    // The steps of the open block's attempt: logged when it commits, with
    // COMMIT's return as their end (their effect became visible then);
    // forgotten when it is rolled back (they did not happen).
    let pending: std::cell::RefCell<Option<Vec<Step>>> = std::cell::RefCell::new(None);
    let (kind, result) = run_steps_policy(
        conn,
        program,
        builtins,
        (faults, policy),
        (
            || {
                let c = &plan.control;
                c.abort_cause().map(|cause| (cause, c.reason(cause)))
            },
            |d| {
                // A stopping load cuts a pause short (faults act while it runs).
                plan.control.sleep(d);
            },
            || plan.clock.now(),
        ),
        (
            |i, start, end, r| {
                let returned = r.as_ref().ok().and_then(|out| out.rows.first().cloned());
                let (changes, rows, error, error_kind, maybe_applied) = match r {
                    Ok(out) => (out.changes, out.rows.len() as u64, None, None, false),
                    Err(e) => {
                        if e.storage {
                            plan.control
                                .fail(crate::target::sqlite::client::storage_failure(
                                    &program.steps[i].name,
                                    e,
                                ));
                        }
                        (
                            0,
                            0,
                            Some(e.message.clone()),
                            Some(e.kind()),
                            e.maybe_applied,
                        )
                    }
                };
                let s = Step {
                    op,
                    idx: i as u32,
                    step: program.steps[i].name.clone(),
                    start,
                    end: Some(end),
                    changes,
                    rows,
                    error,
                    error_kind,
                    maybe_applied,
                    returned,
                };
                match pending.borrow_mut().as_mut() {
                    Some(p) => p.push(s),
                    None => batch.borrow_mut().push(&Entry::Step(s)),
                }
            },
            |fault, i, pause| {
                let step = program.steps[i].name.clone();
                let detail = match pause {
                    Some(d) => format!("pause {d:?} before {step}"),
                    None => format!("crash after {step}"),
                };
                batch.borrow_mut().push(&plan.nemesis.inject_entry(
                    fault,
                    op,
                    Some(step),
                    Some(detail),
                ));
            },
            |n, step, delay, start, end| {
                batch.borrow_mut().push(&crate::fuzz::entry(
                    op,
                    (n, Some(&step.name)),
                    delay,
                    (start, end),
                    false,
                ));
            },
            |note: TxnNote<'_, 'p>| match note {
                TxnNote::Begun => *pending.borrow_mut() = Some(Vec::new()),
                TxnNote::RolledBack(r) => {
                    *pending.borrow_mut() = None;
                    batch.borrow_mut().push(&txn_rollback_entry(op, program, r));
                }
                TxnNote::Committed(t) => {
                    let steps = pending.borrow_mut().take().unwrap_or_default();
                    let mut b = batch.borrow_mut();
                    for mut s in steps {
                        s.end = Some(t);
                        b.push(&Entry::Step(s));
                    }
                }
            },
        ),
        interpret,
    );
    let t1 = plan.clock.now();
    let mut batch = batch.into_inner();
    batch.push(&Entry::completion(
        kind,
        Completion {
            t: t1,
            op,
            worker,
            f,
            result: result.clone(),
        },
    ));
    plan.sink.send(batch);
    (kind, (t0, t1, result))
}

/// The history's record of a rolled-back attempt of a transaction block
/// of op `op`.
pub fn txn_rollback_entry(
    op: u64,
    program: &OpProgram,
    r: &crate::step_driver::Rollback<'_>,
) -> Entry {
    let block = program.steps[r.txn.first].name.clone();
    let step = program.steps[r.step].name.clone();
    let why = match r.code {
        Some(code) => format!("SQLite error {code}"),
        None => "crash fault or failed op".to_string(),
    };
    let backoff_ns = r.backoff.1.saturating_sub(r.backoff.0);
    let then = match (r.retried, backoff_ns) {
        (false, _) => "the op ends".to_string(),
        (true, 0) => "running the block again from BEGIN".to_string(),
        (true, ns) => format!(
            "running the block again from BEGIN after a backoff of {:?}",
            Duration::from_nanos(ns)
        ),
    };
    Entry::Bench(crate::history::BenchEntry {
        t: r.wait.0,
        end: r.wait.1,
        action: crate::history::BenchAction::TxnRollback,
        detail: Some(format!(
            "block {block} attempt {} rolled back at {step} ({why}); {then}",
            r.attempt
        )),
        op: Some(op),
        fuzz: None,
        txn: Some(crate::history::TxnRollback {
            block,
            step,
            attempt: r.attempt,
            code: r.code,
            wait_ns: r.wait.1.saturating_sub(r.wait.0),
            retried: r.retried,
            backoff_ns,
        }),
    })
}

/// Runs one op's step machine on `conn` (whose journal is `journal`, read
/// when it was opened) to its end, each step one statement
/// in autocommit ([`exec_step`]); shared by the load runtime and the HTTP
/// server. Before each step, `abort()` may abandon the op with its cause
/// and reason (`fail`, or `info` once a step changed rows), and a pause
/// fault waits by `pause`
/// (which may cut it short); after a
/// step, a crash fault abandons the op (`info`, `crashed_after` set), as a
/// stateless worker that dies mid-request; `on_fault(fault, step, pause)`
/// hears of each injection first. After each step, `on_step` gets the
/// step index, its start and end on `now`, and its outcome. A failed step
/// ends the op: `info` if it may have applied or an earlier step changed
/// rows, else `fail`. An op that ends normally is read by `interpret`.
/// The schedule fuzzer's points of `faults` are performed by the driver,
/// and `on_fuzz(n, step, delay, start, end)` hears of each after it.
#[allow(clippy::too_many_arguments)]
pub fn run_steps<'p>(
    conn: (&Connection, Journal),
    program: &'p OpProgram,
    builtins: Vec<Value>,
    faults: &OpFaults,
    abort: impl Fn() -> Option<(AbortCause, String)>,
    pause: impl Fn(Duration),
    now: impl Fn() -> u64,
    on_step: impl FnMut(usize, u64, u64, &Result<StepOutcome, StepError>),
    on_fault: impl FnMut(u32, usize, Option<Duration>),
    on_fuzz: impl FnMut(usize, &'p StepDef, Delay, u64, u64),
    interpret: impl Fn(&StepMachine<'p>, Next) -> (CompletionType, OpResult),
) -> (CompletionType, OpResult) {
    run_steps_txn(
        conn,
        program,
        builtins,
        faults,
        (abort, pause, now),
        (on_step, on_fault, on_fuzz, |_: TxnNote<'_, 'p>| {}),
        interpret,
    )
}

/// What [`run_steps_txn`]'s `on_txn` hears of a transaction block.
#[derive(Debug)]
pub enum TxnNote<'a, 'p> {
    /// BEGIN succeeded: the steps `on_step` hears from here belong to
    /// this attempt until it commits or is rolled back.
    Begun,
    /// The attempt was rolled back: its steps did not happen.
    RolledBack(&'a crate::step_driver::Rollback<'p>),
    /// The attempt committed; COMMIT returned at this instant (on the
    /// caller's clock).
    Committed(u64),
}

/// [`run_steps`], with `on_txn` told of each transaction block's BEGIN and
/// rollback (the step log drops a rolled-back attempt's steps); a busy
/// block runs again at once, up to the default budget.
#[allow(clippy::type_complexity)]
pub fn run_steps_txn<'p, A, P, N, S, F, Z, T>(
    conn: (&Connection, Journal),
    program: &'p OpProgram,
    builtins: Vec<Value>,
    faults: &OpFaults,
    (abort, pause, now): (A, P, N),
    (on_step, on_fault, on_fuzz, on_txn): (S, F, Z, T),
    interpret: impl Fn(&StepMachine<'p>, Next) -> (CompletionType, OpResult),
) -> (CompletionType, OpResult)
where
    A: Fn() -> Option<(AbortCause, String)>,
    P: Fn(Duration),
    N: Fn() -> u64,
    S: FnMut(usize, u64, u64, &Result<StepOutcome, StepError>),
    F: FnMut(u32, usize, Option<Duration>),
    Z: FnMut(usize, &'p StepDef, Delay, u64, u64),
    T: FnMut(TxnNote<'_, 'p>),
{
    run_steps_policy(
        conn,
        program,
        builtins,
        (faults, TxnPolicy::default()),
        (abort, pause, now),
        (on_step, on_fault, on_fuzz, on_txn),
        interpret,
    )
}

/// [`run_steps_txn`] under the retry `policy` of the scenario's
/// `target.txn_*` keys: between a busy block's rollback and its next
/// BEGIN the worker waits the policy's backoff by `pause` (which a stop
/// cuts short).
#[allow(clippy::type_complexity)]
pub fn run_steps_policy<'p, A, P, N, S, F, Z, T>(
    conn: (&Connection, Journal),
    program: &'p OpProgram,
    builtins: Vec<Value>,
    (faults, policy): (&OpFaults, TxnPolicy),
    (abort, pause, now): (A, P, N),
    (on_step, on_fault, on_fuzz, on_txn): (S, F, Z, T),
    interpret: impl Fn(&StepMachine<'p>, Next) -> (CompletionType, OpResult),
) -> (CompletionType, OpResult)
where
    A: Fn() -> Option<(AbortCause, String)>,
    P: Fn(Duration),
    N: Fn() -> u64,
    S: FnMut(usize, u64, u64, &Result<StepOutcome, StepError>),
    F: FnMut(u32, usize, Option<Duration>),
    Z: FnMut(usize, &'p StepDef, Delay, u64, u64),
    T: FnMut(TxnNote<'_, 'p>),
{
    crate::step_driver::drive(
        conn,
        program,
        builtins,
        GroupsHooks {
            program,
            faults,
            policy,
            abort,
            pause,
            now,
            on_step,
            on_fault,
            on_fuzz,
            on_txn,
            interpret,
        },
    )
}

/// [`run_steps`]'s closures as the step driver's hooks: a groups op's
/// faults are drawn by program step, and its end reads as a groups
/// completion.
struct GroupsHooks<'p, 'f, A, P, N, S, F, Z, T, I> {
    program: &'p OpProgram,
    faults: &'f OpFaults,
    policy: TxnPolicy,
    abort: A,
    pause: P,
    now: N,
    on_step: S,
    on_fault: F,
    on_fuzz: Z,
    on_txn: T,
    interpret: I,
}

impl<'p, A, P, N, S, F, Z, T, I> crate::step_driver::StepHooks<'p>
    for GroupsHooks<'p, '_, A, P, N, S, F, Z, T, I>
where
    A: Fn() -> Option<(AbortCause, String)>,
    P: Fn(Duration),
    N: Fn() -> u64,
    S: FnMut(usize, u64, u64, &Result<StepOutcome, StepError>),
    F: FnMut(u32, usize, Option<Duration>),
    Z: FnMut(usize, &'p StepDef, Delay, u64, u64),
    T: FnMut(TxnNote<'_, 'p>),
    I: Fn(&StepMachine<'p>, Next) -> (CompletionType, OpResult),
{
    type Out = (CompletionType, OpResult);

    fn abort(&mut self) -> Option<(AbortCause, String)> {
        (self.abort)()
    }

    fn fuzz(&mut self, n: usize) -> Option<Delay> {
        self.faults.fuzz_before(n)
    }

    fn fuzzed(&mut self, n: usize, step: &'p StepDef, delay: Delay, start: u64, end: u64) {
        (self.on_fuzz)(n, step, delay, start, end);
    }

    fn before(&mut self, _n: usize, i: usize, _step: &'p crate::statements::StepDef) {
        if let Some((delay, fault)) = self.faults.pause_before(i) {
            (self.on_fault)(fault, i, Some(delay));
            (self.pause)(delay);
        }
    }

    fn now(&self) -> u64 {
        (self.now)()
    }

    fn after(&mut self, i: usize, start: u64, end: u64, r: &Result<StepOutcome, StepError>) {
        (self.on_step)(i, start, end, r);
    }

    fn crash(&mut self, _n: usize, i: usize, _step: &'p crate::statements::StepDef) -> bool {
        match self.faults.crash_after(i) {
            Some(fault) => {
                (self.on_fault)(fault, i, None);
                true
            }
            None => false,
        }
    }

    fn txn_policy(&self) -> TxnPolicy {
        self.policy
    }

    fn wait(&mut self, d: Duration) {
        (self.pause)(d);
    }

    fn begun(&mut self, _txn: &'p crate::statements::Txn, _attempt: u32) {
        (self.on_txn)(TxnNote::Begun);
    }

    fn rolled_back(&mut self, r: &crate::step_driver::Rollback<'p>) {
        (self.on_txn)(TxnNote::RolledBack(r));
    }

    fn committed(&mut self, _txn: &'p crate::statements::Txn, _begin: u64, commit: u64) {
        (self.on_txn)(TxnNote::Committed(commit));
    }

    fn end(self, m: &StepMachine<'p>, end: crate::step_driver::End) -> Self::Out {
        use crate::step_driver::End;
        // `fail` only if nothing of the op can have happened.
        let unless_applied = |maybe_applied: bool| {
            if maybe_applied || m.changed_any() {
                CompletionType::Info
            } else {
                CompletionType::Fail
            }
        };
        match end {
            End::Aborted(cause, why) => (
                unless_applied(false),
                OpResult {
                    error: Some(why),
                    aborted: Some(cause),
                    ..Default::default()
                },
            ),
            End::Failed {
                step,
                message,
                maybe_applied,
            } => (
                unless_applied(maybe_applied),
                OpResult {
                    error: Some(format!("step {}: {message}", self.program.steps[step].name)),
                    ..Default::default()
                },
            ),
            End::Crashed {
                step,
                rolled_back: true,
                ..
            } => {
                // The worker died inside a transaction block, which SQLite
                // rolled back: nothing of the block applied (the machine is
                // as it was at BEGIN). Its client still never heard, and
                // sends the event again (`crashed_after`).
                let name = &self.program.steps[step].name;
                let result = OpResult {
                    error: Some(format!(
                        "crash fault after step {name} inside a transaction block (rolled back)"
                    )),
                    crashed_after: Some(name.clone()),
                    ..Default::default()
                };
                (unless_applied(false), result)
            }
            End::Crashed { step, next, .. } => {
                // The worker died here: whatever the op did so far stays,
                // and nobody hears how it ended. What the statements did
                // is kept for the step log's reader (an op that would have
                // ended here says how).
                let name = &self.program.steps[step].name;
                let mut result = if next == Next::Continue {
                    OpResult::default()
                } else {
                    (self.interpret)(m, next).1
                };
                result.error = Some(format!("crash fault after step {name}"));
                result.crashed_after = Some(name.clone());
                (CompletionType::Info, result)
            }
            End::Done(next) => (self.interpret)(m, next),
        }
    }
}

impl crate::workload::ran::LoadFigures for LoadOutcome {
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

/// Sleeps until an open-model op is due; an op started more than
/// `late_after` behind its intended start counts as late. False when a
/// stop came first.
fn await_intended(
    plan: &LoadPlan<'_>,
    slot: &Mutex<Stats>,
    intended: u64,
    late_after: u64,
) -> bool {
    let now = plan.clock.now();
    if intended > now {
        return plan.control.sleep(Duration::from_nanos(intended - now));
    }
    if now - intended > late_after {
        slot.lock().expect("stats slot").late += 1;
    }
    true
}
