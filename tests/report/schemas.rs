//! The committed JSON Schemas (`schemas/`, generated from the types by
//! `src/schemas.rs`) against real outputs: a groups run and an outbox run
//! (`summary.json`, `checks.json`, `run --format json`), their audits
//! (`audit.json`, `audit --format json`), a compare (`compare.json`), a
//! series of seeds (`series.json`) and a
//! failed run's summary, each validated by `boon`, a JSON Schema
//! validator; and the validator refusing outputs doctored with a field of
//! the wrong type. `report --format json` and the regression exit code of
//! `report --baseline` are shown on the same runs.

use crate::common::bench::exit_and_text as text;
use crate::common::folder::{copy_files, json};
use crate::common::run::run_into;
use crate::common::{root, specstorm};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

/// The committed schemas, compiled.
struct Validator {
    schemas: boon::Schemas,
    index: BTreeMap<&'static str, boon::SchemaIndex>,
}

impl Validator {
    fn new() -> Validator {
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        let mut index = BTreeMap::new();
        for file in specstorm::schemas::FILES {
            let path = root().join("schemas").join(file);
            let url = format!("file://{}", path.display());
            compiler
                .add_resource(&url, json(&path))
                .unwrap_or_else(|e| panic!("{file}: {e}"));
            let i = compiler
                .compile(&url, &mut schemas)
                .unwrap_or_else(|e| panic!("schemas/{file} does not compile: {e:#}"));
            index.insert(file, i);
        }
        Validator { schemas, index }
    }

    /// `value` against the schema of `file`; the validator's message when
    /// it is refused.
    fn check(&self, file: &str, value: &Value) -> Result<(), String> {
        self.schemas
            .validate(value, self.index[file])
            .map_err(|e| format!("{e:#}"))
    }

    /// Panics, with the validator's message, unless `value` is valid.
    fn valid(&self, file: &str, value: &Value) {
        if let Err(e) = self.check(file, value) {
            panic!("{file} refused by its schema:\n{e}");
        }
    }

    /// Panics unless `value` is refused, with a message naming `key`.
    fn refused(&self, file: &str, value: &Value, key: &str) {
        match self.check(file, value) {
            Ok(()) => panic!("a doctored {file} passed its schema"),
            Err(e) => assert!(e.contains(key), "{file}: the refusal names no {key}: {e}"),
        }
    }
}

/// stdout as one JSON document.
fn stdout_json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is no JSON ({e}): {}", text(o)))
}

