//! Input files are read within a size cap (docs/cli.md, "Input size
//! caps"): a scenario, a statement file or a run folder's file that is a
//! symlink to `/dev/zero` (or a history line longer than any a run writes)
//! is refused with `file: reason` naming the cap, exit 2, after reading at
//! most cap + 1 bytes. Each command runs under a virtual memory limit, so
//! that a read without limit fails here (an allocation failure) instead of
//! taking the machine's memory.

#![cfg(unix)]

use std::path::Path;
use std::process::Output;

/// `specstorm ARGS` under `ulimit -v` 4 GiB.
fn specstorm(args: &[&str]) -> Output {
    crate::common::bench::specstorm_limited("ulimit -v 4194304", args)
}

fn zero(link: &Path) {
    std::os::unix::fs::symlink("/dev/zero", link).unwrap();
}

fn refused(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "missing {needle:?} in {err}");
}

#[test]
fn a_scenario_that_is_dev_zero_is_refused_naming_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("zero.toml");
    zero(&link);
    let l = link.display();
    for cmd in ["check", "run", "explore"] {
        let o = specstorm(&[cmd, link.to_str().unwrap()]);
        refused(
            &o,
            &format!(
                "{l}: cannot read the scenario: larger than 4 MiB, the cap of a scenario file"
            ),
        );
    }
}

#[test]
fn a_statement_file_that_is_dev_zero_is_refused_naming_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    zero(&dir.path().join("zero.sql"));
    let scenario = dir.path().join("s.toml");
    std::fs::write(&scenario, "variant = \"zero.sql\"\n").unwrap();
    let o = specstorm(&["check", scenario.to_str().unwrap()]);
    refused(
        &o,
        &format!(
            "{}: cannot read statement file: larger than 4 MiB, the cap of a statement file",
            dir.path().join("zero.sql").display()
        ),
    );
    let o = specstorm(&[
        "serve",
        "--variant",
        dir.path().join("zero.sql").to_str().unwrap(),
        "--db",
        dir.path().join("t.db").to_str().unwrap(),
    ]);
    refused(&o, "larger than 4 MiB, the cap of a statement file");
}

#[test]
fn a_run_folder_file_over_its_cap_is_refused() {
    // report reads summary.json whole.
    let dir = tempfile::tempdir().unwrap();
    zero(&dir.path().join("summary.json"));
    let o = specstorm(&["report", dir.path().to_str().unwrap(), "--no-plots"]);
    refused(
        &o,
        "cannot read summary.json: larger than 256 MiB, the cap of a run folder's JSON file",
    );

    // audit streams the history, a line at a time: one line of 65 MiB
    // with no newline (a sparse file, no disk used).
    let run = tempfile::tempdir().unwrap();
    let d = run.path();
    let history = std::fs::File::create(d.join("history.jsonl")).unwrap();
    history.set_len(65 << 20).unwrap();
    for f in ["checks.json", "scenario.toml", "variant.sql"] {
        std::fs::write(d.join(f), "").unwrap();
    }
    let o = specstorm(&["audit", d.to_str().unwrap()]);
    refused(
        &o,
        &format!(
            "{}:1: larger than 64 MiB, the cap of a history line",
            d.join("history.jsonl").display()
        ),
    );
}

#[test]
fn a_run_folder_file_that_is_a_device_is_named_as_such() {
    // Not "missing": the file is there, it is just not one to read.
    let run = tempfile::tempdir().unwrap();
    let d = run.path();
    zero(&d.join("history.jsonl"));
    for f in ["checks.json", "scenario.toml", "variant.sql"] {
        std::fs::write(d.join(f), "").unwrap();
    }
    let o = specstorm(&["audit", d.to_str().unwrap()]);
    refused(&o, "history.jsonl is not a regular file");
}
