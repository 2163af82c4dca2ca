//! A service with an API of its own, loaded through a scenario's `[api]`
//! mapping: the test writes that service here (an axum app with other
//! paths, an envelope body of several events, other status codes and
//! field names, a bearer token) in front of the reference server, whose
//! database the mapped scenario audits directly (`[audit] sqlite` with
//! `export.*` queries). The mapped runs must reach the same verdicts as the
//! contract's runs against the reference server itself, and the secret
//! must appear nowhere the bench writes.

use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::common::folder::files_under as walk;
use crate::common::procs::free_port;
use crate::common::run::run_command;
use crate::common::{command, summary, verdict, Server};

const SECRET_VAR: &str = "SPECSTORM_TEST_MAPPING_TOKEN";
const SECRET: &str = "tok-7f3a9c1e55d04b2a";

struct Backend {
    url: String,
    http: reqwest::Client,
    /// Answer this many ingest requests with a 503 whose body echoes the
    /// token (a careless service): the bench must not write it anywhere.
    leaky_503s: AtomicU64,
    /// A daily cap: events past this many are dropped, yet answered "new".
    cap: Option<u64>,
    /// Events forwarded so far.
    forwarded: AtomicU64,
    /// Retention: every third event row is deleted from this database
    /// after each request.
    prune: Option<PathBuf>,
    /// The backend's database, for `GET /issues?project=&fp=` (lookups).
    db: Option<PathBuf>,
    /// Answer an envelope's items in reverse order (each names its event).
    reverse: bool,
    /// Hang (answer nothing, ever) once this many requests were served.
    hang_after: Option<u64>,
    /// Requests served.
    served: AtomicU64,
    /// Answer new events whose id ends in 0 with a third outcome,
    /// `queued` (stored and counted all the same): neither "new" nor "dup".
    queued: bool,
}

impl Backend {
    /// Hangs forever once `hang_after` requests were served.
    async fn maybe_hang(&self) {
        let n = self.served.fetch_add(1, Ordering::SeqCst);
        if self.hang_after.is_some_and(|h| n >= h) {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        }
    }
}

fn authorized(h: &HeaderMap) -> bool {
    h.get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {SECRET}"))
}

/// `POST /ingest/{project}/batch` `{"batch": [{"eid","fp","msg"}]}` ->
/// 202 `{"results": [{"outcome": "new"|"dup", "issue": id}]}`.
async fn ingest(
    State(b): State<Arc<Backend>>,
    UrlPath(project): UrlPath<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "token"})));
    }
    b.maybe_hang().await;
    if b.leaky_503s
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        let echo = headers["authorization"]
            .to_str()
            .unwrap_or_default()
            .to_string();
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"error": "overloaded", "your_auth": echo})),
        );
    }
    let mut results = Vec::new();
    for e in body["batch"].as_array().cloned().unwrap_or_default() {
        if b.cap
            .is_some_and(|cap| b.forwarded.fetch_add(1, Ordering::SeqCst) >= cap)
        {
            results.push(json!({"eid": e["eid"], "outcome": "new", "issue": ""}));
            continue;
        }
        let sent = b
            .http
            .post(format!("{}/v1/events", b.url))
            .json(&json!({"id": e["eid"], "project": project, "fingerprint": e["fp"], "message": e["msg"]}))
            .send()
            .await;
        let Ok(r) = sent else {
            return (StatusCode::BAD_GATEWAY, Json(json!({})));
        };
        if !r.status().is_success() {
            return (StatusCode::BAD_GATEWAY, Json(json!({})));
        }
        let a: Value = r.json().await.unwrap_or_default();
        let queued = b.queued && e["eid"].as_str().is_some_and(|id| id.ends_with('0'));
        let outcome = match a["accepted"] == json!(true) {
            true if queued => "queued",
            true => "new",
            false => "dup",
        };
        results.push(json!({
            "eid": e["eid"],
            "outcome": outcome,
            "issue": a["group_id"],
        }));
    }
    if b.reverse {
        results.reverse();
    }
    if let Some(db) = &b.prune {
        let db = db.clone();
        tokio::task::spawn_blocking(move || {
            let c = rusqlite::Connection::open(db).unwrap();
            c.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
            c.execute("DELETE FROM error_events WHERE rowid % 3 = 0", [])
                .unwrap();
        })
        .await
        .unwrap();
    }
    (StatusCode::ACCEPTED, Json(json!({ "results": results })))
}

