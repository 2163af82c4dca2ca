//! The outbox workload over HTTP (contract v1, outbox): the reference
//! server's `POST /v1/messages` and `GET /v1/outbox/export`, runs against a
//! spawned server (the protocol holds, a naive file is caught), an external
//! target that holds rows (refused) and one that answers out of contract.

use reqwest::blocking::Client;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::path::Path;

use crate::common::http::client;
use crate::common::{specstorm, summary, verdict, Server};

fn message(c: &Client, url: &str, id: i64, dup: i64, hook: Option<&str>) -> (StatusCode, Value) {
    let mut req = c
        .post(format!("{url}/v1/messages"))
        .json(&json!({"id": id, "dup": dup}));
    if let Some(h) = hook {
        req = req.header("x-specstorm-fault", h);
    }
    let r = req.send().unwrap();
    let status = r.status();
    let text = r.text().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn outbox_export(c: &Client, url: &str) -> Value {
    let r = c.get(format!("{url}/v1/outbox/export")).send().unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().unwrap()
}

#[test]
fn the_server_handles_deliveries_duplicates_and_hook_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_with(
        "outbox-protocol",
        &dir.path().join("t.db"),
        &["--fault-hooks"],
    );
    let (c, url) = (client(), s.url.clone());

    let (st, b) = message(&c, &url, 7, 1, None);
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b, json!({"acked": true, "sent": {"msg_id": 7, "ver": 0}}));
    // A duplicate: handled again, the recorded output resent.
    let (st, b) = message(&c, &url, 7, 2, None);
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b, json!({"acked": true, "sent": {"msg_id": 7, "ver": 0}}));

    // The hook's crash after the state change: 503, saying where.
    let (st, b) = message(&c, &url, 8, 1, Some("crash-after=state_commit"));
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{b}");
    assert_eq!(b["crashed_after"], "state_commit");
    // A per-step crash drawn with probability 1: after the first step.
    let (st, b) = message(&c, &url, 9, 1, Some("crash-p=1:42"));
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{b}");
    assert_eq!(b["crashed_after"], "load_state");
    // Redelivered, message 8 is completed by the redo and then handled.
    let (st, b) = message(&c, &url, 8, 1, None);
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b["sent"]["msg_id"], 8);

    let x = outbox_export(&c, &url);
    let keys: Vec<&str> = x.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 4, "{x}");
    for k in ["state_log", "outbox", "out_queue", "processed"] {
        assert!(x[k].is_array(), "{k}: {x}");
    }
    let head = &x["state_log"][0];
    assert_eq!(head["ver"], 0);
    for col in ["ver", "msg_id", "tx_id", "kind"] {
        assert!(head.get(col).is_some(), "{head}");
    }
    let changes = x["state_log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "change")
        .count();
    assert_eq!(
        changes, 2,
        "messages 7 and 8 changed the state once each: {x}"
    );
    assert_eq!(x["outbox"][0], json!({"msg_id": 7, "ver": 0}));
    assert_eq!(x["out_queue"][0]["msg_id"], 7);
    assert!(x["out_queue"][0]["seq"].is_i64());
    let processed = x["processed"].as_array().unwrap();
    assert!(
        processed.contains(&json!({"msg_id": 7, "dup_id": 2})),
        "{x}"
    );

    // Out of the contract: 422 (wrong shape), 400 (no JSON).
    let r = c
        .post(format!("{url}/v1/messages"))
        .json(&json!({"id": "x"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let r = c
        .post(format!("{url}/v1/messages"))
        .body("{")
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);

    // The groups endpoints on an outbox server: 404, saying why.
    let r = c
        .post(format!("{url}/v1/events"))
        .json(&json!({"id": "e1", "project": "p", "fingerprint": "f"}))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.text().unwrap().contains("outbox variant"));
    // Even a malformed event: the endpoint is not served, so no 400.
    let r = c.post(format!("{url}/v1/events")).body("{").send().unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.text().unwrap().contains("an outbox variant"));
    let r = c.get(format!("{url}/v1/export")).send().unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[test]
fn a_groups_server_answers_the_outbox_endpoints_with_404() {
    let s = Server::start("groups-atomic");
    let c = client();
    let (st, b) = message(&c, &s.url, 1, 1, None);
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert!(
        b["error"].as_str().unwrap().contains("groups variant"),
        "{b}"
    );
    let r = c.get(format!("{}/v1/outbox/export", s.url)).send().unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[test]
fn the_hook_is_ignored_without_fault_hooks() {
    let s = Server::start("outbox-protocol");
    let (st, b) = message(&client(), &s.url, 1, 1, Some("crash-after=load_state"));
    assert_eq!(st, StatusCode::OK, "{b}");
}

const SMALL: [&str; 6] = [
    "--set",
    "outbox.messages=300",
    "--set",
    "outbox.handlers=8",
    "--set",
    "stop.duration=\"60s\"",
];

#[test]
fn a_spawned_protocol_run_holds_under_crashes_at_every_step() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = vec!["run", "scenarios/outbox-http.toml", "-q", "--out"];
    args.push(out.to_str().unwrap());
    args.extend(SMALL);
    let o = specstorm(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary(&out);
    for name in [
        "TypeOK",
        "AtMostOneStateChange",
        "AtMostOneOutQueueMsg",
        "ConsistentStateAndOutQueue",
        "NoLostOutput",
    ] {
        assert_eq!(verdict(&s, name), "holds", "{name}");
    }
    assert!(s["target"].as_str().unwrap().starts_with("http "));
    assert_eq!(s["outbox"]["liveness"]["acked_messages"], 300);
    assert!(s["outbox"]["crashed"].as_u64().unwrap() > 0, "{s}");
    assert!(out.join("export.json").exists());
    // The history has no step log and names the server's crashes.
    let h = crate::common::folder::history_text(&out).unwrap();
    let header: Value = serde_json::from_str(h.lines().next().unwrap()).unwrap();
    assert_eq!(header["step_log"], false, "{header}");
    assert!(h.contains("(fault hook)"));
    assert!(h.contains("\"sent\":["));
}

#[test]
fn each_naive_variant_is_caught_over_http() {
    for (variant, violated) in [
        ("outbox-naive-no-outbox", "AtMostOneOutQueueMsg"),
        ("outbox-naive-no-redo", "AtMostOneStateChange"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        let scenario = format!("scenarios/{variant}.toml");
        let mut args = vec![
            "run",
            &scenario,
            "-q",
            "--set",
            "target.kind=\"http\"",
            "--set",
            "target.spawn=true",
            "--out",
        ];
        args.push(out.to_str().unwrap());
        args.extend(SMALL);
        let o = specstorm(&args);
        // The scenarios expect their violations: found, exit 0.
        assert_eq!(
            o.status.code(),
            Some(0),
            "{variant}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        let s = summary(&out);
        assert_eq!(verdict(&s, violated), "violated", "{variant}");
        assert_eq!(verdict(&s, "TypeOK"), "holds", "{variant}");
    }
}

#[test]
fn an_external_target_that_holds_rows_is_refused() {
    let s = Server::start("outbox-protocol");
    let (st, _) = message(&client(), &s.url, 1, 1, None);
    assert_eq!(st, StatusCode::OK);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let sc = external(tmp.path(), &s.url, 5);
    let o = specstorm(&["run", &sc, "-q", "--out", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("already holds"));
}

/// A scenario file in `dir`: the outbox protocol against the external
/// service at `url`, `messages` x 2, no faults. Returns its path.
fn external(dir: &Path, url: &str, messages: u32) -> String {
    let p = dir.join("external.toml");
    std::fs::write(
        &p,
        format!(
            "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n[target]\nkind = \"http\"\n\
             url = \"{url}\"\n[outbox]\nmessages = {messages}\ndeliveries = 2\nhandlers = 2\n\
             [stop]\nduration = \"30s\"\n"
        ),
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

/// A service that speaks the outbox export (empty) and healthz, but
/// answers every delivery `200 {"ok": 1}`.
fn out_of_contract_server() -> u16 {
    crate::common::http::fake_server(|line| {
        let answer = if line.contains("/v1/outbox/export") {
            r#"{"state_log":[{"ver":0,"msg_id":null,"tx_id":null}],"outbox":[],"out_queue":[],"processed":[]}"#
        } else if line.contains("/v1/messages") {
            r#"{"ok":1}"#
        } else {
            "{}"
        };
        ("application/json", answer.to_owned())
    })
}

#[test]
fn an_answer_out_of_contract_exits_3_naming_an_example() {
    let port = out_of_contract_server();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let sc = external(tmp.path(), &format!("http://127.0.0.1:{port}"), 5);
    let o = specstorm(&[
        "run",
        &sc,
        "-q",
        "--set",
        "outbox.max_attempts=2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary(&out);
    let rule = s["exit"]["rule"].as_str().unwrap();
    assert!(rule.contains("not the contract's shape"), "{rule}");
    assert!(rule.contains("\"ok\""), "{rule}");
    // Nothing was acked: no message is judged, none reported violated.
    for (_, v) in s["invariants"].as_object().unwrap() {
        assert_ne!(v["verdict"], "violated", "{s}");
    }
}

#[test]
fn an_empty_external_target_is_loaded_and_audited() {
    let s = Server::start("outbox-protocol");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let sc = external(tmp.path(), &s.url, 50);
    let o = specstorm(&["run", &sc, "-q", "--out", out.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let s = summary(&out);
    assert_eq!(verdict(&s, "ConsistentStateAndOutQueue"), "holds");
    // Without faults, the liveness report applies and holds.
    assert_eq!(s["outbox"]["liveness"]["holds"], true, "{s}");
}

#[test]
fn without_a_step_log_an_info_attempt_may_have_run_its_ack() {
    use specstorm::history::{CompletionType, Delivery};
    use specstorm::workload::outbox::checker::{consistent, Attempt, OutboxFacts, OutboxTables};
    use specstorm::workload::outbox::header::OutboxHeader;
    let attempt = |op, completion| Attempt {
        op,
        delivery: Delivery {
            msg_id: 1,
            dup_id: 1,
            attempt: op as u32 + 1,
            tx_id: 0,
        },
        t0: op * 10,
        t1: Some(op * 10 + 5),
        completion: Some(completion),
        error: None,
        crashed_after: None,
        steps: Vec::new(),
    };
    let tables = OutboxTables {
        processed: vec![(Some(1), Some(1))],
        ..Default::default()
    };
    for (no_step_log, completion, expected) in [
        // HTTP: the server may have run the ack before its answer was lost.
        (true, CompletionType::Info, 0),
        // HTTP: a 4xx applied nothing.
        (true, CompletionType::Fail, 1),
        // In process: the (empty) step log says no ack step ran.
        (false, CompletionType::Info, 1),
    ] {
        let mut f = OutboxFacts {
            header: Some(OutboxHeader {
                messages: 1,
                deliveries: 1,
                max_attempts: 1,
            }),
            attempts: vec![attempt(0, completion)],
            no_step_log,
            ..Default::default()
        };
        f.index();
        assert!(f.by_tx.is_empty() == no_step_log);
        let d = consistent::disagreements(&f, &tables);
        assert_eq!(d.table_only.len(), expected, "{no_step_log} {completion:?}");
    }
}
