//! The in-process SQLite client: a step's outcome, and statement errors
//! (SQLITE_BUSY above all) becoming the op's outcome instead of a panic.

use specstorm::scenario::load_str;
use specstorm::target::sqlite::client::{exec_step, open, Journal};
use specstorm::workload::groups::statements::load_groups;
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
            let out = exec_step(&conn, Journal::RollsBack, step, &m.params()).unwrap();
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
    let err = exec_step(
        &conn,
        Journal::of(&conn),
        m.current_step().unwrap(),
        &m.params(),
    )
    .unwrap_err();
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

/// The atomic file with a CHECK on the event's fingerprint, and s1 written
/// with `INSERT OR <conflict>`.
fn checked_variant(conflict: &str) -> specstorm::workload::groups::statements::GroupsVariant {
    let text = include_str!("../../targets/sqlite/groups-atomic.sql")
        .replace(
            "  fingerprint TEXT,\n  group_id    TEXT,",
            "  fingerprint TEXT CHECK (length(fingerprint) < 8),\n  group_id    TEXT,",
        )
        .replace(
            "INSERT OR IGNORE INTO error_events",
            &format!("INSERT OR {conflict} INTO error_events"),
        );
    assert!(text.contains("CHECK (length"), "the schema changed");
    let f = specstorm::statements::parse(std::path::Path::new("checked.sql"), &text).unwrap();
    specstorm::workload::groups::statements::compile_groups(&f).unwrap()
}

/// s1 of an event whose fingerprint fails the CHECK: the step's error,
/// on a connection with `journal_mode` as given.
fn constraint_error(
    conflict: &str,
    journal_mode: &str,
) -> specstorm::target::sqlite::client::StepError {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let v = checked_variant(conflict);
    let s = load_str(
        "t",
        None,
        "",
        &[format!("target.journal_mode=\"{journal_mode}\"")],
    )
    .unwrap();
    let conn = open(&db, &s.target.sqlite()).unwrap();
    conn.execute_batch(&v.schema).unwrap();
    let o = IngestOp {
        fingerprint: "a-fingerprint-too-long".into(),
        ..op("e1")
    };
    let m = StepMachine::new(&v.ingest, o.builtins(0));
    let err = exec_step(
        &conn,
        Journal::of(&conn),
        m.current_step().unwrap(),
        &m.params(),
    )
    .unwrap_err();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM error_events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0, "the failed insert left no row");
    err
}

/// A constraint failure of an autocommit statement with the default
/// conflict resolution (ABORT) is rolled back: the step did not apply.
#[test]
fn a_constraint_failure_sqlite_rolled_back_did_not_apply() {
    let err = constraint_error("ABORT", "wal");
    assert!(err.message.contains("CHECK constraint failed"), "{err:?}");
    assert!(!err.maybe_applied, "{err:?}");
    let err = constraint_error("ROLLBACK", "delete");
    assert!(!err.maybe_applied, "{err:?}");
}

/// Where the premise fails the step stays indeterminate: `OR FAIL` keeps
/// the rows changed before the failing one, and `journal_mode = off` has
/// no rollback at all.
#[test]
fn a_constraint_failure_stays_indeterminate_where_nothing_is_undone() {
    let err = constraint_error("FAIL", "wal");
    assert!(err.message.contains("CHECK constraint failed"), "{err:?}");
    assert!(err.maybe_applied, "{err:?}");
    let err = constraint_error("ABORT", "off");
    assert!(err.maybe_applied, "{err:?}");
}

/// The op whose first step failed on a rolled-back constraint is `fail`
/// (certainly not applied), not `info`.
#[test]
fn an_op_ended_by_a_rolled_back_constraint_is_fail() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let v = checked_variant("ABORT");
    let conn = open(&db, &target("1s")).unwrap();
    conn.execute_batch(&v.schema).unwrap();
    let o = IngestOp {
        fingerprint: "a-fingerprint-too-long".into(),
        ..op("e1")
    };
    let counting = v.counting_step;
    let (kind, r) = specstorm::workload::groups::runtime::run_steps(
        (&conn, Journal::of(&conn)),
        &v.ingest,
        o.builtins(0),
        &Default::default(),
        || None,
        |_| {},
        || 0,
        |_, _, _, _| {},
        |_, _, _| {},
        |_, _, _, _, _| {},
        |m, n| ingest_result(m, n, counting),
    );
    assert_eq!(kind, specstorm::history::CompletionType::Fail, "{r:?}");
}

#[test]
fn the_journal_is_read_from_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, journal) in [
        ("wal", Journal::RollsBack),
        ("memory", Journal::RollsBack),
        ("off", Journal::Off),
    ] {
        let s = load_str("t", None, "", &[format!("target.journal_mode=\"{mode}\"")]).unwrap();
        let conn = open(&dir.path().join(format!("{mode}.db")), &s.target.sqlite()).unwrap();
        assert_eq!(Journal::of(&conn), journal, "{mode}");
    }
}
