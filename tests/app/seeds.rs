//! `run --seeds` and `compare --seeds`: catch rates over a series of
//! seeds. The rates' arithmetic, thresholds and JUnit are tested on a
//! committed run that caught the race (`tests/fixtures/naive-caught`) and
//! synthetic seeds, never on whether a live naive run catches it; the
//! live series are the atomic variant's (no violation, whatever the
//! interleaving) and a naive one asserted only on what holds whatever the
//! race does.

use crate::common::bench::{command, exit_and_text, root};
use serde_json::Value;
use specstorm::scenario::Threshold;
use specstorm::series_rates::{SeedRun, Series};
use specstorm::summary::Summary;
use specstorm::verdict::Verdict;
use std::path::Path;
use std::process::Output;

/// A short run whose verdicts on the atomic variant are all `holds`
/// whatever the interleaving: its NoMissedRegression gets few chances in
/// 300 events, and a minimum of evidence would make it `unknown` by luck.
const SMALL: [&str; 4] = [
    "--set",
    "stop.events=300",
    "--set",
    "min_evidence.NoMissedRegression=0",
];

fn series(scenario: &str, out: &Path, args: &[&str]) -> Output {
    command()
        .args(["run", scenario, "-q", "--seeds", "1..3", "--out"])
        .arg(out)
        .args(SMALL)
        .args(args)
        .output()
        .expect("run specstorm")
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The fixture's summary, as the seed `seed` of a series; with
/// NoMissedRegression holding instead (and the run met) when `caught`
/// is false.
fn fixture_seed(seed: u64, caught: bool) -> SeedRun {
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/naive-caught/summary.json")).unwrap();
    let mut s: Summary = serde_json::from_str(&text).unwrap();
    s.seed = seed;
    if !caught {
        let line = s.invariants.get_mut("NoMissedRegression").unwrap();
        line.verdict = Verdict::Holds;
        line.violations = 0;
        line.first_violation_s = None;
        s.exit = specstorm::summary::Exit::new(
            specstorm::exit_code::ExitCode::Met,
            "every invariant holds, as expected",
        );
    }
    SeedRun::of(&format!("seed-{seed}"), &s)
}

#[test]
fn rates_of_committed_runs_judge_catch_rate_thresholds() {
    let caught = fixture_seed(1, true);
    assert_eq!(
        caught.invariants.as_ref().unwrap()["NoMissedRegression"].verdict,
        Verdict::Violated,
        "the fixture caught the race"
    );
    let runs = vec![
        caught,
        fixture_seed(2, false),
        fixture_seed(3, true),
        fixture_seed(4, false),
    ];
    let t = |s: &str| Threshold::parse(s).unwrap();
    let judged = |text: &str| {
        Series::judge(
            "groups-naive",
            "groups-naive",
            &[1, 2, 3, 4],
            runs.clone(),
            &[t(text)],
        )
    };
    let met = judged("catch_rate.NoMissedRegression >= 0.5");
    let rate = met
        .rates
        .iter()
        .find(|r| r.invariant == "NoMissedRegression")
        .unwrap();
    assert_eq!((rate.violated, rate.seeds, rate.rate), (2, 4, Some(0.5)));
    let first = rate.first_violation_s.as_ref().expect("two seeds found it");
    assert!(first.min <= first.median && first.median <= first.max);
    assert!(met.thresholds[0].passed, "{:?}", met.thresholds);
    let breached = judged("catch_rate.NoMissedRegression > 0.5");
    assert!(!breached.thresholds[0].passed);
    assert_eq!(breached.exit.code, 1, "{:?}", breached.exit);
    // The fixture's own exit (1: the default expectation) is each seed's.
    assert!(met.exit.rule.contains("seeds 1, 3"), "{}", met.exit.rule);

    // One JUnit case per seed and one per catch rate.
    let xml =
        specstorm::report::junit::render("t", vec![specstorm::report::series::suite(&breached)])
            .unwrap();
    for n in 1..=4 {
        assert!(xml.contains(&format!("name=\"seed {n}\"")), "{xml}");
    }
    assert!(xml.contains("catch rate breached"), "{xml}");
    let text = specstorm::report::series::text(&breached, "DIR");
    assert!(text.contains("NoMissedRegression      2/4"), "{text}");
    assert!(text.contains("DIR/seed-3"), "{text}");
}

#[test]
fn an_atomic_series_catches_nothing_and_writes_a_folder_per_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("series");
    let o = series(
        "scenarios/groups-atomic.toml",
        &out,
        &["--set", r#"thresholds=["catch_rate.CountExact == 0"]"#],
    );
    assert_eq!(o.status.code(), Some(0), "{}", exit_and_text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("CountExact              0/3"), "{stdout}");
    assert!(
        stdout.contains("met: catch_rate.CountExact == 0"),
        "{stdout}"
    );
    let s = json(&out.join("series.json"));
    assert_eq!(s["seeds"], serde_json::json!([1, 2, 3]));
    assert_eq!(s["runs"].as_array().unwrap().len(), 3);
    for r in s["rates"].as_array().unwrap() {
        assert_eq!(
            (r["violated"].as_u64(), r["seeds"].as_u64()),
            (Some(0), Some(3)),
            "{r}"
        );
    }
    for n in 1..=3 {
        let summary = json(&out.join(format!("seed-{n}/summary.json")));
        assert_eq!(summary["seed"], n);
        // A seed's run is judged without the series' catch rates.
        assert_eq!(summary["thresholds"], serde_json::json!([]));
    }
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(
        xml.matches("classname=\"specstorm.seeds\"").count(),
        3,
        "{xml}"
    );

    // A rate the series cannot meet: exit 1, every seed still met.
    let out = tmp.path().join("breached");
    let o = series(
        "scenarios/groups-atomic.toml",
        &out,
        &["--set", r#"thresholds=["catch_rate.CountExact >= 0.5"]"#],
    );
    assert_eq!(o.status.code(), Some(1), "{}", exit_and_text(&o));
    let s = json(&out.join("series.json"));
    assert!(s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["exit"]["code"] == 0));
    assert!(s["exit"]["rule"]
        .as_str()
        .unwrap()
        .starts_with("catch rate breached"));
}

#[test]
fn a_naive_series_reports_a_rate_whatever_the_race_does() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("series");
    let o = series("scenarios/groups-naive.toml", &out, &[]);
    // Caught (1), missed (0), or undecided (4): each is a race's outcome.
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        exit_and_text(&o)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("catch rates of groups-naive"));
    for n in 1..=3 {
        assert!(out.join(format!("seed-{n}/summary.json")).is_file());
    }
    let s = json(&out.join("series.json"));
    for r in s["rates"].as_array().unwrap() {
        let rate = r["rate"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&rate), "{r}");
    }
}

