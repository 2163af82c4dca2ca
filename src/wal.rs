//! The target database's write-ahead log, watched and kept bounded while a
//! load runs (the in-process SQLite target, and the spawned reference
//! server's database).
//!
//! Why the bench must act: SQLite's automatic checkpoint (PASSIVE, after a
//! commit once the WAL holds 1000 pages) copies frames back into the
//! database, but the WAL only starts again from its beginning when every
//! frame was copied *and* no reader still reads one. Dozens of connections
//! reading and writing without pause never leave such a moment, so the
//! WAL grows without bound (28.6 GB for a 2,000,000-event `groups-atomic`
//! run, against a 240 MB database). Measured: neither
//! `journal_size_limit` (it only cuts back a WAL that starts again) nor
//! extra PASSIVE checkpoints (they copy every frame now and then, and still
//! no writer finds the WAL free of readers) bound it.
//!
//! So a keeper thread samples the `-wal` file's size every [`SAMPLE`] (its
//! peak goes to `summary.json`) and, once the WAL holds more than
//! [`CHECKPOINT_ABOVE`] bytes of frames, runs `PRAGMA
//! wal_checkpoint(RESTART)`: SQLite takes the write lock (writers wait in
//! their busy handler, as under the lock nemesis), copies what is left,
//! and waits until no reader reads the WAL, so that the next writer starts
//! it again from its beginning. That takes a few ms and holds writers off,
//! so each one is a `bench` entry of the history (its start and end): a
//! stall in the latencies is explained, and the checkers, which judge what
//! ops did, ignore it (it changes no row). RESTART, not TRUNCATE: emptying
//! a file of hundreds of MB takes ~100 ms on ext4, all of it with the
//! write lock held; the file is overwritten from its start instead, and
//! every connection's `journal_size_limit`
//! ([`crate::target::sqlite::client::JOURNAL_SIZE_LIMIT`]) cuts
//! back a WAL that overshot when it starts again.
//!
//! For the in-process target the keeper also runs the PASSIVE checkpoints
//! ([`WalKeeper::start_checkpointing`]): the workers' connections have
//! SQLite's automatic one off ([`leave_checkpoints_to_keeper`]). The
//! automatic checkpoint runs after any commit that leaves more than 1000
//! frames in the WAL, and as the WAL never starts again by itself under a
//! load of many connections, that was after every commit once it passed
//! 1000 frames: each worker's commit copied the frames of the commits
//! before it into the database and synced the file (a fifth of the load's
//! CPU, measured with perf, where one connection alone checkpoints once
//! per 1000 frames and starts the WAL again). The keeper runs one every
//! [`SAMPLE`] on its own connection instead. A PASSIVE checkpoint takes
//! no lock a writer or a reader waits for, so it is not a `bench` entry.
//! Under `synchronous = normal` a commit is not synced; a checkpoint syncs
//! the WAL, which made the commits before it durable at the next commit
//! and now does within a sample (the bench injects no power loss). The
//! spawned reference server's connections are its own, so over HTTP
//! SQLite's automatic checkpoint stays.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::clock::Clock;
use crate::history::writer::HistorySink;
use crate::history::{BenchAction, BenchEntry, Entry};
use crate::scenario::SqliteTarget;
use crate::target::sqlite::client as sqlite;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the keeper reads the WAL's size (one `stat`).
pub const SAMPLE: Duration = Duration::from_millis(100);

/// A WAL holding more bytes of frames than this gets a RESTART checkpoint.
pub const CHECKPOINT_ABOVE: u64 = 256 << 20;

/// How long a checkpoint may wait for the write lock, for readers, or for
/// another checkpoint to end, before the keeper gives up this time (it
/// tries again at a later sample).
const PATIENCE: Duration = Duration::from_secs(1);

/// How long the keeper naps between two tries of a lock.
const RETRY: Duration = Duration::from_micros(100);

pub use crate::summary::WalReport;

