//! Every run ends by itself and on a stop: a scenario whose waits are far
//! longer than the run (a resolver interval of a million hours, an open
//! model paced one op per thousand seconds, pauses that never end) still
//! ends at its duration, or at a Ctrl-C, with its results saved; a retry
//! policy that would queue a billion sends of one event is refused before
//! anything runs. Both targets (in-process SQLite, a spawned HTTP server)
//! and both workloads.
//!
//! No timing is asserted: a run that has not exited after [`HANG`] is
//! killed and the test fails (it hangs).

#![cfg(unix)]

use crate::common::procs::{signal, wait_bounded, wait_until, HANG};
use crate::common::run::run_command;
use crate::common::{command, Server};

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A groups scenario on `target` whose resolvers wait a million hours
/// between two resolves.
fn endless_interval(target: &str) -> String {
    format!(
        "workload = \"groups\"\nvariant = \"groups-atomic\"\n\n{target}\n\
         [load]\ningesters = 2\nresolvers = 2\n\n\
         [stop]\nevents = 0\n\n\
         [resolve]\ninterval = \"1000000h\"\n\n\
         [min_evidence]\nNoMissedRegression = 0\n"
    )
}

const SQLITE: &str = "[target]\nkind = \"sqlite\"\n";
const HTTP: &str = "[target]\nkind = \"http\"\nspawn = true\nserver_workers = 2\n";

/// An outbox scenario on `target` whose handlers pause a million hours
/// before some steps.
fn endless_pause(target: &str) -> String {
    format!(
        "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n\n{target}\n\
         [outbox]\nmessages = 100000\ndeliveries = 1\nhandlers = 2\n\n\
         [stop]\nduration = \"10m\"\n\n\
         [[faults]]\nkind = \"pause\"\nops = \"handle\"\nprobability = 0.001\ndelay = \"1000000h\"\n"
    )
}

