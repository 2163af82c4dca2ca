//! The target's WAL: a run reports its peak (`summary.json`'s `wal`, the
//! human summary's `WAL:` line), and the bench's blocking checkpoints,
//! `bench` entries of the history, are no evidence for or against the
//! design: the checkers and `audit` read past them.

use std::process::Output;

use crate::common::bench::exit_and_text as text;
use crate::common::{specstorm, summary};

/// Runs `scenario` with `sets` into a new folder; returns it (and its owner).
fn run(scenario: &str, sets: &[&str]) -> (Output, std::path::PathBuf, tempfile::TempDir) {
    let r = crate::common::run::run(scenario, &crate::common::run::sets(sets));
    (r.output, r.out, r.tmp)
}

#[test]
fn a_run_reports_its_wal_peak_and_none_without_a_wal() {
    let (o, out, _t) = run("scenarios/smoke.toml", &[]);
    assert!(matches!(o.status.code(), Some(0 | 4)), "{}", text(&o));
    let wal = &summary(&out)["wal"];
    // 2000 events leave their pages in the log: it cannot be empty.
    assert!(wal["peak_bytes"].as_u64().unwrap() > 0, "{wal}");
    assert!(
        wal["checkpoints"].is_u64() && wal["checkpoint_s"].is_f64(),
        "{wal}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("\nWAL: peak "), "{stdout}");

    let (o, out, _t) = run("scenarios/smoke.toml", &["target.journal_mode=delete"]);
    assert!(matches!(o.status.code(), Some(0 | 4)), "{}", text(&o));
    assert!(summary(&out).get("wal").is_none());
    assert!(!String::from_utf8_lossy(&o.stdout).contains("WAL: peak"));
}

#[test]
fn a_threshold_may_name_the_wal_peak() {
    let (o, out, _t) = run(
        "scenarios/smoke.toml",
        &["thresholds=[\"wal.peak_bytes < 100000000000\"]"],
    );
    assert!(matches!(o.status.code(), Some(0 | 4)), "{}", text(&o));
    assert_eq!(summary(&out)["thresholds"][0]["passed"], true);
}

/// A bench entry in the middle of a run's history: `audit` reads it and
/// comes to the run's very verdicts.
#[test]
fn the_audit_reads_past_the_bench_checkpoints() {
    for (scenario, set) in [
        ("scenarios/smoke.toml", "stop.events=500"),
        ("scenarios/outbox-protocol.toml", "outbox.messages=200"),
    ] {
        let (o, out, _t) = run(scenario, &[set]);
        let code = o.status.code();
        assert!(matches!(code, Some(0 | 4)), "{scenario}: {}", text(&o));
        let history = crate::common::folder::history_text(&out).unwrap();
        let (header, rest) = history.split_once('\n').unwrap();
        let bench = r#"{"type":"bench","t":1000,"end":5000000,"action":"wal_checkpoint","detail":"wal_checkpoint(RESTART): 70000 frames copied"}"#;
        crate::common::folder::write_history_text(&out, format!("{header}\n{bench}\n{rest}"));
        let a = specstorm(&["audit", out.to_str().unwrap()]);
        assert_eq!(a.status.code(), code, "{scenario}: {}", text(&a));
        assert!(
            String::from_utf8_lossy(&a.stdout).contains("same verdicts as the run"),
            "{scenario}: {}",
            text(&a)
        );
    }
}
