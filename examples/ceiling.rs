//! The SQLite ceiling for the groups workload, as the README's
//! "Performance" measures it: a plain loop of the atomic variant's three ingest statements in
//! autocommit, prepared and cached, on N threads with a connection each; no
//! bench machinery (no history, no step machines, no generator).
//!
//! `cargo run --release --example ceiling -- THREADS EVENTS [DB_PATH]`
//! prints events/s. Compare with a `specstorm run`'s `events_per_s` on the
//! same database settings (WAL, synchronous=NORMAL).

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
    let args: Vec<String> = std::env::args().collect();
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
    println!(
        "ceiling: {threads} threads, {events} events in {secs:.2}s: {:.0} events/s",
        events as f64 / secs
    );
}