/// `GET /issues?project=P&fp=F` -> 200 `{"id": ...}`, or 404 while the
/// issue does not exist.
async fn lookup(
    State(b): State<Arc<Backend>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> (StatusCode, Json<Value>) {
    let q: std::collections::HashMap<String, String> =
        reqwest::Url::parse(&format!("http://x{uri}"))
            .unwrap()
            .query_pairs()
            .into_owned()
            .collect();
    if !authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "token"})));
    }
    let db = b.db.clone().expect("a lookup needs the database");
    let found = tokio::task::spawn_blocking(move || {
        let c = rusqlite::Connection::open(db).ok()?;
        c.busy_timeout(std::time::Duration::from_secs(30)).ok()?;
        c.query_row(
            "SELECT id FROM error_groups WHERE project = ?1 AND fingerprint = ?2",
            [q.get("project")?, q.get("fp")?],
            |r| r.get::<_, String>(0),
        )
        .ok()
    })
    .await
    .unwrap();
    match found {
        Some(id) => (StatusCode::OK, Json(json!({ "id": id }))),
        None => (StatusCode::NOT_FOUND, Json(json!({}))),
    }
}

/// `PUT /issues/{id}/state` -> 200 `{"count": n}`, 423 `{"current": s,
/// "count": n}` when refused, 410 when there is no such issue.
async fn resolve(
    State(b): State<Arc<Backend>>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> (StatusCode, Json<Value>) {
    if !authorized(&headers) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "token"})));
    }
    b.maybe_hang().await;
    let url = format!("{}/v1/groups/{}/resolve", b.url, urlencode(&id));
    let Ok(r) = b.http.post(url).send().await else {
        return (StatusCode::BAD_GATEWAY, Json(json!({})));
    };
    let status = r.status().as_u16();
    let a: Value = r.json().await.unwrap_or_default();
    match status {
        200 => (StatusCode::OK, Json(json!({"count": a["event_count"]}))),
        409 => (
            StatusCode::LOCKED,
            Json(json!({"current": a["status"], "count": a["event_count"]})),
        ),
        404 => (StatusCode::GONE, Json(json!({}))),
        _ => (StatusCode::BAD_GATEWAY, Json(json!({}))),
    }
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The service: its URL; it lives as long as the test process.
fn start_service(backend_url: &str, leaky_503s: u64) -> String {
    start_service_with(backend_url, leaky_503s, None, None)
}

fn start_service_with(
    backend_url: &str,
    leaky_503s: u64,
    cap: Option<u64>,
    prune: Option<PathBuf>,
) -> String {
    start_service_full(backend_url, leaky_503s, cap, prune, None)
}

fn start_service_full(
    backend_url: &str,
    leaky_503s: u64,
    cap: Option<u64>,
    prune: Option<PathBuf>,
    db: Option<PathBuf>,
) -> String {
    let backend = Arc::new(Backend {
        url: backend_url.to_string(),
        http: specstorm::target::http::tls::client_builder()
            .no_proxy()
            .build()
            .unwrap(),
        leaky_503s: AtomicU64::new(leaky_503s),
        cap,
        forwarded: AtomicU64::new(0),
        prune,
        reverse: db
            .as_ref()
            .is_some_and(|d| d.to_string_lossy().contains("reversed")),
        hang_after: db
            .as_ref()
            .is_some_and(|d| d.to_string_lossy().contains("hangs"))
            .then_some(300),
        served: AtomicU64::new(0),
        queued: db
            .as_ref()
            .is_some_and(|d| d.to_string_lossy().contains("queued")),
        db,
    });
    let app = Router::new()
        .route("/up", get(|| async { StatusCode::NO_CONTENT }))
        .route("/ingest/{project}/batch", post(ingest))
        .route("/issues/{id}/state", put(resolve))
        .route("/issues", get(lookup))
        .with_state(backend);
    crate::common::http::serve_router(app)
}

