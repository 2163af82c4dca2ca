//! One run per folder (docs/cli.md, "Run folders"): a run claims its
//! `--out` before anything that can take time, so a second run started on
//! the same folder while the first holds it exits 2 and writes nothing
//! there, for both workloads.
//!
//! The first run is held at a known point, not raced: its `target.path` is
//! a FIFO nobody writes to, so it blocks opening its database (the check
//! for rows of earlier runs), which comes after the claim and before it
//! writes anything. Linux only (FIFO, /proc).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::folder::names_if_any as names;
// The first run, killed when the test ends (it never ends by itself: it
// waits on a FIFO nobody opens for writing).
use crate::common::procs::{KillOnDrop as Held, HANG};
use crate::common::{command as specstorm, text};

const CLAIM_FILE: &str = ".specstorm-claim";

/// Whether a thread of process `pid` waits in open(2) for a FIFO's writer.
/// Only for builds that do not claim the folder: the test then still starts
/// the second run while the first is held, and shows the two mixing.
fn blocked_on_fifo(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|tasks| {
            tasks.filter_map(Result::ok).any(|t| {
                std::fs::read_to_string(t.path().join("wchan"))
                    .is_ok_and(|w| w.trim() == "wait_for_partner")
            })
        })
        .unwrap_or(false)
}

/// Starts `specstorm run SCENARIO --out OUT` with a FIFO as its database,
/// and waits until it holds the claim on OUT (count-based: the claim file
/// exists), or is blocked on the FIFO.
fn hold(scenario: &str, sets: &[&str], tmp: &Path, out: &Path) -> Held {
    let fifo: PathBuf = tmp.join("blocked.db");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let mut c = specstorm();
    c.args(["run", scenario, "-q", "--out", out.to_str().unwrap()])
        .args(["--set", &format!("target.path={}", fifo.display())]);
    for s in sets {
        c.args(["--set", s]);
    }
    let child = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let held = Held(child);
    let since = Instant::now();
    while !out.join(CLAIM_FILE).exists() && !blocked_on_fifo(held.0.id()) {
        assert!(
            since.elapsed() < HANG,
            "the first run neither claimed {} nor blocked on its database",
            out.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    held
}

/// The second run on `out` (its own database, in the folder): must exit 2,
/// say the folder is taken (`why`: by a run still going, or by one that
/// has ended), and leave the folder as it found it.
fn second_run_is_refused_as(scenario: &str, sets: &[&str], out: &Path, why: &str) {
    let before = names(out);
    let mut c = specstorm();
    c.args(["run", scenario, "-q", "--out", out.to_str().unwrap()]);
    for s in sets {
        c.args(["--set", s]);
    }
    let o = c.output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains(why), "{t}");
    assert!(t.contains(CLAIM_FILE), "{t}");
    assert_eq!(names(out), before, "the refused run wrote into the folder");
}

fn second_run_is_refused(scenario: &str, sets: &[&str], out: &Path) {
    second_run_is_refused_as(scenario, sets, out, "is taken by another run");
}

#[test]
fn a_second_groups_run_on_a_held_folder_exits_2_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // An empty folder made for --out, as users do.
    let out = tmp.path().join("run");
    std::fs::create_dir(&out).unwrap();
    let sets = ["stop.events=1500"];
    let _first = hold("scenarios/smoke.toml", &sets, tmp.path(), &out);
    second_run_is_refused("scenarios/smoke.toml", &sets, &out);
}

#[test]
fn a_second_outbox_run_on_a_held_folder_exits_2_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // No folder yet: the first run makes it.
    let out = tmp.path().join("run");
    let sets = ["outbox.messages=200", "outbox.handlers=2"];
    let _first = hold("scenarios/outbox-protocol.toml", &sets, tmp.path(), &out);
    second_run_is_refused("scenarios/outbox-protocol.toml", &sets, &out);
}

#[test]
fn a_finished_run_folder_is_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let sets = ["stop.events=1500"];
    let mut c = specstorm();
    c.args(["run", "scenarios/smoke.toml", "-q", "--out"])
        .arg(&out)
        .args(["--set", sets[0]]);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The claim stays: it says who ran there, and audit and report take
    // the folder with it.
    assert!(out.join(CLAIM_FILE).is_file());
    // Its run has ended: the message says so, and names the process.
    second_run_is_refused_as(
        "scenarios/smoke.toml",
        &sets,
        &out,
        "was used by an earlier run, which has ended",
    );
    let a = specstorm().arg("audit").arg(&out).output().unwrap();
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    let r = specstorm().arg("report").arg(&out).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
}
