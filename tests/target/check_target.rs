//! `specstorm check-target URL`: the contract probe, end to end through the
//! binary, against the reference server, a closed port, a garbage server
//! and a silent one.

use serde_json::{json, Value};
use std::net::TcpListener;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::http::client;
use crate::common::{command, Server};

/// Runs `specstorm check-target ARGS...`; returns (exit code, stdout,
/// stderr, wall time).
/// Longer than any probe here takes on a loaded machine; only a hang
/// (waiting out a default timeout of minutes) reaches it.
const HANG: Duration = Duration::from_secs(120);

fn probe(args: &[&str]) -> (i32, String, String, Duration) {
    let t = Instant::now();
    let Output {
        status,
        stdout,
        stderr,
    } = command()
        .arg("check-target")
        .args(args)
        .output()
        .expect("run specstorm check-target");
    let (out, err) = (
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    );
    let code = status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {out}{err}"));
    (code, out, err, t.elapsed())
}

/// The check lines (neither `#` comments nor the verdict).
fn check_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("verdict:"))
        .collect()
}

#[test]
fn reference_server_conforms_and_is_left_untouched() {
    let s = Server::start("groups-atomic");
    let c = client();
    // Real data, outside the probe's namespace.
    let r = c
        .post(format!("{}/v1/events", s.url))
        .json(&json!({"id": "real-1", "project": "p", "fingerprint": "f", "message": "m"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);

    // Twice: a fresh namespace each time, so a reused target passes again.
    for _ in 0..2 {
        let (code, out, err, _) = probe(&[&s.url]);
        assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
        let lines = check_lines(&out);
        assert_eq!(lines.len(), 8, "{out}");
        for l in &lines {
            assert!(l.starts_with("ok    "), "not ok: {l}\n{out}");
        }
        assert!(
            out.contains(r#"ok    POST /v1/events (new id): 200 {"accepted":true,"group_id":"#),
            "{out}"
        );
        assert!(out.contains("POST /v1/reset: not probed"), "{out}");
        let verdict = out.lines().last().unwrap();
        assert!(
            verdict.starts_with("verdict: conforms") && verdict.ends_with("(exit 0)"),
            "{verdict}"
        );
    }

    // The real group is untouched; only probe namespaces were written.
    let x: Value = c
        .get(format!("{}/v1/export", s.url))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let groups = x["groups"].as_array().unwrap();
    let real: Vec<&Value> = groups.iter().filter(|g| g["project"] == "p").collect();
    assert_eq!(
        real,
        [&json!({"id": "g:p:f", "project": "p", "fingerprint": "f",
                 "status": "open", "event_count": 1})]
    );
    assert_eq!(groups.len(), 3, "{x}");
    for g in groups.iter().filter(|g| g["project"] != "p") {
        let p = g["project"].as_str().unwrap();
        assert!(p.starts_with("specstorm-probe-"), "{g}");
        assert_eq!(g["status"], "resolved");
        assert_eq!(g["event_count"], 1);
    }
    assert_eq!(x["events"].as_array().unwrap().len(), 3, "{x}");
}

#[test]
fn unreachable_url_exits_3_quickly() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let (code, out, err, took) = probe(&[&url, "--timeout", "2s"]);
    assert_eq!(code, 3, "stdout:\n{out}\nstderr:\n{err}");
    // A bound against a hang only (a busy machine may take seconds to
    // start the process); why it ended is in the words checked below.
    assert!(took < HANG, "took {took:?}");
    assert!(
        err.contains("is unreachable") && err.contains("cannot connect"),
        "{err}"
    );
    assert!(
        out.contains("FAIL  GET /healthz: expected 200, got no answer"),
        "{out}"
    );
    assert!(out.contains("verdict: UNREACHABLE"), "{out}");
    // Nothing else was sent.
    assert_eq!(check_lines(&out).len(), 1, "{out}");
}

/// A server that answers every request with `200 hello`.
fn garbage_server() -> String {
    format!("http://127.0.0.1:{}", crate::common::http::garbage_server())
}

#[test]
fn garbage_server_exits_3_and_names_what_is_wrong() {
    let url = garbage_server();
    let (code, out, err, _) = probe(&[&url, "--timeout", "2s"]);
    assert_eq!(code, 3, "stdout:\n{out}\nstderr:\n{err}");
    // A 200 on /healthz is all the contract asks there.
    assert!(out.contains("ok    GET /healthz: 200 hello"), "{out}");
    assert!(
        out.contains(
            "FAIL  POST /v1/events (new id): expected 200 {accepted: true, group_id: string}, \
             got 200 hello (the body is not JSON)"
        ),
        "{out}"
    );
    assert!(
        out.contains("skip  POST /v1/groups/{group_id}/resolve (first)"),
        "{out}"
    );
    assert!(
        out.contains("FAIL  POST /v1/events (malformed body): expected 400, 413 or 422"),
        "{out}"
    );
    assert!(
        out.contains("(unknown group): expected 404, got 200 hello"),
        "{out}"
    );
    assert!(out.contains("FAIL  GET /v1/export"), "{out}");
    assert!(out.contains("verdict: does NOT conform"), "{out}");
}

#[test]
fn silent_server_times_out_without_hanging() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    // Accepts connections and never answers.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().flatten() {
            held.push(s);
        }
    });
    let (code, out, err, took) = probe(&[&url, "--timeout", "300ms"]);
    assert_eq!(code, 3, "stdout:\n{out}\nstderr:\n{err}");
    // A bound against a hang only (a busy machine may take seconds to
    // start the process); why it ended is in the words checked below.
    assert!(took < HANG, "took {took:?}");
    assert!(err.contains("no answer within 300ms (timeout)"), "{err}");
}

