//! The counter workload (`counter/`, written only for this suite)
//! registered at run time and run through specstorm's one pipeline: the
//! read-then-write variant is caught (exit 1, a failure in `junit.xml`),
//! the one-statement variant holds (exit 0), its scenario is checked
//! like any other (`file:line` refusals, `expect` naming its invariant),
//! and `audit` judges its folder again through the `Workload` trait (a
//! registered workload without an audit is refused).

use super::counter::{self, NO_LOST_INCREMENT};
use specstorm::control::Control;
use specstorm::prepare::{RunError, RunOptions};
use specstorm::workload::traits::{Workload, WorkloadRun};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn sql(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/workload/counter")
        .join(name)
        .display()
        .to_string()
}

/// Writes a counter scenario of `variant` (plus `extra` lines) into `dir`.
fn scenario(dir: &Path, variant: &str, extra: &str) -> PathBuf {
    let path = dir.join("counter.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"counter\"\nworkload = \"counter\"\nvariant = {:?}\nseed = 7\n{extra}",
            sql(variant)
        ),
    )
    .unwrap();
    path
}

fn run(dir: &Path, variant: &str, extra: &str) -> (specstorm::report::summary::Summary, PathBuf) {
    counter::register();
    let opts = RunOptions {
        scenario: Some(scenario(dir, variant, extra)),
        out: Some(dir.join("run")),
        summary_on_stderr: true,
        ..RunOptions::default()
    };
    specstorm::pipeline::run(&opts, Arc::new(Control::default())).unwrap()
}

#[test]
fn the_naive_counter_loses_increments_and_the_pipeline_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, run_dir) = run(dir.path(), "naive.sql", "");
    assert_eq!(summary.workload, "counter");
    assert_eq!(summary.exit.code, 1, "{:?}", summary.exit);
    let inv = &summary.invariants[NO_LOST_INCREMENT];
    assert_eq!(format!("{:?}", inv.verdict), "Violated");
    // Lock-step rounds: every round of two increments loses one.
    assert_eq!(
        summary.history["final_count"],
        serde_json::json!(counter::ROUNDS_NAIVE_COUNT)
    );
    assert_eq!(summary.ops["increment"].ok, 100);
    let junit = std::fs::read_to_string(run_dir.join("junit.xml")).unwrap();
    assert!(junit.contains("NoLostIncrement"), "{junit}");
    assert!(junit.contains("<failure"), "{junit}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(saved["exit"]["code"], 1);
    assert_eq!(saved["workload"], "counter");
    let history = crate::common::folder::history_text(&run_dir).unwrap();
    assert!(
        history.contains("\"f\":\"increment\""),
        "{}",
        &history[..400]
    );
    assert!(run_dir.join("latency.hlog").exists());
}

/// Judges `run_dir` again with `specstorm audit`; returns the audit.
fn audit(run_dir: &Path) -> specstorm::audit_record::Audit {
    let (a, unsaved) = specstorm::audit::audit(run_dir).expect("audited");
    assert_eq!(unsaved, None);
    a
}

#[test]
fn audit_judges_a_counter_folder_again_with_the_runs_verdict_and_exit() {
    for (variant, verdict, exit) in [("naive.sql", "Violated", 1), ("atomic.sql", "Holds", 0)] {
        let dir = tempfile::tempdir().unwrap();
        let (summary, run_dir) = run(dir.path(), variant, "");
        assert_eq!(summary.exit.code, exit, "{:?}", summary.exit);
        let a = audit(&run_dir);
        assert!(a.same_as_run, "{variant}: {a:?}");
        assert!(a.differences.is_empty(), "{variant}: {:?}", a.differences);
        assert_eq!(a.results.len(), 1, "{variant}");
        assert_eq!(a.results[0].invariant, NO_LOST_INCREMENT);
        assert_eq!(format!("{:?}", a.results[0].verdict), verdict, "{variant}");
        assert_eq!(
            format!("{:?}", summary.invariants[NO_LOST_INCREMENT].verdict),
            verdict
        );
        assert_eq!(a.exit.code, exit, "{variant}: {:?}", a.exit);
        assert_eq!(a.tables, "target.db");
        assert!(run_dir.join("audit.json").is_file());
        let text = specstorm::audit::render(&a);
        assert!(text.contains("same verdicts as the run"), "{text}");
    }
}