#[test]
fn a_catch_rate_on_a_single_run_is_a_series_of_one() {
    let tmp = tempfile::tempdir().unwrap();
    for (threshold, code) in [
        ("catch_rate.CountExact == 0", 0),
        ("catch_rate.CountExact >= 1", 1),
    ] {
        let o = command()
            .args(["run", "scenarios/groups-atomic.toml", "-q", "--out"])
            .arg(tmp.path().join(code.to_string()))
            .args(SMALL)
            .args(["--set", &format!("thresholds=[\"{threshold}\"]")])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(code),
            "{threshold}: {}",
            exit_and_text(&o)
        );
    }
}

#[test]
fn a_catch_rate_of_no_invariant_or_live_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.toml");
    let base = std::fs::read_to_string(root().join("scenarios/groups-atomic.toml")).unwrap();
    for (line, why) in [
        (
            r#"thresholds = ["catch_rate.NoSuchInvariant >= 0.5"]"#,
            "names no invariant",
        ),
        (
            r#"thresholds = [{ threshold = "catch_rate.CountExact == 0", abort_on_fail = true }]"#,
            "cannot abort the run",
        ),
    ] {
        std::fs::write(&file, format!("{line}\n{base}")).unwrap();
        let o = command()
            .args([
                "run",
                file.to_str().unwrap(),
                "-q",
                "--seeds",
                "1..2",
                "--out",
            ])
            .arg(tmp.path().join("never"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", exit_and_text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("s.toml:1:") && err.contains(why), "{err}");
        assert!(!tmp.path().join("never").exists());
    }
    let o = command()
        .args([
            "run",
            "scenarios/groups-atomic.toml",
            "--seed",
            "1",
            "--seeds",
            "1..2",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", exit_and_text(&o));
}

#[test]
fn compare_seeds_prints_each_variants_rates_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cmp");
    let o = command()
        .args([
            "compare",
            "scenarios/groups-atomic.toml",
            "-q",
            "--variant",
            "groups-atomic",
            "--variant",
            "groups-naive",
            "--seeds",
            "1,2",
            "--out",
        ])
        .arg(&out)
        .args(SMALL)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        exit_and_text(&o)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("groups-atomic") && stdout.contains("groups-naive"),
        "{stdout}"
    );
    assert!(stdout.contains("CountExact"), "{stdout}");
    for v in ["groups-atomic", "groups-naive"] {
        let s = json(&out.join(v).join("series.json"));
        assert_eq!(s["runs"].as_array().unwrap().len(), 2, "{v}");
    }
    let atomic = json(&out.join("groups-atomic/series.json"));
    assert_eq!(atomic["exit"]["code"], 0, "{atomic}");
    let xml = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(
        xml.matches("classname=\"specstorm.seeds\"").count(),
        4,
        "{xml}"
    );
}
