//! `specstorm replay`: one finding of a recorded run re-executed, shrunk,
//! written as a sqlite3 script and an explore world. Deterministic: the
//! runs are committed fixtures (tests/fixtures/README.md), copied before
//! the command writes into them, so no race decides anything here.

use crate::common::bench::{exit_and_text, specstorm};
use crate::common::folder::fixture;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A copy of the committed fixture `name`, in a temporary folder.
fn copy_of(name: &str) -> (TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = fixture(name, &tmp.path().join("run"));
    (tmp, dir)
}

fn replay(dir: &Path, more: &[&str]) -> (i32, String) {
    let mut args = vec!["replay", dir.to_str().unwrap()];
    args.extend_from_slice(more);
    let o = specstorm(&args);
    (o.status.code().unwrap_or(-1), exit_and_text(&o))
}

fn outcome(dir: &Path) -> Value {
    let f = dir.join("replay/finding-1/replay.json");
    serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap()
}

/// The script's steps: its `-- step K of N` comments.
fn script_steps(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("replay/finding-1/shrunk.sql"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("-- step "))
        .count()
}

/// `specstorm explore` on the world replay wrote: its exit and text.
fn explore_world(dir: &Path) -> (i32, String) {
    let world = dir.join("replay/finding-1/world.toml");
    let o = specstorm(&["explore", world.to_str().unwrap(), "-q"]);
    (o.status.code().unwrap_or(-1), exit_and_text(&o))
}

#[test]
fn replay_reproduces_the_naive_fixture_and_shrinks_it_to_the_specs_five_steps() {
    let (_tmp, dir) = copy_of("validate-naive");
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("reproduced:"), "{text}");
    let o = outcome(&dir);
    assert_eq!(o["reproduced"], true, "{o}");
    assert_eq!(o["invariant"], "NoMissedRegression");
    assert_eq!(o["replayed"], serde_json::json!([56, 178]), "{o}");
    // The spec's shortest NoMissedRegression counterexample is 5 steps
    // (S1, S2, S3ReadNaive, Resolve, S3WriteNaive); the naive file adds
    // none on that path (its resolve probe runs only on a refusal).
    assert_eq!(o["shrunk"], serde_json::json!([2, 5]), "{o}");
    assert_eq!(script_steps(&dir), 5);
    assert_eq!(o["explore_confirms"], true);
    let (code, text) = explore_world(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("NoMissedRegression violated"), "{text}");
}

#[test]
fn replay_of_a_history_that_records_no_returned_rows_reproduces_too() {
    // naive-caught was written before steps recorded what they returned:
    // the re-execution reads the rows itself.
    let (_tmp, dir) = copy_of("naive-caught");
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    let o = outcome(&dir);
    assert_eq!(o["reproduced"], true, "{o}");
    assert_eq!(o["shrunk"][1], 5, "{o}");
    assert_eq!(script_steps(&dir), 5);
}

#[test]
fn replay_of_a_lost_update_reproduces_count_exact_in_two_ingests() {
    let (_tmp, dir) = copy_of("replay-lost-update");
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    let o = outcome(&dir);
    assert_eq!(o["invariant"], "CountExact", "{o}");
    // Two ingests of four steps each, both reads before either write.
    assert_eq!(o["shrunk"], serde_json::json!([2, 8]), "{o}");
    let (code, text) = explore_world(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("CountExact violated"), "{text}");
}

#[test]
fn replay_writes_the_same_script_every_time() {
    let (_a, one) = copy_of("validate-naive");
    let (_b, two) = copy_of("validate-naive");
    assert_eq!(replay(&one, &[]).0, 0);
    assert_eq!(replay(&two, &[]).0, 0);
    // The first line names the folder; the rest is the replay.
    let body = |d: &Path| {
        let s = std::fs::read_to_string(d.join("replay/finding-1/shrunk.sql")).unwrap();
        s.lines().skip(1).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(body(&one), body(&two));
}

#[test]
fn replay_refuses_a_run_that_found_nothing() {
    let (_tmp, dir) = copy_of("validate-atomic");
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("nothing to replay"), "{text}");
}

#[test]
fn replay_of_an_http_run_says_its_steps_are_not_recorded_and_offers_reruns() {
    for fixture in ["naive-shards/0", HTTP_ATOMIC] {
        let (_tmp, dir) = copy_of(fixture);
        let (code, text) = replay(&dir, &[]);
        assert_eq!(code, 2, "{fixture}: {text}");
        assert!(
            text.contains("an HTTP run: the server's steps are not recorded"),
            "{fixture}: {text}"
        );
        assert!(text.contains("--reruns N"), "{fixture}: {text}");
    }
}

/// A real HTTP run of the atomic variant behind the reference server,
/// with pause and crash faults through the fault hook
/// (tests/fixtures/README.md).
const HTTP_ATOMIC: &str = "http-atomic";

