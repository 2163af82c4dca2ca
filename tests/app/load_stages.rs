//! Staged loads end to end on the in-process SQLite target: the history's
//! intended starts are the stages' schedule exactly, the closed model's
//! stages keep the ingesters beyond their target idle, and
//! `load.resolve_rate` paces the resolvers. Count-based: no assertion on
//! how fast the machine is.

use crate::common::{history, specstorm, summary};
use specstorm::scenario::stages::{Curve, Stage};
use std::path::Path;
use std::time::Duration;

/// A short run: its evidence is thin, so no verdict waits for more.
const THIN: &str = "\n[min_evidence]\nCountExact = 0\nNoMissedRegression = 0\n";

fn run(dir: &Path, scenario: &str) -> serde_json::Value {
    let file = dir.join("staged.toml");
    std::fs::write(&file, format!("{scenario}{THIN}")).unwrap();
    let out = dir.join("run");
    let o = specstorm(&[
        "run",
        file.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    summary(&out)
}

fn invokes(dir: &Path, f: &str) -> Vec<serde_json::Value> {
    history(&dir.join("run"))
        .into_iter()
        .filter(|e| e["type"] == "invoke" && e["f"] == f)
        .collect()
}

#[test]
fn an_open_ramp_starts_each_op_at_its_scheduled_time() {
    let tmp = tempfile::tempdir().unwrap();
    let s = run(
        tmp.path(),
        "[load]\nmodel = \"open\"\ningesters = 4\nresolvers = 2\nresolve_rate = 40\n\n\
         [[load.stages]]\nduration = \"500ms\"\ntarget = 400\n\n\
         [[load.stages]]\nduration = \"500ms\"\ntarget = 0\n\n[stop]\nevents = 0\n",
    );
    let curve = Curve::new(&[
        Stage {
            duration: Duration::from_millis(500),
            target: 400.0,
        },
        Stage {
            duration: Duration::from_millis(500),
            target: 0.0,
        },
    ]);
    let ingests = invokes(tmp.path(), "ingest");
    // 200 ops are due over the stages; op 200 would be due at their very
    // end, when the load is over, so it never starts.
    assert!(ingests.len() <= 200, "{} ingests", ingests.len());
    let missed = s["open_model"]["missed"].as_u64().unwrap();
    assert!(
        ingests.len() as u64 + missed >= 200,
        "{} + {missed}",
        ingests.len()
    );
    // Every op's intended start is the schedule's, counted from op 0's.
    let mut intended: Vec<u64> = ingests
        .iter()
        .map(|e| e["intended"].as_u64().expect("intended"))
        .collect();
    intended.sort_unstable();
    let origin = intended[0];
    for (n, at) in intended.iter().enumerate() {
        assert_eq!(at - origin, curve.intended_ns(n as u64).unwrap(), "op {n}");
    }
    // The resolvers take turns at 40/s, from the same origin: 25 ms apart.
    let mut resolves: Vec<u64> = invokes(tmp.path(), "resolve")
        .iter()
        .map(|e| e["intended"].as_u64().expect("intended"))
        .collect();
    resolves.sort_unstable();
    assert!(!resolves.is_empty());
    for (k, at) in resolves.iter().enumerate() {
        assert_eq!(at - origin, k as u64 * 25_000_000, "resolve {k}");
    }
}

#[test]
fn closed_stages_keep_the_ingesters_beyond_the_target_idle() {
    let tmp = tempfile::tempdir().unwrap();
    run(
        tmp.path(),
        "[load]\ningesters = 4\nresolvers = 0\n\n\
         [[load.stages]]\nduration = \"200ms\"\ntarget = 2\n\n\
         [[load.stages]]\nduration = \"300ms\"\ntarget = 2\n\n[stop]\nevents = 0\n",
    );
    let ingests = invokes(tmp.path(), "ingest");
    assert!(!ingests.is_empty());
    let workers: std::collections::BTreeSet<u64> = ingests
        .iter()
        .map(|e| e["worker"].as_u64().unwrap())
        .collect();
    assert!(workers.iter().all(|w| *w < 2), "workers {workers:?}");
}