/// The mapped scenario: the service's API, audited from `db`.
fn mapped_scenario(url: &str, db: &Path, extra: &str) -> String {
    format!(
        r#"
workload = "groups"
seed = 7

[target]
kind = "http"
url = "{url}"
retries = 3

[load]
ingesters = 64
resolvers = 16

# By count alone: as many ingests, and as many chances for the naive
# variant's race, however slow the machine.
[stop]
events = 60000

# Hot groups, resolved back to back: the naive variant's window between its
# read and its write is hit thousands of times.
[keys]
projects = 2
fingerprints = 50
skew = "hot"
hot_groups = 1
hot_fraction = 0.9

[resolve]
interval = "0s"

[api]
health = "GET /up"
headers = {{ authorization = "Bearer ${{{SECRET_VAR}}}" }}

[api.ingest]
request = "POST /ingest/{{project}}/batch"
batch = 4
envelope = '{{"batch": [{{items}}]}}'
body = '{{"eid": "{{event_id}}", "fp": "{{fingerprint}}", "msg": "{{message}}"}}'
items = "/results"
accepted = "/outcome == new"
duplicate = "/outcome == dup"
group_id = "/issue"
codes = {{ "202" = "ok", "200" = "info" }}

[api.resolve]
request = "PUT /issues/{{group_id}}/state"
body = '{{"state": "resolved"}}'
resolved = ""
event_count = "/count"
status = "/current"
codes = {{ "423" = "refused", "410" = "missing", "409" = "info", "404" = "info" }}

[audit]
sqlite = "{db}"
export.events = "SELECT id, project, fingerprint, group_id, received_at FROM error_events"
export.groups = "SELECT id, project, fingerprint, status, event_count FROM error_groups"
{extra}
"#,
        db = db.display()
    )
}

/// The contract's scenario: the same load against the reference server.
fn contract_scenario(url: &str) -> String {
    let mapped = mapped_scenario(url, Path::new("/unused"), "");
    mapped[..mapped.find("[api]").unwrap()].to_string()
}

fn run(scenario: &Path, out: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = run_command(scenario, out);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn verdicts(run_dir: &Path) -> Vec<(String, String)> {
    let s = summary(run_dir);
    eprintln!(
        "{}: NoMissedRegression {}, ingest {} ops/s, p99 {} us",
        run_dir.display(),
        s["invariants"]["NoMissedRegression"],
        s["throughput_ops_per_s"]["ingest"],
        s["latency_us"]["ingest"]["p99"]
    );
    let mut v: Vec<(String, String)> = s["invariants"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["verdict"].as_str().unwrap().to_string()))
        .collect();
    v.sort();
    v
}

