//! Expectations and thresholds (cli.md's exit codes over them), the JUnit
//! file read back by an independent reader, the figure skeleton kept in
//! step with real summaries, the latency log against the summary, and
//! `specstorm compare`.

use specstorm::history::CompletionType;
use specstorm::report::hlog;
use specstorm::report::summary::{self, Coverage};
use specstorm::scenario::{load_str, Expect, Threshold};
use specstorm::verdict::{CheckResult, Finding};
use std::path::Path;
use std::process::Output;

use crate::common::folder::leaves;
use crate::common::run::{run, run_into, sets};
use crate::common::{json, specstorm, text};

fn finding(why: &str) -> Finding {
    Finding {
        msg_id: None,
        group: None,
        event_id: None,
        expected: "x".into(),
        found: "y".into(),
        explanation: why.into(),
        evidence: vec![],
    }
}

/// The four groups invariants: `violated` ones violated, `unknown` ones
/// unknown, the rest holding.
fn results(violated: &[&str], unknown: &[&str]) -> Vec<CheckResult> {
    specstorm::workload::groups::checker::GROUPS_INVARIANTS
        .iter()
        .map(|name| {
            let mut r = CheckResult::new(name);
            if violated.contains(name) {
                r.violation(finding(&format!("{name} broken here")));
            } else if unknown.contains(name) {
                r.unknown(finding(&format!("{name} undecidable here")));
            }
            r
        })
        .collect()
}

fn covered() -> Coverage {
    Coverage::new(10, 10)
}

fn violated(names: &[&str]) -> Expect {
    Expect::violated(names.iter().copied())
}

// ------------------------------------------------------------ exit rules

#[test]
fn holds_expected_and_held_exits_0() {
    let e = summary::exit(
        false,
        None,
        &results(&[], &[]),
        &covered(),
        &Expect::holds(),
        &[],
    );
    assert_eq!(e.code, 0, "{}", e.rule);
}

#[test]
fn holds_expected_but_violated_exits_1() {
    let e = summary::exit(
        false,
        None,
        &results(&["CountExact"], &[]),
        &covered(),
        &Expect::holds(),
        &[],
    );
    assert_eq!(e.code, 1);
    assert!(
        e.rule.contains("CountExact violated but expected to hold"),
        "{}",
        e.rule
    );
}

#[test]
fn expected_violation_found_exits_0() {
    let e = summary::exit(
        false,
        None,
        &results(&["NoMissedRegression"], &[]),
        &covered(),
        &violated(&["NoMissedRegression"]),
        &[],
    );
    assert_eq!(e.code, 0, "{}", e.rule);
    assert!(e.rule.contains("as expected"), "{}", e.rule);
}

#[test]
fn expected_violation_not_found_exits_1() {
    let e = summary::exit(
        false,
        None,
        &results(&[], &[]),
        &covered(),
        &violated(&["NoMissedRegression"]),
        &[],
    );
    assert_eq!(e.code, 1);
    assert!(
        e.rule
            .contains("expected violation not found: NoMissedRegression (holds)"),
        "{}",
        e.rule
    );
}

#[test]
fn expected_violation_only_unknown_is_not_found() {
    // Undecided is not found: CI must not pass a naive run that did not
    // show its bug.
    let e = summary::exit(
        false,
        None,
        &results(&[], &["NoMissedRegression"]),
        &covered(),
        &violated(&["NoMissedRegression"]),
        &[],
    );
    assert_eq!(e.code, 1);
    assert!(
        e.rule.contains("NoMissedRegression (unknown)"),
        "{}",
        e.rule
    );
}

#[test]
fn exactly_the_expected_violations_another_one_exits_1() {
    let e = summary::exit(
        false,
        None,
        &results(&["NoMissedRegression", "CountExact"], &[]),
        &covered(),
        &violated(&["NoMissedRegression"]),
        &[],
    );
    assert_eq!(e.code, 1);
    assert!(
        e.rule.contains("CountExact violated but expected to hold"),
        "{}",
        e.rule
    );
}

#[test]
fn unknown_where_holds_expected_exits_4_and_violation_wins_over_it() {
    let e = summary::exit(
        false,
        None,
        &results(&[], &["CountExact"]),
        &covered(),
        &Expect::holds(),
        &[],
    );
    assert_eq!(e.code, 4);
    let e = summary::exit(
        false,
        None,
        &results(&["TypeOK"], &["CountExact"]),
        &covered(),
        &Expect::holds(),
        &[],
    );
    assert_eq!(e.code, 1);
}

