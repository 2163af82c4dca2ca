//! The built-in fault proxy (`nemesis::proxy`) in front of the reference
//! server: what each toxic does to the client's completion, what reaches
//! the database, the fault entries in the history, untagged requests,
//! fault windows and op filters, an unreachable upstream, a bounded stop,
//! and the determinism of the decisions.

use crate::common::Server;

use reqwest::blocking::Client;
use reqwest::StatusCode;
use serde_json::{json, Value};
use specstorm::clock::Clock;
use specstorm::draws::op_key;
use specstorm::fault_kind::FaultKind;
use specstorm::history::writer::HistoryWriter;
use specstorm::history::{reader, CompletionType, Entry, FaultAction, FaultEntry};
use specstorm::nemesis::proxy::FaultProxy;
use specstorm::nemesis::{FaultPlan, ProxyAction, Recorder};
use specstorm::scenario::{Fault, FaultOps, Toxic};
use specstorm::target::http::client::{HttpClient, Tag};
use specstorm::workload::groups::http_client::{ingest, IngestEvent};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A proxy fault of `toxic` with probability 1 and the loader's defaults.
fn fault(toxic: Toxic) -> Fault {
    Fault {
        kind: FaultKind::Proxy,
        start: Duration::ZERO,
        stop: None,
        probability: Some(1.0),
        ops: None,
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

/// A reference server, a fault proxy in front of it, and a history file.
struct Bench {
    server: Option<Server>,
    proxy: FaultProxy,
    writer: HistoryWriter,
    history: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn new(faults: &[Fault]) -> Bench {
        Bench::with_upstream(faults, None)
    }

    /// `upstream`: None = a fresh reference server.
    fn with_upstream(faults: &[Fault], upstream: Option<&str>) -> Bench {
        let server = upstream.is_none().then(|| Server::start("groups-atomic"));
        let dir = tempfile::tempdir().unwrap();
        let history = dir.path().join("history.jsonl");
        let writer = HistoryWriter::create(&history).unwrap();
        let clock = Clock::start();
        let recorder = Recorder {
            plan: Arc::new(FaultPlan::new(42, faults)),
            sink: writer.sink(),
            clock,
        };
        let proxy = FaultProxy::start(
            upstream.unwrap_or_else(|| &server.as_ref().unwrap().url),
            recorder,
            clock.now(),
        )
        .unwrap();
        assert!(proxy.url.starts_with("http://127.0.0.1:"), "{}", proxy.url);
        assert!(!proxy.url.ends_with(":0"), "{}", proxy.url);
        Bench {
            server,
            proxy,
            writer,
            history,
            _dir: dir,
        }
    }

    /// Stops the proxy, closes the history, returns its fault entries.
    fn finish(self) -> Vec<FaultEntry> {
        let Bench {
            server,
            mut proxy,
            writer,
            history,
            _dir,
        } = self;
        proxy.stop();
        drop(proxy);
        writer.finish().unwrap();
        drop(server);
        reader::read(&history)
            .unwrap()
            .filter_map(|e| match e.unwrap() {
                Entry::Fault(f) => Some(f),
                _ => None,
            })
            .collect()
    }
}

fn client() -> Client {
    specstorm::target::http::tls::install_provider();
    Client::builder()
        .timeout(Duration::from_secs(20))
        .no_proxy()
        .build()
        .unwrap()
}

fn event(id: &str) -> Value {
    json!({"id": id, "project": "p", "fingerprint": "f", "message": "boom"})
}

/// `POST /v1/events` tagged as op `op` (key = its op id).
fn tagged_ingest(
    c: &Client,
    url: &str,
    op: u64,
    id: &str,
) -> reqwest::Result<reqwest::blocking::Response> {
    c.post(format!("{url}/v1/events"))
        .header("x-specstorm-op", op.to_string())
        .header("x-specstorm-key", op_key(0, op, 0).to_string())
        .header("x-specstorm-f", "ingest")
        .json(&event(id))
        .send()
}

/// `POST /v1/groups/g:p:f/resolve` tagged as op `op`.
fn tagged_resolve(c: &Client, url: &str, op: u64) -> reqwest::Result<reqwest::blocking::Response> {
    c.post(format!("{url}/v1/groups/g:p:f/resolve"))
        .header("x-specstorm-op", op.to_string())
        .header("x-specstorm-key", op_key(1, op, 0).to_string())
        .header("x-specstorm-f", "resolve")
        .send()
}

/// The event ids in the export, read through `url` (untagged: passes).
fn exported_ids(c: &Client, url: &str) -> Vec<String> {
    let r = c.get(format!("{url}/v1/export")).send().unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let x: Value = r.json().unwrap();
    x["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

/// One ingest of event `id` by the bench's `HttpClient`, tagged as op `op`.
fn http_client_ingest(proxy: &str, op: u64, id: &str) -> specstorm::target::http::client::Answer {
    let tag = Tag {
        op,
        key: op_key(0, op, 0),
        hook: None,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = HttpClient::new(proxy, Duration::from_secs(2), Duration::from_secs(20)).unwrap();
        ingest(
            &c,
            IngestEvent {
                event_id: id,
                project: "p",
                fingerprint: "f",
                message: "boom",
            },
            Some(&tag),
        )
        .await
    })
}

fn assert_inject(e: &FaultEntry, op: u64, forwarded: impl Into<Option<bool>>) {
    assert_eq!(e.fault, 0, "{e:?}");
    assert_eq!(e.kind, FaultKind::Proxy, "{e:?}");
    assert_eq!(e.action, FaultAction::Inject, "{e:?}");
    assert_eq!(e.op, Some(op), "{e:?}");
    assert_eq!(e.step, None, "{e:?}");
    assert_eq!(e.forwarded, forwarded.into(), "{e:?}");
}

#[test]
fn latency_forwards_and_records_the_delay() {
    let b = Bench::new(&[fault(Toxic::Latency)]);
    let c = client();
    let r = tagged_ingest(&c, &b.proxy.url, 1, "e1").unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"accepted": true, "group_id": "g:p:f"})
    );
    // The bench's client reads it as ok.
    let a = http_client_ingest(&b.proxy.url, 2, "e2");
    assert_eq!(a.kind, CompletionType::Ok, "{a:?}");
    assert_eq!(a.result.accepted, Some(true));
    assert_eq!(a.group_id.as_deref(), Some("g:p:f"));
    let mut ids = exported_ids(&c, &b.proxy.url);
    ids.sort();
    assert_eq!(ids, ["e1", "e2"]);
    let faults = b.finish();
    assert_eq!(faults.len(), 2, "{faults:?}");
    for (e, op) in faults.iter().zip([1, 2]) {
        assert_inject(e, op, None);
        assert_eq!(e.detail.as_deref(), Some("latency 5ms"));
    }
}

