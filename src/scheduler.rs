//! The one scheduler of a load run, whatever the workload and the target:
//! it owns the load's start, its deadline (`stop.duration`), the stop
//! rule, the live figures' elapsed time and `Draining` phase, and the
//! workers' lives (spawned, then joined). The runtimes keep their per-op
//! worker loops (the hot path) and hand the rest to it.
//!
//! The stop rule, checked every [`TICK`] by the coordinator: the load
//! stops on the deadline, when the work ran out (a probe the workload
//! gives: every ingester out of ops, the queue drained), on the user's
//! stop, when the target is gone ([`TargetWatch`], HTTP targets), or when
//! an `abort_on_fail` threshold breached (`crate::abort_on_fail`). The
//! stop is [`Control::request_stop`], which wakes every wait of the
//! workers; the scheduler then waits for every worker to end (ops in
//! flight run to their end, or to the abort of `stop.grace`).
//!
//! Two executors, one rule: OS threads ([`Scheduler::run_threads`], one
//! per worker and connection, so a blocking SQLite call stalls nothing
//! else) and tokio tasks on a two-worker runtime
//! ([`Scheduler::run_tasks`], HTTP targets: one request in flight each).
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use crate::clock::Clock;
use crate::control::Control;
use crate::draws::ns;
use crate::fault_kind::FaultKind;
use crate::live::{Live, Phase};
use crate::scenario::Scenario;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How often the coordinator checks the stop rule (a stop by the user or
/// by a worker wakes it at once).
pub const TICK: Duration = Duration::from_millis(5);

/// When a load ran, on the run's clock (ns), and why it stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The load started (fault windows count from here).
    pub started: u64,
    /// The coordinator stopped the load.
    pub stopped_at: u64,
    /// Every worker had ended.
    pub ended: u64,
    /// The load stopped because its work ran out (not the deadline, the
    /// user or a dead target).
    pub exhausted: bool,
}

/// One worker of [`Scheduler::run_threads`]: its thread's name and body.
pub struct Worker<'env> {
    name: String,
    run: Box<dyn FnOnce() + Send + 'env>,
}