#[test]
fn coverage_gap_exits_4() {
    let gap = Coverage {
        gaps: vec!["no resolve was sent".into()],
        ..Coverage::new(10, 0)
    };
    let e = summary::exit(false, None, &results(&[], &[]), &gap, &Expect::holds(), &[]);
    assert_eq!(e.code, 4);
    assert!(e.rule.contains("no resolve was sent"), "{}", e.rule);
    // Low counts are no gap by themselves: each invariant's evidence
    // minimum judges them (checker::evidence).
    let e = summary::exit(
        false,
        None,
        &results(&[], &[]),
        &Coverage::new(0, 0),
        &Expect::holds(),
        &[],
    );
    assert_eq!(e.code, 0, "{}", e.rule);
}

#[test]
fn a_not_judged_invariant_decides_nothing_whatever_its_verdict() {
    let expect = violated(&["CountExact"]).not_judging(["NoMissedRegression"]);
    // The lost-update case: CountExact violated as expected, and
    // NoMissedRegression unknown because its premise failed.
    let e = summary::exit(
        false,
        None,
        &results(&["CountExact"], &["NoMissedRegression"]),
        &covered(),
        &expect,
        &[],
    );
    assert_eq!(e.code, 0, "{}", e.rule);
    assert!(
        e.rule.contains("not judged: NoMissedRegression unknown"),
        "{}",
        e.rule
    );
    // Violated, it decides nothing either.
    let e = summary::exit(
        false,
        None,
        &results(&["CountExact", "NoMissedRegression"], &[]),
        &covered(),
        &expect,
        &[],
    );
    assert_eq!(e.code, 0, "{}", e.rule);
    // Judged, the same verdicts end 4 (unknown) and 1 (violated).
    let judged = violated(&["CountExact"]);
    let e = summary::exit(
        false,
        None,
        &results(&["CountExact"], &["NoMissedRegression"]),
        &covered(),
        &judged,
        &[],
    );
    assert_eq!(e.code, 4, "{}", e.rule);
    let e = summary::exit(
        false,
        None,
        &results(&["CountExact", "NoMissedRegression"], &[]),
        &covered(),
        &judged,
        &[],
    );
    assert_eq!(e.code, 1, "{}", e.rule);
    // The judged invariants still decide: an expected violation not found.
    let e = summary::exit(
        false,
        None,
        &results(&[], &["NoMissedRegression"]),
        &covered(),
        &expect,
        &[],
    );
    assert_eq!(e.code, 1, "{}", e.rule);
    // Without `violated`: every judged invariant holds.
    let e = summary::exit(
        false,
        None,
        &results(&[], &["NoMissedRegression"]),
        &covered(),
        &Expect::holds().not_judging(["NoMissedRegression"]),
        &[],
    );
    assert_eq!(e.code, 0, "{}", e.rule);
    assert!(
        e.rule.starts_with("every judged invariant holds"),
        "{}",
        e.rule
    );
}

#[test]
fn interrupted_and_target_errors_come_first() {
    let r = results(&["CountExact"], &[]);
    assert_eq!(
        summary::exit(true, Some("gone"), &r, &covered(), &Expect::holds(), &[]).code,
        130
    );
    assert_eq!(
        summary::exit(false, Some("gone"), &r, &covered(), &Expect::holds(), &[]).code,
        3
    );
}

fn judged(figures: serde_json::Value, thresholds: &[&str]) -> Vec<summary::ThresholdOutcome> {
    let t: Vec<Threshold> = thresholds
        .iter()
        .map(|t| Threshold::parse(t).unwrap())
        .collect();
    summary::judge_thresholds(&figures, &t)
}

#[test]
fn thresholds_judged_against_figures() {
    let figures = serde_json::json!({
        "latency_us": { "ingest": { "p99": 1500.0 } },
        "throughput_ops_per_s": { "total": 4000.0 },
        "stranded_events": { "total": 0 },
    });
    let t = judged(
        figures,
        &[
            "latency_us.ingest.p99 < 2000",
            "latency_us.ingest.p99<=1500",
            "throughput_ops_per_s.total > 5000",
            "stranded_events.total == 0",
            "stranded_events.total != 0",
            "invariants.CountExact.first_violation_s < 10",
        ],
    );
    let passed: Vec<bool> = t.iter().map(|o| o.passed).collect();
    assert_eq!(passed, [true, true, false, true, false, false]);
    assert_eq!(t[2].actual, Some(4000.0));
    // A figure absent from this run breaches, never passes by default.
    assert_eq!(t[5].actual, None);
    assert!(
        t[5].describe().contains("no such figure"),
        "{}",
        t[5].describe()
    );
}