#[test]
fn drop_response_is_info_but_committed() {
    let b = Bench::new(&[fault(Toxic::DropResponse)]);
    let c = client();
    // No answer at all, and not a connect error.
    let err = tagged_ingest(&c, &b.proxy.url, 1, "e1").unwrap_err();
    assert!(!err.is_connect() && !err.is_timeout(), "{err:?}");
    // The bench's client: info, a transport error, not a 200.
    let a = http_client_ingest(&b.proxy.url, 2, "e2");
    assert_eq!(a.kind, CompletionType::Info, "{a:?}");
    assert!(a.transport, "{a:?}");
    assert_eq!(a.result.accepted, None, "{a:?}");
    assert_eq!(a.group_id, None, "{a:?}");
    // Both were committed by the server before the answer was dropped.
    let mut ids = exported_ids(&c, &b.proxy.url);
    ids.sort();
    assert_eq!(ids, ["e1", "e2"]);
    let faults = b.finish();
    assert_eq!(faults.len(), 2, "{faults:?}");
    for (e, op) in faults.iter().zip([1, 2]) {
        assert_inject(e, op, true);
        let d = e.detail.as_deref().unwrap();
        assert!(d.contains("drop_response") && d.contains("200"), "{d}");
    }
}

#[test]
fn reset_is_info_and_not_forwarded() {
    let b = Bench::new(&[fault(Toxic::Reset)]);
    let c = client();
    let err = tagged_ingest(&c, &b.proxy.url, 1, "e1").unwrap_err();
    assert!(!err.is_connect() && !err.is_timeout(), "{err:?}");
    let a = http_client_ingest(&b.proxy.url, 2, "e2");
    assert_eq!(a.kind, CompletionType::Info, "{a:?}");
    assert!(a.transport, "{a:?}");
    // A resolve is reset the same way.
    assert!(tagged_resolve(&c, &b.proxy.url, 3).is_err());
    assert!(exported_ids(&c, &b.proxy.url).is_empty());
    let faults = b.finish();
    assert_eq!(faults.len(), 3, "{faults:?}");
    for (e, op) in faults.iter().zip([1, 2, 3]) {
        assert_inject(e, op, false);
        assert_eq!(e.detail.as_deref(), Some("reset"));
    }
}

