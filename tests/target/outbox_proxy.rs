//! The fault proxy in front of an outbox target: the proxy draws its
//! toxics for the `handle` requests (`POST /v1/messages`), the narrowing
//! rule the outbox checkers take from its records (a request it never
//! forwarded ran no step; a dropped answer narrows nothing), the
//! answer's attempt end relayed (the lost compare-and-swap count), and whole
//! runs over the spawned reference server: the protocol holds under every
//! toxic for several seeds, and each naive variant is still caught.

use crate::common::{specstorm, summary, text, verdict, Server};

use serde_json::Value;
use specstorm::clock::Clock;
use specstorm::fault_kind::FaultKind;
use specstorm::history::writer::HistoryWriter;
use specstorm::history::{
    reader, Completion, CompletionType, Delivery, DroppedResponse, Entry, FaultAction, FaultEntry,
    Header, Invoke, OpKind, OpResult, HISTORY_SCHEMA_VERSION,
};
use specstorm::nemesis::proxy::FaultProxy;
use specstorm::nemesis::{FaultPlan, Recorder};
use specstorm::scenario::{Fault, FaultOps, Toxic};
use specstorm::target::http::client::{HttpClient, Tag};
use specstorm::workload::outbox::checker::{consistent, OutboxFacts, OutboxTables};
use specstorm::workload::outbox::header::OutboxHeader;
use specstorm::workload::outbox::http_client::handle;
use specstorm::workload::outbox::AttemptEnd;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A proxy fault of `toxic` hitting `ops` with probability `p`.
fn fault(toxic: Toxic, p: f64, ops: Option<FaultOps>) -> Fault {
    Fault {
        kind: FaultKind::Proxy,
        start: Duration::ZERO,
        stop: None,
        probability: Some(p),
        ops,
        per: None,
        step: None,
        delay: (toxic == Toxic::Latency).then_some(Duration::from_millis(5)),
        jitter: (toxic == Toxic::Latency).then_some(Duration::ZERO),
        toxic: Some(toxic),
        status: (toxic == Toxic::Error).then_some(503),
        every: None,
        hold: None,
    }
}

/// One delivery of message `msg` by the bench's client through `url`,
/// tagged as op `op`.
fn deliver(url: &str, op: u64, msg: i64) -> specstorm::target::http::client::Answer {
    let tag = Tag {
        op,
        key: op,
        hook: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = HttpClient::new(url, Duration::from_secs(2), Duration::from_secs(20)).unwrap();
        handle(&c, msg, 1, Some(&tag)).await
    })
}