#[test]
fn a_latency_of_no_ops_is_no_figure() {
    // An empty histogram is written as zeros; `< 1` must not pass on it.
    let figures = serde_json::json!({
        "latency_us_not_ok": { "ingest": { "info": { "count": 0, "p99": 0.0 } } },
        "latency_us": { "ingest": { "count": 5, "p99": 0.5 } },
    });
    let t = judged(
        figures,
        &[
            "latency_us_not_ok.ingest.info.p99 < 1",
            "latency_us_not_ok.ingest.info.count == 0",
            "latency_us.ingest.p99 < 1",
        ],
    );
    assert_eq!(t[0].actual, None);
    assert!(!t[0].passed);
    assert!(t[1].passed, "the count itself is a figure");
    assert!(t[2].passed);
}

#[test]
fn a_breached_threshold_exits_1_even_when_every_invariant_holds() {
    let t = judged(
        serde_json::json!({ "throughput_ops_per_s": { "total": 10.0 } }),
        &["throughput_ops_per_s.total > 5000"],
    );
    let e = summary::exit(
        false,
        None,
        &results(&[], &[]),
        &covered(),
        &Expect::holds(),
        &t,
    );
    assert_eq!(e.code, 1);
    assert!(
        e.rule
            .contains("threshold breached: throughput_ops_per_s.total > 5000 (actual 10)"),
        "{}",
        e.rule
    );
    let met = judged(
        serde_json::json!({ "throughput_ops_per_s": { "total": 9000.0 } }),
        &["throughput_ops_per_s.total > 5000"],
    );
    let e = summary::exit(
        false,
        None,
        &results(&[], &[]),
        &covered(),
        &Expect::holds(),
        &met,
    );
    assert_eq!(e.code, 0, "{}", e.rule);
}

#[test]
fn threshold_syntax() {
    for bad in [
        "latency_us.ingest.p99",
        "< 5",
        "latency_us..p99 < 5",
        "latency_us.ingest.p99 < fast",
        "latency_us.ingest.p99 <> 5",
        "latency_us.ingest.p99 < inf",
    ] {
        assert!(Threshold::parse(bad).is_err(), "{bad} was accepted");
    }
    let t = Threshold::parse("  throughput_ops_per_s.total>=5e3 ").unwrap();
    assert_eq!(t.to_string(), "throughput_ops_per_s.total >= 5000");
}

// ------------------------------------------------------- scenario errors

const FILE: &str = "scenarios/test.toml";

