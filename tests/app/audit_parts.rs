//! An audit in parts gives exactly the whole history's record: run
//! folders of several scenarios (SQLite and HTTP, crash, kill, lock, pause
//! and proxy faults, naive variants with violations) are judged whole and
//! in parts of a few ops, and the two records (verdicts, findings, notes,
//! stranded report, evidence, coverage, what the history held) are the
//! same byte for byte. Where no exact merge exists the parts give none
//! (the audit then judges the whole); the healthy runs must merge.

use crate::common::folder::history_file;
use crate::common::run::run_into;
use specstorm::audit_record::AuditFolder;
use specstorm::workload::groups::audit::{judge_in_parts, judge_whole};
use std::path::Path;

fn folder<'a>(dir: &'a Path, history: &'a Path, scenario: &'a Path) -> AuditFolder<'a> {
    AuditFolder {
        run_dir: dir,
        history,
        scenario,
        killed: false,
        limits: Default::default(),
    }
}

/// Runs `scenario` briefly into a temp folder, judges it whole and in
/// parts of several sizes; returns how many part sizes merged.
fn same_in_parts(scenario: &str, sets: &[&str]) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = vec!["--set", "stop.duration=\"5s\""];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = run_into(scenario, &out, &args);
    // Any judged run will do (4 too: a kill may leave a resolve
    // undecided, depending on timing); what is compared is the record.
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{scenario}: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    let history = history_file(&out);
    let toml = out.join("scenario.toml");
    let f = folder(&out, &history, &toml);
    let whole = format!("{:?}", judge_whole(&f).unwrap());
    let mut merged = 0;
    for part_ops in [1, 7, 100, 1_000_000] {
        if let Some(r) = judge_in_parts(&f, part_ops).unwrap() {
            assert_eq!(
                format!("{r:?}"),
                whole,
                "{scenario}, parts of {part_ops} ops"
            );
            merged += 1;
        }
    }
    merged
}

#[test]
fn healthy_runs_judged_in_parts_match_the_whole() {
    for (scenario, sets) in [
        ("scenarios/smoke.toml", &["stop.events=3000"][..]),
        ("scenarios/groups-atomic.toml", &["stop.events=20000"]),
        // Ids of 32 hex digits without dashes (held as bits by the event
        // map, as UUIDs are; a namespaced id is held as text).
        (
            "scenarios/groups-atomic.toml",
            &["stop.events=20000", "keys.event_id=\"hex32\""],
        ),
        ("scenarios/chaos-crash.toml", &["stop.events=20000"]),
        ("scenarios/chaos-lock.toml", &["stop.events=20000"]),
        ("scenarios/chaos-kill.toml", &["stop.events=20000"]),
        ("scenarios/chaos-proxy.toml", &["stop.events=20000"]),
        ("scenarios/chaos-all.toml", &["stop.events=20000"]),
    ] {
        assert_eq!(same_in_parts(scenario, sets), 4, "{scenario} did not merge");
    }
}

#[test]
fn naive_runs_judged_in_parts_match_the_whole_where_they_merge() {
    let mut merged = 0;
    for (scenario, sets) in [
        ("scenarios/groups-naive.toml", &["stop.events=20000"][..]),
        ("scenarios/chaos-pause-naive.toml", &["stop.events=20000"]),
        ("scenarios/http-naive.toml", &["stop.events=20000"]),
    ] {
        merged += same_in_parts(scenario, sets);
    }
    // CountExact's and NoMissedRegression's violations merge by key.
    assert!(merged > 0, "no naive run merged");
}

/// Correct designs written differently from the shipped files (an UPSERT,
/// the group row first, a compare-and-swap resolver, the design's own
/// group ids, a seen-ids table, one transaction block), under crashes:
/// judged in parts, the same record as judged whole, and every part size
/// merges (none of them has a finding the merge cannot order).
#[test]
fn correct_designs_of_other_shapes_judged_in_parts_match_the_whole() {
    for name in [
        "upsert",
        "group-first",
        "cas-resolve",
        "own-ids",
        "seen-ids-first",
        "txn-upsert",
    ] {
        let variant = format!(
            "variant={:?}",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("targets/sqlite/designs")
                .join(format!("{name}.sql"))
                .to_string_lossy()
        );
        assert_eq!(
            same_in_parts(
                "scenarios/chaos-crash.toml",
                &["stop.events=5000", &variant]
            ),
            4,
            "{name} did not merge"
        );
    }
}

/// Final tables that disagree with the history (an event row no op
/// inserted, a counted event's row gone, a row moved to another key's
/// group, a count off by one): in parts, each lands in some bucket or
/// sends the audit to the whole judge; either way the record is the
/// whole history's, findings included.
#[test]
fn doctored_tables_judged_in_parts_match_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("run");
    let o = run_into(
        "scenarios/smoke.toml",
        &base,
        &["--set", "stop.events=3000"],
    );
    assert!(matches!(o.status.code(), Some(0 | 4)), "{o:?}");
    let (history, toml) = (history_file(&base), base.join("scenario.toml"));
    let undoctored = format!(
        "{:?}",
        judge_whole(&folder(&base, &history, &toml)).unwrap()
    );
    let doctorings = [
        "INSERT INTO error_events SELECT 'phantom-1', project, fingerprint, group_id, 0 \
         FROM error_events LIMIT 1",
        "DELETE FROM error_events WHERE rowid = (SELECT max(rowid) FROM error_events)",
        "UPDATE error_events SET (project, fingerprint, group_id) = \
         (SELECT project, fingerprint, id FROM error_groups ORDER BY id DESC LIMIT 1) \
         WHERE rowid = (SELECT min(rowid) FROM error_events)",
        "UPDATE error_groups SET event_count = event_count + 1 \
         WHERE id = (SELECT min(id) FROM error_groups)",
        // Ids that are not text of hex digits: bytes that are not UTF-8,
        // and a number (each read by the rows' slower path).
        "UPDATE error_events SET id = X'FF00FE' WHERE rowid = (SELECT min(rowid) FROM error_events)",
        "UPDATE error_events SET id = 12345 WHERE rowid = (SELECT max(rowid) FROM error_events)",
    ];
    for (i, sql) in doctorings.iter().enumerate() {
        let dir = tmp.path().join(format!("doctored-{i}"));
        std::fs::create_dir(&dir).unwrap();
        for e in std::fs::read_dir(&base).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
            }
        }
        let db = rusqlite::Connection::open(dir.join("target.db")).unwrap();
        assert_eq!(db.execute(sql, []).unwrap(), 1, "{sql}");
        drop(db);
        let history = history_file(&dir);
        let toml = dir.join("scenario.toml");
        let f = folder(&dir, &history, &toml);
        let whole = format!("{:?}", judge_whole(&f).unwrap());
        assert_ne!(whole, undoctored, "the doctoring changed nothing: {sql}");
        if i == 0 {
            assert!(
                whole.contains("a row no op sent") && whole.contains("phantom-1"),
                "TypeOK did not name the row no op sent: {whole}"
            );
        }
        let mut merged = 0;
        for part_ops in [1, 7, 100, 1_000_000] {
            if let Some(r) = judge_in_parts(&f, part_ops).unwrap() {
                assert_eq!(format!("{r:?}"), whole, "{sql}, parts of {part_ops} ops");
                merged += 1;
            }
        }
        eprintln!("doctoring {i}: {merged} of 4 part sizes merged");
    }
}
