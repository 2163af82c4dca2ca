//! `junit.xml` against Jenkins' `junit-10.xsd` (the schema CI systems'
//! JUnit readers follow; a copy with its MIT licence sits beside this
//! file), checked by a real validator, `xmllint --schema` (libxml2's;
//! `.ci/run` installs it), for each way a run can end: passing, violated,
//! inconclusive, interrupted, and a target that could not be used. Each
//! run is deterministic: the violation is a design that counts every
//! event twice, the inconclusive run asks for more evidence than it can
//! gather, the interruption is a SIGTERM once the history has ops.

use crate::common::procs::wait_for_history;
use crate::common::{command, specstorm, text};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The copy of junit-10.xsd.
fn xsd() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report/junit-10.xsd")
}

/// `xmllint --schema junit-10.xsd FILE`: its verdict and output. Panics,
/// saying how to get it, if xmllint is not installed: a check that
/// passes because no validator ran would prove nothing.
fn validate(file: &Path) -> (bool, String) {
    let o = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(xsd())
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("xmllint is needed (apt-get install libxml2-utils): {e}"));
    (o.status.success(), text(&o))
}

/// A run of smoke.toml with `sets` into `out`; its exit code.
fn run(out: &Path, sets: &[&str]) -> Option<i32> {
    let mut args = vec!["run", "scenarios/smoke.toml", "-q", "--no-tui"];
    for s in sets {
        args.extend_from_slice(&["--set", s]);
    }
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let o = specstorm(&args);
    assert!(out.join("junit.xml").is_file(), "{}", text(&o));
    o.status.code()
}

/// Counts every event twice: CountExact is violated on every run.
const DOUBLE_COUNT: &str = "\
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

-- name: ingest.s3
-- counts: true
UPDATE error_groups
SET event_count = event_count + 2,
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

#[test]
fn junit_xml_of_every_way_a_run_ends_validates_against_junit_10_xsd() {
    let tmp = tempfile::tempdir().unwrap();
    let mut files: Vec<(&str, PathBuf, &str)> = Vec::new();

    let pass = tmp.path().join("pass");
    assert_eq!(run(&pass, &[]), Some(0));
    files.push(("passing", pass, "<testcase name=\"run\""));

    let sql = tmp.path().join("double-count.sql");
    std::fs::write(&sql, DOUBLE_COUNT).unwrap();
    let violated = tmp.path().join("violated");
    let variant = format!("variant={:?}", sql.to_str().unwrap());
    assert_eq!(run(&violated, &[&variant]), Some(1));
    files.push(("violated", violated, "<failure "));

    let inconclusive = tmp.path().join("inconclusive");
    assert_eq!(
        run(&inconclusive, &["min_evidence.CountExact=1000000000"]),
        Some(4)
    );
    files.push(("inconclusive", inconclusive, "<skipped "));

    let unusable = tmp.path().join("unusable");
    // Port 1 on the loopback: nothing listens there.
    assert_eq!(
        run(
            &unusable,
            &[
                "target.kind=\"http\"",
                "target.url=\"http://127.0.0.1:1\"",
                "target.retries=0",
            ]
        ),
        Some(3)
    );
    files.push(("target unusable", unusable, "<error "));

    let interrupted = tmp.path().join("interrupted");
    let mut child = command()
        .args([
            "run",
            "scenarios/smoke.toml",
            "-q",
            "--no-tui",
            "--set",
            "stop.events=0",
            "--duration",
            "120s",
            "--out",
        ])
        .arg(&interrupted)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_for_history(&mut child, &interrupted, 12_000);
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    files.push(("interrupted", interrupted, "<error "));

    for (what, dir, element) in &files {
        let file = dir.join("junit.xml");
        let xml = std::fs::read_to_string(&file).unwrap();
        assert!(xml.contains(element), "{what}: no {element} in\n{xml}");
        let (valid, out) = validate(&file);
        assert!(valid, "{what}: junit.xml does not validate:\n{out}\n{xml}");
    }
    // The evidence is the element's text, not only its message: the
    // violation's explanation and its timeline, as on the terminal.
    let xml = std::fs::read_to_string(files[1].1.join("junit.xml")).unwrap();
    let failure = &xml[xml.find("<failure ").unwrap()..xml.find("</failure>").unwrap()];
    let body = &failure[failure.find('>').unwrap() + 1..];
    assert!(
        body.contains("CountExact") || body.contains("count"),
        "{failure}"
    );
    assert!(body.trim().len() > 20, "an empty failure body: {failure}");
    // The suite says when, where and what ran.
    let pass = std::fs::read_to_string(files[0].1.join("junit.xml")).unwrap();
    for needle in [
        " time=\"",
        " timestamp=\"",
        " hostname=\"",
        "<property name=\"scenario\" value=\"smoke\"/>",
        "<property name=\"seed\" value=\"1\"/>",
        "<property name=\"target\" value=\"sqlite ",
    ] {
        assert!(pass.contains(needle), "no {needle} in\n{pass}");
    }
}

/// The validator is real: a file with an attribute junit-10.xsd does not
/// allow (`disabled` on a suite, which older writers put there) fails.
#[test]
fn the_validator_refuses_what_the_schema_does_not_allow() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.xml");
    std::fs::write(
        &bad,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"x\" tests=\"0\" failures=\"0\" errors=\"0\">\n<testsuite name=\"s\" tests=\"0\" disabled=\"0\" errors=\"0\" failures=\"0\"/>\n</testsuites>\n",
    )
    .unwrap();
    let (valid, out) = validate(&bad);
    assert!(!valid, "{out}");
    assert!(out.contains("disabled"), "{out}");
}
