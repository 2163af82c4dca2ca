//! The scenario's retry policy for transaction blocks (`target.txn_retries`,
//! `target.txn_backoff`, `target.txn_backoff_max`), made deterministic as in
//! `txn_blocks`: another connection commits a write after every read of a
//! DEFERRED block, so every attempt fails with SQLITE_BUSY_SNAPSHOT. The
//! op runs the block exactly budget + 1 times, waits the policy's seeded
//! backoff before each rerun (by the caller's stop-aware wait, on a clock
//! the test drives: no timing), records each wait, and ends `fail`.

use specstorm::history::{BenchAction, CompletionType, Entry};
use specstorm::scenario::load_str;
use specstorm::target::sqlite::client::{open, Journal};
use specstorm::txn_backoff::TxnPolicy;
use specstorm::workload::groups::resolve_result;
use specstorm::workload::groups::runtime::{run_steps_policy, txn_rollback_entry, TxnNote};
use specstorm::workload::groups::statements::load_groups;
use specstorm::workload::Value;
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::time::Duration;

const BUSY_SNAPSHOT: i32 = 517;

fn scenario(sets: &[&str]) -> specstorm::scenario::Scenario {
    let mut all = vec![
        "target.busy_timeout=\"5s\"".to_string(),
        "target.journal_mode=\"wal\"".to_string(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    load_str("t", None, "", &all).unwrap()
}

/// Runs the DEFERRED resolver of `groups-deferred-resolve.sql` under
/// `policy` while another connection writes after each of its reads:
/// (completion, rollbacks as (attempt, code, retried, backoff ns), the
/// waits asked of the caller, the history entries of the rollbacks).
#[allow(clippy::type_complexity)]
fn always_busy(
    policy: TxnPolicy,
) -> (
    CompletionType,
    Vec<(u32, Option<i32>, bool, u64)>,
    Vec<Duration>,
    Vec<Entry>,
) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sqlite/groups-deferred-resolve.sql");
    let v = load_groups(path.to_str().unwrap(), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let target = scenario(&[]).target.sqlite();
    let a = open(&db, &target).unwrap();
    let b = open(&db, &target).unwrap();
    a.execute_batch(&v.schema).unwrap();
    a.execute_batch("INSERT INTO error_groups VALUES ('g:p0:fp0', 'p0', 'fp0', 'open', 1)")
        .unwrap();
    // The test's clock: a wait moves it by exactly what was asked.
    let clock = Cell::new(1_000u64);
    let waits = RefCell::new(Vec::new());
    let mut rollbacks = Vec::new();
    let mut entries = Vec::new();
    let builtins = vec![
        Value::Text("g:p0:fp0".into()),
        Value::Int(0),
        Value::Text("p0".into()),
        Value::Text("fp0".into()),
    ];
    let (kind, _) = run_steps_policy(
        (&a, Journal::of(&a)),
        &v.resolve,
        builtins,
        (&Default::default(), policy),
        (
            || None,
            |d: Duration| {
                waits.borrow_mut().push(d);
                clock.set(clock.get() + d.as_nanos() as u64);
            },
            || clock.get(),
        ),
        (
            |i, _, _, _: &Result<_, _>| {
                if v.resolve.steps[i].name == "read" {
                    b.execute_batch(
                        "UPDATE error_groups SET event_count = event_count + 1 \
                         WHERE id = 'g:p0:fp0'",
                    )
                    .unwrap();
                }
            },
            |_, _, _| {},
            |_, _, _, _, _| {},
            |note: TxnNote<'_, '_>| {
                if let TxnNote::RolledBack(r) = note {
                    let e = txn_rollback_entry(7, &v.resolve, r);
                    let Entry::Bench(b) = &e else { panic!("{e:?}") };
                    assert_eq!(b.action, BenchAction::TxnRollback);
                    let t = b.txn.as_ref().unwrap();
                    rollbacks.push((t.attempt, t.code, t.retried, t.backoff_ns));
                    entries.push(e);
                }
            },
        ),
        resolve_result,
    );
    let (status, _): (String, i64) = b
        .query_row(
            "SELECT status, event_count FROM error_groups WHERE id = 'g:p0:fp0'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(status, "open", "no attempt applied");
    let waits = waits.into_inner();
    (kind, rollbacks, waits, entries)
}

#[test]
fn the_scenario_sets_the_retry_budget_and_a_seeded_backoff_each_rollback_records() {
    let s = scenario(&[
        "target.txn_retries=2",
        "target.txn_backoff=\"2ms\"",
        "target.txn_backoff_max=\"3ms\"",
        "seed=11",
    ]);
    let policy = TxnPolicy::of(&s.target, s.seed, 5);
    let (kind, rollbacks, waits, _) = always_busy(policy);
    assert_eq!(
        kind,
        CompletionType::Fail,
        "the budget ran out: not applied"
    );
    let expected = [policy.wait(0), policy.wait(1)];
    assert_eq!(
        waits, expected,
        "one drawn wait before each rerun, none after the last"
    );
    assert!(
        expected[0] >= Duration::from_millis(1) && expected[0] <= Duration::from_millis(2),
        "half of 2ms plus up to the other half: {:?}",
        expected[0]
    );
    assert!(
        expected[1] >= Duration::from_micros(1500) && expected[1] <= Duration::from_millis(3),
        "4ms capped at 3ms: {:?}",
        expected[1]
    );
    let ns = |d: Duration| d.as_nanos() as u64;
    assert_eq!(
        rollbacks,
        vec![
            (0, Some(BUSY_SNAPSHOT), true, ns(expected[0])),
            (1, Some(BUSY_SNAPSHOT), true, ns(expected[1])),
            (2, Some(BUSY_SNAPSHOT), false, 0),
        ],
        "budget 2: three attempts, each wait recorded with the rollback before it"
    );
    // The same seed and op draw the same waits.
    assert_eq!(always_busy(policy).2, waits);
}

#[test]
fn the_defaults_rerun_sixteen_times_at_once_and_record_no_backoff() {
    let s = scenario(&[]);
    let policy = TxnPolicy::of(&s.target, s.seed, 5);
    assert_eq!((policy.retries, policy.backoff), (16, Duration::ZERO));
    let (kind, rollbacks, waits, entries) = always_busy(policy);
    assert_eq!(kind, CompletionType::Fail);
    assert_eq!(rollbacks.len(), 17);
    assert!(waits.is_empty(), "no backoff: {waits:?}");
    assert!(rollbacks.iter().all(|r| r.3 == 0));
    // A history without backoff reads as before: no `backoff_ns` key.
    let line = serde_json::to_string(&entries[0]).unwrap();
    assert!(!line.contains("backoff"), "{line}");
}
