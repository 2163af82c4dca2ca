//! Streams history entries to a file from many workers. Each worker
//! serializes one op's lines into a [`Batch`] and sends it whole, so an op's
//! entries stay together; one writer thread appends batches to the file.
//! The channel is bounded, so a slow disk slows the load instead of growing
//! memory.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use super::Entry;
use crossbeam_channel::{bounded, Sender, TryRecvError};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;

/// Batches in flight at most (each is one op's lines, a few hundred bytes).
pub const CHANNEL_CAPACITY: usize = 8192;
/// The file's write buffer: what was written to it and not yet flushed.
pub const BUFFER_BYTES: usize = 1 << 20;
/// No history line (invoke, step, completion, fault) is shorter than this,
/// its newline included: a bound on the batches the buffer can hold.
pub const MIN_LINE_BYTES: usize = 48;
/// How long the writer naps when the channel is empty.
const POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// Serialized lines of one op (or any group of entries).
#[derive(Default)]
pub struct Batch(Vec<u8>);

impl Batch {
    /// Appends one entry as a JSON line.
    pub fn push(&mut self, entry: &Entry) {
        serde_json::to_writer(&mut self.0, entry).expect("history entries always serialize");
        self.0.push(b'\n');
    }

    /// Whether the batch holds no entry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// How many batches a history can lack when its bench was killed (or its
/// writer failed) and it has no footer: the queue's, those in the write
/// buffer (at least [`MIN_LINE_BYTES`] each, one of them perhaps written in
/// part), and `in_flight` (ops, and fault records, not yet sent). Missing
/// batches may be any, not only the last ones: batches arrive in the order
/// ops complete, not in op order.
pub fn lost_batches_bound(in_flight: u64) -> u64 {
    CHANNEL_CAPACITY as u64 + (BUFFER_BYTES / MIN_LINE_BYTES) as u64 + 1 + in_flight
}

/// A handle to send batches to the writer thread; cheap to clone.
#[derive(Clone)]
pub struct HistorySink {
    tx: Sender<Batch>,
}

impl HistorySink {
    /// Sends a batch. A writer that has gone away (disk error) loses it;
    /// the error is reported by [`HistoryWriter::finish`].
    pub fn send(&self, batch: Batch) {
        if !batch.is_empty() {
            let _ = self.tx.send(batch);
        }
    }

    /// Sends one entry on its own.
    pub fn send_entry(&self, entry: &Entry) {
        let mut b = Batch::default();
        b.push(entry);
        self.send(b);
    }
}

/// The writer thread's loop: appends batches to `file` until every sender
/// is gone; returns the bytes written, or the first write error.
fn write_all(file: File, rx: crossbeam_channel::Receiver<Batch>) -> io::Result<u64> {
    let mut out = BufWriter::with_capacity(BUFFER_BYTES, file);
    let mut bytes = 0u64;
    // Poll instead of blocking in recv: a parked receiver makes every send
    // a futex wake-up (one per op, thousands per second), which perf
    // showed costing the load a good share of its CPU. A 1 ms nap bounds
    // the delay instead. Flushed whenever the channel runs dry, so the
    // file is never more than a moment behind the load: a bench that dies
    // keeps every op it had finished.
    let mut dirty = false;
    loop {
        match rx.try_recv() {
            Ok(batch) => {
                out.write_all(&batch.0)?;
                bytes += batch.0.len() as u64;
                dirty = true;
            }
            Err(TryRecvError::Empty) => {
                if dirty {
                    out.flush()?;
                    dirty = false;
                }
                std::thread::sleep(POLL);
            }
            Err(TryRecvError::Disconnected) => break,
        }
    }
    out.flush()?;
    Ok(bytes)
}

/// The writer thread.
pub struct HistoryWriter {
    sink: Option<HistorySink>,
    thread: JoinHandle<io::Result<u64>>,
}

impl HistoryWriter {
    /// Creates (truncates) `path` and starts the writer thread.
    /// Errors: the file cannot be created.
    pub fn create(path: &Path) -> io::Result<Self> {
        Self::create_with(path, |_| {})
    }

    /// [`HistoryWriter::create`], calling `on_error` from the writer
    /// thread at its first write error (a full disk), so that the load can
    /// stop at once instead of running on without a history; the error
    /// itself is [`HistoryWriter::finish`]'s.
    pub fn create_with(
        path: &Path,
        on_error: impl FnOnce(&io::Error) + Send + 'static,
    ) -> io::Result<Self> {
        let file = File::create(path)?;
        let (tx, rx) = bounded::<Batch>(CHANNEL_CAPACITY);
        let thread = std::thread::Builder::new()
            .name("history-writer".into())
            .spawn(move || -> io::Result<u64> {
                let written = write_all(file, rx);
                if let Err(e) = &written {
                    on_error(e);
                }
                written
            })?;
        Ok(HistoryWriter {
            sink: Some(HistorySink { tx }),
            thread,
        })
    }

    /// A sender for workers.
    pub fn sink(&self) -> HistorySink {
        self.sink.clone().expect("sink taken after finish")
    }

    /// Waits until every sender is dropped and all was written; returns the
    /// bytes written. Errors: the first write error of the thread.
    pub fn finish(mut self) -> io::Result<u64> {
        drop(self.sink.take());
        self.thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("history writer panicked")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Completion, FaultAction, FaultEntry, Invoke, OpKind, OpResult, Step};

    #[test]
    fn no_line_is_shorter_than_min_line_bytes() {
        let mut shortest = usize::MAX;
        let lines = [
            Entry::Invoke(Invoke {
                t: 0,
                op: 0,
                worker: 0,
                f: OpKind::Ingest,
                delivery: None,
                event_id: None,
                project: String::new(),
                fingerprint: String::new(),
                group_id: String::new(),
                attempt: None,
                intended: None,
            }),
            Entry::Step(Step {
                op: 0,
                idx: 0,
                step: String::new(),
                start: 0,
                end: None,
                changes: 0,
                rows: 0,
                error: None,
                error_kind: None,
                maybe_applied: false,
            }),
            Entry::Fail(Completion {
                t: 0,
                op: 0,
                worker: 0,
                f: OpKind::Ingest,
                result: OpResult::default(),
            }),
            Entry::Fault(FaultEntry {
                t: 0,
                fault: 0,
                kind: crate::fault_kind::FaultKind::Kill,
                action: FaultAction::Stop,
                op: None,
                step: None,
                forwarded: None,
                detail: None,
                dropped: None,
            }),
        ];
        for e in &lines {
            let mut b = Batch::default();
            b.push(e);
            shortest = shortest.min(b.0.len());
        }
        assert!(shortest >= MIN_LINE_BYTES, "{shortest}");
    }
}