/// A run of `scenario` (its text) with `args`, into a fresh folder.
struct Run {
    child: Child,
    out: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Run {
    fn start(scenario: &str, args: &[&str]) -> Run {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("scenario.toml");
        std::fs::write(&file, scenario).unwrap();
        let out = tmp.path().join("run");
        let child = run_command(&file, &out)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start specstorm run");
        Run {
            child,
            out,
            _tmp: tmp,
        }
    }

    /// Waits until the history holds `n` lines naming `what` (whole ops:
    /// an op's invoke, steps and completion are written together).
    fn wait_for_ops(&mut self, what: &str, n: usize) {
        let hist = self.out.clone();
        wait_until(
            &mut self.child,
            &format!("{n} x {what} in the history"),
            || {
                let text = crate::common::folder::history_text(&hist).unwrap_or_default();
                text.lines().filter(|l| l.contains(what)).count() >= n
            },
        );
    }

    fn signal(&self, sig: &str) {
        assert!(signal(self.child.id(), sig));
    }

    /// The exit status, failing the test if the run is still going after
    /// [`HANG`]; and the summary it saved.
    fn end(&mut self, what: &str) -> (ExitStatus, serde_json::Value) {
        let status = wait_bounded(&mut self.child, what);
        let mut err = String::new();
        use std::io::Read;
        let _ = self.child.stderr.take().unwrap().read_to_string(&mut err);
        let summary = std::fs::read_to_string(self.out.join("summary.json"))
            .unwrap_or_else(|e| panic!("{what}: no summary.json ({e}); stderr: {err}"));
        (status, serde_json::from_str(&summary).unwrap())
    }
}

/// Ends by its duration: no `partial`, the summary's exit is the process's.
fn assert_ended_by_itself(scenario: &str, what: &str) {
    let mut run = Run::start(scenario, &["--duration", "2s"]);
    let (status, s) = run.end(what);
    assert_eq!(s["partial"], false, "{what}: {s}");
    assert_eq!(
        status.code().map(i64::from),
        s["exit"]["code"].as_i64(),
        "{what}"
    );
    assert_ne!(status.code(), Some(130), "{what}");
}

/// Stopped by SIGINT once `n` ops naming `what` ran: exit 130, partial.
fn assert_ends_on_sigint(scenario: &str, args: &[&str], ops: &str, n: usize, what: &str) {
    let mut run = Run::start(scenario, args);
    run.wait_for_ops(ops, n);
    run.signal("-INT");
    let (status, s) = run.end(what);
    assert_eq!(status.code(), Some(130), "{what}: {s}");
    assert_eq!(s["partial"], true, "{what}");
    assert_eq!(s["exit"]["code"], 130, "{what}");
}

const RESOLVED: &str = "\"f\":\"resolve\"";
const HANDLED: &str = "\"f\":\"handle\"";
const INGESTED: &str = "\"f\":\"ingest\"";

#[test]
fn a_resolver_interval_longer_than_the_run_ends_at_the_duration_sqlite() {
    assert_ended_by_itself(&endless_interval(SQLITE), "sqlite, interval 1000000h");
}

#[test]
fn a_resolver_interval_longer_than_the_run_ends_on_sigint_sqlite() {
    // Both resolvers resolved once and wait: the stop must wake them.
    assert_ends_on_sigint(
        &endless_interval(SQLITE),
        &["--duration", "10m"],
        RESOLVED,
        2,
        "sqlite, interval 1000000h, SIGINT",
    );
}

#[test]
fn a_resolver_interval_longer_than_the_run_ends_at_the_duration_http() {
    assert_ended_by_itself(&endless_interval(HTTP), "http, interval 1000000h");
}

#[test]
fn a_resolver_interval_longer_than_the_run_ends_on_sigint_http() {
    assert_ends_on_sigint(
        &endless_interval(HTTP),
        &["--duration", "10m"],
        RESOLVED,
        2,
        "http, interval 1000000h, SIGINT",
    );
}

/// One op per 1000 s: the first is due at once, the others wait.
fn open_model_far_apart(name: &str, target: &str) {
    let scenario = format!(
        "workload = \"groups\"\nvariant = \"groups-atomic\"\n\n{target}\n\
         [load]\nmodel = \"open\"\nrate = 0.001\ningesters = 3\nresolvers = 0\n\n\
         [stop]\nevents = 0\nduration = \"10m\"\n"
    );
    assert_ends_on_sigint(
        &scenario,
        &[],
        INGESTED,
        1,
        &format!("open 0.001/s, {name}"),
    );
}

#[test]
fn an_open_model_paced_far_apart_ends_on_sigint_sqlite() {
    open_model_far_apart("sqlite", SQLITE);
}

#[test]
fn an_open_model_paced_far_apart_ends_on_sigint_http() {
    open_model_far_apart("http", HTTP);
}

fn outbox_pause(name: &str, target: &str) {
    let scenario = endless_pause(target);
    assert_ended_by_itself(&scenario, &format!("outbox pause, {name}"));
    assert_ends_on_sigint(
        &scenario,
        &[],
        HANDLED,
        2,
        &format!("outbox pause, {name}, SIGINT"),
    );
}

#[test]
fn an_outbox_pause_longer_than_the_run_ends_at_the_duration_and_on_sigint_sqlite() {
    outbox_pause("sqlite", SQLITE);
}

#[test]
fn an_outbox_pause_longer_than_the_run_ends_at_the_duration_and_on_sigint_http() {
    outbox_pause("http", HTTP);
}

#[test]
fn a_billion_retries_are_refused_at_their_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("retries.toml");
    // Probability 0: were the key accepted, the run would not blow up.
    std::fs::write(
        &file,
        "workload = \"groups\"\n\n[stop]\nevents = 100\n\n[retry]\nprobability = 0.0\nmax_retries = 1000000000\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = command()
        .arg("run")
        .arg(&file)
        .args(["-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let at = format!("{}:8:", file.display());
    assert!(err.contains(&at), "{at} not in: {err}");
    assert!(err.contains("retry.max_retries"), "{err}");
    assert!(!out.join("history.bin").exists(), "nothing ran");
    // The same through --set names the override.
    let o = command()
        .arg("check")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/smoke.toml"))
        .args(["--set", "retry.max_retries=1000000000"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--set retry.max_retries"), "{err}");
}

/// The reference server's fault hook pauses an op for 1000 h; a SIGTERM
/// must still end the server (the pause is cut short, the op finishes and
/// is answered).
#[test]
fn the_reference_server_stops_on_sigterm_during_a_hook_pause() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start_with(
        "groups-atomic",
        &dir.path().join("t.db"),
        &["--fault-hooks", "--workers", "2"],
    );
    let url = server.url.clone();
    specstorm::target::http::tls::install_provider();
    let paused = std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .timeout(None)
            .build()
            .unwrap()
            .post(format!("{url}/v1/events"))
            .header("x-specstorm-fault", "pause=s2:3600000000000000")
            .json(&serde_json::json!({"id": "e1", "project": "p", "fingerprint": "f", "message": "m"}))
            .send()
            .map(|r| r.status().as_u16())
    });
    // s1 wrote the event: the op now waits before s2.
    let t = Instant::now();
    let export = reqwest::blocking::Client::new();
    loop {
        let x: serde_json::Value = export
            .get(format!("{}/v1/export", server.url))
            .send()
            .unwrap()
            .json()
            .unwrap();
        if x["events"].as_array().is_some_and(|e| !e.is_empty()) {
            break;
        }
        assert!(t.elapsed() < HANG, "the paused op never ran s1");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(signal(server.child.id(), "-TERM"));
    let status = wait_bounded(&mut server.child, "the server after SIGTERM");
    assert!(status.success(), "{status}");
    assert_eq!(
        paused.join().unwrap().ok(),
        Some(200),
        "the paused op was answered"
    );
}

/// Every op of `workload` over the spawned server pauses a million hours
/// in the server (the fault hook), and requests may take a thousand hours:
/// only `stop.grace` can end the ops in flight at the stop.
fn held_by_the_server(workload: &str) -> String {
    let (head, ops) = match workload {
        "groups" => (
            "workload = \"groups\"\nvariant = \"groups-atomic\"\n\n\
             [load]\ningesters = 2\nresolvers = 0\n\n\
             [min_evidence]\nNoMissedRegression = 0\n\n"
                .to_owned(),
            "ingest",
        ),
        _ => (
            "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n\n\
             [outbox]\nmessages = 1000\ndeliveries = 1\nhandlers = 2\n\n"
                .to_owned(),
            "handle",
        ),
    };
    let events = if workload == "groups" {
        "events = 0\n"
    } else {
        ""
    };
    format!(
        "{head}{HTTP}request_timeout = \"1000h\"\n\n\
         [stop]\n{events}grace = \"1s\"\n\n\
         [[faults]]\nkind = \"pause\"\nops = \"{ops}\"\nprobability = 1.0\ndelay = \"1000000h\"\n"
    )
}

/// The ops in flight when the load stopped, abandoned at the end of the
/// grace: recorded `info` with the reason.
fn abandoned_at_the_grace(out: &Path) -> usize {
    crate::common::folder::history_text(out)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"type\":\"info\"") && l.contains("stop.grace"))
        .count()
}

fn held_by_the_server_ends(workload: &str) {
    let scenario = held_by_the_server(workload);
    let mut run = Run::start(&scenario, &["--duration", "2s"]);
    let what = format!("{workload}: ops held by the server, request_timeout 1000h");
    let (status, s) = run.end(&what);
    let out = run.out.clone();
    assert_eq!(s["partial"], false, "{what}: {s}");
    assert_eq!(
        status.code().map(i64::from),
        s["exit"]["code"].as_i64(),
        "{what}"
    );
    assert!(
        abandoned_at_the_grace(&out) > 0,
        "{what}: no op abandoned at the grace"
    );
    // The first SIGINT is a graceful stop: it ends the run too, through
    // the same grace (nothing waits for a second signal).
    let mut run = Run::start(&scenario, &["--duration", "10m"]);
    run.wait_for_ops("\"type\":\"header\"", 1);
    run.signal("-INT");
    let (status, s) = run.end(&format!("{what}, SIGINT"));
    assert_eq!(status.code(), Some(130), "{what}: {s}");
}

#[test]
fn ops_held_by_the_server_are_abandoned_at_the_grace_groups() {
    held_by_the_server_ends("groups");
}

#[test]
fn ops_held_by_the_server_are_abandoned_at_the_grace_outbox() {
    held_by_the_server_ends("outbox");
}