fn refused(text: &str) -> String {
    match load_str("test", Some(Path::new(FILE)), text, &[]) {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_misspelled_figure_is_a_scenario_error_naming_line_and_neighbours() {
    let e = refused("seed = 1\nthresholds = [\n  \"stranded_events.total == 0\",\n  \"latency_us.ingest.p98 < 5\",\n]\n");
    assert!(e.starts_with(&format!("{FILE}:4: ")), "{e}");
    assert!(e.contains("no figure `latency_us.ingest.p98`"), "{e}");
    assert!(e.contains("p99"), "the neighbours are listed: {e}");
    // A figure of a fault kind the scenario does not inject is none either.
    let e = refused("thresholds = [\"faults_injected.kill > 0\"]\n");
    assert!(e.contains("no figure `faults_injected.kill`"), "{e}");
    let e = refused(
        "[[variants]]\nvariant = \"groups-naive\"\nthresholds = [\"throughput.total > 1\"]\n",
    );
    assert!(e.starts_with(&format!("{FILE}:3: ")), "{e}");
}

#[test]
fn threshold_and_expect_errors() {
    let e = refused("thresholds = [\"latency_us.ingest.p99 ~ 5\"]\n");
    assert!(
        e.starts_with(&format!("{FILE}:1: ")) && e.contains("comparison"),
        "{e}"
    );
    let e = refused("thresholds = [\"invariants.CountExact.verdict == 0\"]\n");
    assert!(e.contains("is not a number (it is text)"), "{e}");
    let e = refused("thresholds = [\"latency_us.ingest < 5\"]\n");
    assert!(
        e.contains("is not a number (it is a table of figures)"),
        "{e}"
    );
    let e = refused("thresholds = [\"nosuch < 5\"]\n");
    assert!(e.contains("top-level figures: "), "{e}");
    let e = refused("thresholds = [\"latency_us.ingest.p99 << 5\"]\n");
    assert!(e.contains("unknown comparison"), "{e}");
    let e = refused("thresholds = \"latency_us.ingest.p99 < 5\"\n");
    assert!(e.contains("an array of thresholds, strings such as"), "{e}");
    let e = refused("expect = \"violated\"\n");
    assert!(e.contains("\"holds\" or { violated"), "{e}");
    let e = refused("expect = { violated = [\"NoMissedRegresion\"] }\n");
    assert!(e.contains("unknown invariant \"NoMissedRegresion\""), "{e}");
    let e = refused("expect = { violated = [] }\n");
    assert!(e.contains("empty"), "{e}");
    let e = refused("expect = { violated = [\"TypeOK\"], also = 1 }\n");
    assert!(e.contains("unknown key `also`"), "{e}");
}

#[test]
fn thresholds_may_name_the_evidence() {
    let ok = |text: &str| load_str("t", Some(Path::new(FILE)), text, &[]).unwrap();
    ok("thresholds = [\"evidence.invariants.NoMissedRegression > 1000\"]\n");
    // Per kill or lock fault, by its index in [[faults]].
    ok(
        "thresholds = [\"evidence.faults.1.invariants.CountExact > 0\"]\n\
        [[faults]]\nkind = \"crash\"\n[[faults]]\nkind = \"lock\"\n",
    );
    let e = refused(
        "thresholds = [\"evidence.faults.0.invariants.CountExact > 0\"]\n\
         [[faults]]\nkind = \"crash\"\n",
    );
    assert!(e.contains("no figure `evidence.faults.0"), "{e}");
}

#[test]
fn not_judged_errors_name_the_line() {
    let e = refused(
        "seed = 1\nexpect = { violated = [\"CountExact\"], not_judged = [\"CountExact\"] }\n",
    );
    assert!(e.starts_with(&format!("{FILE}:2: ")), "{e}");
    assert!(
        e.contains("\"CountExact\" is in both `expect.violated` and `expect.not_judged`"),
        "{e}"
    );
    let e = refused("expect = { not_judged = [\"NoMissedRegresion\"] }\n");
    assert!(e.starts_with(&format!("{FILE}:1: ")), "{e}");
    assert!(
        e.contains("unknown invariant \"NoMissedRegresion\" in `expect.not_judged`"),
        "{e}"
    );
    let e = refused("expect = { violated = [\"CountExact\"], not_judged = [] }\n");
    assert!(e.contains("`expect.not_judged` is empty"), "{e}");
    let e = refused("expect = { not_judged = [\"TypeOK\", \"TypeOK\"] }\n");
    assert!(e.contains("named twice in `expect.not_judged`"), "{e}");
    let e = refused("expect = {}\n");
    assert!(e.contains("needs `violated = [...]`"), "{e}");
    // In a [[variants]] entry, at the entry's line.
    let e = refused(
        "[[variants]]\nvariant = \"groups-naive\"\n\
         expect = { violated = [\"TypeOK\"], not_judged = [\"AtMostOneStateChange\"] }\n",
    );
    assert!(e.starts_with(&format!("{FILE}:3: ")), "{e}");
    assert!(e.contains("the groups workload's invariants"), "{e}");
    // Either list alone is fine, and both survive the saved scenario.
    let s = load_str(
        "t",
        Some(Path::new(FILE)),
        "expect = { violated = [\"CountExact\"], not_judged = [\"NoMissedRegression\"] }\n",
        &[],
    )
    .unwrap();
    let want = violated(&["CountExact"]).not_judging(["NoMissedRegression"]);
    assert_eq!(s.expect, want);
    assert_eq!(
        s.expect.to_string(),
        "violated: CountExact; not judged: NoMissedRegression"
    );
    let again = load_str("t", Some(Path::new(FILE)), &s.to_toml(), &[]).unwrap();
    assert_eq!(again.expect, want);
    let alone = load_str(
        "t",
        Some(Path::new(FILE)),
        "expect = { not_judged = [\"NoMissedRegression\"] }\n",
        &[],
    )
    .unwrap();
    assert!(alone.expect.is_holds() && alone.expect.ignores("NoMissedRegression"));
}

#[test]
fn variants_errors() {
    let e = refused("[[variants]]\nname = \"x\"\n");
    assert!(e.contains("has no `variant`"), "{e}");
    let e = refused("[[variants]]\nvariant = \"a.sql\"\ncolour = 1\n");
    assert!(
        e.starts_with(&format!("{FILE}:3: ")) && e.contains("unknown key `colour`"),
        "{e}"
    );
    let e = refused("[[variants]]\nvariant = \"a/x.sql\"\n[[variants]]\nvariant = \"b/x.sql\"\n");
    assert!(e.contains("two variants are named \"x\""), "{e}");
    let e = refused("variants = 3\n");
    assert!(e.contains("array of tables"), "{e}");
}

#[test]
fn a_variant_entry_gives_its_expectation_and_the_default_variant() {
    let text = "thresholds = [\"stranded_events.total == 0\"]\n\
                [[variants]]\nvariant = \"groups-atomic\"\n\
                [[variants]]\nvariant = \"x/naive.sql\"\nname = \"naive\"\n\
                expect = { violated = [\"NoMissedRegression\"] }\n\
                thresholds = [\"events > 5\"]\n";
    let s = load_str("t", Some(Path::new(FILE)), text, &[]).unwrap();
    assert_eq!(s.variant, "groups-atomic", "the first entry by default");
    assert_eq!(s.expectation().0, Expect::holds());
    assert_eq!(s.expectation().1.len(), 1);
    let naive = load_str("t", Some(Path::new(FILE)), text, &["variant=naive".into()]).unwrap();
    assert_eq!(
        naive.variant, "x/naive.sql",
        "a name means its entry's file"
    );
    let (expect, thresholds) = naive.expectation();
    assert!(expect.violates("NoMissedRegression") && !expect.violates("CountExact"));
    assert_eq!(thresholds.len(), 2, "the scenario's and the entry's");
    // A variant no entry names keeps the scenario's own expectation.
    let other = load_str(
        "t",
        Some(Path::new(FILE)),
        text,
        &["variant=groups-naive".into()],
    )
    .unwrap();
    assert_eq!(other.expectation().0, Expect::holds());
}

// --------------------------------------------------- runs and their files

/// A small run of smoke.toml with extra overrides into a temp folder.
fn small_run(extra: &[&str]) -> (Output, tempfile::TempDir) {
    let r = run("scenarios/smoke.toml", &sets(extra));
    (r.output, r.tmp)
}

#[test]
fn a_breached_threshold_exits_1_with_a_failing_junit_case_read_back_independently() {
    let (o, tmp) = small_run(&[
        "thresholds=[\"throughput_ops_per_s.total < 1\", \"stranded_events.total == 0\"]",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("BREACHED throughput_ops_per_s.total < 1"),
        "{}",
        text(&o)
    );
    let dir = tmp.path().join("run");
    let s = json(&dir.join("summary.json"));
    assert_eq!(s["schema_version"], 2);
    assert_eq!(s["thresholds"][0]["passed"], false);
    assert_eq!(s["thresholds"][1]["passed"], true);

    // junit-parser is not the crate that wrote the file.
    let xml = std::fs::File::open(dir.join("junit.xml")).unwrap();
    let suites = junit_parser::from_reader(std::io::BufReader::new(xml)).unwrap();
    assert_eq!(suites.suites.len(), 1);
    let suite = &suites.suites[0];
    assert_eq!(suite.name, "smoke/groups-atomic");
    let case = |name: &str| {
        suite
            .cases
            .iter()
            .find(|c| c.original_name == name)
            .unwrap_or_else(|| panic!("no case {name} in {:?}", suite.cases))
    };
    for inv in specstorm::workload::groups::checker::GROUPS_INVARIANTS {
        assert!(
            case(inv).status.is_success(),
            "{inv}: {:?}",
            case(inv).status
        );
    }
    assert!(case("run").status.is_success());
    let breached = case("throughput_ops_per_s.total < 1");
    assert!(breached.status.is_failure(), "{:?}", breached.status);
    let junit_parser::TestStatus::Failure(f) = &breached.status else {
        unreachable!()
    };
    assert!(f.message.contains("threshold breached"), "{}", f.message);
    assert!(case("stranded_events.total == 0").status.is_success());
    assert_eq!(suite.tests, 7);
    assert_eq!(suite.failures, 1);
}

#[test]
fn a_naive_run_expected_to_violate_passes_and_its_junit_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/groups-naive.toml",
        "-q",
        "--set",
        "expect={ violated = [\"NoMissedRegression\"] }",
        "--set",
        "stop.events=60000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let xml = std::fs::File::open(out.join("junit.xml")).unwrap();
    let suites = junit_parser::from_reader(std::io::BufReader::new(xml)).unwrap();
    assert!(suites.suites[0].cases.iter().all(|c| c.status.is_success()));
    // The same run expected to hold fails, with the explanation as the message.
    let out2 = tmp.path().join("run2");
    let o = specstorm(&[
        "run",
        "scenarios/groups-naive.toml",
        "-q",
        "--set",
        "stop.events=60000",
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let xml = std::fs::File::open(out2.join("junit.xml")).unwrap();
    let suites = junit_parser::from_reader(std::io::BufReader::new(xml)).unwrap();
    let nmr = suites.suites[0]
        .cases
        .iter()
        .find(|c| c.original_name == "NoMissedRegression")
        .unwrap();
    let junit_parser::TestStatus::Failure(f) = &nmr.status else {
        panic!("{:?}", nmr.status)
    };
    assert!(
        f.message.contains("NoMissedRegression violated"),
        "{}",
        f.message
    );
}

/// A design that loses increments: its counting step reads the count,
/// then writes what it read plus one (the regression is decided in the
/// write, from the status it finds there).
const LOST_UPDATE: &str = "\
-- name: schema
CREATE TABLE IF NOT EXISTS error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, group_id TEXT, received_at INTEGER);
CREATE TABLE IF NOT EXISTS error_groups (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, status TEXT, event_count INTEGER);

-- name: ingest.s1
-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3_read
SELECT event_count AS read FROM error_groups WHERE id = :group_id;

-- name: ingest.s3_write
-- counts: true
UPDATE error_groups
SET event_count = :read + 1,
    status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;

-- name: resolve.update
-- stop-if: rows > 0
UPDATE error_groups SET status = 'resolved'
WHERE id = :group_id AND status IN ('open', 'regressed')
RETURNING event_count;

-- name: resolve.probe
SELECT status, event_count FROM error_groups WHERE id = :group_id;

-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
";

/// A run of the lost-update design on one group (every ingest on it, the
/// write of each paused 1 ms after its read, so reads overlap), with
/// `expect`.
fn lost_update_run(dir: &Path, name: &str, expect: &str) -> (Output, std::path::PathBuf) {
    let sql = dir.join("lost-update.sql");
    std::fs::write(&sql, LOST_UPDATE).unwrap();
    let scenario = dir.join(format!("{name}.toml"));
    std::fs::write(
        &scenario,
        format!(
            "variant = \"lost-update.sql\"\nexpect = {expect}\n\
             [load]\ningesters = 8\nresolvers = 1\n\
             [stop]\nevents = 2000\n\
             [keys]\nprojects = 1\nfingerprints = 1\n\
             [resolve]\ninterval = \"0s\"\n\
             [[faults]]\nkind = \"pause\"\nops = \"ingest\"\nstep = \"s3_write\"\n\
             probability = 1.0\ndelay = \"1ms\"\njitter = \"0s\"\n"
        ),
    )
    .unwrap();
    let out = dir.join(name);
    let o = run_into(scenario.to_str().unwrap(), &out, &[]);
    (o, out)
}

#[test]
fn a_lost_update_design_meets_an_expectation_that_does_not_judge_no_missed_regression() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, out) = lost_update_run(
        tmp.path(),
        "not-judged",
        "{ violated = [\"CountExact\"], not_judged = [\"NoMissedRegression\"] }",
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = json(&out.join("summary.json"));
    assert_eq!(s["invariants"]["CountExact"]["verdict"], "violated");
    assert_eq!(s["expect"]["not_judged"][0], "NoMissedRegression");
    let nmr = s["invariants"]["NoMissedRegression"]["verdict"].clone();
    assert!(
        s["exit"]["rule"].as_str().unwrap().contains(&format!(
            "not judged: NoMissedRegression {}",
            nmr.as_str().unwrap()
        )),
        "{}",
        s["exit"]
    );
    assert!(text(&o).contains("(not judged)"), "{}", text(&o));
    // In junit.xml its case is skipped, saying why; CountExact's passes.
    let xml = std::fs::File::open(out.join("junit.xml")).unwrap();
    let suites = junit_parser::from_reader(std::io::BufReader::new(xml)).unwrap();
    let case = |name: &str| {
        suites.suites[0]
            .cases
            .iter()
            .find(|c| c.original_name == name)
            .unwrap()
            .status
            .clone()
    };
    let junit_parser::TestStatus::Skipped(skip) = case("NoMissedRegression") else {
        panic!("{:?}", case("NoMissedRegression"))
    };
    assert!(skip.message.contains("not judged"), "{}", skip.message);
    assert!(case("CountExact").is_success());
    // The audit of the folder judges alike.
    let a = specstorm(&["audit", out.to_str().unwrap()]);
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));

    // Judged, NoMissedRegression's premise (exact counts) failed where
    // CountExact did: its findings there are unknown, so the run ends 4.
    let (o, out) = lost_update_run(tmp.path(), "judged", "{ violated = [\"CountExact\"] }");
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let s = json(&out.join("summary.json"));
    assert_eq!(s["invariants"]["CountExact"]["verdict"], "violated");
    assert_eq!(s["invariants"]["NoMissedRegression"]["verdict"], "unknown");
}