/// Runs `variant` through the contract and through the mapping; returns
/// both run folders' verdicts (and keeps the folders in `dir`).
fn both_ways(variant: &str, dir: &Path) -> (Vec<(String, String)>, Vec<(String, String)>, PathBuf) {
    let sql = format!(
        "{}/targets/sqlite/{variant}.sql",
        env!("CARGO_MANIFEST_DIR")
    );
    // The contract: the reference server, loaded and exported as it is.
    let direct = Server::start(&sql);
    let sc = dir.join(format!("contract-{variant}.toml"));
    std::fs::write(&sc, contract_scenario(&direct.url)).unwrap();
    let out_c = dir.join(format!("contract-{variant}"));
    let o = run(&sc, &out_c, &[]);
    assert!(
        out_c.join("summary.json").exists(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The mapping: the service above, in front of a fresh reference server.
    let db = dir.join(format!("{variant}.db"));
    let backend = Server::start_on(&sql, &db);
    let url = start_service(&backend.url, 0);
    let sm = dir.join(format!("mapped-{variant}.toml"));
    std::fs::write(&sm, mapped_scenario(&url, &db, "")).unwrap();
    let out_m = dir.join(format!("mapped-{variant}"));
    let o = run(&sm, &out_m, &[(SECRET_VAR, SECRET)]);
    assert!(
        out_m.join("summary.json").exists(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (verdicts(&out_c), verdicts(&out_m), out_m)
}

#[test]
fn a_mapped_service_gets_the_contracts_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    for (variant, expected) in [
        (
            "groups-atomic",
            [
                ("CountExact", "holds"),
                ("NoMissedRegression", "holds"),
                ("OneGroupPerFingerprint", "holds"),
                ("TypeOK", "holds"),
            ],
        ),
        (
            "groups-naive",
            [
                ("CountExact", "holds"),
                ("NoMissedRegression", "violated"),
                ("OneGroupPerFingerprint", "holds"),
                ("TypeOK", "holds"),
            ],
        ),
    ] {
        let (contract, mapped, out) = both_ways(variant, dir.path());
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(contract, expected, "{variant} through the contract");
        assert_eq!(mapped, expected, "{variant} through the mapping");
        // The mapped run really went through batches and learned the
        // service's group ids: resolves happened, and the audit read the
        // database (a copy is kept).
        let s: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert!(s["ops"]["resolve"]["ok"].as_u64().unwrap() > 0, "{s}");
        assert!(s["ops"]["ingest"]["ok"].as_u64().unwrap() >= 60000, "{s}");
        assert!(out.join("target.db").exists());
        assert!(s.get("precision").is_none(), "nothing lost: {s}");
        // The run folder audits again offline, from the database copy it
        // kept and without the secret (no request is sent).
        let a = command().arg("audit").arg(&out).output().unwrap();
        let audit: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("audit.json")).unwrap())
                .unwrap();
        assert_eq!(audit["same_as_run"], json!(true), "{audit}");
        assert_eq!(audit["tables"], json!("target.db"));
        assert_eq!(
            a.status.code(),
            s["exit"]["code"].as_i64().map(|c| c as i32)
        );
    }
}

#[test]
fn a_secret_from_the_environment_is_written_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let backend = Server::start_on(
        &format!(
            "{}/targets/sqlite/groups-atomic.sql",
            env!("CARGO_MANIFEST_DIR")
        ),
        &db,
    );
    // The service echoes the token in the body of its first 503s.
    let url = start_service(&backend.url, 40);
    let sc = dir.path().join("mapped.toml");
    std::fs::write(
        &sc,
        mapped_scenario(&url, &db, "").replace("events = 60000", "events = 3000"),
    )
    .unwrap();
    let out = dir.path().join("run");
    let o = run(&sc, &out, &[(SECRET_VAR, SECRET)]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // The token was sent (the service refuses requests without it) ...
    let history = crate::common::folder::history_text(&out).unwrap();
    assert!(
        history.contains("${SPECSTORM_TEST_MAPPING_TOKEN}"),
        "the 503 bodies were recorded, redacted"
    );
    // ... and is nowhere in the results, the history, or what was printed.
    let mut files = 0;
    for entry in walk(&out) {
        let bytes = std::fs::read(&entry).unwrap();
        files += 1;
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "{} holds the secret",
            entry.display()
        );
    }
    assert!(files >= 5, "{files} files");
    assert!(!stderr.contains(SECRET) && !String::from_utf8_lossy(&o.stdout).contains(SECRET));
    let saved = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(saved.contains("${SPECSTORM_TEST_MAPPING_TOKEN}"), "{saved}");
}

