//! A disk that fills: every file a command leaves in its folder is whole
//! or absent (never 0 bytes, never cut off, no temporary file left), the
//! command exits 3 and says which file could not be written, and a run
//! whose target database can no longer grow stops and says so.
//!
//! No root needed: the binary runs under `sh -c 'ulimit -f N'` (POSIX sh
//! counts 512-byte blocks) with SIGXFSZ ignored, so that a write past N
//! blocks fails with EFBIG, as one on a full disk fails with ENOSPC.

use std::path::Path;
use std::process::Output;

use crate::common::bench::{exit_and_text as text, specstorm_limited};
use crate::common::run::run_into;

/// Runs the binary with ARGS under a file size limit of `blocks` x 512
/// bytes, in the crate's folder.
fn limited(blocks: u64, args: &[&str]) -> Output {
    specstorm_limited(&format!("ulimit -f {blocks} && trap '' XFSZ"), args)
}

/// Every file of `dir` is non-empty, no temporary file is left, and
/// `summary.json` (returned) is absent or whole JSON.
fn whole_or_absent(dir: &Path, o: &Output) -> Option<serde_json::Value> {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            !name.ends_with(".part"),
            "a temporary file was left: {name}"
        );
        assert!(
            !name.starts_with(".specstorm-reserve"),
            "the reserve was left: {name}"
        );
        let len = e.metadata().unwrap().len();
        // SQLite's own files are the database's business, not ours; the
        // folder's claim is made by its existence (O_EXCL), its text
        // (who claimed it) is a courtesy a full disk may leave out.
        if !name.starts_with("target.db") && name != ".specstorm-claim" {
            assert!(len > 0, "{name} was left with 0 bytes\n{}", text(o));
        }
    }
    let s = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    Some(serde_json::from_str(&s).unwrap_or_else(|e| panic!("summary.json is cut off: {e}\n{s}")))
}

#[test]
fn a_disk_full_from_the_start_leaves_no_empty_file() {
    for (scenario, set) in [
        ("scenarios/smoke.toml", "stop.events=100"),
        // The outbox workload writes its folder on its own path.
        ("scenarios/outbox-protocol.toml", "outbox.messages=50"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        let o = limited(
            0,
            &[
                "run",
                scenario,
                "--set",
                set,
                "-q",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(3), "{scenario}: {}", text(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains("cannot write") && stderr.contains("scenario.toml"),
            "{scenario}: the message names the file: {stderr}"
        );
        assert!(
            whole_or_absent(&out, &o).is_none(),
            "{scenario}: nothing fits"
        );
    }
}

#[test]
fn a_database_that_cannot_grow_stops_the_run_with_exit_3_and_says_so() {
    for (scenario, set) in [
        ("scenarios/smoke.toml", "stop.events=20000"),
        ("scenarios/outbox-protocol.toml", "outbox.messages=5000"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        // 256 KiB per file: the target's WAL (a 4 KiB page or more per
        // commit) reaches it long before the history or the results.
        let o = limited(
            512,
            &[
                "run",
                scenario,
                "--set",
                set,
                "-q",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(3), "{scenario}: {}", text(&o));
        let s = whole_or_absent(&out, &o)
            .unwrap_or_else(|| panic!("{scenario}: no summary.json\n{}", text(&o)));
        assert_eq!(s["exit"]["code"], 3, "{scenario}: {s}");
        let rule = s["exit"]["rule"].as_str().unwrap();
        assert!(
            rule.contains("the database could not be written"),
            "{scenario}: {rule}"
        );
        // The load stopped there, it did not run its course on errors.
        let ops = s["history"]["ops"].as_u64().unwrap();
        assert!(
            ops < 2000,
            "{scenario}: {ops} ops ran after the disk was full"
        );
    }
}

#[test]
fn an_audit_that_cannot_write_its_file_leaves_none() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run_into("scenarios/smoke.toml", &out, &[]);
    assert!(
        o.status.code().is_some_and(|c| c == 0 || c == 4),
        "{}",
        text(&o)
    );
    let o = limited(0, &["audit", out.to_str().unwrap()]);
    // The verdicts stand without their file: the exit is theirs, with a
    // warning naming audit.json.
    assert!(
        o.status.code().is_some_and(|c| c == 0 || c == 4),
        "{}",
        text(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("audit.json"),
        "{}",
        text(&o)
    );
    assert!(!out.join("audit.json").exists(), "{}", text(&o));
    whole_or_absent(&out, &o);
}