#[test]
fn audit_of_a_counter_folder_reads_its_database_again() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, run_dir) = run(dir.path(), "atomic.sql", "");
    assert_eq!(summary.exit.code, 0, "{:?}", summary.exit);
    // The count is changed after the run: the audit finds acknowledged
    // increments lost, which the run did not say, and cannot confirm it.
    let db = rusqlite::Connection::open(run_dir.join("target.db")).unwrap();
    let changed = db.execute("UPDATE counter SET n = n - 1", []).unwrap();
    assert_eq!(changed, 1);
    drop(db);
    let a = audit(&run_dir);
    assert_eq!(format!("{:?}", a.results[0].verdict), "Violated");
    assert!(!a.same_as_run);
    assert_eq!(a.differences.len(), 1, "{:?}", a.differences);
    assert!(
        a.differences[0].contains(NO_LOST_INCREMENT),
        "{:?}",
        a.differences
    );
    assert_eq!(a.exit.code, 3, "{:?}", a.exit);
}

/// A workload registered at run time that brings no audit: the counter's
/// run under another name.
struct Unaudited;

impl Workload for Unaudited {
    fn name(&self) -> &'static str {
        "counter-unaudited"
    }

    fn invariants(&self) -> &'static [&'static str] {
        &[NO_LOST_INCREMENT]
    }

    fn prepare(
        &self,
        path: Option<&Path>,
        overrides: &[String],
        offline: bool,
    ) -> Result<Box<dyn WorkloadRun>, RunError> {
        counter::Counter.prepare(path, overrides, offline)
    }

    fn explore(&self, opts: &specstorm::explore::ExploreOptions) -> specstorm::exit_code::ExitCode {
        counter::Counter.explore(opts)
    }
}

#[test]
fn audit_refuses_a_folder_of_a_workload_without_an_audit() {
    specstorm::workload::registry::register(&Unaudited).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (_, run_dir) = run(dir.path(), "naive.sql", "");
    // The folder of a run of `counter-unaudited`: its history's header
    // names it.
    let history = crate::common::folder::history_text(&run_dir).unwrap();
    let (header, rest) = history.split_once('\n').unwrap();
    assert!(header.contains("\"workload\":\"counter\""), "{header}");
    let header = header.replace(
        "\"workload\":\"counter\"",
        "\"workload\":\"counter-unaudited\"",
    );
    crate::common::folder::write_history_text(&run_dir, format!("{header}\n{rest}"));
    // `audit` re-judges workloads that bring an audit only: it says so,
    // judging nothing.
    let e = specstorm::audit::audit(&run_dir).expect_err("refused");
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string().contains("workload \"counter-unaudited\""),
        "{e}"
    );
    assert!(!run_dir.join("audit.json").exists());
}

#[test]
fn the_one_statement_counter_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, run_dir) = run(dir.path(), "atomic.sql", "");
    assert_eq!(summary.exit.code, 0, "{:?}", summary.exit);
    assert_eq!(
        format!("{:?}", summary.invariants[NO_LOST_INCREMENT].verdict),
        "Holds"
    );
    assert_eq!(summary.history["final_count"], serde_json::json!(100));
    let junit = std::fs::read_to_string(run_dir.join("junit.xml")).unwrap();
    assert!(!junit.contains("<failure"), "{junit}");
}

#[test]
fn an_expected_violation_of_its_own_invariant_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, _) = run(
        dir.path(),
        "naive.sql",
        "expect = { violated = [\"NoLostIncrement\"] }\n",
    );
    assert_eq!(summary.exit.code, 0, "{:?}", summary.exit);
}

#[test]
fn its_scenario_is_refused_where_a_key_does_not_apply() {
    counter::register();
    let dir = tempfile::tempdir().unwrap();
    let refused = |extra: &str| {
        let path = scenario(dir.path(), "naive.sql", extra);
        match specstorm::workload::registry::of_scenario(Some(&path), &[]) {
            Err(RunError::Input(e)) => e,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted: {extra}"),
        }
    };
    let e = refused("[load]\ningesters = 2\n");
    assert!(
        e.contains("counter.toml:5")
            && e.contains("[load] does not apply to workload = \"counter\""),
        "{e}"
    );
    let e = refused("expect = { violated = [\"CountExact\"] }\n");
    assert!(
        e.contains("unknown invariant \"CountExact\"") && e.contains("NoLostIncrement"),
        "{e}"
    );
    let e = refused("[[faults]]\nkind = \"lock\"\n");
    assert!(e.contains("takes no faults"), "{e}");
    std::fs::write(dir.path().join("x.toml"), "workload = \"nothing\"\n").unwrap();
    let e = match specstorm::workload::registry::of_scenario(Some(&dir.path().join("x.toml")), &[])
    {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    assert!(e.contains("x.toml:1") && e.contains("\"counter\""), "{e}");
}
