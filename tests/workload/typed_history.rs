//! The checkers read what a runtime knew as a fact from the history's
//! fields, not from the words next to them: a failed step's kind
//! (`error_kind`, from SQLite's error code), why an op was abandoned
//! (`aborted`), and what the server answered to a request whose answer the
//! fault proxy dropped (`dropped`). Each history here is JSON lines as a
//! run writes them, with words that say something else than the field (or
//! nothing): the field decides. A history without the fields is read by
//! its words (`checker::legacy`, and the tests that build entries without
//! them).

use specstorm::workload::groups::checker::facts::DroppedAnswer;
use specstorm::workload::groups::checker::Facts;

/// Facts of a history given as its lines.
fn facts(lines: &[&str]) -> Facts {
    Facts::from_entries(
        lines
            .iter()
            .map(|l| serde_json::from_str(l).map_err(anyhow::Error::from)),
    )
    .expect("a valid history")
}

/// An in-process groups history: the event row is inserted by step `ev`,
/// counted by step `count`.
const IN_PROCESS: &str = r#"{"type":"header","schema_version":3,"workload":"groups","scenario":"t","variant":"groups-naive","seed":1,"started_utc":"2024-01-01T00:00:00Z","step_log":true,"counting_step":1,"event_step":0,"namespace":"","ingest_steps":["ev","count"]}"#;
const INVOKE: &str = r#"{"type":"invoke","t":10,"op":1,"worker":0,"f":"ingest","event_id":"e1","project":"p","fingerprint":"f1","group_id":"g1"}"#;
const EV_APPLIED: &str =
    r#"{"type":"step","op":1,"idx":0,"step":"ev","start":11,"end":12,"changes":1,"rows":0}"#;

#[test]
fn a_failed_step_s_kind_is_its_recorded_kind_not_its_message() {
    // A constraint named `not_busy` failed: an error, whatever its words.
    let f = facts(&[
        IN_PROCESS,
        INVOKE,
        EV_APPLIED,
        r#"{"type":"step","op":1,"idx":1,"step":"count","start":13,"end":14,"changes":0,"rows":0,"error":"CHECK constraint failed: not_busy","error_kind":"other"}"#,
        r#"{"type":"info","t":15,"op":1,"worker":0,"f":"ingest","error":"step count: CHECK constraint failed: not_busy"}"#,
    ]);
    assert_eq!(f.causes, ["error at step count"]);
    // SQLITE_BUSY, whatever its words.
    let f = facts(&[
        IN_PROCESS,
        INVOKE,
        EV_APPLIED,
        r#"{"type":"step","op":1,"idx":1,"step":"count","start":13,"end":14,"changes":0,"rows":0,"error":"the writer was held up","error_kind":"busy"}"#,
        r#"{"type":"info","t":15,"op":1,"worker":0,"f":"ingest","error":"step count: the writer was held up"}"#,
    ]);
    assert_eq!(f.causes, ["busy at step count"]);
}

#[test]
fn an_abandoned_op_s_cause_is_its_recorded_cause_not_its_error() {
    let ended = |error: &str, aborted: &str| {
        let line = format!(
            r#"{{"type":"info","t":15,"op":1,"worker":0,"f":"ingest","error":"{error}","aborted":"{aborted}"}}"#
        );
        facts(&[IN_PROCESS, INVOKE, EV_APPLIED, &line]).causes
    };
    assert_eq!(
        ended("stopped by a second Ctrl-C", "by_user"),
        ["aborted between steps"]
    );
    // The end of stop.grace is said with its words, as before.
    assert_eq!(
        ended(
            "abandoned after the grace; not aborted by the user",
            "grace"
        ),
        ["stopped: abandoned after the grace; not aborted by the user"]
    );
}

#[test]
fn a_dropped_answer_is_read_from_the_entry_s_fields_not_its_detail() {
    // Over HTTP: the proxy forwarded op 1's ingest, the server accepted and
    // counted the event, the proxy dropped the answer.
    let f = facts(&[
        r#"{"type":"header","schema_version":3,"workload":"groups","scenario":"t","variant":"groups-naive","seed":1,"started_utc":"2024-01-01T00:00:00Z","step_log":false,"counting_step":2,"event_step":0,"namespace":"","ingest_steps":["s1","s2","s3"]}"#,
        INVOKE,
        r#"{"type":"fault","t":12,"fault":0,"kind":"proxy","action":"inject","op":1,"forwarded":true,"detail":"the answer was dropped","dropped":{"status":200,"body":"{\"accepted\":true,\"group_id\":\"g1\"}"}}"#,
        r#"{"type":"info","t":13,"op":1,"worker":0,"f":"ingest","error":"connection reset"}"#,
    ]);
    assert_eq!(f.proxied.get(&1), Some(&(true, 12)));
    assert_eq!(
        f.dropped_answers.get(&1),
        Some(&DroppedAnswer::Ingest(true))
    );
}