/// The message ids of `processed`, read from the server itself.
fn processed(url: &str) -> Vec<i64> {
    let x: Value = crate::common::http::client()
        .get(format!("{url}/v1/outbox/export"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    x["processed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["msg_id"].as_i64().unwrap())
        .collect()
}

/// The fault entries of the history at `path`.
fn fault_entries(path: &Path) -> Vec<FaultEntry> {
    reader::read(path)
        .unwrap()
        .filter_map(|e| match e.unwrap() {
            Entry::Fault(f) => Some(f),
            _ => None,
        })
        .collect()
}

#[test]
fn the_proxy_draws_its_toxics_for_outbox_deliveries() {
    for (toxic, forwarded, applied) in [
        // Never forwarded: the server never saw the delivery.
        (Toxic::Reset, Some(false), false),
        (Toxic::Error, Some(false), false),
        // Forwarded, handled, its answer dropped: info, yet processed.
        (Toxic::DropResponse, Some(true), true),
    ] {
        let server = Server::start("outbox-protocol");
        let dir = tempfile::tempdir().unwrap();
        let history = dir.path().join("history.jsonl");
        let writer = HistoryWriter::create(&history).unwrap();
        let clock = Clock::start();
        let recorder = Recorder {
            plan: Arc::new(FaultPlan::new(
                42,
                &[fault(toxic, 1.0, Some(FaultOps::Handle))],
            )),
            sink: writer.sink(),
            clock,
        };
        let mut proxy = FaultProxy::start(&server.url, recorder, clock.now()).unwrap();
        let a = deliver(&proxy.url, 7, 7);
        assert_eq!(a.kind, CompletionType::Info, "{toxic:?}: {a:?}");
        // The export passes untouched (it carries no op's tag).
        let done = processed(&proxy.url);
        assert_eq!(done == [7], applied, "{toxic:?}: {done:?}");
        proxy.stop();
        drop(proxy);
        writer.finish().unwrap();
        let faults = fault_entries(&history);
        assert_eq!(faults.len(), 1, "{toxic:?}: {faults:?}");
        let f = &faults[0];
        assert_eq!(
            (f.kind, f.action, f.op, f.forwarded),
            (FaultKind::Proxy, FaultAction::Inject, Some(7), forwarded),
            "{toxic:?}"
        );
        if toxic == Toxic::DropResponse {
            // What the server answered, though the bench never heard it.
            let d = f.detail.as_deref().unwrap();
            assert!(d.contains("\"acked\":true"), "{d}");
        }
    }
    // A fault for groups' ingests only leaves deliveries alone.
    let server = Server::start("outbox-protocol");
    let dir = tempfile::tempdir().unwrap();
    let writer = HistoryWriter::create(&dir.path().join("h.jsonl")).unwrap();
    let clock = Clock::start();
    let recorder = Recorder {
        plan: Arc::new(FaultPlan::new(
            42,
            &[fault(Toxic::Reset, 1.0, Some(FaultOps::Ingest))],
        )),
        sink: writer.sink(),
        clock,
    };
    let proxy = FaultProxy::start(&server.url, recorder, clock.now()).unwrap();
    let a = deliver(&proxy.url, 1, 3);
    assert_eq!(a.kind, CompletionType::Ok, "{a:?}");
    assert_eq!(processed(&proxy.url), [3]);
}

/// An upstream that answers every delivery as the reference server
/// answers a lost compare-and-swap: 503, naming the end in its header.
fn cas_losing_upstream() -> String {
    use axum::http::StatusCode;
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(|| async {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(AttemptEnd::HEADER, AttemptEnd::CasLost.name())],
                r#"{"error": "lost"}"#,
            )
        }),
    );
    crate::common::http::serve_router(app)
}

#[test]
fn the_proxy_relays_how_a_delivery_ended() {
    let upstream = cas_losing_upstream();
    // Untouched (no fault drawn), and answered after a latency toxic.
    for faults in [vec![], vec![fault(Toxic::Latency, 1.0, None)]] {
        let dir = tempfile::tempdir().unwrap();
        let writer = HistoryWriter::create(&dir.path().join("h.jsonl")).unwrap();
        let clock = Clock::start();
        let recorder = Recorder {
            plan: Arc::new(FaultPlan::new(42, &faults)),
            sink: writer.sink(),
            clock,
        };
        let proxy = FaultProxy::start(&upstream, recorder, clock.now()).unwrap();
        let a = deliver(&proxy.url, 1, 1);
        assert_eq!(a.kind, CompletionType::Info, "{a:?}");
        assert_eq!(
            a.attempt_end,
            Some(AttemptEnd::CasLost),
            "{faults:?}: {a:?}"
        );
    }
}