/// The fault entries of kind `kind` in a history, per op.
fn faults_of(history: &Path, kind: &str) -> Vec<(u64, String)> {
    let o = specstorm(&["history", history.to_str().unwrap()]);
    let mut v: Vec<(u64, String)> = std::str::from_utf8(&o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "fault" && e["kind"] == kind && e["action"] == "inject")
        .map(|e| {
            (
                e["op"].as_u64().unwrap(),
                e["step"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// How many entries of `kind` a history holds.
fn entries_of(history: &Path, kind: &str) -> usize {
    let o = specstorm(&["history", history.to_str().unwrap()]);
    std::str::from_utf8(&o.stdout)
        .unwrap()
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["type"] == kind)
        .count()
}

/// A correct design never violates an invariant, however the ops
/// interleave: every rerun of the atomic run finds none (0 of 2), which
/// agrees with the run (exit 0).
#[test]
fn reruns_of_an_http_atomic_run_violate_nothing() {
    let (_tmp, dir) = copy_of(HTTP_ATOMIC);
    let (code, text) = replay(&dir, &["--reruns", "2"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("an HTTP run: the server's steps are not recorded"),
        "{text}"
    );
    for inv in [
        "TypeOK",
        "OneGroupPerFingerprint",
        "CountExact",
        "NoMissedRegression",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{inv} ("))
                    && l.contains(": violated in 0 of 2 reruns")),
            "{inv}: {text}"
        );
    }
    for k in 1..=2 {
        let run = dir.join(format!("replay/rerun-{k}"));
        assert!(text.contains(&run.display().to_string()), "{text}");
        for f in [
            "history.jsonl",
            "export.json",
            "scenario.toml",
            "variant.sql",
        ] {
            assert!(run.join(f).is_file(), "rerun {k}: {f} missing");
        }
        // Every recorded op sent again, retries included.
        assert_eq!(
            entries_of(&run.join("history.jsonl"), "invoke"),
            entries_of(&dir, "invoke"),
            "rerun {k}"
        );
        // The run's pauses, asked of the same ops at the same steps.
        assert_eq!(
            faults_of(&run.join("history.jsonl"), "pause"),
            faults_of(&dir, "pause"),
            "rerun {k}"
        );
    }
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("replay/reruns.json")).unwrap())
            .unwrap();
    assert_eq!(r["reruns"], 2, "{r}");
    for c in r["invariants"].as_array().unwrap() {
        assert_eq!(c["violated"], 0, "{r}");
    }
}

#[test]
fn reruns_refuse_a_run_that_is_not_over_http() {
    let (_tmp, dir) = copy_of("validate-atomic");
    let (code, text) = replay(&dir, &["--reruns", "2"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--reruns takes an HTTP run"), "{text}");
    let (code, text) = replay(&dir, &["--reruns", "0"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--reruns"), "{text}");
}

#[test]
fn replay_refuses_a_history_without_step_records() {
    let (_tmp, dir) = copy_of("validate-naive");
    let o = specstorm(&["history", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", exit_and_text(&o));
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout)
        .unwrap()
        .lines()
        .filter(|l| serde_json::from_str::<Value>(l).unwrap()["type"] != "step")
        .collect();
    std::fs::remove_file(dir.join("history.bin")).unwrap();
    std::fs::write(dir.join("history.jsonl"), lines.join("\n") + "\n").unwrap();
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("records no steps"), "{text}");
}

#[test]
fn replay_refuses_a_finding_the_run_does_not_have() {
    let (_tmp, dir) = copy_of("validate-naive");
    let (code, text) = replay(&dir, &["--finding", "4"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("the run has 3 finding(s)"), "{text}");
}

/// The outbox fixture: a no-redo run whose message 2 was changed twice
/// (tests/fixtures/README.md).
const OUTBOX_NO_REDO: &str = "replay-outbox-no-redo";

#[test]
fn replay_of_an_outbox_no_redo_run_reproduces_and_shrinks_to_two_attempts() {
    let (_tmp, dir) = copy_of(OUTBOX_NO_REDO);
    let (code, text) = replay(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("reproduced:"), "{text}");
    let o = outcome(&dir);
    assert_eq!(o["reproduced"], true, "{o}");
    assert_eq!(o["invariant"], "AtMostOneStateChange");
    assert_eq!(o["msg_id"], 2);
    assert_eq!(o["replayed"], serde_json::json!([5, 22]), "{o}");
    // Two attempts up to their StateCommit: load_state, process,
    // stage_outbox, state_commit each, the first cut by its crash. The
    // world's shortest counterexample runs the same 8 statements.
    assert_eq!(o["shrunk"], serde_json::json!([2, 8]), "{o}");
    assert_eq!(script_steps(&dir), 8);
    assert_eq!(o["explore_confirms"], true, "{o}");
    let (code, text) = explore_world(&dir);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("AtMostOneStateChange"), "{text}");
}

#[test]
fn replay_of_the_outbox_consistency_finding_keeps_the_acked_attempt_whole() {
    let (_tmp, dir) = copy_of(OUTBOX_NO_REDO);
    let (code, text) = replay(&dir, &["--finding", "2"]);
    assert_eq!(code, 0, "{text}");
    let f = dir.join("replay/finding-2/replay.json");
    let o: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
    assert_eq!(o["invariant"], "ConsistentStateAndOutQueue");
    // The crashed attempt's four steps and the acked one's eight.
    assert_eq!(o["shrunk"], serde_json::json!([2, 12]), "{o}");
}

#[test]
fn replay_of_an_outbox_run_writes_the_same_script_every_time() {
    let (_a, one) = copy_of(OUTBOX_NO_REDO);
    let (_b, two) = copy_of(OUTBOX_NO_REDO);
    assert_eq!(replay(&one, &[]).0, 0);
    assert_eq!(replay(&two, &[]).0, 0);
    let body = |d: &Path| {
        let s = std::fs::read_to_string(d.join("replay/finding-1/shrunk.sql")).unwrap();
        s.lines().skip(1).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(body(&one), body(&two));
}

#[test]
fn the_outbox_script_leaves_two_changes_of_one_message_in_state_log() {
    let (_tmp, dir) = copy_of(OUTBOX_NO_REDO);
    assert_eq!(replay(&dir, &[]).0, 0);
    // The shrunk database is what the script makes: its final rows.
    let db = rusqlite::Connection::open(dir.join("replay/finding-1/shrunk.db")).unwrap();
    let changes: Vec<(i64, i64)> = db
        .prepare("SELECT ver, msg_id FROM state_log WHERE kind = 'change' ORDER BY ver")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(changes, vec![(1, 2), (2, 2)]);
}