/// The running keeper of one database's WAL.
pub struct WalKeeper {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<WalReport>>,
    checkpoints: bool,
}

impl WalKeeper {
    /// Starts watching the WAL of the database at `db`, with a connection
    /// of its own (`target`'s pragmas). Checkpoints are recorded in `sink` on `clock`. For
    /// `journal_mode = wal` only; otherwise the keeper watches nothing.
    pub fn start(db: PathBuf, target: &SqliteTarget, sink: HistorySink, clock: Clock) -> Self {
        Self::spawn(db, target, sink, clock, false)
    }

    /// [`WalKeeper::start`], and the keeper also runs a PASSIVE checkpoint
    /// every [`SAMPLE`] and once as it stops, for workers whose connections
    /// leave them to it ([`leave_checkpoints_to_keeper`]; see the module's
    /// doc). Check [`WalKeeper::checkpoints`] before turning theirs off.
    pub fn start_checkpointing(
        db: PathBuf,
        target: &SqliteTarget,
        sink: HistorySink,
        clock: Clock,
    ) -> Self {
        Self::spawn(db, target, sink, clock, true)
    }

    fn spawn(
        db: PathBuf,
        target: &SqliteTarget,
        sink: HistorySink,
        clock: Clock,
        passive: bool,
    ) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        if !target.journal_mode.eq_ignore_ascii_case("wal") {
            return WalKeeper {
                done,
                thread: None,
                checkpoints: false,
            };
        }
        // Opened here, not in its thread, so that the caller knows whether
        // the keeper can checkpoint before it leaves checkpoints to it.
        let conn = open(&db, target)
            .and_then(|c| {
                let page: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0))?;
                Ok((c, page.max(512) as u64))
            })
            .inspect_err(|e| tracing::warn!("WAL keeper: cannot open {}: {e}", db.display()))
            .ok();
        let checkpoints = passive && conn.is_some();
        let stop = done.clone();
        let thread = std::thread::Builder::new()
            .name("wal-keeper".into())
            .spawn(move || keep(&db, conn, checkpoints, &sink, clock, &stop))
            .expect("spawn the WAL keeper");
        WalKeeper {
            done,
            thread: Some(thread),
            checkpoints,
        }
    }

    /// Whether this keeper runs the PASSIVE checkpoints: started with
    /// [`WalKeeper::start_checkpointing`] on a WAL database whose
    /// connection it could open.
    pub fn checkpoints(&self) -> bool {
        self.checkpoints
    }

    /// Stops the keeper (its connection is closed) and returns what it saw;
    /// None when it watched nothing (not a WAL database).
    pub fn stop(mut self) -> Option<WalReport> {
        self.done.store(true, Ordering::Release);
        self.thread.take().map(|t| {
            t.thread().unpark();
            t.join().unwrap_or_default()
        })
    }
}

impl Drop for WalKeeper {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

pub use crate::scenario::figures::watched;

/// Turns SQLite's automatic checkpoint off on a worker's connection: a
/// keeper that [`WalKeeper::checkpoints`] runs them instead (see the
/// module's doc). Errors: SQLite refused the pragma or kept another value.
pub fn leave_checkpoints_to_keeper(conn: &rusqlite::Connection) -> anyhow::Result<()> {
    let pages: i64 = conn.query_row("PRAGMA wal_autocheckpoint = 0", [], |r| r.get(0))?;
    anyhow::ensure!(pages == 0, "SQLite kept wal_autocheckpoint = {pages}");
    Ok(())
}

/// The `-wal` file of the database at `db`.
pub fn wal_path(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

/// The keeper's own connection: the target's pragmas, and a busy handler
/// that retries every [`RETRY`] instead of SQLite's growing sleeps (1, 2,
/// 5, ... 100 ms): while the checkpoint waits for a reader with the write
/// lock taken, every writer waits too, so it must notice at once that the
/// reader left. It gives up after [`PATIENCE`].
fn open(db: &Path, target: &SqliteTarget) -> anyhow::Result<rusqlite::Connection> {
    let mut conn = sqlite::open(db, target)?;
    let tries = (PATIENCE.as_micros() / RETRY.as_micros()) as i32;
    conn.busy_handler(Some(move |n: i32| {
        std::thread::sleep(RETRY);
        n < tries
    }))?;
    Ok(conn)
}

/// `PRAGMA wal_checkpoint(MODE)`: (busy, frames in the WAL, frames copied);
/// the frame counts are -1 when it could not start.
fn checkpoint(conn: &rusqlite::Connection, mode: &str) -> rusqlite::Result<(bool, i64, i64)> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        Ok((r.get::<_, i64>(0)? != 0, r.get(1)?, r.get(2)?))
    })
}