/// A hand-made HTTP outbox history: deliveries (m, 1) for m = 1..=5, one
/// attempt each (op m), all `info`; the proxy reset op 1 and answered op
/// 4 with an injected 503 (neither forwarded), dropped op 2's answer after
/// the server acked it, and delayed op 3; op 5 timed out untouched.
fn hand_made_history() -> Vec<Entry> {
    let mut h = vec![Entry::Header(Header {
        schema_version: HISTORY_SCHEMA_VERSION,
        workload: "outbox".into(),
        scenario: "hand-made".into(),
        variant: "outbox-protocol".into(),
        seed: 1,
        started_utc: "2026-01-01T00:00:00.000Z".into(),
        step_log: false,
        counting_step: 0,
        event_step: None,
        namespace: String::new(),
        ingest_steps: Vec::new(),
        ingest_block: None,
        shard: None,
        merged: None,
        workload_part: OutboxHeader {
            messages: 5,
            deliveries: 1,
            max_attempts: 1,
        }
        .into_part(),
    })];
    let proxy = |op: u64, forwarded: Option<bool>, detail: &str| {
        // A dropped answer carries what the server answered.
        let dropped = detail
            .split_once(": upstream answered 200: ")
            .map(|(_, body)| DroppedResponse {
                status: 200,
                body: Some(body.into()),
            });
        Entry::Fault(FaultEntry {
            t: op * 100 + 1,
            fault: 0,
            kind: FaultKind::Proxy,
            action: FaultAction::Inject,
            op: Some(op),
            step: None,
            forwarded,
            detail: Some(detail.into()),
            dropped,
        })
    };
    // The proxy records before the client hears anything: its entry comes
    // before the attempt's own (written at its completion).
    for op in 1..=5u64 {
        match op {
            1 => h.push(proxy(op, Some(false), "reset")),
            2 => h.push(proxy(
                op,
                Some(true),
                r#"drop_response: upstream answered 200: {"acked":true,"sent":{"msg_id":2,"ver":0}}"#,
            )),
            3 => h.push(proxy(op, None, "latency 5ms")),
            4 => h.push(proxy(op, Some(false), "error 503")),
            _ => {}
        }
        h.push(Entry::Invoke(Invoke {
            t: op * 100,
            op,
            worker: 0,
            f: OpKind::Handle,
            delivery: Some(Delivery {
                msg_id: op as i64,
                dup_id: 1,
                attempt: 1,
                tx_id: 0,
            }),
            event_id: None,
            project: String::new(),
            fingerprint: String::new(),
            group_id: String::new(),
            attempt: None,
            intended: None,
        }));
        h.push(Entry::completion(
            CompletionType::Info,
            Completion {
                t: op * 100 + 50,
                op,
                worker: 0,
                f: OpKind::Handle,
                result: OpResult {
                    error: Some("no answer".into()),
                    ..Default::default()
                },
            },
        ));
    }
    h
}

#[test]
fn a_request_the_proxy_never_forwarded_ran_no_step_and_a_dropped_answer_narrows_nothing() {
    let facts = OutboxFacts::read(hand_made_history().into_iter().map(Ok::<_, String>)).unwrap();
    assert_eq!(facts.attempts.len(), 5);
    // No delivery was acked by the bench: nothing is judged by the two
    // rules of acked messages, whatever the server did.
    assert!(facts.acked_history.is_empty());
    // Every delivery holds a `processed` row: ops 2, 3 and 5 may have run
    // their ack step (2 did: its dropped answer says so), ops 1 and 4
    // cannot have: their rows are disagreements no attempt explains.
    let tables = OutboxTables {
        processed: (1..=5).map(|m| (Some(m), Some(1))).collect(),
        ..Default::default()
    };
    let d = consistent::disagreements(&facts, &tables);
    assert_eq!(d.table_only, [(Some(1), Some(1)), (Some(4), Some(1))]);
    assert_eq!(d.by_indeterminate, 3);
    assert!(d.history_only.is_empty());
    // Without those rows, nothing disagrees: a never-forwarded attempt
    // that wrote nothing is what the proxy said.
    let tables = OutboxTables {
        processed: vec![(Some(2), Some(1)), (Some(3), Some(1))],
        ..Default::default()
    };
    let d = consistent::disagreements(&facts, &tables);
    assert!(d.table_only.is_empty(), "{d:?}");
    assert_eq!(d.by_indeterminate, 2);
    // The finding's evidence says why op 1 explains nothing.
    let ev = facts.evidence_of(1);
    assert!(
        ev.iter().any(|e| e.op == Some(1)
            && e.what
                .contains("the fault proxy never forwarded its request")),
        "{ev:?}"
    );
}

