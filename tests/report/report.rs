//! `specstorm report`: the baseline comparison on hand-made summaries, the
//! plots of real small runs (a run folder and a hand-made compare folder),
//! and the exit codes on folders that are not, or no longer, whole runs.

use serde_json::json;
use specstorm::report::baseline::{compare, render, FigureDelta};
use std::path::Path;
use std::process::Output;

use crate::common::folder::history;
use crate::common::specstorm;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs `specstorm run ARGS -q --out OUT`; panics unless the folder has a
/// summary.
fn run_into(out: &Path, args: &[&str]) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-q", "--no-tui", "--out", out.to_str().unwrap()]);
    let o = specstorm(&all);
    let (so, se) = text(&o);
    assert!(out.join("summary.json").exists(), "{so}\n{se}");
}

/// The minimal well-formedness check of an SVG plot, and its text.
fn svg(path: &Path) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(s.trim_start().starts_with("<svg"), "{}", path.display());
    assert!(s.trim_end().ends_with("</svg>"), "{}", path.display());
    assert_eq!(
        s.matches("<text").count(),
        s.matches("</text>").count(),
        "{}: unbalanced text elements",
        path.display()
    );
    s
}

fn summary(verdict: &str, p99: f64, extra: serde_json::Value) -> serde_json::Value {
    let mut s = json!({
        "schema_version": 1,
        "scenario": "s",
        "variant": "v",
        "seed": 7,
        "duration_s": 10.0,
        "events_per_s": 100.0,
        "throughput_ops_per_s": {"ingest": 200.0, "total": 250.0},
        "latency_us": {"ingest": {"p50": 10.0, "p99": p99}},
        "ops": {"ingest": {"ok": 100, "fail": 0, "info": 2}},
        "invariants": {"CountExact": {"verdict": verdict, "violations": if verdict == "violated" { 3 } else { 0 }}},
        "history": {"bytes": 1234},
        "exit": {"code": 0, "rule": "x"}
    });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    s
}

fn figure<'a>(c: &'a specstorm::report::baseline::Comparison, path: &str) -> &'a FigureDelta {
    c.figures
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no figure {path} in {:?}", c.figures))
}

#[test]
fn baseline_changed_figures_have_absolute_and_percent_change() {
    let old = summary("holds", 100.0, json!({}));
    let new = summary("holds", 150.0, json!({}));
    let c = compare(&old, &new);
    let f = figure(&c, "latency_us.ingest.p99");
    assert_eq!((f.old, f.new), (Some(100.0), Some(150.0)));
    assert_eq!(f.change(), Some(50.0));
    assert_eq!(f.percent(), Some(50.0));
    let same = figure(&c, "ops.ingest.info");
    assert_eq!((same.change(), same.percent()), (Some(0.0), Some(0.0)));
    let f = figure(&c, "invariants.CountExact.violations");
    assert_eq!((f.old, f.new), (Some(0.0), Some(0.0)));
    // Identity, provenance and the exit are no figures.
    for p in ["seed", "schema_version", "history.bytes", "exit.code"] {
        assert!(c.figures.iter().all(|f| f.path != p), "{p} compared");
    }
    let table = render(&c, "old", "new");
    let line = table
        .lines()
        .find(|l| l.contains("latency_us.ingest.p99"))
        .unwrap();
    assert!(
        line.contains("100")
            && line.contains("150")
            && line.contains("+50")
            && line.contains("+50.0%"),
        "{line}"
    );
}

#[test]
fn baseline_lists_added_and_removed_figures() {
    let old = summary("holds", 100.0, json!({"faults_injected": {"crash": 12}}));
    let new = summary(
        "holds",
        100.0,
        json!({"stranded_events": {"total": 4}, "duplicates": 9}),
    );
    let c = compare(&old, &new);
    let removed = figure(&c, "faults_injected.crash");
    assert_eq!((removed.old, removed.new), (Some(12.0), None));
    let added = figure(&c, "stranded_events.total");
    assert_eq!((added.old, added.new), (None, Some(4.0)));
    assert_eq!(added.percent(), None);
    let table = render(&c, "old", "new");
    let added_at = table.find("added (only in this run):").expect(&table);
    let removed_at = table.find("removed (only in the baseline):").expect(&table);
    assert!(table[added_at..removed_at].contains("stranded_events.total"));
    assert!(table[added_at..removed_at].contains("duplicates"));
    assert!(table[removed_at..].contains("faults_injected.crash"));
}

#[test]
fn baseline_percent_of_a_zero_is_not_a_number() {
    let old = summary("holds", 0.0, json!({}));
    let new = summary("holds", 5.0, json!({}));
    let f = figure(&compare(&old, &new), "latency_us.ingest.p99").clone();
    assert_eq!((f.change(), f.percent()), (Some(5.0), None));
}

