//! The worker pool: N OS threads, each owning one SQLite connection, fed
//! by one bounded crossbeam channel of jobs. A job is one whole op of the
//! served workload (its routes hand it in as a closure over a
//! [`Worker`]) run as a step machine, every step its own autocommit
//! statement (as the in-process SQLite target runs it); the answer goes
//! back on a tokio oneshot. SQLite never runs on the async runtime's
//! threads.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::control::Control;
use crate::target::sqlite::client::Journal;
use crate::txn_backoff::TxnPolicy;
use crossbeam_channel::{Receiver, Sender, TrySendError};
use rusqlite::Connection;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// What a job runs with on its worker.
pub struct Worker<'a> {
    /// The worker's connection.
    pub conn: &'a Connection,
    /// The connection's journal mode.
    pub journal: Journal,
    /// Where the fault hook's pauses and the backoff wait: the server's
    /// shutdown cuts them short.
    pub pauses: &'a Control,
    /// The transaction blocks' retry budget and backoff for this job.
    pub policy: TxnPolicy,
}

/// A job's op and where its answer goes, whatever the answer's type.
trait Task: Send {
    /// The request is gone (its answer has nowhere to go).
    fn is_closed(&self) -> bool;
    /// Runs the op and sends its answer.
    fn run(self: Box<Self>, w: &Worker<'_>);
}

struct Reply<F, T> {
    op: F,
    reply: oneshot::Sender<T>,
}

impl<F, T> Task for Reply<F, T>
where
    F: FnOnce(&Worker<'_>) -> T + Send,
    T: Send,
{
    fn is_closed(&self) -> bool {
        self.reply.is_closed()
    }

    fn run(self: Box<Self>, w: &Worker<'_>) {
        let _ = self.reply.send((self.op)(w));
    }
}

struct Job {
    task: Box<dyn Task>,
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
    pub fn start(conns: Vec<Connection>, queue: usize, txn: TxnPolicy) -> Self {
        let queue = queue.max(1);
        let (tx, rx) = crossbeam_channel::bounded::<Job>(queue);
        let pauses = Arc::new(Control::default());
        let handles = conns
            .into_iter()
            .enumerate()
            .map(|(w, conn)| {
                let (rx, pauses) = (rx.clone(), pauses.clone());
                std::thread::Builder::new()
                    .name(format!("sqlite-worker-{w}"))
                    .spawn(move || worker(conn, rx, &pauses, (txn, w as u64)))
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

    /// Runs `op` on some worker and waits (asynchronously) for its
    /// answer.
    pub async fn run<T, F>(&self, op: F) -> Result<T, SubmitError>
    where
        F: FnOnce(&Worker<'_>) -> T + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.submit(Box::new(Reply { op, reply })).await?;
        answer.await.map_err(|_| SubmitError::Closed)
    }

    async fn submit(&self, task: Box<dyn Task>) -> Result<(), SubmitError> {
        let tx = self.sender().ok_or(SubmitError::Closed)?;
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| SubmitError::Closed)?;
        let job = Job {
            task,
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
fn worker(conn: Connection, rx: Receiver<Job>, pauses: &Control, (txn, w): (TxnPolicy, u64)) {
    let journal = Journal::of(&conn);
    for (j, job) in rx.into_iter().enumerate() {
        let policy = txn.for_op((w << 40) ^ j as u64);
        // The client is gone (its request was dropped): not running the op
        // is one of the outcomes it must already allow for.
        if job.task.is_closed() {
            tracing::debug!("skipping an op whose request was dropped");
            continue;
        }
        job.task.run(&Worker {
            conn: &conn,
            journal,
            pauses,
            policy,
        });
    }
}
