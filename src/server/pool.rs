//! The worker pool: N OS threads, each owning one SQLite connection, fed
//! by one bounded crossbeam channel of jobs. A job is one whole op (ingest
//! or resolve) run as a step machine, every step its own autocommit
//! statement (as the in-process SQLite target runs it, via
//! [`crate::runtime::run_steps`]); the answer goes back on a tokio oneshot.
//! SQLite never runs on the async runtime's threads.

use crate::history::{CompletionType, OpResult};
use crate::nemesis::OpFaults;
use crate::runtime::{run_steps, wall_ms};
use crate::statements::GroupsVariant;
use crate::workload::groups::{ingest_result, resolve_result, IngestOp, ResolveOp};
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
}

/// One op for a worker.
#[derive(Debug)]
pub enum Op {
    /// Ingest one event.
    Ingest(IngestOp),
    /// Resolve one group.
    Resolve(ResolveOp),
}

struct Job {
    op: Op,
    /// Test-only fault hook: pauses and a crash between the op's steps.
    faults: OpFaults,
    reply: oneshot::Sender<OpAnswer>,
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
}

impl Pool {
    /// Starts one worker thread per connection; `queue` is the channel's
    /// capacity (jobs waiting beyond it wait, asynchronously, for a slot).
    pub fn start(variant: Arc<GroupsVariant>, conns: Vec<Connection>, queue: usize) -> Self {
        let queue = queue.max(1);
        let (tx, rx) = crossbeam_channel::bounded::<Job>(queue);
        let handles = conns
            .into_iter()
            .enumerate()
            .map(|(w, conn)| {
                let (rx, variant) = (rx.clone(), variant.clone());
                std::thread::Builder::new()
                    .name(format!("sqlite-worker-{w}"))
                    .spawn(move || worker(&variant, conn, rx))
                    .expect("spawn sqlite worker")
            })
            .collect();
        Pool {
            tx: Mutex::new(Some(tx)),
            permits: Arc::new(Semaphore::new(queue)),
            handles: Mutex::new(handles),
        }
    }

    /// Runs `op` on some worker and waits (asynchronously) for its answer.
    pub async fn run(&self, op: Op, faults: OpFaults) -> Result<OpAnswer, SubmitError> {
        let tx = self.sender().ok_or(SubmitError::Closed)?;
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SubmitError::Closed)?;
        let (reply, answer) = oneshot::channel();
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
        answer.await.map_err(|_| SubmitError::Closed)
    }

    fn sender(&self) -> Option<Sender<Job>> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Closes the queue and waits (blocking: call it off the async runtime)
    /// for every worker to finish the jobs already queued.
    pub fn shutdown(&self) {
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

fn worker(variant: &GroupsVariant, conn: Connection, rx: Receiver<Job>) {
    for job in rx {
        // The client is gone (its request was dropped): not running the op
        // is one of the outcomes it must already allow for.
        if job.reply.is_closed() {
            tracing::debug!("skipping an op whose request was dropped");
            continue;
        }
        let (kind, result) = match &job.op {
            Op::Ingest(op) => {
                let counting = variant.counting_step;
                run_steps(
                    &conn,
                    &variant.ingest,
                    op.builtins(wall_ms()),
                    &job.faults,
                    || false,
                    || false,
                    || 0,
                    |_, _, _, _| {},
                    |_, _, _| {},
                    |m, n| ingest_result(m, n, counting),
                )
            }
            Op::Resolve(op) => run_steps(
                &conn,
                &variant.resolve,
                op.builtins(wall_ms()),
                &job.faults,
                || false,
                || false,
                || 0,
                |_, _, _, _| {},
                |_, _, _| {},
                resolve_result,
            ),
        };
        tracing::trace!(op = ?job.op, ?kind, ?result, "op done");
        let _ = job.reply.send(OpAnswer { kind, result });
    }
}