#[test]
fn baseline_flags_holds_to_violated_loudly() {
    let old = summary("holds", 100.0, json!({}));
    let new = summary(
        "violated",
        100.0,
        json!({"invariants": {
            "CountExact": {"verdict": "violated", "violations": 3},
            "TypeOK": {"verdict": "holds", "violations": 0}
        }}),
    );
    let c = compare(&old, &new);
    let regressions: Vec<_> = c
        .regressions()
        .iter()
        .map(|v| v.invariant.clone())
        .collect();
    assert_eq!(regressions, vec!["CountExact".to_string()]);
    let v = figure(&c, "invariants.CountExact.violations");
    assert_eq!((v.old, v.new), (Some(0.0), Some(3.0)));
    let table = render(&c, "old", "new");
    assert!(table.contains("holds -> VIOLATED"), "{table}");
    assert!(table.contains("REGRESSION"), "{table}");
    assert!(
        table.contains("TypeOK                   absent -> holds"),
        "{table}"
    );
    // The way back is a change, not a regression.
    let back = compare(&new, &old);
    assert!(back.regressions().is_empty());
    assert!(!render(&back, "a", "b").contains("REGRESSION"));
}

#[test]
fn plots_of_a_real_run_with_faults() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("lock-run");
    // Lock windows start every 1 s; the run lasts 2 s.
    run_into(
        &dir,
        &[
            "scenarios/chaos-lock.toml",
            "--duration",
            "2s",
            "--set",
            "stop.events=100000000",
        ],
    );
    let o = specstorm(&["report", dir.to_str().unwrap()]);
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}\n{se}");
    assert!(so.contains("invariants (expected: holds):"), "{so}");
    let t = dir.join("plots/throughput.svg");
    let l = dir.join("plots/latency.svg");
    assert!(so.contains(&format!("plot: {}", t.display())), "{so}");
    assert!(so.contains(&format!("plot: {}", l.display())), "{so}");
    let ts = svg(&t);
    for label in ["ingest", "resolve", "fail+info", "ops/s"] {
        assert!(ts.contains(label), "throughput.svg lacks {label}");
    }
    // How many lock windows land in 2 s depends on the machine (the
    // nemesis skips a tick whose BEGIN IMMEDIATE finds the lock taken), so
    // the plot is held to the history: a window is drawn exactly when the
    // history recorded one.
    let locks = history(&dir)
        .iter()
        .filter(|e| e["type"] == "fault" && e["kind"] == "lock" && e["action"] == "start")
        .count();
    assert_eq!(
        ts.contains("lock: write lock held"),
        locks > 0,
        "throughput.svg vs {locks} lock windows in the history"
    );
    let ls = svg(&l);
    for label in ["ingest ok", "resolve ok", "99.9%", "90%", "latency, ms"] {
        assert!(ls.contains(label), "latency.svg lacks {label}");
    }
    // --no-plots writes none.
    std::fs::remove_dir_all(dir.join("plots")).unwrap();
    let o = specstorm(&["report", dir.to_str().unwrap(), "--no-plots"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!dir.join("plots").exists());
}

