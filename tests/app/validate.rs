//! `specstorm validate`: a recorded run checked against BacktalkGroups.tla
//! by TLC. Deterministic: a real atomic run is consistent whatever its
//! interleaving; the findings come from histories written here, step by
//! step, into the folder of a tiny real run (its scenario, statement file
//! and database), so no race decides a verdict. TLC must be installed
//! (`.ci/run` installs it): these tests fail, never skip, without it.

use crate::common::bench::{exit_and_text, specstorm};
use crate::common::run::{run, sets, Ran};
use serde_json::{json, Value};
use std::path::Path;

/// A tiny run of `variant` (1 ingester, 1 resolver, a few events).
fn tiny(variant: &str) -> Ran {
    let r = run(
        "scenarios/groups-atomic.toml",
        &sets(&[
            &format!("variant={variant}"),
            "stop.events=5",
            "load.ingesters=1",
            "load.resolvers=1",
        ]),
    );
    assert!(
        r.out.join("target.db").is_file(),
        "{}",
        exit_and_text(&r.output)
    );
    r
}

fn validate(dir: &Path) -> (i32, String) {
    let o = specstorm(&["validate", dir.to_str().unwrap()]);
    (o.status.code().unwrap_or(-1), exit_and_text(&o))
}

/// Replaces the folder's history with `entries` (after its own header) as
/// JSON lines, and its tables with `events` and `groups` (id, status,
/// count).
fn doctor(dir: &Path, entries: &[Value], events: &[&str], groups: &[(&str, &str, i64)]) {
    let o = specstorm(&["history", dir.to_str().unwrap()]);
    let text = String::from_utf8(o.stdout).unwrap();
    let header = text.lines().next().unwrap().to_string();
    let mut lines = vec![header];
    lines.extend(entries.iter().map(|e| e.to_string()));
    let ops = entries.iter().filter(|e| e["type"] == "invoke").count();
    lines.push(json!({"type": "footer", "t": 1000, "partial": false, "ops": ops}).to_string());
    std::fs::remove_file(dir.join("history.bin")).unwrap();
    std::fs::write(dir.join("history.jsonl"), lines.join("\n") + "\n").unwrap();
    let db = rusqlite::Connection::open(dir.join("target.db")).unwrap();
    db.execute_batch("DELETE FROM error_events; DELETE FROM error_groups;")
        .unwrap();
    for e in events {
        db.execute(
            "INSERT INTO error_events VALUES (?1, 'p0', 'fp0', 'g:p0:fp0', 0)",
            [e],
        )
        .unwrap();
    }
    for (id, status, count) in groups {
        db.execute(
            "INSERT INTO error_groups VALUES (?1, 'p0', 'fp0', ?2, ?3)",
            rusqlite::params![id, status, count],
        )
        .unwrap();
    }
}

fn invoke(op: u64, worker: u32, f: &str, t: u64, event: Option<&str>) -> Value {
    let mut v = json!({"type": "invoke", "t": t, "op": op, "worker": worker, "f": f,
        "project": "p0", "fingerprint": "fp0", "group_id": "g:p0:fp0"});
    if let Some(e) = event {
        v["event_id"] = json!(e);
        v["attempt"] = json!(0);
    }
    v
}

fn step(op: u64, idx: u32, name: &str, [start, end]: [u64; 2], changes: u64) -> Value {
    json!({"type": "step", "op": op, "idx": idx, "step": name, "start": start, "end": end,
        "changes": changes, "rows": 0})
}

fn done(kind: &str, op: u64, worker: u32, f: &str, t: u64, result: Value) -> Value {
    let mut v = json!({"type": kind, "t": t, "op": op, "worker": worker, "f": f});
    v.as_object_mut()
        .unwrap()
        .extend(result.as_object().unwrap().clone());
    v
}

#[test]
fn a_recorded_atomic_run_is_consistent() {
    let r = tiny("groups-atomic");
    let (code, text) = validate(&r.out);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("consistent"), "{text}");
    assert!(text.contains("sha256 "), "{text}");
    let v = r.out.join("validate");
    for f in [
        "BacktalkGroups.tla",
        "Trace_BacktalkGroups.tla",
        "Trace_BacktalkGroups_good.cfg",
        "validate.json",
    ] {
        assert!(v.join(f).is_file(), "{f} missing: {text}");
    }
    let spec = std::fs::read_to_string(v.join("BacktalkGroups.tla")).unwrap();
    let shipped = std::fs::read_to_string("specs/BacktalkGroups.tla").unwrap();
    assert_eq!(spec, shipped, "the spec is instantiated unchanged");
    let cfg = std::fs::read_to_string(v.join("Trace_BacktalkGroups_good.cfg")).unwrap();
    assert!(cfg.contains("Active <- TActive") && cfg.contains("QLen <- TQLen"));
}

