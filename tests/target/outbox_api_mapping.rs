//! An outbox service with an API of its own, loaded through a scenario's
//! `[api]` mapping: the test writes that service here (an axum app with
//! other paths, bodies, field names and status codes, a bearer token) in
//! front of the reference server, whose handlers it lets crash now and
//! then (through the server's fault hook, as a real service's workers
//! die). The mapped runs audit the reference server's database directly
//! (`[audit] sqlite` with `export.*` queries) or through an export
//! request of the service's own; the protocol holds, each naive variant
//! is caught, the secret is written nowhere, and the run folder audits
//! again offline.

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::common::folder::files_under;
use crate::common::run::run_command;
use crate::common::{command, summary, text, verdict, Server};

const SECRET_VAR: &str = "SPECSTORM_TEST_OUTBOX_TOKEN";
const SECRET: &str = "obx-4d1c9e0b7a2f6358";

struct Relay {
    backend: String,
    http: reqwest::Client,
    /// Deliveries forwarded so far (every 10th is rejected unforwarded).
    served: AtomicU64,
}

fn authorized(h: &HeaderMap) -> bool {
    h.get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {SECRET}"))
}

/// `PUT /inbox/{msg}/deliveries/{dup}` with `{"received_ms": n}` ->
/// `201 {"result": {"state": "handled", "published": {"message",
/// "version"}}}`; `409 {"error": ..}` when the delivery certainly did not
/// complete (rejected before it was forwarded, or a lost
/// compare-and-swap); `500` when its handler failed midway.
async fn deliver(
    State(r): State<Arc<Relay>>,
    UrlPath((msg, dup)): UrlPath<(i64, i64)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) || !body["received_ms"].is_i64() {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "token"})));
    }
    let n = r.served.fetch_add(1, Ordering::SeqCst);
    if n % 10 == 9 {
        return (
            StatusCode::CONFLICT,
            Json(json!({"error": "busy, try later"})),
        );
    }
    // Its handlers die now and then, after any step (5% per step run).
    let req = r
        .http
        .post(format!("{}/v1/messages", r.backend))
        .header("x-specstorm-fault", format!("crash-p=0.05:{n}"))
        .json(&json!({"id": msg, "dup": dup}));
    let Ok(a) = req.send().await else {
        return (StatusCode::BAD_GATEWAY, Json(json!({})));
    };
    let status = a.status().as_u16();
    let a: Value = a.json().await.unwrap_or_default();
    match status {
        200 => (
            StatusCode::CREATED,
            Json(json!({"result": {
                "state": "handled",
                "published": a["sent"].as_object().map(|s| json!({
                    "message": s["msg_id"], "version": s["ver"]
                })),
            }})),
        ),
        503 if a["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("cas lost")) =>
        {
            (StatusCode::CONFLICT, Json(json!({"error": "conflict"})))
        }
        _ => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": "handler failed"})),
        ),
    }
}

/// `GET /admin/outbox-dump`: the backend's outbox export, relayed.
async fn dump(State(r): State<Arc<Relay>>, headers: HeaderMap) -> Response {
    if !authorized(&headers) {
        let mut resp = Response::new(Body::from("{}"));
        *resp.status_mut() = StatusCode::UNAUTHORIZED;
        return resp;
    }
    let a = r
        .http
        .get(format!("{}/v1/outbox/export", r.backend))
        .send()
        .await
        .unwrap();
    Response::new(Body::from(a.bytes().await.unwrap()))
}

/// The service in front of `backend`: its URL (it lives as long as the
/// test process).
fn start_relay(backend: &str) -> String {
    let relay = Arc::new(Relay {
        backend: backend.to_string(),
        http: specstorm::target::http::tls::client_builder()
            .no_proxy()
            .build()
            .unwrap(),
        served: AtomicU64::new(0),
    });
    let app = Router::new()
        .route("/up", get(|| async { StatusCode::NO_CONTENT }))
        .route("/inbox/{msg}/deliveries/{dup}", put(deliver))
        .route("/admin/outbox-dump", get(dump))
        .with_state(relay);
    crate::common::http::serve_router(app)
}

/// How the final tables are read.
enum Audit<'a> {
    /// The backend's database, with or without an outbox table.
    Sqlite(&'a Path, bool),
    /// The service's export request.
    Request,
}