/// The keeper's loop. `conn`, open from the start: besides checkpointing,
/// it keeps the WAL from being removed when the workers' connections
/// close, so that the last sample sees it as the load left it (a run
/// shorter than a sample has a peak too). It holds no read transaction:
/// it keeps nothing from being checkpointed.
fn keep(
    db: &Path,
    conn: Option<(rusqlite::Connection, u64)>,
    passive: bool,
    sink: &HistorySink,
    clock: Clock,
    done: &AtomicBool,
) -> WalReport {
    let wal = wal_path(db);
    let size = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let mut report = WalReport::default();
    let mut held_ns = 0u64;
    // Busy (another checkpoint runs) or failed, it is tried again at the
    // next sample; the RESTART below bounds the WAL either way.
    let copy = |c: &rusqlite::Connection| {
        if passive {
            let _ = checkpoint(c, "PASSIVE");
        }
    };
    loop {
        let stopping = done.load(Ordering::Acquire);
        let bytes = size();
        report.peak_bytes = report.peak_bytes.max(bytes);
        if stopping {
            break;
        }
        if let Some((c, page)) = &conn {
            copy(c);
            if bytes > CHECKPOINT_ABOVE {
                if let Some(ns) = bound(c, *page, CHECKPOINT_ABOVE, bytes, sink, &clock, done) {
                    report.checkpoints += 1;
                    held_ns += ns;
                }
            }
        }
        std::thread::park_timeout(SAMPLE);
    }
    // What the last commits wrote, copied before the final read.
    if let Some((c, _)) = &conn {
        copy(c);
    }
    report.checkpoint_s = (held_ns as f64 / 1e6).round() / 1e3;
    report
}

/// When the WAL holds more than `limit` bytes of frames (pages of `page`
/// bytes; the file is `bytes` long), one RESTART checkpoint, recorded in
/// `sink` as a `bench` entry. Returns how long it may have held writers
/// off (ns), None when none ran.
fn bound(
    c: &rusqlite::Connection,
    page: u64,
    limit: u64,
    bytes: u64,
    sink: &HistorySink,
    clock: &Clock,
    done: &AtomicBool,
) -> Option<u64> {
    // The file keeps its size when the WAL starts again from its
    // beginning: what counts is how many frames it holds now.
    let frames = checkpoint(c, "NOOP").map_or(0, |(_, f, _)| f.max(0) as u64);
    if frames * (page + 24) <= limit {
        return None;
    }
    let (t0, t1, detail) = restart(c, done, clock, bytes)?;
    sink.send_entry(&Entry::Bench(BenchEntry {
        t: t0,
        end: t1,
        action: BenchAction::WalCheckpoint,
        detail: Some(detail),
        op: None,
        fuzz: None,
        txn: None,
    }));
    Some(t1 - t0)
}