#[test]
fn compare_marks_the_invariants_an_expectation_does_not_judge() {
    use specstorm::compare::{table, Comparison, VariantResult};
    let v = |name: &str, expect: Expect| VariantResult {
        name: name.into(),
        variant: format!("{name}.sql"),
        run_dir: name.into(),
        expect,
        exit: summary::Exit {
            code: 0,
            rule: "met".into(),
        },
        summary: Some(serde_json::json!({
            "workload": "groups",
            "invariants": {
                "CountExact": {"verdict": "violated", "violations": 3},
                "NoMissedRegression": {"verdict": "unknown", "violations": 0},
            },
        })),
    };
    let c = Comparison {
        schema_version: 1,
        scenario: "s".into(),
        workload: "groups".into(),
        seed: 1,
        variants: vec![
            v(
                "a",
                violated(&["CountExact"]).not_judging(["NoMissedRegression"]),
            ),
            v("b", violated(&["CountExact"])),
        ],
        exit: summary::Exit {
            code: 0,
            rule: "ok".into(),
        },
    };
    let t = table(&c, true);
    assert!(
        t.contains("| NoMissedRegression | unknown (not judged) | unknown |"),
        "{t}"
    );
    assert!(
        t.contains("| expect | violated: CountExact; not judged: NoMissedRegression | violated: CountExact |"),
        "{t}"
    );
}

