//! The SQLite ceiling for the groups workload, as the README's
//! "Performance" measures it: a plain loop of the atomic variant's three ingest statements in
//! autocommit, prepared and cached, on N threads with a connection each; no
//! bench machinery (no history, no step machines, no generator).
//!
//! `cargo run --release --example ceiling -- THREADS EVENTS [DB_PATH]`
//! prints events/s. Compare with a `specstorm run`'s `events_per_s` on the
//! same database settings (WAL, synchronous=NORMAL).
//!
//! With `--txn` (anywhere among the arguments) each event's statements run
//! as `groups-txn.sql`'s one block does: BEGIN IMMEDIATE, the three
//! statements (a duplicate stops after the first), COMMIT; a busy BEGIN or
//! COMMIT rolls back and runs the transaction again, as the bench does
//! (bench/compare-txn.sh).

use rusqlite::Connection;
use std::time::Instant;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, group_id TEXT, received_at INTEGER);
CREATE TABLE IF NOT EXISTS error_groups (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, status TEXT, event_count INTEGER);";
const S1: &str = "INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at) VALUES (?1, ?2, ?3, ?4, ?5)";
const S2: &str = "INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count) VALUES (?1, ?2, ?3, 'open', 0)";
const S3: &str = "UPDATE error_groups SET event_count = event_count + 1, status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END WHERE id = ?1";

fn open(path: &str) -> Connection {
    let c = Connection::open(path).expect("open");
    c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    c.pragma_update(None, "journal_mode", "wal").unwrap();
    c.pragma_update(None, "synchronous", "normal").unwrap();
    c
}

/// A UUID-shaped id that is a bijective scramble of `i` (unique, random-looking).
fn uuid_like(i: u64) -> String {
    let mut a = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    a ^= a >> 29;
    a = a.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    a ^= a >> 32;
    let b = a.rotate_left(17) ^ 0xD6E8_FEB8_6659_FD93;
    let h = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn main() {
    let all: Vec<String> = std::env::args().collect();
    let txn = all.iter().any(|a| a == "--txn");
    let args: Vec<String> = all.into_iter().filter(|a| a != "--txn").collect();
    let threads: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let events: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("ceiling.db").to_string_lossy().into_owned();
    let path = args.get(3).cloned().unwrap_or(default);
    open(&path).execute_batch(SCHEMA).unwrap();
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let path = path.clone();
            s.spawn(move || {
                let c = open(&path);
                let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for i in (t..events).step_by(threads as usize) {
                    // xorshift: 4 hot groups take half the events, as in groups-atomic.toml.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let g = if x % 2 == 0 {
                        x / 2 % 4
                    } else {
                        4 + x / 2 % 996
                    };
                    let (p, f) = (format!("p{}", g % 4), format!("fp{}", g / 4));
                    let gid = format!("g:{p}:{f}");
                    // Random UUID-shaped ids, as clients send and as the bench
                    // generates: sequential ids would append to one B-tree
                    // page and flatter SQLite.
                    let id = uuid_like(i);
                    if txn {
                        while !ingest_txn(&c, (&id, &p, &f, &gid)) {}
                        continue;
                    }
                    let n = c
                        .prepare_cached(S1)
                        .unwrap()
                        .execute(rusqlite::params![id, p, f, gid, 0i64])
                        .unwrap();
                    if n == 0 {
                        continue;
                    }
                    c.prepare_cached(S2)
                        .unwrap()
                        .execute(rusqlite::params![gid, p, f])
                        .unwrap();
                    c.prepare_cached(S3).unwrap().execute([&gid]).unwrap();
                }
            });
        }
    });
    let secs = t0.elapsed().as_secs_f64();
    let mode = if txn {
        " (one IMMEDIATE transaction each)"
    } else {
        ""
    };
    println!(
        "ceiling: {threads} threads, {events} events{mode} in {secs:.2}s: {:.0} events/s",
        events as f64 / secs
    );
}

/// One event as one IMMEDIATE transaction; false when it was rolled back
/// as busy (the caller runs it again), any other error panics.
fn ingest_txn(c: &Connection, (id, p, f, gid): (&str, &str, &str, &str)) -> bool {
    let busy = |e: &rusqlite::Error| {
        matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    };
    let run = || -> rusqlite::Result<()> {
        c.execute_batch("BEGIN IMMEDIATE")?;
        let n = c
            .prepare_cached(S1)?
            .execute(rusqlite::params![id, p, f, gid, 0i64])?;
        if n > 0 {
            c.prepare_cached(S2)?
                .execute(rusqlite::params![gid, p, f])?;
            c.prepare_cached(S3)?.execute([gid])?;
        }
        c.execute_batch("COMMIT")
    };
    match run() {
        Ok(()) => true,
        Err(e) if busy(&e) => {
            if !c.is_autocommit() {
                c.execute_batch("ROLLBACK").unwrap();
            }
            false
        }
        Err(e) => panic!("{e}"),
    }
}