/// One RESTART checkpoint, tried until it ran or [`PATIENCE`] ran out.
/// A try that found another checkpoint running (an automatic one) held
/// nothing and is not counted; the rest may have held writers off: returns
/// their span (clock ns) and what happened, None when no try ran.
fn restart(
    c: &rusqlite::Connection,
    done: &AtomicBool,
    clock: &Clock,
    bytes: u64,
) -> Option<(u64, u64, String)> {
    let started = Instant::now();
    let mut held_from = None;
    loop {
        let t = clock.now();
        let r = checkpoint(c, "RESTART");
        let end = clock.now();
        let outcome = match r {
            // Another checkpoint had the checkpoint lock: nothing was held.
            Ok((true, -1, -1)) => None,
            Ok((false, frames, _)) => Some(Ok(frames)),
            Ok((true, frames, copied)) => Some(Err(format!(
                "busy: {copied} of {frames} frames copied, readers or writers did not leave"
            ))),
            Err(e) => Some(Err(e.to_string())),
        };
        if outcome.is_some() {
            held_from.get_or_insert(t);
        }
        let last = started.elapsed() >= PATIENCE || done.load(Ordering::Acquire);
        match outcome {
            Some(Ok(frames)) => {
                return Some((
                    held_from.unwrap_or(t),
                    end,
                    format!(
                        "wal_checkpoint(RESTART): {frames} frames copied, the WAL file was \
                         {bytes} bytes"
                    ),
                ))
            }
            Some(Err(e)) if last => {
                return Some((
                    held_from.unwrap_or(t),
                    end,
                    format!("wal_checkpoint(RESTART) gave up: {e}"),
                ))
            }
            None if last => {
                return held_from.map(|from| {
                    (
                        from,
                        end,
                        "wal_checkpoint(RESTART) gave up: another checkpoint kept running".into(),
                    )
                })
            }
            _ => std::thread::sleep(RETRY),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::writer::HistoryWriter;
    use rusqlite::Connection;

    fn target() -> SqliteTarget {
        SqliteTarget {
            path: None,
            journal_mode: "wal".into(),
            synchronous: "normal".into(),
            busy_timeout: Duration::from_secs(5),
            reuse: false,
        }
    }

    /// Frames the WAL of `c`'s database holds now.
    fn frames(c: &Connection) -> i64 {
        checkpoint(c, "NOOP").unwrap().1
    }

    /// 100 commits of a 4 KiB row each while `reader` holds a snapshot:
    /// no checkpoint can copy them, no writer can start the WAL again.
    fn grow(writer: &Connection, reader: &Connection) {
        reader
            .execute_batch("BEGIN; SELECT count(*) FROM t;")
            .unwrap();
        for i in 0..100 {
            writer
                .execute("INSERT INTO t VALUES (?1, zeroblob(4096))", [i])
                .unwrap();
        }
        reader.execute_batch("COMMIT").unwrap();
    }

    /// The premise: once a reader is gone, nothing starts the WAL again
    /// below the automatic checkpoint's 1000 pages; it only grows.
    #[test]
    fn without_the_keeper_the_wal_only_grows() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let (w, r) = (
            sqlite::open(&db, &target()).unwrap(),
            sqlite::open(&db, &target()).unwrap(),
        );
        w.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)")
            .unwrap();
        grow(&w, &r);
        let before = frames(&w);
        w.execute("INSERT INTO t VALUES (1000, 1)", []).unwrap();
        assert!(frames(&w) > before, "{} <= {before}", frames(&w));
    }

    /// (frames in the WAL, frames copied into the database) of `c`'s.
    fn copied(c: &Connection) -> (i64, i64) {
        let (_, log, done) = checkpoint(c, "NOOP").unwrap();
        (log, done)
    }

    /// How a keeper is started: [`WalKeeper::start`] or
    /// [`WalKeeper::start_checkpointing`].
    type Start = fn(PathBuf, &SqliteTarget, HistorySink, Clock) -> WalKeeper;

    /// A keeper started with `start` (if any) on a fresh database, after
    /// 400 commits of a 4 KiB row each by a worker that left its
    /// checkpoints to keepers (more than the automatic checkpoint's 1000
    /// frames), and stopped: whether it checkpoints, what the WAL holds
    /// and what was copied.
    fn after_a_load(start: Option<Start>) -> (bool, i64, i64) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let w = sqlite::open(&db, &target()).unwrap();
        w.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)")
            .unwrap();
        leave_checkpoints_to_keeper(&w).unwrap();
        let writer = HistoryWriter::create(&dir.path().join("history.bin")).unwrap();
        let keeper = start.map(|start| start(db.clone(), &target(), writer.sink(), Clock::start()));
        let owns = keeper.as_ref().is_some_and(WalKeeper::checkpoints);
        for i in 0..400 {
            w.execute("INSERT INTO t VALUES (?1, zeroblob(4096))", [i])
                .unwrap();
        }
        if let Some(k) = keeper {
            k.stop().unwrap();
        }
        let (log, done) = copied(&w);
        (owns, log, done)
    }

    /// The premise of leaving them to the keeper: a worker's commits past
    /// 1000 frames checkpoint nothing themselves.
    #[test]
    fn a_worker_that_leaves_checkpoints_to_the_keeper_copies_nothing() {
        let (_, log, done) = after_a_load(None);
        assert!(log > 1000, "{log} frames");
        assert_eq!(done, 0);
    }

    #[test]
    fn a_checkpointing_keeper_copies_every_frame_by_the_time_it_stops() {
        let (owns, log, done) = after_a_load(Some(WalKeeper::start_checkpointing));
        assert!(owns);
        assert!(log > 1000, "{log} frames");
        assert_eq!(done, log);
    }

    /// Over HTTP the server's connections checkpoint for themselves: the
    /// keeper copies nothing.
    #[test]
    fn a_watching_keeper_copies_nothing() {
        let (owns, log, done) = after_a_load(Some(WalKeeper::start));
        assert!(!owns);
        assert!(log > 1000, "{log} frames");
        assert_eq!(done, 0);
    }

    #[test]
    fn a_keeper_of_a_database_without_a_wal_checkpoints_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let writer = HistoryWriter::create(&dir.path().join("history.bin")).unwrap();
        let mut t = target();
        t.journal_mode = "delete".into();
        let keeper = WalKeeper::start_checkpointing(
            dir.path().join("t.db"),
            &t,
            writer.sink(),
            Clock::start(),
        );
        assert!(!keeper.checkpoints());
        assert_eq!(keeper.stop(), None);
    }

    #[test]
    fn a_wal_past_the_limit_is_restarted_and_the_checkpoint_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let (w, r) = (
            sqlite::open(&db, &target()).unwrap(),
            sqlite::open(&db, &target()).unwrap(),
        );
        w.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)")
            .unwrap();
        let history = dir.path().join("history.jsonl");
        let writer = HistoryWriter::create(&history).unwrap();
        let sink = writer.sink();
        let clock = Clock::start();
        let keeper = open(&db, &target()).unwrap();
        let done = AtomicBool::new(false);
        let bytes = || std::fs::metadata(wal_path(&db)).unwrap().len();
        // Below the limit: nothing is done.
        let limit = 64 << 10;
        assert_eq!(
            bound(&keeper, 4096, 1 << 30, bytes(), &sink, &clock, &done),
            None
        );
        grow(&w, &r);
        let before = frames(&w);
        assert!(before as u64 * 4096 > limit, "{before}");
        let held = bound(&keeper, 4096, limit, bytes(), &sink, &clock, &done);
        assert!(held.is_some());
        // The next commit starts the WAL from its beginning.
        w.execute("INSERT INTO t VALUES (1000, 1)", []).unwrap();
        assert!(frames(&w) < 5, "{} frames after a restart", frames(&w));
        drop(sink);
        writer.finish().unwrap();
        let entries: Vec<Entry> = crate::history::reader::read(&history)
            .unwrap()
            .collect::<anyhow::Result<_>>()
            .unwrap();
        assert!(
            matches!(
                entries.as_slice(),
                [Entry::Bench(BenchEntry { action: BenchAction::WalCheckpoint, t, end, .. })]
                    if t <= end
            ),
            "{entries:?}"
        );
    }
}
