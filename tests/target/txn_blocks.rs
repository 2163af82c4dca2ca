//! Transaction blocks on the in-process SQLite target, made deterministic
//! by driving the interleaving from the step log's hook (no timing): a
//! DEFERRED block whose snapshot another connection moved past fails at
//! once with SQLITE_BUSY_SNAPSHOT, is rolled back (nothing applied) and
//! runs again from BEGIN; an IMMEDIATE block waits at BEGIN, where the
//! busy handler runs, and commits; a crash inside a block rolls it back.

use specstorm::history::CompletionType;
use specstorm::scenario::load_str;
use specstorm::target::sqlite::client::{open, Journal};
use specstorm::workload::groups::runtime::{run_steps_txn, TxnNote};
use specstorm::workload::groups::statements::{load_groups, GroupsVariant};
use specstorm::workload::groups::{ingest_result, resolve_result, IngestOp};
use specstorm::workload::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// SQLite's extended result code SQLITE_BUSY_SNAPSHOT.
const BUSY_SNAPSHOT: i32 = 517;

fn variant(file: &str) -> GroupsVariant {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("targets/sqlite")
        .join(file);
    load_groups(path.to_str().unwrap(), None).unwrap()
}

fn wal_target() -> specstorm::scenario::SqliteTarget {
    let s = load_str(
        "t",
        None,
        "",
        &[
            "target.busy_timeout=\"5s\"".to_string(),
            "target.journal_mode=\"wal\"".to_string(),
        ],
    )
    .unwrap();
    s.target.sqlite()
}

fn resolve_builtins() -> Vec<Value> {
    vec![
        Value::Text("g:p0:fp0".into()),
        Value::Int(0),
        Value::Text("p0".into()),
        Value::Text("fp0".into()),
    ]
}

fn group(conn: &rusqlite::Connection) -> (String, i64) {
    conn.query_row(
        "SELECT status, event_count FROM error_groups WHERE id = 'g:p0:fp0'",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

static DEFERRED_BUSY_CALLS: AtomicUsize = AtomicUsize::new(0);

fn deferred_busy(_: i32) -> bool {
    DEFERRED_BUSY_CALLS.fetch_add(1, Ordering::SeqCst);
    false
}

#[test]
fn a_deferred_block_whose_snapshot_moved_fails_at_once_and_runs_again_from_begin() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let v = variant("groups-deferred-resolve.sql");
    let mut a = open(&db, &wal_target()).unwrap();
    let b = open(&db, &wal_target()).unwrap();
    a.execute_batch(&v.schema).unwrap();
    a.execute_batch("INSERT INTO error_groups VALUES ('g:p0:fp0', 'p0', 'fp0', 'open', 1)")
        .unwrap();
    // Counts every call of A's busy handler: a DEFERRED write that lost
    // its snapshot must fail without it.
    a.busy_handler(Some(deferred_busy)).unwrap();
    let steps = std::cell::RefCell::new(Vec::new());
    let mut rollbacks = Vec::new();
    let mut commits = 0;
    let mut b_wrote = false;
    let (kind, result) = run_steps_txn(
        (&a, Journal::of(&a)),
        &v.resolve,
        resolve_builtins(),
        &Default::default(),
        (|| None, |_| {}, || 0),
        (
            |i, _, _, r: &Result<_, specstorm::target::sqlite::client::StepError>| {
                steps.borrow_mut().push((
                    v.resolve.steps[i].name.clone(),
                    r.as_ref().err().and_then(|e| e.code),
                ));
                // After A's first read (its snapshot taken), B commits a
                // write: A's snapshot is stale from here.
                if i == 0 && !b_wrote {
                    b_wrote = true;
                    b.execute_batch(
                        "UPDATE error_groups SET event_count = event_count + 1 WHERE id = 'g:p0:fp0'",
                    )
                    .unwrap();
                }
            },
            |_, _, _| {},
            |_, _, _, _, _| {},
            |note: TxnNote<'_, '_>| match note {
                TxnNote::Begun => {}
                TxnNote::RolledBack(r) => {
                    // Recorded as not applied: the row is as B left it.
                    assert_eq!(group(&b), ("open".to_string(), 2));
                    rollbacks.push((
                        v.resolve.steps[r.step].name.clone(),
                        r.code,
                        r.attempt,
                        r.retried,
                    ))
                }
                TxnNote::Committed(_) => commits += 1,
            },
        ),
        resolve_result,
    );
    assert_eq!(
        rollbacks,
        vec![("update".to_string(), Some(BUSY_SNAPSHOT), 0, true)],
        "A's write after B's commit fails with SQLITE_BUSY_SNAPSHOT, once"
    );
    assert_eq!(
        DEFERRED_BUSY_CALLS.load(Ordering::SeqCst),
        0,
        "failed at once"
    );
    assert_eq!(
        *steps.borrow(),
        vec![
            ("read".to_string(), None),
            ("update".to_string(), Some(BUSY_SNAPSHOT)),
            ("read".to_string(), None),
            ("update".to_string(), None),
        ],
        "the whole block ran again from BEGIN"
    );
    assert_eq!(commits, 1);
    assert_eq!(kind, CompletionType::Ok, "{result:?}");
    assert_eq!(result.resolved, Some(true));
    // The retry read B's write: the count the resolve returned is B's.
    assert_eq!(result.event_count, Some(2));
    assert_eq!(group(&b), ("resolved".to_string(), 2));
}

static IMMEDIATE_WAITING: AtomicBool = AtomicBool::new(false);
static IMMEDIATE_BUSY_CALLS: AtomicUsize = AtomicUsize::new(0);

fn immediate_busy(_: i32) -> bool {
    IMMEDIATE_BUSY_CALLS.fetch_add(1, Ordering::SeqCst);
    IMMEDIATE_WAITING.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1));
    true
}