#[test]
fn a_missing_secret_is_refused_with_its_line_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("mapped.toml");
    let text = mapped_scenario("http://127.0.0.1:9", Path::new("/x.db"), "");
    std::fs::write(&sc, &text).unwrap();
    let out = dir.path().join("run");
    let o = run(&sc, &out, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let line = text
        .lines()
        .position(|l| l.starts_with("headers = "))
        .unwrap()
        + 1;
    assert!(
        stderr.contains(&format!("mapped.toml:{line}:")) && stderr.contains(SECRET_VAR),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran");
}

/// One mapped run of the atomic variant against the service with `cap` and
/// `prune`, the scenario edited by `edit`; returns the summary and the
/// history's text.
fn atomic_run(
    dir: &Path,
    name: &str,
    cap: Option<u64>,
    prune: bool,
    edit: &dyn Fn(String) -> String,
) -> (Value, String) {
    let db = dir.join(format!("{name}.db"));
    let backend = Server::start_on(
        &format!(
            "{}/targets/sqlite/groups-atomic.sql",
            env!("CARGO_MANIFEST_DIR")
        ),
        &db,
    );
    let url = start_service_full(
        &backend.url,
        0,
        cap,
        prune.then(|| db.clone()),
        Some(db.clone()),
    );
    let sc = dir.join(format!("{name}.toml"));
    let text = mapped_scenario(&url, &db, "").replace("events = 60000", "events = 4000");
    std::fs::write(&sc, edit(text)).unwrap();
    let out = dir.join(name);
    let o = run(&sc, &out, &[(SECRET_VAR, SECRET)]);
    let summary = std::fs::read_to_string(out.join("summary.json"))
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr)));
    (
        serde_json::from_str(&summary).unwrap(),
        crate::common::folder::history_text(&out).unwrap(),
    )
}

/// Every groups invariant holds in summary `s`.
#[track_caller]
fn assert_all_hold(s: &Value) {
    for inv in [
        "TypeOK",
        "CountExact",
        "NoMissedRegression",
        "OneGroupPerFingerprint",
    ] {
        assert_eq!(verdict(s, inv), "holds", "{inv}: {s}");
    }
}

/// Nothing violated in summary `s`, TypeOK holding, and CountExact
/// `unknown` for want of evidence: no event was certainly counted (the
/// answers do not say which events were stored), so a `holds` would rest
/// on nothing.
#[track_caller]
fn assert_none_counted_and_nothing_violated(s: &Value) {
    for inv in [
        "TypeOK",
        "CountExact",
        "NoMissedRegression",
        "OneGroupPerFingerprint",
    ] {
        assert_ne!(verdict(s, inv), "violated", "{inv}: {s}");
    }
    assert_eq!(verdict(s, "TypeOK"), "holds", "{s}");
    assert_eq!(verdict(s, "CountExact"), "unknown", "{s}");
    assert_eq!(s["evidence"]["invariants"]["CountExact"], json!(0), "{s}");
    let first = s["invariants"]["CountExact"]["first"].as_str().unwrap();
    assert!(first.starts_with("too little evidence: 0,"), "{first}");
    assert_eq!(s["exit"]["code"], json!(4), "{}", s["exit"]);
}

fn precision_of(s: &Value, inv: &str) -> Vec<Value> {
    s["precision"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p["invariant"] == json!(inv))
        .collect()
}