/// The mapped scenario: the relay at `url`, `variant` naming its design.
fn mapped_scenario(url: &str, variant: &str, audit: Audit<'_>, extra: &str) -> String {
    let audit = match audit {
        Audit::Sqlite(db, with_outbox) => format!(
            r#"[audit]
sqlite = "{db}"
export.state_log = "SELECT ver, msg_id, tx_id, kind FROM state_log ORDER BY ver"
export.out_queue = "SELECT seq, msg_id, ver FROM out_queue"
export.processed = "SELECT msg_id, dup_id FROM processed"
{outbox}"#,
            db = db.display(),
            outbox = if with_outbox {
                "export.outbox = \"SELECT msg_id, ver FROM outbox\""
            } else {
                ""
            }
        ),
        Audit::Request => "[audit]\nrequest = \"GET /admin/outbox-dump\"\n".into(),
    };
    format!(
        r#"workload = "outbox"
variant = "{variant}"
seed = 3

[target]
kind = "http"
url = "{url}"
request_timeout = "10s"

[outbox]
messages = 300
deliveries = 3
handlers = 8
max_attempts = 1000

[stop]
duration = "90s"

[api]
health = "GET /up"
headers = {{ authorization = "Bearer ${{{SECRET_VAR}}}" }}

[api.handle]
request = "PUT /inbox/{{msg_id}}/deliveries/{{dup_id}}"
body = '{{"received_ms": {{now_ms}}}}'
acked = "/result/state == handled"
sent_msg_id = "/result/published/message"
sent_ver = "/result/published/version"
codes = {{ "201" = "ok", "409" = "fail", "200" = "info" }}

{audit}
{extra}
"#
    )
}

/// One mapped run of `variant` behind the relay; returns the run folder.
fn mapped_run(dir: &Path, variant: &str, sqlite: bool, extra: &str) -> std::path::PathBuf {
    let db = dir.join(format!("{variant}-{sqlite}.db"));
    let backend = Server::start_with(variant, &db, &["--fault-hooks"]);
    let url = start_relay(&backend.url);
    let audit = if sqlite {
        Audit::Sqlite(&db, variant == "outbox-protocol")
    } else {
        Audit::Request
    };
    let sc = dir.join(format!("{variant}.toml"));
    std::fs::write(&sc, mapped_scenario(&url, variant, audit, extra)).unwrap();
    let out = dir.join(format!("run-{variant}-{sqlite}"));
    let o = run_command(&sc, &out)
        .env(SECRET_VAR, SECRET)
        .output()
        .unwrap();
    assert!(out.join("summary.json").exists(), "{}", text(&o));
    drop(backend);
    out
}

const OUTBOX_INVARIANTS: [&str; 5] = [
    "TypeOK",
    "AtMostOneStateChange",
    "AtMostOneOutQueueMsg",
    "ConsistentStateAndOutQueue",
    "NoLostOutput",
];

#[test]
fn a_mapped_outbox_service_holds_and_audits_again_offline() {
    let dir = tempfile::tempdir().unwrap();
    // Proxy faults too: the proxy records a mapped service's dropped
    // answers by their status alone.
    let proxy = "[[faults]]\nkind = \"proxy\"\ntoxic = \"drop_response\"\nprobability = 0.05\n\n\
                 [[faults]]\nkind = \"proxy\"\ntoxic = \"reset\"\nprobability = 0.05\n";
    for (sqlite, extra) in [(true, proxy), (false, "")] {
        let out = mapped_run(dir.path(), "outbox-protocol", sqlite, extra);
        let s = summary(&out);
        assert_eq!(s["exit"]["code"], 0, "{s}");
        for name in OUTBOX_INVARIANTS {
            assert_eq!(verdict(&s, name), "holds", "{name}: {s}");
        }
        assert_eq!(s["outbox"]["liveness"]["acked_messages"], 300, "{s}");
        // Every meaning was seen: ok, fail (rejections, lost CASes), info
        // (crashed handlers).
        let ops = &s["ops"]["handle"];
        for kind in ["ok", "fail", "info"] {
            assert!(ops[kind].as_u64().unwrap() > 0, "{kind}: {s}");
        }
        let history = crate::common::folder::history_text(&out).unwrap();
        assert!(history.contains("\"sent\":["), "what was published is read");
        if sqlite {
            assert!(out.join("target.db").exists());
            assert!(history.contains("drop_response: upstream answered 201\""));
        } else {
            assert!(out.join("export.json").exists());
        }
        // The token went with every request (the relay refuses others)
        // and is nowhere in what the bench wrote.
        for f in files_under(&out) {
            let bytes = std::fs::read(&f).unwrap();
            assert!(
                !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
                "{} holds the secret",
                f.display()
            );
        }
        // The folder audits again offline, without the secret.
        let a = command().arg("audit").arg(&out).output().unwrap();
        let audit: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("audit.json")).unwrap())
                .unwrap_or_else(|_| panic!("{}", text(&a)));
        assert_eq!(audit["same_as_run"], json!(true), "{audit}");
        let tables = if sqlite { "target.db" } else { "export.json" };
        assert_eq!(audit["tables"], json!(tables));
        assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    }
}