/// `specstorm audit --format json DIR`: exit 0, stdout is the audit.json
/// it wrote, the words on stderr; both validated.
fn audit_json(v: &Validator, dir: &Path) -> Value {
    let o = specstorm(&["audit", "--format", "json", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let printed = stdout_json(&o);
    assert_eq!(
        printed,
        json(&dir.join("audit.json")),
        "stdout is audit.json"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("specstorm audit: "),
        "{}",
        text(&o)
    );
    v.valid("audit.json", &printed);
    printed
}

#[test]
fn a_groups_run_its_audit_and_report_validate_and_doctored_ones_do_not() {
    let v = Validator::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("groups");
    let o = run_into(
        "scenarios/smoke.toml",
        &dir,
        &["--set", "stop.events=1500", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // stdout is the summary, the human text is on stderr.
    let printed = stdout_json(&o);
    let summary = json(&dir.join("summary.json"));
    assert_eq!(printed, summary, "run --format json prints summary.json");
    assert!(printed["invariants"]["CountExact"]["verdict"] == "holds");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("invariants") && err.contains("exit 0: "),
        "{}",
        text(&o)
    );
    v.valid("summary.json", &summary);
    let checks = json(&dir.join("checks.json"));
    v.valid("checks.json", &checks);
    let audit = audit_json(&v, &dir);

    // A field of the wrong type, in each file: refused, the key named.
    let mut bad = summary.clone();
    bad["duration_s"] = "fast".into();
    v.refused("summary.json", &bad, "duration_s");
    let mut bad = summary.clone();
    bad["stranded_events"]["total"] = "none".into();
    v.refused("summary.json", &bad, "stranded_events");
    let mut bad = checks.clone();
    bad[0]["violations"] = "3".into();
    v.refused("checks.json", &bad, "violations");
    let mut bad = audit.clone();
    bad["same_as_run"] = "yes".into();
    v.refused("audit.json", &bad, "same_as_run");
    let mut bad = summary.clone();
    bad["schema_version"] = 3.into();
    v.refused("summary.json", &bad, "schema_version");

    // report --format json: the summary on stdout, the text on stderr.
    let o = specstorm(&[
        "report",
        "--format",
        "json",
        "--no-plots",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let r = stdout_json(&o);
    assert_eq!((&r["kind"], &r["summary"]), (&"run".into(), &summary));
    assert!(String::from_utf8_lossy(&o.stderr).contains("invariants"));

    // report --baseline: the same run, exit 0; a run doctored worse (an
    // invariant that held, now violated), exit 1 and the regression named,
    // in text and in JSON.
    let worse = tmp.path().join("worse");
    std::fs::create_dir(&worse).unwrap();
    copy_files(&dir, &worse);
    let mut s = summary.clone();
    s["invariants"]["CountExact"]["verdict"] = "violated".into();
    s["invariants"]["CountExact"]["violations"] = 2.into();
    std::fs::write(worse.join("summary.json"), s.to_string()).unwrap();
    let base = dir.to_str().unwrap();
    let o = specstorm(&["report", "--no-plots", "--baseline", base, base]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let w = worse.to_str().unwrap();
    let o = specstorm(&["report", "--no-plots", "--baseline", base, w]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("REGRESSION"));
    let o = specstorm(&[
        "report",
        "--no-plots",
        "--format",
        "json",
        "--baseline",
        base,
        w,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let b = &stdout_json(&o)["baseline"];
    assert_eq!(b["regressions"], serde_json::json!(["CountExact"]));
    let count_exact = b["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["invariant"] == "CountExact")
        .unwrap();
    assert_eq!(count_exact["regression"], true);
    assert!(String::from_utf8_lossy(&o.stderr).contains("REGRESSION"));
}

#[test]
fn an_outbox_run_and_its_audit_validate() {
    let v = Validator::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("outbox");
    let o = run_into(
        "scenarios/outbox-protocol.toml",
        &dir,
        &["--set", "outbox.messages=400", "--set", "outbox.handlers=4"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let summary = json(&dir.join("summary.json"));
    v.valid("summary.json", &summary);
    v.valid("checks.json", &json(&dir.join("checks.json")));
    audit_json(&v, &dir);
    // The outbox's own part is typed too.
    let mut bad = summary.clone();
    bad["outbox"]["attempts"] = (-1).into();
    v.refused("summary.json", &bad, "attempts");
}

#[test]
fn a_compare_and_a_failed_run_validate() {
    let v = Validator::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("compare");
    let o = specstorm(&[
        "compare",
        "scenarios/compare-groups.toml",
        "--set",
        "stop.events=2000",
        "--set",
        "load.ingesters=4",
        "-q",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(dir.join("compare.json").exists(), "{}", text(&o));
    let compare = json(&dir.join("compare.json"));
    v.valid("compare.json", &compare);
    for variant in compare["variants"].as_array().unwrap() {
        let run = dir.join(variant["run_dir"].as_str().unwrap());
        v.valid("summary.json", &json(&run.join("summary.json")));
    }
    let mut bad = compare.clone();
    bad["variants"][0]["exit"]["code"] = "0".into();
    v.refused("compare.json", &bad, "code");

    // A run that fails once its folder exists (its target unreachable)
    // writes the failed run's summary: the schema's other branch.
    let scenario = tmp.path().join("unreachable.toml");
    let port = crate::common::procs::free_port();
    std::fs::write(
        &scenario,
        format!(
            "variant = \"groups-atomic\"\n[target]\nkind = \"http\"\nurl = \
             \"http://127.0.0.1:{port}\"\nconnect_timeout = \"1s\"\n[stop]\nevents = 10\n"
        ),
    )
    .unwrap();
    let failed = tmp.path().join("failed");
    let o = run_into(scenario.to_str().unwrap(), &failed, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let s = json(&failed.join("summary.json"));
    assert!(s["error"].is_string(), "{s}");
    v.valid("summary.json", &s);
    let mut bad = s.clone();
    bad["seed"] = "one".into();
    v.refused("summary.json", &bad, "seed");
}

#[test]
fn a_series_of_seeds_validates() {
    let v = Validator::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("series");
    let o = specstorm(&[
        "run",
        "scenarios/groups-naive.toml",
        "--seeds",
        "1..2",
        "--set",
        "stop.events=300",
        "--set",
        r#"thresholds=["catch_rate.NoMissedRegression >= 0"]"#,
        "-q",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(dir.join("series.json").exists(), "{}", text(&o));
    let series = json(&dir.join("series.json"));
    v.valid("series.json", &series);
    let mut bad = series.clone();
    bad["rates"][0]["violated"] = "two".into();
    v.refused("series.json", &bad, "violated");
}
