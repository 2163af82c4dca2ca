//! The worker pool: N OS threads, each owning one SQLite connection, fed
//! by one bounded crossbeam channel of jobs. A job is one whole op (ingest
//! or resolve of groups, or one outbox delivery's `handle`, see
//! [`super::handle`]) run as a step machine, every step its own autocommit
//! statement (as the in-process SQLite target runs it, via
//! [`crate::workload::groups::runtime::run_steps`]); the answer goes back on a tokio oneshot.
//! SQLite never runs on the async runtime's threads.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::handle::{run_handle, HandleAnswer, HandleOp};
use super::Served;
use crate::clock::wall_ms;
use crate::control::Control;
use crate::fault_hook::HandleHook;
use crate::history::{CompletionType, HookStep, OpResult};
use crate::nemesis::OpFaults;
use crate::statements::OpProgram;
use crate::target::sqlite::client::{Journal, StepError};
use crate::txn_backoff::TxnPolicy;
use crate::workload::groups::runtime::{run_steps_policy, TxnNote};
use crate::workload::groups::{ingest_result, resolve_result, IngestOp, ResolveOp};
use crate::workload::StepOutcome;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use rusqlite::Connection;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// How one op ended: its completion type (`ok`, `fail`, `info`) and what
/// the step machine made of it.
#[derive(Debug, Clone)]
pub struct OpAnswer {
    /// `ok`, `fail` (certainly not applied) or `info` (indeterminate).
    pub kind: CompletionType,
    /// Accepted/duplicate, resolved/refused with its probe, or the error.
    pub result: OpResult,
    /// The op ended on a step SQLite refused as busy or locked (from the
    /// step's error code): with `fail`, nothing applied and the op may
    /// succeed if sent again.
    pub busy: bool,
    /// Every step the op ran to completion, in order, with the rows it
    /// changed (what the in-process step log would know of it, but times).
    pub steps: Vec<HookStep>,
}

/// The step log of one op on a worker: what [`OpAnswer`] reports besides
/// the result.
#[derive(Default)]
struct Ran {
    /// Keep each step's name and changes (for the fault hook's report).
    record: bool,
    busy: bool,
    steps: Vec<HookStep>,
}

impl Ran {
    fn step(&mut self, program: &OpProgram, i: usize, r: &Result<StepOutcome, StepError>) {
        match r {
            Ok(_) if !self.record => {}
            Ok(out) => self.steps.push(HookStep {
                step: program.steps[i].name.clone(),
                changes: out.changes,
            }),
            Err(e) => self.busy = e.busy,
        }
    }
}

/// One op for a worker.
#[derive(Debug)]
pub enum Op {
    /// Ingest one event.
    Ingest(IngestOp),
    /// Resolve one group.
    Resolve(ResolveOp),
    /// Handle one outbox delivery (answered on `Job::outbox_reply`).
    Handle(HandleOp, HandleHook),
}

/// Where a job's answer goes: groups ops and outbox deliveries answer
/// differently.
enum Reply {
    Groups(oneshot::Sender<OpAnswer>),
    Outbox(oneshot::Sender<HandleAnswer>),
}

impl Reply {
    fn is_closed(&self) -> bool {
        match self {
            Reply::Groups(r) => r.is_closed(),
            Reply::Outbox(r) => r.is_closed(),
        }
    }
}

struct Job {
    op: Op,
    /// Test-only fault hook: pauses and a crash between the op's steps.
    faults: OpFaults,
    reply: Reply,
    /// Held until the job is answered: bounds the jobs queued or running
    /// to the channel's capacity, so a send never blocks the runtime.
    _permit: OwnedSemaphorePermit,
}

/// Why an op could not be run at all (nothing of it happened).
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The pool is shutting down or a worker is gone.
    #[error("the worker pool is closed")]
    Closed,
}

/// N worker threads, one connection each, and the queue that feeds them.
pub struct Pool {
    tx: Mutex<Option<Sender<Job>>>,
    permits: Arc<Semaphore>,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// Ends the fault hook's pauses when the server shuts down: a pause
    /// of any length must not keep it from stopping.
    pauses: Arc<Control>,
}

impl Pool {
    /// Starts one worker thread per connection; `queue` is the channel's
    /// capacity (jobs waiting beyond it wait, asynchronously, for a slot).
    /// Transaction blocks run under `txn` (`specstorm serve --txn-*`).
    pub fn start(variant: Served, conns: Vec<Connection>, queue: usize, txn: TxnPolicy) -> Self {
        let queue = queue.max(1);
        let (tx, rx) = crossbeam_channel::bounded::<Job>(queue);
        let pauses = Arc::new(Control::default());
        let handles = conns
            .into_iter()
            .enumerate()
            .map(|(w, conn)| {
                let (rx, variant, pauses) = (rx.clone(), variant.clone(), pauses.clone());
                std::thread::Builder::new()
                    .name(format!("sqlite-worker-{w}"))
                    .spawn(move || worker(&variant, conn, rx, &pauses, (txn, w as u64)))
                    .expect("spawn sqlite worker")
            })
            .collect();
        Pool {
            tx: Mutex::new(Some(tx)),
            permits: Arc::new(Semaphore::new(queue)),
            handles: Mutex::new(handles),
            pauses,
        }
    }

