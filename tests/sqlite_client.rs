//! The in-process SQLite client: a step's outcome, and statement errors
//! (SQLITE_BUSY above all) becoming the op's outcome instead of a panic.

use specstorm::client::sqlite::{exec_step, open};
use specstorm::scenario::load_str;
use specstorm::variant::load_groups;
use specstorm::workload::groups::{ingest_result, IngestOp};
use specstorm::workload::{Next, StepMachine};
use std::time::Duration;

fn target(busy: &str) -> specstorm::scenario::SqliteTarget {
    let s = load_str("t", None, "", &[format!("target.busy_timeout=\"{busy}\"")]).unwrap();
    s.target.sqlite()
}

fn op(id: &str) -> IngestOp {
    IngestOp {
        event_id: id.into(),
        project: "p0".into(),
        fingerprint: "fp0".into(),
        group_id: "g:p0:fp0".into(),
        message: "m".into(),
        attempt: 0,
        intended_ns: None,
        group: 0,
        key: 0,
    }
}

#[test]
fn atomic_ingest_runs_its_steps_then_a_retry_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let v = load_groups("groups-atomic", None).unwrap();
    let conn = open(&db, &target("1s")).unwrap();
    conn.execute_batch(&v.schema).unwrap();
    for (attempt, accepted) in [(0, true), (1, false)] {
        let o = op("e1");
        let mut m = StepMachine::new(&v.ingest, o.builtins(0));
        let next = loop {
            let step = m.current_step().unwrap();
            let out = exec_step(&conn, step, &m.params()).unwrap();
            let n = m.advance(out);
            if n != Next::Continue {
                break n;
            }
        };
        let (kind, r) = ingest_result(&m, next, v.counting_step);
        assert_eq!(
            kind,
            specstorm::history::CompletionType::Ok,
            "attempt {attempt}"
        );
        assert_eq!(r.accepted, Some(accepted), "attempt {attempt}");
    }
    let count: i64 = conn
        .query_row(
            "SELECT event_count FROM error_groups WHERE id = 'g:p0:fp0'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(count, 1);
}

#[test]
fn busy_is_an_error_that_certainly_did_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let v = load_groups("groups-atomic", None).unwrap();
    let t = target("0s");
    let holder = open(&db, &t).unwrap();
    holder.execute_batch(&v.schema).unwrap();
    // Another connection holds the write lock: s1 cannot get it.
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let conn = open(&db, &t).unwrap();
    conn.busy_timeout(Duration::ZERO).unwrap();
    let o = op("e2");
    let m = StepMachine::new(&v.ingest, o.builtins(0));
    let err = exec_step(&conn, m.current_step().unwrap(), &m.params()).unwrap_err();
    assert!(!err.maybe_applied, "{err:?}");
    assert!(
        err.message.to_lowercase().contains("locked") || err.message.contains("busy"),
        "{}",
        err.message
    );
    holder.execute_batch("ROLLBACK").unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM error_events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
}