#[test]
fn the_skeleton_names_exactly_the_figures_of_real_summaries() {
    // A run with faults and the open model exercises the optional figures.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/chaos-crash.toml",
        "-q",
        "--set",
        "load.model=open",
        "--set",
        "load.rate=20000",
        "--set",
        "stop.events=5000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1 | 4)), "{}", text(&o));
    let real = json(&out.join("summary.json"));
    let scenario = specstorm::scenario::load(Some(&out.join("scenario.toml")), &[])
        .unwrap()
        .0;
    let skeleton = summary::skeleton(&scenario);
    let (mut have, mut named) = (Vec::new(), Vec::new());
    leaves(&real, "", &mut have);
    leaves(&skeleton, "", &mut named);
    // Run-dependent maps and provenance are not figures a threshold names.
    let is_figure = |p: &String| {
        ![
            "resolved_scenario",
            "provenance",
            "exit",
            "schema_version",
            "seed",
            "thresholds",
        ]
        .iter()
        .any(|x| p == x || p.starts_with(&format!("{x}.")))
            && !p.starts_with("stranded_events.by_cause")
    };
    let have: Vec<_> = have.into_iter().filter(is_figure).collect();
    for p in &have {
        assert!(
            named.contains(p),
            "summary.json has {p}, the skeleton does not"
        );
    }
    for p in &named {
        // first_violation_s is only there when an invariant was violated.
        if !p.ends_with("first_violation_s") {
            assert!(
                have.contains(p),
                "the skeleton names {p}, a real summary has no such figure"
            );
        }
    }
}