#[test]
fn an_immediate_block_waits_at_begin_and_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let v = variant("groups-txn.sql");
    let mut a = open(&db, &wal_target()).unwrap();
    let b = open(&db, &wal_target()).unwrap();
    a.execute_batch(&v.schema).unwrap();
    a.busy_handler(Some(immediate_busy)).unwrap();
    // B holds the write lock until A is seen waiting for it.
    b.execute_batch(
        "BEGIN IMMEDIATE; INSERT INTO error_groups VALUES ('g:p0:fp0', 'p0', 'fp0', 'resolved', 5)",
    )
    .unwrap();
    let counting = v.counting_step;
    let runner = std::thread::spawn(move || {
        let mut rollbacks = 0;
        let mut commits = 0;
        let o = IngestOp {
            event_id: "e1".into(),
            project: "p0".into(),
            fingerprint: "fp0".into(),
            group_id: "g:p0:fp0".into(),
            message: "m".into(),
            attempt: 0,
            intended_ns: None,
            group: 0,
            key: 0,
        };
        let (kind, result) = run_steps_txn(
            (&a, Journal::of(&a)),
            &v.ingest,
            o.builtins(0),
            &Default::default(),
            (|| None, |_| {}, || 0),
            (
                |_, _, _, _: &Result<_, _>| {},
                |_, _, _| {},
                |_, _, _, _, _| {},
                |note: TxnNote<'_, '_>| match note {
                    TxnNote::RolledBack(_) => rollbacks += 1,
                    TxnNote::Committed(_) => commits += 1,
                    TxnNote::Begun => {}
                },
            ),
            |m, n| ingest_result(m, n, counting),
        );
        (kind, result, rollbacks, commits)
    });
    let t0 = std::time::Instant::now();
    while !IMMEDIATE_WAITING.load(Ordering::SeqCst) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "A never waited: a hang"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    b.execute_batch("COMMIT").unwrap();
    let (kind, result, rollbacks, commits) = runner.join().unwrap();
    assert!(
        IMMEDIATE_BUSY_CALLS.load(Ordering::SeqCst) >= 1,
        "A waited at BEGIN"
    );
    assert_eq!(
        (rollbacks, commits),
        (0, 1),
        "no rollback: it waited, then committed"
    );
    assert_eq!(kind, CompletionType::Ok, "{result:?}");
    assert_eq!(result.accepted, Some(true));
    // A's block ran after B's commit, on B's row: the regression decided
    // in the same block as the count.
    assert_eq!(group(&b), ("regressed".to_string(), 6));
}

#[test]
fn a_crash_inside_a_block_rolls_it_back_and_is_not_applied() {
    use specstorm::nemesis::OpFaults;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let v = variant("groups-txn.sql");
    let a = open(&db, &wal_target()).unwrap();
    a.execute_batch(&v.schema).unwrap();
    let counting = v.counting_step;
    // A crash after each step of the block in turn: s1 (the event row is
    // in), s2, s3 (the count too, before COMMIT).
    for crash_after in 0..3 {
        let faults = OpFaults {
            crash_after: Some((crash_after, 0)),
            ..OpFaults::default()
        };
        let o = IngestOp {
            event_id: format!("e{crash_after}"),
            project: "p0".into(),
            fingerprint: "fp0".into(),
            group_id: "g:p0:fp0".into(),
            message: "m".into(),
            attempt: 0,
            intended_ns: None,
            group: 0,
            key: 0,
        };
        let mut logged = Vec::new();
        let mut rolled_back = 0;
        let (kind, result) = run_steps_txn(
            (&a, Journal::of(&a)),
            &v.ingest,
            o.builtins(0),
            &faults,
            (|| None, |_| {}, || 0),
            (
                |i, _, _, _: &Result<_, _>| logged.push(i),
                |_, _, _| {},
                |_, _, _, _, _| {},
                |note: TxnNote<'_, '_>| {
                    if let TxnNote::RolledBack(r) = note {
                        assert_eq!((r.code, r.retried), (None, false));
                        rolled_back += 1;
                    }
                },
            ),
            |m, n| ingest_result(m, n, counting),
        );
        assert_eq!(rolled_back, 1);
        assert_eq!(kind, CompletionType::Fail, "{result:?}");
        assert!(result.crashed_after.is_some(), "its client sends it again");
        // Nothing of the block applied, and the connection is usable.
        let events: i64 = a
            .query_row("SELECT count(*) FROM error_events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(events, 0, "crash after step {crash_after}: {result:?}");
        assert!(a.is_autocommit());
    }
}