#[test]
fn each_naive_variant_is_caught_through_a_mapping() {
    let dir = tempfile::tempdir().unwrap();
    for (variant, sqlite, violated) in [
        ("outbox-naive-no-outbox", true, "AtMostOneOutQueueMsg"),
        ("outbox-naive-no-redo", false, "AtMostOneStateChange"),
    ] {
        let out = mapped_run(dir.path(), variant, sqlite, "");
        let s = summary(&out);
        assert_eq!(verdict(&s, violated), "violated", "{variant}: {s}");
        assert_eq!(verdict(&s, "TypeOK"), "holds", "{variant}: {s}");
    }
}

#[test]
fn an_outbox_mapping_refuses_groups_keys_and_needs_its_queries() {
    let dir = tempfile::tempdir().unwrap();
    let check = |scenario: &str| {
        let sc = dir.path().join("m.toml");
        std::fs::write(&sc, scenario).unwrap();
        let o = command()
            .arg("check")
            .arg(&sc)
            .env(SECRET_VAR, SECRET)
            .output()
            .unwrap();
        (o.status.code(), text(&o))
    };
    let base = mapped_scenario(
        "http://127.0.0.1:9",
        "outbox-protocol",
        Audit::Sqlite(Path::new("/x.db"), true),
        "",
    );
    let (code, out) = check(&base);
    assert_eq!(code, Some(0), "{out}");
    // The saved form keeps the outbox's keys only, and loads again.
    assert!(
        !out.contains("[api.ingest]") && !out.contains("group_ids"),
        "{out}"
    );
    assert!(out.contains("[api.handle]"), "{out}");
    // Groups' request kinds are no keys of an outbox's [api].
    let (code, out) = check(&base.replace("[api.handle]", "[api.ingest]"));
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("unknown key `ingest` in [api]; valid keys: health, headers, handle"),
        "{out}"
    );
    // `sqlite` needs the outbox's queries.
    let (code, out) = check(&base.replace("export.processed", "export.events"));
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("unknown key `events` in [audit.export]"),
        "{out}"
    );
    let no_processed: String = base
        .lines()
        .filter(|l| !l.starts_with("export.processed"))
        .collect::<Vec<_>>()
        .join("\n");
    let (code, out) = check(&no_processed);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("`audit.sqlite` needs `export.processed`"),
        "{out}"
    );
    // A placeholder of groups in a delivery's template.
    let (code, out) = check(&base.replace("{msg_id}/deliveries", "{event_id}/deliveries"));
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("`{event_id}` cannot be used here"), "{out}");
}

/// A mapping's secret that is not in the environment is refused before
/// anything runs, with the line of the key that names it, as for groups:
/// `check` and `run` exit 2, and the run sends nothing (the service at
/// port 9 would refuse it: exit 3, not 2, if it tried).
#[test]
fn an_outbox_mappings_unset_secret_is_refused_with_its_line_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("m.toml");
    let text_of = mapped_scenario("http://127.0.0.1:9", "outbox-protocol", Audit::Request, "")
        .replace(
            "acked = ",
            "headers = { x-relay = \"${SPECSTORM_TEST_OUTBOX_UNSET}\" }\nacked = ",
        );
    std::fs::write(&sc, &text_of).unwrap();
    let line = text_of
        .lines()
        .position(|l| l.contains("SPECSTORM_TEST_OUTBOX_UNSET"))
        .unwrap()
        + 1;
    let check = command()
        .arg("check")
        .arg(&sc)
        .env(SECRET_VAR, SECRET)
        .env_remove("SPECSTORM_TEST_OUTBOX_UNSET")
        .output()
        .unwrap();
    let out = text(&check);
    assert_eq!(check.status.code(), Some(2), "{out}");
    assert!(
        out.contains(&format!("m.toml:{line}:")) && out.contains("SPECSTORM_TEST_OUTBOX_UNSET"),
        "{out}"
    );
    let run = run_command(&sc, &dir.path().join("run"))
        .env(SECRET_VAR, SECRET)
        .env_remove("SPECSTORM_TEST_OUTBOX_UNSET")
        .output()
        .unwrap();
    let out = text(&run);
    assert_eq!(run.status.code(), Some(2), "{out}");
    assert!(out.contains(&format!("m.toml:{line}:")), "{out}");
}
