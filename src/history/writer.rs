//! Streams history entries to a file from many workers. Each worker
//! encodes one op's entries into a [`Batch`] (compact records,
//! [`super::codec`]) and sends it whole, so an op's entries stay together;
//! one writer thread compresses the batches into the file
//! ([`super::file`]). The channel is bounded, so a slow disk slows the
//! load instead of growing memory.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use super::{codec, file, Entry};
use crossbeam_channel::{bounded, Sender, TryRecvError};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::thread::JoinHandle;
use zstd::stream::raw::{Encoder, InBuffer, Operation, OutBuffer};

/// Batches in flight at most (each is one op's records, some tens of bytes).
pub const CHANNEL_CAPACITY: usize = 8192;
/// Record bytes the writer compresses before it writes them out as one
/// chunk, if the channel has not run dry before: what a killed bench can
/// have compressed and not yet written.
pub const FLUSH_BYTES: usize = 64 << 10;
/// No history record (invoke, step, completion, fault), its length
/// included, is shorter than this: a bound on the batches a chunk not
/// yet written can hold.
pub const MIN_RECORD_BYTES: usize = 7;
/// zstd's level: the writer keeps up with any load at it, on one core.
const LEVEL: i32 = 1;
/// How long the writer naps when the channel is empty.
const POLL: std::time::Duration = std::time::Duration::from_millis(1);
/// A chunk is written when the channel runs dry and this long has passed
/// since the last one: zstd's cost per chunk (a block's tables, the
/// flush) is paid some times a second instead of at every nap, which at
/// thousands of ops per second was most of the writer's CPU.
const CHUNK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// Encoded records of one op (or any group of entries).
#[derive(Default)]
pub struct Batch(Vec<u8>);

impl Batch {
    /// An empty batch with room for `bytes` of records.
    pub fn with_capacity(bytes: usize) -> Self {
        Batch(Vec::with_capacity(bytes))
    }

    /// Appends one entry as a record.
    pub fn push(&mut self, entry: &Entry) {
        codec::encode(entry, &mut self.0);
    }

    /// Whether the batch holds no entry.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// How many batches a history can lack when its bench was killed (or its
/// writer failed) and it has no footer: the queue's, those compressed and
/// not yet written out (at least [`MIN_RECORD_BYTES`] each, fewer than
/// [`FLUSH_BYTES`] of them, and the one the writer holds), and `in_flight`
/// (ops, and fault records, not yet sent). Missing batches may be any, not
/// only the last ones: batches arrive in the order ops complete, not in op
/// order.
pub fn lost_batches_bound(in_flight: u64) -> u64 {
    CHANNEL_CAPACITY as u64 + (FLUSH_BYTES / MIN_RECORD_BYTES) as u64 + 1 + in_flight
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

/// Room kept before a chunk's compressed bytes for its length.
const LEN_ROOM: usize = 10;

/// Room for zstd's output after what `out` holds: it must never find its
/// buffer full.
fn room(out: &mut Vec<u8>) -> OutBuffer<'_, Vec<u8>> {
    let len = out.len();
    out.reserve(128 << 10);
    OutBuffer::around_pos(out, len)
}

/// Writes a history to `W` ([`super::file`]): one zstd stream over every
/// record, cut into chunks. The writer thread's, and what writes a history
/// in one thread (a merge: [`HistoryFile::push`]).
pub struct HistoryFile<W: Write> {
    file: W,
    enc: Encoder<'static>,
    /// [`LEN_ROOM`] bytes, then the compressed bytes of the chunk so far.
    out: Vec<u8>,
    /// Record bytes compressed into the chunk so far.
    fed: usize,
    /// Bytes written to `file`.
    bytes: u64,
    /// [`HistoryFile::push`]'s records.
    scratch: Batch,
}

impl<W: Write> HistoryFile<W> {
    /// Starts a history in `file` (its [`file::MAGIC`]). Errors: the
    /// write's.
    pub fn new(mut file: W) -> io::Result<Self> {
        file.write_all(file::MAGIC)?;
        Ok(HistoryFile {
            file,
            enc: Encoder::new(LEVEL)?,
            out: vec![0; LEN_ROOM],
            fed: 0,
            bytes: file::MAGIC.len() as u64,
            scratch: Batch::default(),
        })
    }

