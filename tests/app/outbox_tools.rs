//! The outbox workload with the rest of the tool: `compare` (its table's
//! rows come from the workload), `audit` (same verdicts, tampering
//! noticed), `merge` (refused, plainly), the summary's shape (no groups
//! figures; thresholds on outbox figures checked) and the human summary.

use specstorm::compare::{table, Comparison, VariantResult};
use specstorm::report::summary::Exit;
use specstorm::scenario::Expect;
use std::path::Path;

use crate::common::folder::copy_files as copy_dir;
use crate::common::run::run_into;
use crate::common::{json, specstorm, text as out_text};

/// A row's name of the table (the text before its first two spaces).
fn row_names(t: &str) -> Vec<String> {
    t.lines()
        .map(|l| l.split("  ").next().unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn compare_runs_the_outbox_variants_with_outbox_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cmp");
    let o = specstorm(&[
        "compare",
        "scenarios/compare-outbox.toml",
        "-q",
        "--set",
        "outbox.messages=3000",
        "--set",
        "outbox.handlers=8",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = out_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let c = json(&dir.join("compare.json"));
    assert_eq!(c["workload"], "outbox");
    let v = c["variants"].as_array().unwrap();
    assert_eq!(v.len(), 3);
    let inv = |i: usize, name: &str| v[i]["summary"]["invariants"][name]["verdict"].clone();
    assert_eq!(inv(0, "AtMostOneStateChange"), "holds");
    assert_eq!(inv(1, "AtMostOneOutQueueMsg"), "violated");
    assert_eq!(inv(2, "AtMostOneStateChange"), "violated");
    assert!(v[0]["summary"]["outbox"]["attempts"].as_u64().unwrap() > 0);
    let rows = row_names(&text);
    for want in [
        "ConsistentStateAndOutQueue",
        "attempts",
        "acked deliveries",
        "cas lost",
        "crashed",
        "redeliveries (resends)",
        "handle latency p99 µs",
    ] {
        assert!(rows.iter().any(|r| r == want), "no row {want}:\n{text}");
    }
    for groups_only in ["events", "stranded events", "throughput ingest ops/s"] {
        assert!(
            !rows.iter().any(|r| r == groups_only),
            "row {groups_only}:\n{text}"
        );
    }
    // Each variant's folder is a run folder the audit confirms.
    for name in ["outbox-protocol", "outbox-naive-no-redo"] {
        let a = specstorm(&["audit", dir.join(name).to_str().unwrap()]);
        assert_eq!(a.status.code(), Some(0), "{name}: {}", out_text(&a));
        assert!(out_text(&a).contains("same verdicts as the run"));
    }
}

fn variant(name: &str, summary: serde_json::Value) -> VariantResult {
    VariantResult {
        name: name.into(),
        variant: format!("{name}.sql"),
        run_dir: name.into(),
        expect: Expect::holds(),
        exit: Exit {
            code: 0,
            rule: "met".into(),
        },
        summary: Some(summary),
    }
}

#[test]
fn the_table_rows_come_from_the_workload() {
    let outbox = Comparison {
        schema_version: 1,
        scenario: "s".into(),
        workload: "outbox".into(),
        seed: 1,
        variants: vec![variant(
            "p",
            serde_json::json!({
                "workload": "outbox",
                "invariants": {"TypeOK": {"verdict": "holds"}},
                "outbox": {"attempts": 12, "acked_deliveries": 9, "cas_lost": 2,
                           "crashed": 1, "redeliveries": 4, "overlapping_attempts": 3},
            }),
        )],
        exit: Exit {
            code: 0,
            rule: "ok".into(),
        },
    };
    let t = table(&outbox, false);
    let rows = row_names(&t);
    for want in ["attempts", "cas lost", "crashed", "overlapping attempts"] {
        assert!(rows.iter().any(|r| r == want), "{want}:\n{t}");
    }
    assert!(
        t.contains("cas lost")
            && t.lines()
                .any(|l| l.starts_with("cas lost") && l.ends_with(" 2"))
    );
    for groups_only in ["events", "stranded events", "ingest latency p50 µs"] {
        assert!(
            !rows.iter().any(|r| r == groups_only),
            "{groups_only}:\n{t}"
        );
    }
    let mut groups = outbox.clone();
    groups.workload = "groups".into();
    groups.variants[0].summary = Some(serde_json::json!({"events": 5, "stranded_events": 0}));
    let t = table(&groups, false);
    let rows = row_names(&t);
    for want in ["events", "stranded events", "throughput resolve ops/s"] {
        assert!(rows.iter().any(|r| r == want), "{want}:\n{t}");
    }
    for outbox_only in ["attempts", "cas lost", "crashed", "overlapping attempts"] {
        assert!(
            !rows.iter().any(|r| r == outbox_only),
            "{outbox_only}:\n{t}"
        );
    }
    // An older compare.json (no workload) reads as groups.
    let old: Comparison = serde_json::from_value(serde_json::json!({
        "schema_version": 1, "scenario": "s", "seed": 1, "variants": [],
        "exit": {"code": 0, "rule": ""}
    }))
    .unwrap();
    assert_eq!(old.workload, "groups");
}

fn small_run(dir: &Path, sets: &[&str]) -> serde_json::Value {
    let mut args = vec!["--set", "outbox.messages=400", "--set", "outbox.handlers=4"];
    args.extend(crate::common::run::sets(sets));
    let o = run_into("scenarios/outbox-protocol.toml", dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    json(&dir.join("summary.json"))
}

#[test]
fn audit_confirms_an_outbox_run_and_notices_tampering() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    small_run(&dir, &[]);
    let a = specstorm(&["audit", dir.to_str().unwrap()]);
    assert_eq!(a.status.code(), Some(0), "{}", out_text(&a));
    let audit = json(&dir.join("audit.json"));
    assert_eq!(audit["same_as_run"], true);
    assert_eq!(audit["results"].as_array().unwrap().len(), 5);

    // A second change of message 1 in the final database.
    let db_dir = tmp.path().join("db");
    copy_dir(&dir, &db_dir);
    let conn = rusqlite::Connection::open(db_dir.join("target.db")).unwrap();
    conn.execute(
        "INSERT INTO state_log (ver, msg_id, tx_id, kind) VALUES (99999999, 1, 424242, 'change')",
        [],
    )
    .unwrap();
    drop(conn);
    let a = specstorm(&["audit", db_dir.to_str().unwrap()]);
    let t = out_text(&a);
    assert_eq!(a.status.code(), Some(3), "{t}");
    assert!(
        t.contains("AtMostOneStateChange: the run said holds"),
        "{t}"
    );

    // A history cut short: ops are missing, the footer is gone.
    let h_dir = tmp.path().join("hist");
    copy_dir(&dir, &h_dir);
    let h = crate::common::folder::history_text(&h_dir).unwrap();
    let lines: Vec<&str> = h.lines().collect();
    let cut = lines[..lines.len() / 2].join("\n") + "\n";
    crate::common::folder::write_history_text(&h_dir, cut);
    let a = specstorm(&["audit", h_dir.to_str().unwrap()]);
    let t = out_text(&a);
    assert_eq!(a.status.code(), Some(3), "{t}");
    assert!(t.contains("no footer"), "{t}");
}

/// An outbox run folder of a whole run is no shard: `merge` refuses it,
/// saying so (shards of an outbox run: tests/app/outbox_shard_merge.rs).
#[test]
fn merge_refuses_an_outbox_folder_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    small_run(&dir, &["outbox.messages=50"]);
    let out = tmp.path().join("merged");
    let o = specstorm(&[
        "merge",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = out_text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("is not a shard"), "{t}");
}

#[test]
fn an_outbox_summary_has_outbox_figures_and_no_groups_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let s = small_run(&dir, &["thresholds=[\"outbox.cas_lost >= 0\"]"]);
    assert_eq!(s["schema_version"], 2);
    for groups_only in [
        "events",
        "events_per_s",
        "duplicates",
        "resolves",
        "stranded_events",
    ] {
        assert!(s.get(groups_only).is_none(), "{groups_only} in {s}");
    }
    for k in [
        "attempts",
        "acked_deliveries",
        "cas_lost",
        "crashed",
        "redelivered_attempts",
        "overlapping_attempts",
        "lease_expired",
        "late_acks",
    ] {
        assert!(s["outbox"][k].is_u64(), "outbox.{k} in {s}");
    }
    assert_eq!(s["thresholds"][0]["passed"], true);
    // `report` reads it back and prints outbox headings, no groups ones.
    let r = specstorm(&["report", dir.to_str().unwrap()]);
    let t = out_text(&r);
    assert!(r.status.success(), "{t}");
    assert!(
        t.contains("outbox: 400 messages") && t.contains("attempts: "),
        "{t}"
    );
    for groups_only in ["stranded events", "resolves:", "duplicates rejected"] {
        assert!(!t.contains(groups_only), "{groups_only}:\n{t}");
    }
}

#[test]
fn thresholds_on_outbox_figures_are_checked_before_the_run() {
    let load = |t: &str| {
        specstorm::scenario::load_str(
            "t",
            Some(Path::new("t.toml")),
            &format!("workload = \"outbox\"\nthresholds = [\"{t}\"]\n"),
            &[],
        )
        .map_err(|e| e.to_string())
    };
    for ok in [
        "outbox.cas_lost < 10",
        "outbox.overlapping_attempts > 0",
        "outbox.late_acks >= 0",
    ] {
        load(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for (bad, names) in [
        ("duplicates == 0", "outbox"),
        ("stranded_events.total == 0", "outbox"),
        ("outbox.cas_lots < 10", "cas_lost"),
    ] {
        let e = load(bad).unwrap_err();
        assert!(e.contains("no figure") && e.contains(names), "{bad}: {e}");
    }
}