/// A scenario file in `dir` running `variant` over the spawned reference
/// server with `seed`: 300 messages x 3, every proxy toxic at 5% per
/// request, and the spec's Fail() at every step through the fault hook.
fn proxied_scenario(dir: &Path, variant: &str, seed: u64, expect: &str) -> String {
    let p = dir.join(format!("{variant}-{seed}.toml"));
    std::fs::write(
        &p,
        format!(
            r#"workload = "outbox"
variant = "{root}/targets/sqlite/{variant}.sql"
seed = {seed}
{expect}

[target]
kind = "http"
spawn = true
server_workers = 8
request_timeout = "10s"
journal_mode = "wal"
synchronous = "normal"
busy_timeout = "5s"

[outbox]
messages = 300
deliveries = 3
handlers = 8
max_attempts = 1000

[stop]
duration = "90s"

[[faults]]
kind = "crash"
ops = "handle"
per = "step"
probability = 0.02

[[faults]]
kind = "proxy"
toxic = "latency"
probability = 0.05
delay = "2ms"
jitter = "3ms"

[[faults]]
kind = "proxy"
toxic = "drop_response"
probability = 0.05

[[faults]]
kind = "proxy"
toxic = "reset"
probability = 0.05

[[faults]]
kind = "proxy"
toxic = "error"
probability = 0.05
status = 503
"#,
            root = env!("CARGO_MANIFEST_DIR")
        ),
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

/// Runs the scenario into `dir/run`; returns the summary and the history.
fn run(dir: &Path, scenario: &str) -> (Value, String, std::process::Output) {
    let out = dir.join("run");
    let o = specstorm(&["run", scenario, "-q", "--out", out.to_str().unwrap()]);
    let h = crate::common::folder::history_text(&out).unwrap_or_else(|_| panic!("{}", text(&o)));
    (summary(&out), h, o)
}

/// How many proxy injections of each toxic the history records.
fn injections(history: &str) -> [usize; 4] {
    let mut n = [0; 4];
    for line in history.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["kind"] != "proxy" || e["action"] != "inject" {
            continue;
        }
        let d = e["detail"].as_str().unwrap_or_default();
        let i = ["latency", "drop_response", "reset", "error"]
            .iter()
            .position(|t| d.starts_with(t))
            .unwrap_or_else(|| panic!("{line}"));
        n[i] += 1;
    }
    n
}

const OUTBOX_INVARIANTS: [&str; 5] = [
    "TypeOK",
    "AtMostOneStateChange",
    "AtMostOneOutQueueMsg",
    "ConsistentStateAndOutQueue",
    "NoLostOutput",
];

#[test]
fn the_protocol_holds_under_every_proxy_toxic_for_several_seeds() {
    for seed in 1..=5 {
        let tmp = tempfile::tempdir().unwrap();
        let sc = proxied_scenario(tmp.path(), "outbox-protocol", seed, "");
        let (s, h, o) = run(tmp.path(), &sc);
        assert_eq!(o.status.code(), Some(0), "seed {seed}: {}", text(&o));
        for name in OUTBOX_INVARIANTS {
            assert_eq!(verdict(&s, name), "holds", "seed {seed}: {name}: {s}");
        }
        // The queue drained: every delivery was acked through the proxy.
        assert_eq!(s["outbox"]["liveness"]["acked_messages"], 300, "{s}");
        // Every toxic hit some deliveries (the first attempts' draws are
        // fixed by the seed: 900 of them at 5% each).
        let n = injections(&h);
        assert!(n.iter().all(|&k| k > 0), "seed {seed}: {n:?}");
        assert_eq!(
            s["faults_injected"]["proxy"],
            n.iter().sum::<usize>(),
            "{s}"
        );
    }
}

#[test]
fn each_naive_variant_is_still_caught_under_proxy_faults() {
    for (variant, violated) in [
        ("outbox-naive-no-outbox", "AtMostOneOutQueueMsg"),
        ("outbox-naive-no-redo", "AtMostOneStateChange"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let sc = proxied_scenario(tmp.path(), variant, 1, "");
        let (s, h, _) = run(tmp.path(), &sc);
        assert_eq!(verdict(&s, violated), "violated", "{variant}: {s}");
        assert_eq!(verdict(&s, "TypeOK"), "holds", "{variant}: {s}");
        assert!(injections(&h).iter().all(|&k| k > 0), "{variant}");
    }
}
