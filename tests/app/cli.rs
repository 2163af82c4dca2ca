//! End-to-end: the binary on real scenarios, its exit codes (cli.md) and
//! the run folder it leaves.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::procs::wait_for_history;
use crate::common::run::run_args;
use crate::common::{command, specstorm, summary};

/// Runs `specstorm run ARGS -q --out TMP/run`; returns the output, the
/// summary (Null when none was written) and the folder's owner.
fn run_quiet(args: &[&str]) -> (Output, serde_json::Value, tempfile::TempDir) {
    let r = run_args(args);
    let s = r.summary_or_null();
    (r.output, s, r.tmp)
}

#[test]
fn smoke_run_holds_and_records_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/smoke.toml",
        "-q",
        "--seed",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("reproduce: specstorm run scenarios/smoke.toml --seed 3"),
        "{stdout}"
    );
    for f in [
        "summary.json",
        "checks.json",
        "history.bin",
        "scenario.toml",
        "variant.sql",
        "target.db",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let s = summary(&out);
    assert_eq!(s["schema_version"], 2);
    assert_eq!(s["seed"], 3);
    assert_eq!(s["events"], 2000);
    assert_eq!(s["partial"], false);
    crate::common::folder::groups_invariants_hold(&s);
    assert!(s["latency_us"]["ingest"]["p99"].as_f64().unwrap() > 0.0);
    assert!(s["throughput_ops_per_s"]["total"].as_f64().unwrap() > 0.0);
    assert_eq!(s["exit"]["code"], 0);
    assert_eq!(s["provenance"]["sqlite_version"], rusqlite::version());
    assert_eq!(s["stranded_events"]["total"], 0);
    // The history streams every op: one invoke and one completion per op.
    let hist = crate::common::folder::history_text(&out).unwrap();
    let invokes = hist
        .lines()
        .filter(|l| l.contains("\"type\":\"invoke\""))
        .count();
    let completions = hist
        .lines()
        .filter(|l| {
            l.starts_with("{\"type\":\"ok\"")
                || l.starts_with("{\"type\":\"fail\"")
                || l.starts_with("{\"type\":\"info\"")
        })
        .count();
    assert_eq!(invokes, completions);
    assert_eq!(invokes as u64, s["history"]["ops"].as_u64().unwrap());
}

#[test]
fn the_same_seed_generates_the_same_ingest_ops() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for run in ["a", "b"] {
        let out = tmp.path().join(run);
        let o = specstorm(&[
            "run",
            "scenarios/smoke.toml",
            "-q",
            "--set",
            "stop.events=300",
            // So few events may leave NoMissedRegression too little
            // evidence (exit 4); this test is about the ops generated.
            "--set",
            "min_evidence.NoMissedRegression=0",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0));
        let hist = crate::common::folder::history_text(&out).unwrap();
        let mut v: Vec<String> = hist
            .lines()
            .filter(|l| l.contains("\"f\":\"ingest\"") && l.contains("\"type\":\"invoke\""))
            .map(|l| {
                let e: serde_json::Value = serde_json::from_str(l).unwrap();
                format!("{} {} {}", e["event_id"], e["group_id"], e["attempt"])
            })
            .collect();
        v.sort();
        ids.push(v);
    }
    assert_eq!(ids[0].len(), ids[1].len());
    assert_eq!(ids[0], ids[1]);
}