#[test]
fn error_answers_the_status_and_is_not_forwarded() {
    let b = Bench::new(&[fault(Toxic::Error)]);
    let c = client();
    let r = tagged_ingest(&c, &b.proxy.url, 1, "e1").unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"error": "injected by the specstorm fault proxy"})
    );
    let a = http_client_ingest(&b.proxy.url, 2, "e2");
    assert_eq!(a.kind, CompletionType::Info, "{a:?}");
    assert!(!a.transport, "{a:?}");
    assert!(a.result.error.as_deref().unwrap().contains("503"), "{a:?}");
    assert!(exported_ids(&c, &b.proxy.url).is_empty());
    let faults = b.finish();
    assert_eq!(faults.len(), 2, "{faults:?}");
    for (e, op) in faults.iter().zip([1, 2]) {
        assert_inject(e, op, false);
        assert_eq!(e.detail.as_deref(), Some("error 503"));
    }
}

#[test]
fn error_status_is_the_faults() {
    let mut f = fault(Toxic::Error);
    f.status = Some(500);
    let b = Bench::new(&[f]);
    let r = tagged_ingest(&client(), &b.proxy.url, 7, "e1").unwrap();
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let faults = b.finish();
    assert_eq!(faults.len(), 1);
    assert_inject(&faults[0], 7, false);
    assert_eq!(faults[0].detail.as_deref(), Some("error 500"));
}

#[test]
fn untagged_requests_pass_untouched() {
    let b = Bench::new(&[fault(Toxic::Reset)]);
    let (c, url) = (client(), b.proxy.url.clone());
    let r = c.get(format!("{url}/healthz")).send().unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().unwrap(), json!({"status": "ok"}));
    let r = c
        .post(format!("{url}/v1/events"))
        .json(&event("e1"))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"accepted": true, "group_id": "g:p:f"})
    );
    // Incomplete or malformed tags count as none.
    let r = c
        .post(format!("{url}/v1/events"))
        .header("x-specstorm-op", "1")
        .header("x-specstorm-key", "not a number")
        .header("x-specstorm-f", "ingest")
        .json(&event("e2"))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = c
        .post(format!("{url}/v1/events"))
        .header("x-specstorm-op", "1")
        .json(&event("e3"))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    // The server's own answers come back as they are: status, body, query.
    let r = c
        .post(format!("{url}/v1/events?x=1"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.json::<Value>().unwrap()["error"].is_string());
    let r = c.post(format!("{url}/v1/reset")).send().unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = c
        .post(format!("{url}/v1/groups/g:p:f/resolve"))
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(
        r.json::<Value>().unwrap(),
        json!({"resolved": true, "event_count": 3})
    );
    let mut ids = exported_ids(&c, &url);
    ids.sort();
    assert_eq!(ids, ["e1", "e2", "e3"]);
    assert!(b.finish().is_empty());
}

#[test]
fn windows_and_op_filters_are_honoured() {
    // Fault 0: reset, but only from an hour into the load. Fault 1: error,
    // resolves only.
    let mut later = fault(Toxic::Reset);
    later.start = Duration::from_secs(3600);
    let mut resolves = fault(Toxic::Error);
    resolves.ops = Some(FaultOps::Resolve);
    let b = Bench::new(&[later, resolves]);
    let c = client();
    let r = tagged_ingest(&c, &b.proxy.url, 1, "e1").unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = tagged_resolve(&c, &b.proxy.url, 2).unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(exported_ids(&c, &b.proxy.url), ["e1"]);
    let faults = b.finish();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!(faults[0].fault, 1);
    assert_eq!(faults[0].op, Some(2));
    assert_eq!(faults[0].forwarded, Some(false));
}

#[test]
fn upstream_down_is_502_and_not_recorded() {
    // A port nobody listens on.
    let free = TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", free.local_addr().unwrap());
    drop(free);
    for toxic in [Toxic::DropResponse, Toxic::Latency] {
        let b = Bench::with_upstream(&[fault(toxic)], Some(&down));
        let c = client();
        // The client's 20 s timeout would fail the test if the proxy hung.
        let r = tagged_ingest(&c, &b.proxy.url, 1, "e1").unwrap();
        assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
        assert!(r.json::<Value>().unwrap()["error"]
            .as_str()
            .unwrap()
            .contains("unreachable"));
        let r = c.get(format!("{}/healthz", b.proxy.url)).send().unwrap();
        assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
        // A latency toxic is recorded before its wait (it hit the op),
        // with nothing said about the server; a drop never happened.
        let faults = b.finish();
        match toxic {
            Toxic::Latency => {
                assert_eq!(faults.len(), 1, "{faults:?}");
                assert_eq!(faults[0].forwarded, None);
            }
            _ => assert!(faults.is_empty(), "{faults:?}"),
        }
    }
}