#[test]
fn the_latency_log_holds_exactly_the_summary_ops_and_latencies() {
    let (o, tmp) = small_run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let dir = tmp.path().join("run");
    let s = json(&dir.join("summary.json"));
    let log = hlog::read(&dir.join(hlog::FILE)).unwrap();
    assert!(!log.intervals.is_empty());
    for kind in specstorm::workload::groups::figures::OP_KINDS {
        for c in CompletionType::ALL {
            let total = log.total(kind, c);
            assert_eq!(
                total.len(),
                s["ops"][kind.name()][c.name()].as_u64().unwrap(),
                "{} {}",
                kind.name(),
                c.name()
            );
        }
        let ok = log.total(kind, CompletionType::Ok);
        let p99_us = (ok.value_at_quantile(0.99) as f64 / 1e3 * 10.0).round() / 10.0;
        assert_eq!(
            p99_us,
            s["latency_us"][kind.name()]["p99"].as_f64().unwrap()
        );
    }
    let started =
        humantime::parse_rfc3339(s["provenance"]["started_utc"].as_str().unwrap()).unwrap();
    // Both are written to the ms (one truncates, one rounds).
    let skew = log
        .started
        .duration_since(started)
        .unwrap_or_else(|e| e.duration());
    assert!(
        skew.as_micros() <= 1000,
        "StartTime is the run's UTC start: {skew:?}"
    );
}

/// The header of `latency.hlog`, line by line, against the interval log
/// format's text (HdrHistogram's `HistogramLogWriter`: an optional
/// comment, `#[Histogram log format version 1.3]`, `#[StartTime: <s.ms>
/// (seconds since epoch), <date>]`, `#[BaseTime: ...]`, then the legend
/// line), and read the way HdrHistogram_c's `hdr_log_read_header` reads
/// it: every `#` line up to the first other line is scanned for the
/// version, which must be 1.0 to 1.3, and a header line longer than its
/// 128-byte buffer would be cut.
#[test]
fn the_latency_log_header_is_the_formats() {
    let (o, tmp) = small_run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let bytes = std::fs::read(tmp.path().join("run").join(hlog::FILE)).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines
        .iter()
        .copied()
        .take_while(|l| l.starts_with('#'))
        .collect();
    assert!(header.len() <= lines.len());
    assert!(header.iter().all(|l| l.len() < 128), "{header:?}");
    let versions: Vec<&str> = header
        .iter()
        .filter_map(|l| l.strip_prefix("#[Histogram log format version "))
        .filter_map(|l| l.strip_suffix(']'))
        .collect();
    assert_eq!(versions, ["1.3"], "{header:?}");
    let at = |p: &str| header.iter().position(|l| l.starts_with(p));
    let (v, st, bt) = (
        at("#[Histogram log format version").unwrap(),
        at("#[StartTime: ").expect("a StartTime line"),
        at("#[BaseTime: ").expect("a BaseTime line"),
    );
    assert!(v < st && st < bt, "{header:?}");
    let start = header[st]
        .strip_prefix("#[StartTime: ")
        .and_then(|l| l.strip_suffix(']'))
        .unwrap();
    let (secs, date) = start.split_once(" (seconds since epoch), ").unwrap();
    let (whole, ms) = secs.split_once('.').unwrap();
    assert!(whole.parse::<u64>().is_ok() && ms.len() == 3, "{secs}");
    humantime::parse_rfc3339(date).unwrap_or_else(|e| panic!("{date}: {e}"));
    assert_eq!(
        lines[header.len()],
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    );
    assert!(
        lines[header.len() + 1].starts_with("Tag="),
        "intervals follow the legend: {}",
        lines[header.len() + 1]
    );
}