#[test]
fn an_answer_that_does_not_say_accepted_is_ok_with_an_unknown_value() {
    let dir = tempfile::tempdir().unwrap();
    let (s, history) = atomic_run(dir.path(), "silent", None, false, &|t| {
        t.replace(r#"accepted = "/outcome == new""#, r#"accepted = """#)
            .replace("duplicate = \"/outcome == dup\"\n", "")
    });
    // The history records ok, the value unknown, and why.
    assert!(
        history.contains(r#""ambiguous":"the answer does not say accepted or duplicate""#),
        "{}",
        &history[..2000.min(history.len())]
    );
    assert!(!history.contains(r#""accepted":true"#));
    // The checkers use bounds: a correct service breaks nothing.
    assert_none_counted_and_nothing_violated(&s);
    // The summary says which checks lost precision, why, and for how many ops.
    for inv in ["TypeOK", "CountExact"] {
        let p = precision_of(&s, inv);
        assert_eq!(p.len(), 1, "{inv}: {s}");
        assert!(p[0]["ops"].as_u64().unwrap() >= 4000, "{p:?}");
        assert!(
            p[0]["why"].as_str().unwrap().contains("does not say"),
            "{p:?}"
        );
    }
    // Yet no event is certainly counted, so CountExact's lower bound judged
    // nothing: its holds would rest on no evidence, it is unknown, and the
    // run is inconclusive (exit 4), never a plain pass.
    assert!(
        s["exit"]["rule"]
            .as_str()
            .unwrap()
            .contains("CountExact, NoMissedRegression unknown"),
        "{}",
        s["exit"]
    );
}

#[test]
fn a_cap_that_drops_events_with_ok_is_caught_unless_declared() {
    let dir = tempfile::tempdir().unwrap();
    // Undeclared: the service says "new" for events it dropped. That is
    // acknowledged data lost, and the audit says so.
    let (s, _) = atomic_run(dir.path(), "capped", Some(1000), false, &|t| t);
    assert_eq!(verdict(&s, "TypeOK"), "violated", "{s}");
    assert_eq!(verdict(&s, "CountExact"), "violated", "{s}");
    // Declared (`may_drop = true`): an ok that says accepted is no proof
    // the event is stored; nothing is violated on what can be judged, no
    // event is certainly counted (inconclusive), and the summary says what
    // was lost.
    let (s, history) = atomic_run(dir.path(), "capped-declared", Some(1000), false, &|t| {
        t.replace(
            "items = \"/results\"",
            "items = \"/results\"\nmay_drop = true",
        )
    });
    assert_none_counted_and_nothing_violated(&s);
    assert!(history.contains("may_drop"), "the reason is in the history");
    assert!(
        precision_of(&s, "TypeOK")[0]["why"]
            .as_str()
            .unwrap()
            .contains("may drop"),
        "{s}"
    );
}

#[test]
fn pruned_event_rows_are_caught_unless_declared_then_judged_on_the_history() {
    let dir = tempfile::tempdir().unwrap();
    // No event id is sent twice: a retry of a pruned event would be
    // inserted and counted again (a real double count, which CountExact
    // reports); retention in real services runs long after any retry.
    let once = |t: String| {
        t.replace("retries = 3", "retries = 0")
            .replace("[resolve]", "[retry]\nprobability = 0.0\n\n[resolve]")
    };
    let (s, _) = atomic_run(dir.path(), "pruning", None, true, &once);
    assert_eq!(verdict(&s, "TypeOK"), "violated", "{s}");
    let (s, _) = atomic_run(dir.path(), "pruning-declared", None, true, &|t| {
        once(t).replace("[audit]\n", "[audit]\nevents = \"pruned\"\n")
    });
    assert_all_hold(&s);
    let notes = s["invariants"]["TypeOK"].to_string();
    let p = precision_of(&s, "CountExact");
    assert!(
        p.iter()
            .any(|p| p["why"].as_str().unwrap().contains("pruned")),
        "{s} {notes}"
    );
}

#[test]
fn a_scenario_starts_its_own_service_and_its_saved_scenario_runs_it_again() {
    // The service is `specstorm serve` itself, started by `target.command`
    // with `{variant}` and `{run_dir}`, audited from the database it
    // writes into the run folder; its output goes to service.log.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let exe = env!("CARGO_BIN_EXE_specstorm");
    let text = format!(
        r#"
workload = "groups"
variant = "groups-naive"

[target]
kind = "http"
url = "http://127.0.0.1:{port}"
command = "'{exe}' serve --variant {{variant}} --db {{run_dir}}/svc.db --addr 127.0.0.1:{port}"
workdir = "svc"
startup_timeout = "20s"

[load]
ingesters = 8
resolvers = 2

[stop]
events = 2000

[audit]
sqlite = "{{run_dir}}/svc*.db"
export.events = "SELECT id, project, fingerprint, group_id, received_at FROM error_events"
export.groups = "SELECT id, project, fingerprint, status, event_count FROM error_groups"
"#
    );
    std::fs::create_dir(dir.path().join("svc")).unwrap();
    let sc = dir.path().join("own.toml");
    std::fs::write(&sc, text).unwrap();
    let out = dir.path().join("run1");
    let o = run(&sc, &out, &[]);
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json"))
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&o.stderr))),
    )
    .unwrap();
    assert!(s["ops"]["ingest"]["ok"].as_u64().unwrap() >= 2000, "{s}");
    assert!(out.join("svc.db").exists() && out.join("target.db").exists());
    let log = std::fs::read_to_string(out.join("service.log")).unwrap();
    assert!(log.contains("listening on"), "{log}");
    // The service was stopped after the final read: the port is free.
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    // The saved scenario names the variant and the folder it ran with.
    let saved = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(saved.contains("--variant groups-naive"), "{saved}");
    let workdir = std::fs::canonicalize(dir.path().join("svc")).unwrap();
    assert!(
        saved.contains(&format!("workdir = \"{}\"", workdir.display())),
        "{saved}"
    );
    // And it runs the same service again, from anywhere.
    let out2 = dir.path().join("run2");
    let o = run(&out.join("scenario.toml"), &out2, &[]);
    assert!(
        out2.join("summary.json").exists(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let log = std::fs::read_to_string(out2.join("service.log")).unwrap();
    assert!(log.contains("listening on"), "{log}");
}

#[test]
fn proxy_faults_reach_a_mapped_service_with_its_headers() {
    // The fault proxy forwards the mapping's headers (the service refuses
    // requests without the token), and records a dropped answer by its
    // status alone: the service's bodies are not the contract's.
    let dir = tempfile::tempdir().unwrap();
    let (s, history) = atomic_run(dir.path(), "proxied", None, false, &|t| {
        format!(
            "{t}\n[[faults]]\nkind = \"proxy\"\ntoxic = \"drop_response\"\nops = \"ingest\"\n\
             probability = 0.05\n"
        )
    });
    assert_all_hold(&s);
    assert!(s["faults_injected"]["proxy"].as_u64().unwrap() > 0, "{s}");
    assert!(
        history.contains("drop_response: upstream answered 202"),
        "faults recorded"
    );
    assert!(
        !history.contains("drop_response: upstream answered 202:"),
        "no bodies"
    );
    assert!(
        !history.contains("Unauthorized"),
        "every request carried the token"
    );
}

#[test]
fn group_ids_the_answers_do_not_give_are_learned_from_the_database_or_a_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let no_ids = |t: String| t.replace(r#"group_id = "/issue""#, r#"group_id = """#);
    let (s, _) = atomic_run(dir.path(), "ids-from-db", None, false, &|t| {
        no_ids(t).replace("[api]\n", "[api]\ngroup_ids = \"audit\"\n")
    });
    assert!(s["ops"]["resolve"]["ok"].as_u64().unwrap() > 0, "{s}");
    assert_all_hold(&s);
    let (s, _) = atomic_run(dir.path(), "ids-from-lookup", None, false, &|t| {
        format!(
            "{}\n[api.lookup]\nrequest = \"GET /issues?project={{project}}&fp={{fingerprint}}\"\n\
             group_id = \"/id\"\n",
            no_ids(t).replace("[api]\n", "[api]\ngroup_ids = \"lookup\"\n")
        )
    });
    assert!(s["ops"]["resolve"]["ok"].as_u64().unwrap() > 0, "{s}");
    assert_all_hold(&s);
    // Without any source the resolvers never resolve, and the run says why.
    let (s, _) = atomic_run(dir.path(), "ids-nowhere", None, false, &no_ids);
    assert_eq!(s["ops"]["resolve"]["ok"], json!(0), "{s}");
    assert!(
        s["exit"]["rule"]
            .as_str()
            .unwrap()
            .contains("never learned a group id"),
        "{}",
        s["exit"]
    );
}

#[test]
fn envelope_items_in_another_order_are_matched_by_their_event_id() {
    // The service answers the items of an envelope in reverse order, each
    // naming its event: matched by `item_id`, a correct service holds.
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = atomic_run(dir.path(), "reversed", None, false, &|t| {
        t.replace(
            "items = \"/results\"",
            "items = \"/results\"\nitem_id = \"/eid\"",
        )
    });
    assert_all_hold(&s);
    assert_eq!(s["exit"]["code"], json!(0), "{}", s["exit"]);
}

#[test]
fn a_service_that_hangs_mid_run_ends_the_run_with_exit_3() {
    // The database audit alone would pass: the run must still say that the
    // load ended early because the service stopped answering.
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = atomic_run(dir.path(), "hangs", None, false, &|t| {
        t.replace("retries = 3", "retries = 0\nrequest_timeout = \"1s\"")
    });
    assert_eq!(s["exit"]["code"], json!(3), "{}", s["exit"]);
    assert!(
        s["exit"]["rule"]
            .as_str()
            .unwrap()
            .contains("stopped answering"),
        "{}",
        s["exit"]
    );
}

#[test]
fn an_answer_with_neither_the_accepted_nor_the_duplicate_value_is_non_conforming() {
    // The service answers "queued" for some new events: read through
    // `accepted = "/outcome == new"`, that is not "dup" either, so it is
    // no duplicate but an answer the mapping does not read (exit 3, with
    // an example), however the audit turns out.
    let dir = tempfile::tempdir().unwrap();
    let (s, history) = atomic_run(dir.path(), "queued", None, false, &|t| t);
    assert_eq!(s["exit"]["code"], json!(3), "{}", s["exit"]);
    let rule = s["exit"]["rule"].as_str().unwrap();
    let why = r#"neither accepted `/outcome == "new"` nor duplicate `/outcome == "dup"` holds"#;
    assert!(
        rule.contains("not the [api] mapping's shape") && rule.contains(why),
        "{rule}"
    );
    let quoted = serde_json::to_string(why).unwrap();
    assert!(
        history.contains(&quoted[1..quoted.len() - 1]),
        "the history records why"
    );
}

#[test]
fn an_accepted_value_without_a_duplicate_value_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("mapped.toml");
    let text = mapped_scenario("http://127.0.0.1:9", Path::new("/x.db"), "")
        .replace("duplicate = \"/outcome == dup\"\n", "");
    std::fs::write(&sc, &text).unwrap();
    let out = dir.path().join("run");
    let o = run(&sc, &out, &[(SECRET_VAR, SECRET)]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    let line = text
        .lines()
        .position(|l| l.starts_with("accepted = "))
        .unwrap()
        + 1;
    assert!(
        stderr.contains(&format!("mapped.toml:{line}:"))
            && stderr.contains("name the duplicate's too"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran");
    // `duplicate` without `accepted` cannot be read either.
    let text = mapped_scenario("http://127.0.0.1:9", Path::new("/x.db"), "")
        .replace("accepted = \"/outcome == new\"", "accepted = \"\"");
    std::fs::write(&sc, &text).unwrap();
    let o = run(&sc, &out, &[(SECRET_VAR, SECRET)]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`duplicate` needs `accepted`"), "{stderr}");
}