#[test]
fn upstream_killed_midrun_is_502() {
    // The server dies (as under a kill fault) while the proxy holds a
    // pooled connection to it: the next request is a 502, not recorded.
    let b = Bench::new(&[fault(Toxic::Latency)]);
    let c = client();
    assert_eq!(
        tagged_ingest(&c, &b.proxy.url, 1, "e1").unwrap().status(),
        StatusCode::OK
    );
    let Bench {
        server,
        proxy,
        writer,
        history,
        _dir,
    } = b;
    drop(server);
    let r = tagged_ingest(&c, &proxy.url, 2, "e2").unwrap();
    assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
    drop(proxy);
    writer.finish().unwrap();
    let injected: Vec<u64> = reader::read(&history)
        .unwrap()
        .filter_map(|e| match e.unwrap() {
            Entry::Fault(f) => f.op,
            _ => None,
        })
        .collect();
    // Both were delayed (recorded before the wait); the second then met
    // a dead upstream and says nothing about the server.
    assert_eq!(injected, [1, 2]);
}

#[test]
fn stop_is_bounded_and_closes_the_port() {
    // A request delayed for a minute is in flight when the proxy stops.
    let mut slow = fault(Toxic::Latency);
    slow.delay = Some(Duration::from_secs(60));
    let mut b = Bench::new(&[slow]);
    let url = b.proxy.url.clone();
    let inflight = {
        let url = url.clone();
        std::thread::spawn(move || tagged_ingest(&client(), &url, 1, "e1").map(|r| r.status()))
    };
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    b.proxy.stop();
    // Bounded (a hang guard, not a latency check).
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    b.proxy.stop();
    assert!(inflight.join().unwrap().is_err());
    let addr = url.strip_prefix("http://").unwrap();
    assert!(TcpStream::connect(addr).is_err(), "still accepting");
    // The delayed request was hit (recorded before its wait), never forwarded.
    let faults = b.finish();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!(faults[0].forwarded, None);
}

#[test]
fn bad_upstream_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let writer = HistoryWriter::create(&tmp.path().join("h.jsonl")).unwrap();
    let rec = Recorder {
        plan: Arc::new(FaultPlan::new(1, &[])),
        sink: writer.sink(),
        clock: Clock::start(),
    };
    for bad in ["not a url", "ftp://127.0.0.1:1", "unix:/tmp/x"] {
        assert!(FaultProxy::start(bad, rec.clone(), 0).is_err(), "{bad}");
    }
}

#[test]
fn decisions_are_deterministic() {
    let mut latency = fault(Toxic::Latency);
    latency.probability = Some(0.3);
    latency.jitter = Some(Duration::from_millis(3));
    let mut reset = fault(Toxic::Reset);
    reset.probability = Some(0.3);
    let faults = [latency, reset];
    let decide = |seed: u64| -> Vec<(ProxyAction, Option<u32>)> {
        let plan = FaultPlan::new(seed, &faults);
        (0..1000u64)
            .map(|i| plan.proxy_action(op_key(0, i, 0), true, Duration::ZERO))
            .collect()
    };
    let a = decide(7);
    assert_eq!(a, decide(7));
    assert_ne!(a, decide(8));
    // Roughly the probabilities: 30% latency, then 30% of the rest reset.
    let delays = a
        .iter()
        .filter(|(x, _)| matches!(x, ProxyAction::Delay(_)))
        .count();
    let resets = a.iter().filter(|(x, _)| *x == ProxyAction::Reset).count();
    assert!((220..380).contains(&delays), "{delays}");
    assert!((140..280).contains(&resets), "{resets}");
    // The jitter is drawn per key too.
    let distinct: std::collections::BTreeSet<Duration> = a
        .iter()
        .filter_map(|(x, _)| match x {
            ProxyAction::Delay(d) => Some(*d),
            _ => None,
        })
        .collect();
    assert!(distinct.len() > 10, "{distinct:?}");
    // A different resend of the same op is a different draw.
    let plan = FaultPlan::new(7, &faults);
    let resent: Vec<_> = (0..1000u64)
        .map(|i| plan.proxy_action(op_key(0, i, 1), true, Duration::ZERO))
        .collect();
    assert_ne!(a, resent);
}