#[test]
fn bad_urls_are_usage_errors() {
    let (code, _, err, _) = probe(&["ftp://127.0.0.1:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("scheme ftp:// is not supported"), "{err}");
    let (code, _, err, _) = probe(&["127.0.0.1:8080"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("must start with http://"), "{err}");
    let (code, _, err, _) = probe(&["http://127.0.0.1:1", "--timeout", "0s"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn outbox_reference_server_conforms_and_nothing_is_written() {
    let s = Server::start("outbox-protocol");
    let export = || -> Value {
        client()
            .get(format!("{}/v1/outbox/export", s.url))
            .send()
            .unwrap()
            .json()
            .unwrap()
    };
    let before = export();
    let (code, out, err, _) = probe(&[&s.url, "--workload", "outbox"]);
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    let lines = check_lines(&out);
    assert_eq!(lines.len(), 3, "{out}");
    for l in &lines {
        assert!(l.starts_with("ok    "), "not ok: {l}\n{out}");
    }
    assert!(out.contains("ok    GET /v1/outbox/export: 200 {"), "{out}");
    assert!(
        out.contains("ok    POST /v1/messages (not a delivery): 4"),
        "{out}"
    );
    assert!(out.contains("with a delivery: not probed"), "{out}");
    let verdict = out.lines().last().unwrap();
    assert_eq!(
        verdict,
        "verdict: conforms to contract v1 (outbox workload): all 3 checks ok (exit 0)"
    );
    // Read-only: the service holds what it held (the head row only).
    assert_eq!(export(), before);
    assert_eq!(before["state_log"].as_array().unwrap().len(), 1, "{before}");
}

#[test]
fn a_groups_service_or_garbage_is_not_an_outbox_service() {
    let s = Server::start("groups-atomic");
    let (code, out, err, _) = probe(&[&s.url, "--workload", "outbox"]);
    assert_eq!(code, 3, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("ok    GET /healthz"), "{out}");
    assert!(
        out.contains(
            "FAIL  GET /v1/outbox/export: expected 200 {state_log, outbox, out_queue, processed}"
        ),
        "{out}"
    );
    assert!(out.contains("(status 404 instead of 200)"), "{out}");
    assert!(
        out.lines().last().unwrap().starts_with(
            "verdict: does NOT conform to contract v1 (outbox workload): 2 of 3 checks"
        ),
        "{out}"
    );

    let (code, out, err, _) =
        probe(&[&garbage_server(), "--workload", "outbox", "--timeout", "2s"]);
    assert_eq!(code, 3, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("FAIL  GET /v1/outbox/export") && out.contains("not the contract's shape"),
        "{out}"
    );
    assert!(
        out.contains(
            "FAIL  POST /v1/messages (not a delivery): expected 400, 413 or 422, got 200 hello"
        ),
        "{out}"
    );
}

#[test]
fn an_unknown_workload_is_a_usage_error() {
    let (code, out, err, _) = probe(&["http://127.0.0.1:1", "--workload", "nope"]);
    assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        err.contains(r#"--workload "nope" is not a workload (one of: groups, outbox)"#),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}