// ---------------------------------------------------------------- compare

/// A quick compare scenario (both variants, few events; a busy timeout long
/// enough that a slow machine's stall strands no event, which the threshold
/// would count), written into `dir` with paths that resolve from there.
fn compare_scenario(dir: &Path, naive_expect: &str) -> std::path::PathBuf {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = format!(
        "workload = \"groups\"\nseed = 1\n\
         thresholds = [\"stranded_events.total == 0\"]\n\
         [[variants]]\nvariant = \"{root}/targets/sqlite/groups-atomic.sql\"\n\
         [[variants]]\nvariant = \"{root}/targets/sqlite/groups-naive.sql\"\nexpect = {naive_expect}\n\
         [target]\nbusy_timeout = \"60s\"\n\
         [load]\ningesters = 32\nresolvers = 2\n\
         [stop]\nevents = 60000\nduration = \"30s\"\n\
         [keys]\nprojects = 4\nfingerprints = 250\nskew = \"hot\"\nhot_groups = 4\nhot_fraction = 0.5\n\
         [resolve]\ninterval = \"0s\"\n"
    );
    let path = dir.join("compare.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn compare_meets_each_expectation_and_a_flipped_one_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = compare_scenario(tmp.path(), "{ violated = [\"NoMissedRegression\"] }");
    let out = tmp.path().join("cmp");
    let o = specstorm(&[
        "compare",
        scenario.to_str().unwrap(),
        "-q",
        "--format",
        "md",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.starts_with("| figure | groups-atomic | groups-naive |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| NoMissedRegression | holds | VIOLATED x"),
        "{stdout}"
    );
    let c = json(&out.join("compare.json"));
    assert_eq!(c["exit"]["code"], 0);
    assert_eq!(c["variants"][0]["name"], "groups-atomic");
    assert_eq!(
        c["variants"][1]["expect"]["violated"][0],
        "NoMissedRegression"
    );
    for v in ["groups-atomic", "groups-naive"] {
        assert!(
            out.join(v).join("summary.json").exists(),
            "{v}'s run folder"
        );
    }
    let xml = std::fs::File::open(out.join("junit.xml")).unwrap();
    let suites = junit_parser::from_reader(std::io::BufReader::new(xml)).unwrap();
    assert_eq!(suites.suites.len(), 2);

    // The naive variant now expected to hold: it is caught, so exit 1.
    let flipped = compare_scenario(tmp.path(), "\"holds\"");
    let out = tmp.path().join("cmp2");
    let o = specstorm(&[
        "compare",
        flipped.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let c = json(&out.join("compare.json"));
    assert_eq!(c["variants"][0]["exit"]["code"], 0);
    assert_eq!(c["variants"][1]["exit"]["code"], 1);
    assert!(c["exit"]["rule"]
        .as_str()
        .unwrap()
        .starts_with("groups-naive: expectation not met"));
}

#[test]
fn compare_refuses_before_running_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cmp");
    // No variants listed, none given.
    let o = specstorm(&[
        "compare",
        "scenarios/smoke.toml",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no variants to compare"), "{}", text(&o));
    // A variant file that does not exist: nothing ran, no folder.
    let o = specstorm(&[
        "compare",
        "scenarios/smoke.toml",
        "-q",
        "--variant",
        "groups-atomic",
        "--variant",
        "/nonexistent/x.sql",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("/nonexistent/x.sql"), "{}", text(&o));
    assert!(!text(&o).contains("/nonexistent/x.sql:0:"), "{}", text(&o));
    // A misspelled built-in is named as the user wrote it.
    let o = specstorm(&[
        "compare",
        "scenarios/smoke.toml",
        "-q",
        "--variant",
        "nosuch",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--variant nosuch"), "{}", text(&o));
    assert!(!text(&o).contains("--set variant"), "{}", text(&o));
    assert!(!out.exists(), "nothing ran");
}