    /// Appends one entry. Errors: the write's.
    pub fn push(&mut self, entry: &Entry) -> io::Result<()> {
        let mut batch = std::mem::take(&mut self.scratch);
        batch.0.clear();
        batch.push(entry);
        let fed = self.feed(&batch.0);
        self.scratch = batch;
        fed
    }

    /// Compresses `records`, and writes a chunk out when [`FLUSH_BYTES`]
    /// are in it.
    fn feed(&mut self, records: &[u8]) -> io::Result<()> {
        let mut input = InBuffer::around(records);
        while input.pos() < records.len() {
            let mut out = room(&mut self.out);
            self.enc.run(&mut input, &mut out)?;
        }
        self.fed += records.len();
        if self.fed >= FLUSH_BYTES {
            self.chunk(false)?;
        }
        Ok(())
    }

    /// Writes out every record fed so far as one chunk (`last`: and ends
    /// the stream).
    fn chunk(&mut self, last: bool) -> io::Result<()> {
        loop {
            let mut out = room(&mut self.out);
            let left = if last {
                self.enc.finish(&mut out, true)?
            } else {
                self.enc.flush(&mut out)?
            };
            if left == 0 {
                break;
            }
        }
        self.fed = 0;
        let len = self.out.len() - LEN_ROOM;
        if len == 0 {
            return Ok(());
        }
        let mut prefix = Vec::with_capacity(LEN_ROOM);
        codec::put(&mut prefix, len as u64);
        let start = LEN_ROOM - prefix.len();
        self.out[start..LEN_ROOM].copy_from_slice(&prefix);
        self.file.write_all(&self.out[start..])?;
        self.bytes += (self.out.len() - start) as u64;
        self.out.truncate(LEN_ROOM);
        Ok(())
    }

    /// Writes out every entry pushed so far as one chunk: a reader of the
    /// file then sees them all. Errors: the write's.
    pub fn flush(&mut self) -> io::Result<()> {
        self.chunk(false)
    }

    /// The file written to.
    pub fn get_ref(&self) -> &W {
        &self.file
    }

    /// Ends the history; returns the file and the bytes written to it.
    /// Errors: the write's.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.chunk(true)?;
        self.file.flush()?;
        Ok((self.file, self.bytes))
    }
}

/// The writer thread's loop: appends batches to `file` until every sender
/// is gone; returns the bytes written, or the first write error.
fn write_all(file: File, rx: crossbeam_channel::Receiver<Batch>) -> io::Result<u64> {
    let mut h = HistoryFile::new(file)?;
    // Poll instead of blocking in recv: a parked receiver makes every send
    // a futex wake-up (one per op, thousands per second), which perf
    // showed costing the load a good share of its CPU. A 1 ms nap bounds
    // the delay instead. A chunk is written when the channel runs dry
    // ([`CHUNK_EVERY`] after the last one at the most), so the file is
    // never more than a moment behind the load: a bench that dies keeps
    // the ops it had finished but that moment's.
    let mut last_chunk = std::time::Instant::now();
    loop {
        match rx.try_recv() {
            Ok(batch) => h.feed(&batch.0)?,
            Err(TryRecvError::Empty) => {
                if h.fed > 0 && last_chunk.elapsed() >= CHUNK_EVERY {
                    h.chunk(false)?;
                    last_chunk = std::time::Instant::now();
                }
                std::thread::sleep(POLL);
            }
            Err(TryRecvError::Disconnected) => break,
        }
    }
    Ok(h.finish()?.1)
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
    fn no_record_is_shorter_than_min_record_bytes() {
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
                returned: None,
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
        assert_eq!(shortest, MIN_RECORD_BYTES);
    }
}