#[test]
fn naive_variant_is_judged_and_a_lost_regression_explained() {
    // Whether a live run loses a regression is a race: the live run must
    // be judged clean, inconclusive or a NoMissedRegression violation,
    // never anything else; the explanation is shown on a committed run
    // that caught it (tests/fixtures/README.md), through `report`, which
    // prints the run's summary as the run did.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("live");
    let o = specstorm(&[
        "run",
        "scenarios/groups-naive.toml",
        "-q",
        "--set",
        "stop.events=30000",
        "--set",
        "load.ingesters=8",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    assert_eq!(s["invariants"]["CountExact"]["verdict"], "holds");
    assert_eq!(s["invariants"]["TypeOK"]["verdict"], "holds");
    let stdout = String::from_utf8_lossy(&o.stdout);
    match o.status.code() {
        Some(1) => {
            assert_eq!(s["invariants"]["NoMissedRegression"]["verdict"], "violated");
            assert!(stdout.contains("missed resolved->regressed"), "{stdout}");
        }
        Some(0) | Some(4) => {}
        other => panic!("unexpected exit {other:?}: {stdout}"),
    }
    let caught = crate::common::folder::fixture("naive-caught", &tmp.path().join("caught"));
    let o = specstorm(&["report", caught.to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("NoMissedRegression       VIOLATED"),
        "{shown}"
    );
    assert!(shown.contains("missed resolved->regressed"), "{shown}");
    assert!(shown.contains("exit 1: expectation not met"), "{shown}");
}

#[test]
fn invalid_scenario_exits_2_with_file_and_line_before_running() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "seed = 1\n[load]\ningesters = 0\n").unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&["run", bad.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.toml:3:"), "{err}");
    assert!(!out.exists(), "nothing may run on a bad scenario");
    let o = specstorm(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn invalid_statement_file_exits_2_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let sql = tmp.path().join("v.sql");
    std::fs::write(&sql, "-- name: schema\nCREATE TABLE t(x);\n-- name: ingest.s1\n-- stop-if: sometimes\nSELECT 1;\n").unwrap();
    let sc = tmp.path().join("s.toml");
    std::fs::write(&sc, "variant = \"v.sql\"\n").unwrap();
    let o = specstorm(&["check", sc.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("v.sql:4:"), "{err}");
}

#[test]
fn check_prints_the_resolved_configuration() {
    let o = specstorm(&[
        "check",
        "scenarios/groups-naive.toml",
        "--set",
        "load.ingesters=5",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ingesters = 5"), "{out}");
    assert!(out.contains("counting step s3_write"), "{out}");
}

#[test]
fn a_database_that_holds_rows_is_refused_unless_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("shared.db");
    let set_db = format!("target.path=\"{}\"", db.display());
    let run = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        let mut args = vec![
            "run",
            "scenarios/smoke.toml",
            "-q",
            "--set",
            "stop.events=200",
            // So few events may leave NoMissedRegression too little
            // evidence (exit 4); this test is about the database.
            "--set",
            "min_evidence.NoMissedRegression=0",
        ];
        args.extend_from_slice(&["--set", &set_db]);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        (specstorm(&args), out)
    };
    let (o, _) = run("r1", &[]);
    assert_eq!(o.status.code(), Some(0));
    let (o, _) = run("r2", &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already holds rows"));
    // Reused: the run works in its own namespace and audits only its rows.
    let (o, third) = run("r3", &["--set", "target.reuse=true"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    let s = summary(&third);
    assert_eq!(s["history"]["event_rows"], 200);
    assert!(third.join("target.db").exists());
}

#[cfg(unix)]
#[test]
fn sigterm_stops_gracefully_audits_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut child = command()
        .args([
            "run",
            "scenarios/smoke.toml",
            "-q",
            "--set",
            "stop.events=0",
            "--duration",
            "120s",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the run is under way (its history has ops), then stop it.
    wait_for_history(&mut child, &out, 12_000);
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let s = summary(&out);
    assert_eq!(s["partial"], true);
    assert_eq!(s["exit"]["code"], 130);
    assert_eq!(s["invariants"]["CountExact"]["verdict"], "holds");
}

#[test]
fn busy_errors_become_op_outcomes_and_stranded_events_are_explained() {
    // busy_timeout 0: concurrent writers get SQLITE_BUSY at once. Every such
    // error must end its op as fail (nothing applied) or info (s1 applied),
    // the audit must still hold, and events inserted but never counted are
    // reported as stranded with their cause.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/smoke.toml",
        "-q",
        "--set",
        "target.busy_timeout=\"0s\"",
        "--set",
        "load.ingesters=8",
        "--set",
        "stop.events=5000",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    // 0, or 4 when the contention left no probe of a resolved group (a
    // coverage gap, which depends on scheduling): never a violation.
    assert!(
        matches!(o.status.code(), Some(0 | 4)),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        s["ops"]["ingest"]["fail"].as_u64().unwrap() > 0,
        "no BUSY at all? {s}"
    );
    for inv in [
        "TypeOK",
        "OneGroupPerFingerprint",
        "CountExact",
        "NoMissedRegression",
    ] {
        assert_ne!(s["invariants"][inv]["verdict"], "violated", "{inv}");
    }
    let stranded = s["stranded_events"]["total"].as_u64().unwrap();
    let info = s["ops"]["ingest"]["info"].as_u64().unwrap();
    assert!(
        stranded <= info,
        "every stranded event comes from an info attempt"
    );
    if stranded > 0 {
        let causes = s["stranded_events"]["by_cause"].as_object().unwrap();
        assert!(causes.keys().all(|c| c.contains("busy")), "{causes:?}");
    }
}

#[test]
fn a_closed_stderr_never_hangs_the_run() {
    // Progress lines go to stderr; a reader that went away (`| head`) must
    // not stop the coordinator that ends the load.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut child = command()
        .args([
            "run",
            "scenarios/smoke.toml",
            "--set",
            "stop.events=0",
            "--duration",
            "3s",
        ])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(summary(&out)["partial"], false);
}

#[test]
fn a_target_that_cannot_be_opened_exits_3_and_says_why_in_the_summary() {
    let (o, s, _tmp) = run_quiet(&["--set", "target.path=\"/nonexistent/dir/x.db\""]);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(s["exit"]["code"], 3);
    let error = s["error"].as_str().unwrap();
    assert!(error.contains("/nonexistent/dir/x.db"), "{s}");
}

#[test]
fn a_run_that_exercised_nothing_is_inconclusive() {
    // No resolver: no resolve, so no counting step could meet a resolved
    // group, whatever the timing: NoMissedRegression's evidence is 0.
    // (smoke.toml accepts a NoMissedRegression holds over nothing: the
    // default minimum is set back here.)
    let (o, s, _tmp) = run_quiet(&[
        "scenarios/smoke.toml",
        "--set",
        "load.resolvers=0",
        "--set",
        "min_evidence.NoMissedRegression=20",
    ]);
    assert_eq!(o.status.code(), Some(4));
    let nmr = &s["invariants"]["NoMissedRegression"];
    assert_eq!(nmr["verdict"], "unknown", "{nmr}");
    assert_eq!(s["coverage"]["probes"], 0);
    assert_eq!(s["evidence"]["invariants"]["NoMissedRegression"], 0);
    let first = nmr["first"].as_str().unwrap();
    assert!(
        first.starts_with("too little evidence: 0, minimum 20"),
        "{first}"
    );
    let rule = s["exit"]["rule"].as_str().unwrap();
    assert!(rule.contains("NoMissedRegression unknown"), "{rule}");
    // The other invariants had their chances: 2000 events counted.
    for name in ["TypeOK", "OneGroupPerFingerprint", "CountExact"] {
        assert_eq!(s["invariants"][name]["verdict"], "holds", "{name}");
    }
    // A scenario that accepts a holds over nothing says so.
    let (o, s, _tmp) = run_quiet(&[
        "scenarios/smoke.toml",
        "--set",
        "load.resolvers=0",
        "--set",
        "min_evidence.NoMissedRegression=0",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", s["exit"]);
    assert_eq!(s["invariants"]["NoMissedRegression"]["verdict"], "holds");
}

#[test]
fn open_model_counts_ops_it_could_not_start_on_time() {
    // One ingester cannot keep 1M ops/s: ops start late (measured from
    // their intended start) and those due before the stop but never started
    // are counted as missed.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/smoke.toml",
        "-q",
        "--set",
        "load.model=\"open\"",
        "--set",
        "load.rate=1000000",
        "--set",
        "load.ingesters=1",
        "--set",
        "stop.events=0",
        "--duration",
        "1s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let s = summary(&out);
    let open = &s["open_model"];
    assert!(open["late"].as_u64().unwrap() > 0, "{open}");
    assert!(open["missed"].as_u64().unwrap() > 100_000, "{open}");
    // Latency counts from the intended start, so the stall shows in p50.
    assert!(
        s["latency_us"]["ingest"]["p50"].as_f64().unwrap() > 10_000.0,
        "{}",
        s["latency_us"]
    );
}

#[test]
fn ci_style_run_prints_plain_progress_lines_only() {
    // CI=true with output piped: no dashboard, no escape codes; a plain
    // line every 2 s on stderr (elapsed, ops/s, p99, counts), then the
    // human summary on stdout.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = command()
        .args(["run", "scenarios/smoke.toml", "--set", "stop.events=0"])
        .args(["--duration", "4500ms", "--out"])
        .arg(&out)
        .env("CI", "true")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(!stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'));
    // One line every 2 s of a 4.5 s load: how many fit depends on the
    // machine's load, so only "at least one" is asserted, never a time.
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("ops/s p99")).collect();
    assert!(!lines.is_empty() && lines.len() <= 3, "{stderr}");
    // And one more when the load is over, so a long audit is no silence.
    assert!(stderr.contains("load stopped; ops in flight finish, then the audit runs"));
    for l in &lines {
        assert!(
            l.contains("ingest") && l.contains("ops/s p99") && l.contains("ok "),
            "{l}"
        );
    }
    // `[  elapsed s]` leads every line (its value is the machine's).
    for l in &lines {
        let stamp = l.split(']').next().unwrap_or("");
        assert!(
            stamp.starts_with('[') && stamp.trim_end().ends_with('s'),
            "{l}"
        );
    }
    assert!(stdout.contains("exit 0:"), "{stdout}");
}

/// The history entries of a run folder other than its header and footer.
fn history_ops(dir: &Path) -> Vec<serde_json::Value> {
    crate::common::folder::history_text(dir)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| !matches!(e["type"].as_str(), Some("header" | "footer")))
        .collect()
}

#[test]
fn a_reused_database_whose_table_has_another_shape_is_refused_before_the_load() {
    // The file's `CREATE TABLE IF NOT EXISTS error_groups` leaves this table
    // as it is: without `status` and `event_count` every ingest would fail.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("pre.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE error_groups (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, \
         state TEXT); INSERT INTO error_groups VALUES ('g', 'someone-else', 'f', 'open');",
    )
    .unwrap();
    drop(conn);
    let (o, s, _keep) = run_quiet(&[
        "scenarios/smoke.toml",
        "--set",
        &format!("target.path=\"{}\"", db.display()),
        "--set",
        "target.reuse=true",
        "--set",
        "stop.events=300",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    for needle in [
        "table error_groups has no column status, which the schema declares",
        "`ingest.s3` (line 38) cannot be prepared on this database: no such column: event_count",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in {err}");
    }
    assert_eq!(s["exit"]["code"], 3);
    let out = _keep.path().join("run");
    assert_eq!(history_ops(&out), Vec::<serde_json::Value>::new());
}

#[test]
fn an_outbox_database_whose_table_has_another_shape_is_refused_before_the_load() {
    // Empty (an outbox run refuses rows), but `processed` lacks `dup_id`.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("pre.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE processed (msg_id INTEGER NOT NULL);")
        .unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/outbox-protocol.toml",
        "-q",
        "--set",
        &format!("target.path=\"{}\"", db.display()),
        "--set",
        "outbox.messages=50",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("table processed has no column dup_id, which the schema declares"),
        "{err}"
    );
    assert_eq!(history_ops(&out), Vec::<serde_json::Value>::new());
}
