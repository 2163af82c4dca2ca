//! The transaction blocks' retry policy keys of `[target]`
//! (`txn_retries`, `txn_backoff`, `txn_backoff_max`): their defaults, and
//! every bad value refused at its `file:line` with the reason.

use specstorm::scenario::*;
use std::path::Path;
use std::time::Duration;

const FILE: &str = "scenarios/test.toml";

fn load_text(text: &str) -> Result<Scenario, ScenarioError> {
    load_str("test", Some(Path::new(FILE)), text, &[])
}

#[track_caller]
fn assert_refused(text: &str, line: usize, needle: &str) {
    let err = load_text(text).expect_err("expected an error");
    assert_eq!(err.line(), Some(line), "wrong line in: {err}");
    assert!(err.reason().contains(needle), "{needle:?} not in: {err}");
    assert_eq!(err.to_string(), format!("{FILE}:{line}: {}", err.reason()));
}

#[test]
fn the_defaults_rerun_sixteen_times_without_a_wait() {
    let t = load_text("").unwrap().target;
    assert_eq!(t.txn_retries, 16);
    assert_eq!(t.txn_backoff, Duration::ZERO);
    assert_eq!(t.txn_backoff_max, Duration::from_millis(100));
    let t =
        load_text("[target]\ntxn_retries = 0\ntxn_backoff = \"1ms\"\ntxn_backoff_max = \"1ms\"\n")
            .unwrap()
            .target;
    assert_eq!(
        (t.txn_retries, t.txn_backoff, t.txn_backoff_max),
        (0, Duration::from_millis(1), Duration::from_millis(1))
    );
}

#[test]
fn bad_values_are_refused_at_their_line() {
    assert_refused(
        "seed = 1\n[target]\ntxn_retries = 1001\n",
        3,
        "`target.txn_retries`",
    );
    assert_refused("[target]\ntxn_retries = -1\n", 2, "`target.txn_retries`");
    assert_refused(
        "[target]\ntxn_backoff = \"soon\"\n",
        2,
        "for `target.txn_backoff`",
    );
    assert_refused(
        "[target]\ntxn_backoff_max = 5\n",
        2,
        "`target.txn_backoff_max`",
    );
    // The cap below the first wait: blamed on the cap when it is given...
    assert_refused(
        "[target]\ntxn_backoff = \"50ms\"\n\ntxn_backoff_max = \"10ms\"\n",
        4,
        "`target.txn_backoff_max` (10ms) must be at least `target.txn_backoff` (50ms)",
    );
    // ... else on the first wait, above the default cap.
    assert_refused(
        "[target]\ntxn_backoff = \"1s\"\n",
        2,
        "must be at least `target.txn_backoff` (1s)",
    );
}