    /// Cuts every fault-hook pause short, now and from now on (the server
    /// is shutting down: the ops finish without waiting).
    pub fn end_pauses(&self) {
        self.pauses.request_stop();
    }

    /// Runs `op` (ingest or resolve) on some worker and waits
    /// (asynchronously) for its answer.
    pub async fn run(&self, op: Op, faults: OpFaults) -> Result<OpAnswer, SubmitError> {
        let (reply, answer) = oneshot::channel();
        self.submit(op, faults, Reply::Groups(reply)).await?;
        answer.await.map_err(|_| SubmitError::Closed)
    }

    /// Runs one outbox delivery's `handle` on some worker and waits for
    /// its answer.
    pub async fn handle(
        &self,
        op: HandleOp,
        hook: HandleHook,
    ) -> Result<HandleAnswer, SubmitError> {
        let (reply, answer) = oneshot::channel();
        self.submit(
            Op::Handle(op, hook),
            OpFaults::default(),
            Reply::Outbox(reply),
        )
        .await?;
        answer.await.map_err(|_| SubmitError::Closed)
    }

    async fn submit(&self, op: Op, faults: OpFaults, reply: Reply) -> Result<(), SubmitError> {
        let tx = self.sender().ok_or(SubmitError::Closed)?;
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SubmitError::Closed)?;
        let job = Job {
            op,
            faults,
            reply,
            _permit: permit,
        };
        match tx.try_send(job) {
            Ok(()) => {}
            // Cannot happen while permits <= capacity; never block here.
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                return Err(SubmitError::Closed)
            }
        }
        Ok(())
    }

    fn sender(&self) -> Option<Sender<Job>> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Closes the queue and waits (blocking: call it off the async runtime)
    /// for every worker to finish the jobs already queued.
    pub fn shutdown(&self) {
        self.end_pauses();
        self.permits.close();
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(|e| e.into_inner()));
        for h in handles {
            if h.join().is_err() {
                tracing::error!("a sqlite worker panicked");
            }
        }
    }
}

/// Worker `w`'s loop; its jobs' backoff draws are keyed by (`w`, the
/// job's number on it): over HTTP the bench does not order the server's
/// jobs, so the key only has to differ between jobs.
fn worker(
    variant: &Served,
    conn: Connection,
    rx: Receiver<Job>,
    pauses: &Control,
    (txn, w): (TxnPolicy, u64),
) {
    let journal = Journal::of(&conn);
    for (j, job) in rx.into_iter().enumerate() {
        let policy = txn.for_op((w << 40) ^ j as u64);
        // The client is gone (its request was dropped): not running the op
        // is one of the outcomes it must already allow for.
        if job.reply.is_closed() {
            tracing::debug!("skipping an op whose request was dropped");
            continue;
        }
        let (program, builtins, counting) = match (&job.op, variant) {
            (Op::Handle(op, hook), Served::Outbox(v)) => {
                let answer = run_handle(&conn, journal, &v.handle, op, hook, (pauses, policy));
                tracing::trace!(?op, ?answer, "delivery done");
                if let Reply::Outbox(r) = job.reply {
                    let _ = r.send(answer);
                }
                continue;
            }
            (Op::Ingest(op), Served::Groups(v)) => {
                (&v.ingest, op.builtins(wall_ms()), Some(v.counting_step))
            }
            (Op::Resolve(op), Served::Groups(v)) => (&v.resolve, op.builtins(wall_ms()), None),
            // The routes never submit an op of the other workload: dropping
            // the reply answers 503 (nothing ran).
            _ => {
                tracing::error!(op = ?job.op, "an op of the other workload reached the pool");
                continue;
            }
        };
        // The steps are reported only by the fault hook's crash answer: no
        // copies of step names for the ops no crash is planned for.
        let ran = Ran {
            record: job.faults.crash_after.is_some(),
            ..Ran::default()
        };
        // Where the open transaction block's attempt began in the step
        // report: a rollback forgets its steps.
        let mark = std::cell::Cell::new(0usize);
        let ran = std::cell::RefCell::new(ran);
        let (kind, result) = run_steps_policy(
            (&conn, journal),
            program,
            builtins,
            (&job.faults, policy),
            (
                || None,
                |d| {
                    pauses.sleep(d);
                },
                || 0,
            ),
            (
                |i, _, _, r| ran.borrow_mut().step(program, i, r),
                |_, _, _| {},
                // The bench recorded the fuzzer's points when it sent them.
                |_, _, _, _, _| {},
                |note: TxnNote<'_, '_>| {
                    let mut ran = ran.borrow_mut();
                    match note {
                        TxnNote::Begun => {
                            mark.set(ran.steps.len());
                            ran.busy = false;
                        }
                        TxnNote::RolledBack(_) => {
                            let m = mark.get();
                            ran.steps.truncate(m);
                        }
                        TxnNote::Committed(_) => {}
                    }
                },
            ),
            |m, n| match counting {
                Some(c) => ingest_result(m, n, c),
                None => resolve_result(m, n),
            },
        );
        let ran = ran.into_inner();
        tracing::trace!(op = ?job.op, ?kind, ?result, "op done");
        if let Reply::Groups(r) = job.reply {
            let _ = r.send(OpAnswer {
                kind,
                result,
                busy: ran.busy,
                steps: ran.steps,
            });
        }
    }
}