impl<'env> Worker<'env> {
    /// A worker named `name` (its thread's name) that runs `run`.
    pub fn new(name: impl Into<String>, run: impl FnOnce() + Send + 'env) -> Self {
        Worker {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// One task of [`Scheduler::run_tasks`].
pub type Task = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Whether an HTTP target still answers. A service that answers nothing
/// for two request timeouts (hung, stopped) ends the run instead of
/// letting it time out request after request until its duration; with kill
/// faults scheduled, a killed server is silent until its restart, so the
/// limit grows by the longest down time and 10 s. A worker that meets a
/// refused connection (no nemesis at work) gives the target up at once
/// ([`TargetWatch::give_up`]).
#[derive(Debug)]
pub struct TargetWatch {
    /// When the service last answered anything (ns on the run's clock).
    last_answer: AtomicU64,
    dead: AtomicBool,
    /// The longest silence of a live target, ns.
    limit: u64,
}

impl TargetWatch {
    /// The watch of a target of `s` that last answered at `now`; `kills`:
    /// kill faults are scheduled.
    pub fn new(s: &Scenario, kills: bool, now: u64) -> Self {
        let mut limit = ns(s.target.request_timeout).saturating_mul(2);
        if kills {
            let down = s
                .faults
                .iter()
                .filter(|f| f.kind == FaultKind::Kill)
                .filter_map(|f| f.delay)
                .max()
                .unwrap_or_default();
            limit = limit
                .saturating_add(ns(down))
                .saturating_add(10_000_000_000);
        }
        TargetWatch {
            last_answer: AtomicU64::new(now),
            dead: AtomicBool::new(false),
            limit,
        }
    }

    /// The service answered (anything but a transport error) at `t`.
    pub fn answered(&self, t: u64) {
        self.last_answer.fetch_max(t, Ordering::Relaxed);
    }

    /// The target is gone (it refused a connection): the load stops.
    pub fn give_up(&self) {
        self.dead.store(true, Ordering::Release);
    }

    /// Whether the target was given up.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// The longest silence of a live target.
    pub fn limit(&self) -> Duration {
        Duration::from_nanos(self.limit)
    }

    /// Gives the target up if it has been silent past the limit at `now`;
    /// whether it is given up.
    fn check(&self, now: u64) -> bool {
        if now.saturating_sub(self.last_answer.load(Ordering::Relaxed)) > self.limit {
            self.give_up();
        }
        self.is_dead()
    }
}

/// The scheduler of one load: see the module's doc.
pub struct Scheduler<'a> {
    clock: Clock,
    control: &'a Control,
    live: &'a Live,
    started: u64,
    deadline: Option<u64>,
}

impl<'a> Scheduler<'a> {
    /// A load starting now on `clock`, stopping after `duration` if any.
    pub fn start(
        clock: Clock,
        control: &'a Control,
        live: &'a Live,
        duration: Option<Duration>,
    ) -> Self {
        let started = clock.now();
        Scheduler {
            clock,
            control,
            live,
            started,
            deadline: duration.map(|d| started.saturating_add(ns(d))),
        }
    }

    /// When the load started (ns on the run's clock).
    pub fn started(&self) -> u64 {
        self.started
    }

    /// One look of the coordinator: the live elapsed time, then the stop
    /// rule. Some((now, exhausted)) once the load stops (the stop is
    /// requested and the phase is `Draining`).
    fn tick(
        &self,
        exhausted: &dyn Fn() -> bool,
        target: Option<&TargetWatch>,
    ) -> Option<(u64, bool)> {
        let now = self.clock.now();
        self.live.set_elapsed(now - self.started);
        let exhausted = exhausted();
        let dead = target.is_some_and(|t| t.check(now));
        let ended =
            exhausted || self.deadline.is_some_and(|d| now >= d) || self.control.stopped() || dead;
        // A load that ends anyway is not aborted by a threshold.
        if ended || self.live.abort_due(now - self.started) {
            self.control.request_stop();
            self.live.set_phase(Phase::Draining);
            return Some((now, exhausted));
        }
        None
    }

    /// Runs `workers`, one OS thread each, until the stop rule holds
    /// (`exhausted`: the work ran out; it may also publish live figures),
    /// then joins them.
    pub fn run_threads<'env>(
        &self,
        workers: Vec<Worker<'env>>,
        exhausted: impl Fn() -> bool,
    ) -> Span {
        let (stopped_at, exhausted) = std::thread::scope(|scope| {
            let handles: Vec<_> = workers
                .into_iter()
                .map(|w| {
                    let name = w.name.clone();
                    let handle = std::thread::Builder::new()
                        .name(w.name)
                        .spawn_scoped(scope, w.run)
                        .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
                    (name, handle)
                })
                .collect();
            let stop = loop {
                if let Some(stop) = self.tick(&exhausted, None) {
                    break stop;
                }
                self.control.sleep(TICK);
            };
            for (name, h) in handles {
                h.join()
                    .unwrap_or_else(|_| panic!("worker {name} panicked"));
            }
            stop
        });
        self.span(stopped_at, self.clock.now(), exhausted)
    }

    /// Runs `workers` as tasks of a two-worker tokio runtime (each task
    /// runs next to the connection it uses) until the stop rule holds
    /// (`exhausted`, or `target` is gone), and waits for them; `background`
    /// tasks run beside them and are dropped with the runtime.
    pub fn run_tasks(
        &self,
        workers: Vec<Task>,
        background: Vec<Task>,
        exhausted: impl Fn() -> bool,
        target: Option<&TargetWatch>,
    ) -> Span {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let (stopped_at, exhausted) = rt.block_on(async {
            let handles: Vec<_> = workers.into_iter().map(tokio::spawn).collect();
            for task in background {
                tokio::spawn(task);
            }
            let work = async {
                for h in handles {
                    h.await.expect("a load task panicked");
                }
            };
            let coordinator = async {
                loop {
                    if let Some(stop) = self.tick(&exhausted, target) {
                        return stop;
                    }
                    self.control.sleep_async(TICK).await;
                }
            };
            let ((), stop) = tokio::join!(work, coordinator);
            stop
        });
        let ended = self.clock.now();
        drop(rt);
        self.span(stopped_at, ended, exhausted)
    }

    fn span(&self, stopped_at: u64, ended: u64, exhausted: bool) -> Span {
        Span {
            started: self.started,
            stopped_at,
            ended,
            exhausted,
        }
    }
}