/// The naive design's race, recorded: the read saw `open`, a resolve
/// landed, the write kept `resolved` with the new count.
#[test]
fn a_naive_run_whose_race_happened_is_finding_b() {
    let r = tiny("groups-naive");
    let mut read = step(0, 2, "s3_read", [14, 15], 0);
    read["rows"] = json!(1);
    read["returned"] = json!(["open"]);
    let mut res = step(1, 0, "update", [20, 21], 1);
    res["rows"] = json!(1);
    res["returned"] = json!([0]);
    doctor(
        &r.out,
        &[
            invoke(0, 0, "ingest", 5, Some("ev-1")),
            step(0, 0, "s1", [10, 11], 1),
            step(0, 1, "s2", [12, 13], 1),
            read,
            invoke(1, 1, "resolve", 19, None),
            res,
            done(
                "ok",
                1,
                1,
                "resolve",
                22,
                json!({"resolved": true, "event_count": 0}),
            ),
            step(0, 3, "s3_write", [30, 31], 1),
            done("ok", 0, 0, "ingest", 32, json!({"accepted": true})),
        ],
        &["ev-1"],
        &[("g:p0:fp0", "resolved", 1)],
    );
    let (code, text) = validate(&r.out);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("finding (b)"), "{text}");
}

/// The same steps with the resolve before the read (which then saw
/// `resolved`): the write regresses the group; consistent.
#[test]
fn the_same_steps_in_a_harmless_order_are_consistent() {
    let r = tiny("groups-naive");
    let mut read = step(0, 2, "s3_read", [24, 25], 0);
    read["rows"] = json!(1);
    read["returned"] = json!(["resolved"]);
    let mut res = step(1, 0, "update", [20, 21], 1);
    res["rows"] = json!(1);
    res["returned"] = json!([0]);
    doctor(
        &r.out,
        &[
            invoke(0, 0, "ingest", 5, Some("ev-1")),
            step(0, 0, "s1", [10, 11], 1),
            step(0, 1, "s2", [12, 13], 1),
            invoke(1, 1, "resolve", 19, None),
            res,
            done(
                "ok",
                1,
                1,
                "resolve",
                22,
                json!({"resolved": true, "event_count": 0}),
            ),
            read,
            step(0, 3, "s3_write", [30, 31], 1),
            done("ok", 0, 0, "ingest", 32, json!({"accepted": true})),
        ],
        &["ev-1"],
        &[("g:p0:fp0", "regressed", 1)],
    );
    let (code, text) = validate(&r.out);
    assert_eq!(code, 0, "{text}");
}

/// A duplicate answered for an id no step had inserted.
#[test]
fn a_doctored_duplicate_is_finding_a() {
    let r = tiny("groups-atomic");
    doctor(
        &r.out,
        &[
            invoke(0, 0, "ingest", 5, Some("ev-1")),
            step(0, 0, "s1", [10, 11], 0),
            done("ok", 0, 0, "ingest", 12, json!({"accepted": false})),
        ],
        &[],
        &[],
    );
    let (code, text) = validate(&r.out);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("finding (a)"), "{text}");
}

#[test]
fn a_failed_statement_or_a_crash_is_inconclusive_naming_the_step() {
    let r = tiny("groups-atomic");
    let mut busy = step(0, 0, "s1", [10, 11], 0);
    busy["error"] = json!("database is locked");
    busy["error_kind"] = json!("busy");
    doctor(
        &r.out,
        &[
            invoke(0, 0, "ingest", 5, Some("ev-1")),
            busy,
            done(
                "fail",
                0,
                0,
                "ingest",
                12,
                json!({"error": "step s1: database is locked"}),
            ),
        ],
        &[],
        &[],
    );
    let (code, text) = validate(&r.out);
    assert_eq!(code, 4, "{text}");
    assert!(text.contains("`ingest.s1` of op 0 failed"), "{text}");

    let r = tiny("groups-atomic");
    doctor(
        &r.out,
        &[
            invoke(0, 0, "ingest", 5, Some("ev-1")),
            step(0, 0, "s1", [10, 11], 1),
            step(0, 1, "s2", [12, 13], 1),
            done("info", 0, 0, "ingest", 14, json!({"crashed_after": "s2"})),
        ],
        &["ev-1"],
        &[("g:p0:fp0", "open", 0)],
    );
    let (code, text) = validate(&r.out);
    assert_eq!(code, 4, "{text}");
    assert!(text.contains("crashed after step `s2`"), "{text}");
}

#[test]
fn designs_without_a_one_to_one_mapping_are_refused_naming_the_step() {
    for (design, step) in [
        ("upsert", "ingest.count"),
        ("cas-resolve", "resolve.read"),
        ("group-first", "ingest.group"),
        ("txn-upsert", "ingest."),
    ] {
        let r = tiny(&format!("../targets/sqlite/designs/{design}.sql"));
        let (code, text) = validate(&r.out);
        assert_eq!(code, 2, "{design}: {text}");
        assert!(text.contains(&format!("`{step}")), "{design}: {text}");
        assert!(text.contains("refinement mapping"), "{design}: {text}");
    }
}
