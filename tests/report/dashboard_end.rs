//! The dashboard ends by itself (issue 20, item 8): `specstorm run` on a
//! terminal (a pseudo-terminal that `script` makes, so the dashboard is
//! chosen), with no key ever pressed, shows its verdict panel, exits and
//! prints the summary; with `--keep-open` a key ends it. When the panel
//! closes is `dashboard::end`'s (tested there on instants the test picks);
//! here only that the process ends, with a bound that detects a hang.

use crate::common::procs::{wait_bounded, wait_until, KillOnDrop, HANG};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `specstorm run ARGS --out OUT` of a short default scenario under
/// `script`, its output read on a thread (the dashboard draws many frames:
/// a full pipe must not stall it). How much evidence 300 events give
/// NoMissedRegression depends on the machine's speed (19 of 20 once, exit
/// 4), and these tests are about the dashboard ending, not evidence: no
/// minimum.
fn on_a_terminal(out: &Path, args: &str) -> (Child, std::thread::JoinHandle<String>) {
    let cmd = format!(
        "'{}' run --set stop.events=300 --set min_evidence.NoMissedRegression=0 --out '{}' {args}",
        env!("CARGO_BIN_EXE_specstorm"),
        out.display()
    );
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env_remove("CI")
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run script (util-linux)");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    (child, reader)
}

#[test]
fn the_dashboard_ends_by_itself_and_prints_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let (child, reader) = on_a_terminal(&out, "");
    // Stdin stays open and silent: no key is ever pressed.
    let mut child = KillOnDrop(child);
    let status = wait_bounded(&mut child.0, "a dashboard run with no key pressed");
    let shown = reader.join().unwrap();
    assert!(status.success(), "{status}\n{shown}");
    // The dashboard was there (the alternate screen), then the summary.
    assert!(shown.contains("\x1b[?1049h"), "no dashboard:\n{shown}");
    let after = shown.rsplit("\x1b[?1049l").next().unwrap();
    assert!(after.contains("results: "), "no summary after it:\n{after}");
}

#[test]
fn kept_open_a_key_ends_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let (child, reader) = on_a_terminal(&out, "--keep-open");
    let mut child = KillOnDrop(child);
    let summary = out.join("summary.json");
    wait_until(&mut child.0, "the run's summary.json", || summary.is_file());
    // The verdicts are saved just before the panel shows, and a key
    // before it is only a key: press one until the process ends.
    let mut stdin = child.0.stdin.take().unwrap();
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < HANG, "a key did not end the kept-open panel");
        let _ = stdin.write_all(b"x").and_then(|_| stdin.flush());
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let shown = reader.join().unwrap();
    assert!(status.success(), "{status}\n{shown}");
    assert!(shown.contains("results: "), "{shown}");
}