#[test]
fn compare_folder_gives_side_by_side_plots_and_baseline_per_variant() {
    let tmp = tempfile::tempdir().unwrap();
    let cmp = tmp.path().join("cmp");
    run_into(
        &cmp.join("run-a"),
        &["scenarios/chaos-crash.toml", "--set", "stop.events=3000"],
    );
    run_into(&cmp.join("run-b"), &["scenarios/smoke.toml"]);
    std::fs::write(
        cmp.join("compare.json"),
        json!({
            "schema_version": 1, "scenario": "mixed", "seed": 1,
            "variants": [
                {"name": "variant-a", "run_dir": "run-a", "expect": "holds", "exit": {"code": 0, "rule": "r"}},
                {"name": "variant-b", "run_dir": "run-b", "exit": {"code": 0, "rule": "r"}}
            ],
            "exit": {"code": 0, "rule": "r"}, "something_new": [1, 2]
        })
        .to_string(),
    )
    .unwrap();
    let o = specstorm(&[
        "report",
        cmp.to_str().unwrap(),
        "--baseline",
        cmp.to_str().unwrap(),
    ]);
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}\n{se}");
    assert!(
        so.contains("== variant variant-a") && so.contains("== variant variant-b"),
        "{so}"
    );
    assert!(so.contains("invariants (baseline -> this run):"), "{so}");
    let ts = svg(&cmp.join("plots/throughput.svg"));
    for label in [
        "throughput: variant-a",
        "throughput: variant-b",
        "crash injections",
        "ingest",
    ] {
        assert!(ts.contains(label), "compare throughput.svg lacks {label}");
    }
    let ls = svg(&cmp.join("plots/latency.svg"));
    for label in [
        "variant-a: ingest ok",
        "variant-b: ingest ok",
        "variant-b: resolve ok",
    ] {
        assert!(ls.contains(label), "compare latency.svg lacks {label}");
    }
    // A run folder is no baseline of a compare folder.
    let o = specstorm(&[
        "report",
        cmp.to_str().unwrap(),
        "--baseline",
        cmp.join("run-a").to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

#[test]
fn nonexistent_folder_exits_2_naming_it() {
    let o = specstorm(&["report", "/nonexistent/specstorm-run-xyz"]);
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{so}\n{se}");
    assert!(se.contains("specstorm-run-xyz"), "{se}");
    let tmp = tempfile::tempdir().unwrap();
    let o = specstorm(&[
        "report",
        tmp.path().to_str().unwrap(),
        "--baseline",
        "/nonexistent/baseline-abc",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).1.contains(tmp.path().to_str().unwrap()),
        "{:?}",
        text(&o)
    );
}

#[test]
fn unreadable_files_exit_2_and_the_baseline_must_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("broken");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("summary.json"), "{ not json").unwrap();
    let o = specstorm(&["report", dir.to_str().unwrap()]);
    let (_, se) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{se}");
    assert!(se.contains("broken") && se.contains("summary.json"), "{se}");
    // A summary of a failed run reads; a log that is no log does not.
    std::fs::write(
        dir.join("summary.json"),
        json!({"scenario": "s", "error": "boom", "exit": {"code": 3, "rule": "boom"}}).to_string(),
    )
    .unwrap();
    std::fs::write(dir.join(specstorm::report::hlog::FILE), "garbage").unwrap();
    let o = specstorm(&["report", dir.to_str().unwrap()]);
    let (_, se) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{se}");
    assert!(se.contains("latency.hlog"), "{se}");
    let o = specstorm(&[
        "report",
        dir.to_str().unwrap(),
        "--no-plots",
        "--baseline",
        "/nonexistent/baseline-abc",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("baseline-abc"), "{:?}", text(&o));
}

#[test]
fn failed_run_folder_reports_its_error_and_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("failed");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(
        dir.join("summary.json"),
        json!({
            "schema_version": 1, "scenario": "http-external", "variant": "groups-atomic",
            "seed": 1, "partial": false,
            "error": "target: cannot reach http://127.0.0.1:9: connection refused",
            "provenance": {"command": "specstorm run scenarios/http-external.toml --seed 1"},
            "exit": {"code": 3, "rule": "target: cannot reach http://127.0.0.1:9: connection refused"}
        })
        .to_string(),
    )
    .unwrap();
    let o = specstorm(&["report", dir.to_str().unwrap()]);
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}\n{se}");
    assert!(
        so.contains("FAILED") && so.contains("connection refused"),
        "{so}"
    );
    assert!(so.contains("no latency.hlog"), "{so}");
    // A failed run as a baseline: its few figures, the rest listed as added.
    let o = specstorm(&[
        "report",
        dir.to_str().unwrap(),
        "--no-plots",
        "--baseline",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn partial_folder_says_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let full = tmp.path().join("full");
    run_into(&full, &["scenarios/smoke.toml"]);
    // Only the summary and the log survive.
    let part = tmp.path().join("part");
    std::fs::create_dir(&part).unwrap();
    for f in ["summary.json", specstorm::report::hlog::FILE] {
        std::fs::copy(full.join(f), part.join(f)).unwrap();
    }
    let o = specstorm(&[
        "report",
        part.to_str().unwrap(),
        "--baseline",
        full.to_str().unwrap(),
    ]);
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}\n{se}");
    assert!(so.contains("no checks.json"), "{so}");
    assert!(
        so.contains("no history (history.bin or history.jsonl)"),
        "{so}"
    );
    assert!(so.contains("CountExact"), "{so}");
    svg(&part.join("plots/throughput.svg"));
    svg(&part.join("plots/latency.svg"));
    assert!(so.contains("holds -> holds"), "{so}");
}

#[test]
fn baseline_shows_an_expectation_no_longer_met() {
    let old =
        serde_json::json!({"exit": {"code": 0, "rule": "every invariant holds, as expected"}});
    let new =
        serde_json::json!({"exit": {"code": 1, "rule": "expectation not met: threshold breached"}});
    let table = render(&compare(&old, &new), "old", "new");
    assert!(
        table.contains("exit (baseline -> this run): 0 -> 1   <<< the expectation was met in the baseline, not now"),
        "{table}"
    );
    assert!(
        table.contains("this run: expectation not met: threshold breached"),
        "{table}"
    );
    let same = render(&compare(&old, &old), "old", "new");
    assert!(
        same.contains("exit (baseline -> this run): 0 -> 0\n"),
        "{same}"
    );
}
