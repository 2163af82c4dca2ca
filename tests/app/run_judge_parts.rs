//! A run's own judge of a long history goes in parts, as `specstorm
//! audit` does, so that the run's memory at its end does not grow with
//! its length. Short runs are sent there with the environment
//! (`SPECSTORM_JUDGE_PARTS_ABOVE=0`, parts of a few ops) and must give
//! the record the whole judge gives of their folder: the verdicts (the
//! audit confirms them), the stranded report, the evidence, the coverage
//! and what the history held, and a latency log of every completed op. A
//! run whose parts cannot be judged exactly (an event row no op inserted)
//! is judged whole, as before.

use crate::common::command;
use crate::common::folder::{history_file, json};
use specstorm::audit_record::AuditFolder;
use specstorm::history::{CompletionType, OpKind};
use specstorm::workload::groups::audit::judge_whole;
use std::path::Path;
use std::process::Output;

/// `specstorm run SCENARIO` into `out`, its judge sent to parts of
/// `part_ops` ops whatever the history's size.
fn run_in_parts(scenario: &str, out: &Path, part_ops: u64, sets: &[&str]) -> Output {
    let mut c = command();
    c.arg("run")
        .arg(scenario)
        .arg("-q")
        .arg("--out")
        .arg(out)
        .env("SPECSTORM_JUDGE_PARTS_ABOVE", "0")
        .env("SPECSTORM_JUDGE_PART_OPS", part_ops.to_string());
    for s in sets {
        c.args(["--set", s]);
    }
    c.output().expect("run specstorm")
}

/// Runs `scenario` judged in parts and checks its record against the
/// whole judge of its folder; returns the parts it was judged in.
fn judged_in_parts_as_whole(scenario: &str, sets: &[&str]) -> u64 {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run_in_parts(scenario, &out, 100, sets);
    let code = o.status.code();
    assert!(
        matches!(code, Some(0 | 1 | 4)),
        "{scenario}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let summary = json(&out.join("summary.json"));
    let history = history_file(&out);
    let toml = out.join("scenario.toml");
    let whole = judge_whole(&AuditFolder {
        run_dir: &out,
        history: &history,
        scenario: &toml,
        killed: false,
        limits: Default::default(),
    })
    .unwrap();
    let to = |v: serde_json::Result<serde_json::Value>| v.unwrap();
    let (stranded, evidence, coverage) = (
        to(serde_json::to_value(&whole.stranded)),
        to(serde_json::to_value(&whole.evidence)),
        to(serde_json::to_value(&whole.coverage)),
    );
    assert_eq!(summary["stranded_events"], stranded, "{scenario}");
    assert_eq!(summary["evidence"], evidence, "{scenario}");
    assert_eq!(summary["coverage"], coverage, "{scenario}");
    assert_eq!(summary["history"]["ops"], whole.history.ops, "{scenario}");
    assert_eq!(
        summary["history"]["unfinished_ops"], whole.history.unfinished,
        "{scenario}"
    );
    // The verdicts: the audit (whole, the history being short) confirms
    // the run's, with the run's exit.
    let a = crate::common::specstorm(&["audit", out.to_str().unwrap()]);
    let text = crate::common::text(&a);
    assert_eq!(a.status.code(), code, "{scenario}: {text}");
    assert!(
        text.contains("same verdicts as the run"),
        "{scenario}: {text}"
    );
    // The latency log holds every completed op.
    let log = specstorm::report::hlog::read(&out.join("latency.hlog")).unwrap();
    for kind in [OpKind::Ingest, OpKind::Resolve] {
        for c in CompletionType::ALL {
            assert_eq!(
                log.total(kind, c).len(),
                summary["ops"][kind.name()][c.name()].as_u64().unwrap_or(0),
                "{scenario}: {}.{}",
                kind.name(),
                c.name()
            );
        }
    }
    summary["history"]["judge_parts"].as_u64().unwrap_or(0)
}

#[test]
fn a_run_judged_in_parts_records_what_the_whole_judge_does() {
    for (scenario, sets) in [
        ("scenarios/smoke.toml", &["stop.events=3000"][..]),
        ("scenarios/chaos-lock.toml", &["stop.events=5000"]),
        ("scenarios/groups-naive.toml", &["stop.events=5000"]),
        (
            "scenarios/http-atomic.toml",
            &[
                "stop.events=3000",
                "target.kind=\"http\"",
                "target.spawn=true",
            ],
        ),
    ] {
        let parts = judged_in_parts_as_whole(scenario, sets);
        assert!(parts > 1, "{scenario}: judged in {parts} parts");
    }
}

/// An event row no op inserted (the schema adds it) is TypeOK's
/// finding, which no part can judge alone: the run falls back to the
/// whole judge, which names the row.
#[test]
fn a_run_whose_parts_cannot_be_judged_exactly_is_judged_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sql = std::fs::read_to_string(root.join("targets/sqlite/groups-atomic.sql")).unwrap();
    let phantom = sql.replacen(
        "-- name: ingest.s1",
        "INSERT OR IGNORE INTO error_events VALUES ('phantom-1', 'p0', 'fp0', 'g:p0:fp0', 0);\n\n\
         -- name: ingest.s1",
        1,
    );
    assert_ne!(phantom, sql);
    let variant = tmp.path().join("phantom.sql");
    std::fs::write(&variant, phantom).unwrap();
    let out = tmp.path().join("run");
    let set = format!("variant={:?}", variant.to_string_lossy());
    let mut c = command();
    c.arg("run")
        .arg("scenarios/smoke.toml")
        .arg("-q")
        .arg("--out")
        .arg(&out)
        .args(["--set", "stop.events=2000", "--set", &set])
        .env("SPECSTORM_JUDGE_PARTS_ABOVE", "0")
        .env("SPECSTORM_JUDGE_PART_OPS", "100")
        .env("RUST_LOG", "specstorm::workload::groups::run=debug");
    let o = c.output().expect("run specstorm");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("no exact judge in parts: the whole history is judged"),
        "{stderr}"
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}");
    let summary = json(&out.join("summary.json"));
    assert_eq!(
        summary["invariants"]["TypeOK"]["verdict"], "violated",
        "{stdout}"
    );
    assert!(summary["history"].get("judge_parts").is_none(), "{summary}");
    let checks = std::fs::read_to_string(out.join("checks.json")).unwrap();
    assert!(checks.contains("phantom-1"), "{checks}");
}
