//! `specstorm serve`: the reference HTTP server, end to end through the
//! binary (contract v1, groups workload), for both built-in variants.

use reqwest::blocking::Client;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::common::http::client;
use crate::common::procs::wait_bounded;
use crate::common::{command, Server};

fn ingest(c: &Client, url: &str, id: &str, project: &str, fp: &str) -> (StatusCode, Value) {
    let r = c
        .post(format!("{url}/v1/events"))
        .json(&json!({"id": id, "project": project, "fingerprint": fp, "message": "boom"}))
        .send()
        .unwrap();
    (r.status(), r.json().unwrap())
}

fn resolve(c: &Client, url: &str, group: &str) -> (StatusCode, Value) {
    let r = c
        .post(format!("{url}/v1/groups/{group}/resolve"))
        .send()
        .unwrap();
    let status = r.status();
    let text = r.text().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn export(c: &Client, url: &str) -> Value {
    let r = c.get(format!("{url}/v1/export")).send().unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().unwrap()
}

fn contract(variant: &str) {
    let s = Server::start(variant);
    let (c, url) = (client(), s.url.clone());

    assert_eq!(
        c.get(format!("{url}/healthz")).send().unwrap().status(),
        StatusCode::OK
    );

    let (st, b) = ingest(&c, &url, "e1", "p", "f");
    assert_eq!(st, StatusCode::OK);
    assert_eq!(b, json!({"accepted": true, "group_id": "g:p:f"}));
    let (st, b) = ingest(&c, &url, "e1", "p", "f");
    assert_eq!(st, StatusCode::OK);
    assert_eq!(b, json!({"accepted": false, "group_id": "g:p:f"}));

    let (st, b) = resolve(&c, &url, "g:p:f");
    assert_eq!(st, StatusCode::OK);
    assert_eq!(b, json!({"resolved": true, "event_count": 1}));
    let (st, b) = resolve(&c, &url, "g:p:f");
    assert_eq!(st, StatusCode::CONFLICT);
    assert_eq!(
        b,
        json!({"resolved": false, "status": "resolved", "event_count": 1})
    );

    let (st, b) = ingest(&c, &url, "e2", "p", "f");
    assert_eq!(st, StatusCode::OK);
    assert_eq!(b, json!({"accepted": true, "group_id": "g:p:f"}));
    let (st, b) = resolve(&c, &url, "g:p:f");
    assert_eq!(st, StatusCode::OK);
    assert_eq!(b, json!({"resolved": true, "event_count": 2}));

    let (st, _) = resolve(&c, &url, "g:p:nope");
    assert_eq!(st, StatusCode::NOT_FOUND);

    for bad in [
        "{not json",
        r#"{"id": "e3"}"#,
        r#"{"id": 3, "project": "p", "fingerprint": "f"}"#,
    ] {
        let r = c
            .post(format!("{url}/v1/events"))
            .header("content-type", "application/json")
            .body(bad)
            .send()
            .unwrap();
        let st = r.status();
        assert!(
            st == StatusCode::BAD_REQUEST || st == StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {st}"
        );
        let body: Value = r.json().unwrap();
        assert!(body["error"].is_string(), "{body}");
    }

    let x = export(&c, &url);
    let events = x["events"].as_array().unwrap();
    assert_eq!(events.len(), 2, "{x}");
    let mut ids = Vec::new();
    for e in events {
        let o = e.as_object().unwrap();
        let keys: BTreeSet<&str> = o.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            BTreeSet::from(["id", "project", "fingerprint", "group_id", "received_at"])
        );
        assert_eq!(o["project"], "p");
        assert_eq!(o["fingerprint"], "f");
        assert_eq!(o["group_id"], "g:p:f");
        assert!(o["received_at"].is_i64(), "{e}");
        ids.push(o["id"].as_str().unwrap().to_string());
    }
    ids.sort();
    assert_eq!(ids, ["e1", "e2"]);
    assert_eq!(
        x["groups"],
        json!([{"id": "g:p:f", "project": "p", "fingerprint": "f",
                "status": "resolved", "event_count": 2}])
    );

    // Optional in the contract, not offered.
    assert_eq!(
        c.post(format!("{url}/v1/reset")).send().unwrap().status(),
        StatusCode::NOT_FOUND
    );

    let status = s.terminate();
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn contract_groups_atomic() {
    contract("groups-atomic");
}

#[test]
fn contract_groups_naive() {
    contract("groups-naive");
}

#[test]
fn concurrent_ingest_counts_exactly() {
    let s = Server::start("groups-atomic");
    let url = s.url.clone();
    let c = client();
    let threads: Vec<_> = (0..32)
        .map(|t| {
            let (c, url) = (c.clone(), url.clone());
            std::thread::spawn(move || {
                // group -> accepted ids
                let mut accepted: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for i in 0..200 {
                    let fp = format!("f{}", (t * 7 + i) % 10);
                    let id = format!("t{t}-e{i}");
                    let (st, b) = ingest(&c, &url, &id, "p", &fp);
                    assert_eq!(st, StatusCode::OK, "{b}");
                    assert_eq!(b["accepted"], true, "{b}");
                    let g = b["group_id"].as_str().unwrap().to_string();
                    accepted.entry(g.clone()).or_default().push(id.clone());
                    if i % 5 == 0 {
                        // A retry of the same event: a duplicate.
                        let (st, b) = ingest(&c, &url, &id, "p", &fp);
                        assert_eq!(st, StatusCode::OK, "{b}");
                        assert_eq!(b, json!({"accepted": false, "group_id": g}));
                    }
                }
                accepted
            })
        })
        .collect();
    let mut want: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for h in threads {
        for (g, v) in h.join().unwrap() {
            *want.entry(g).or_default() += v.len();
            ids.extend(v);
        }
    }
    assert_eq!(ids.len(), 32 * 200);
    let x = export(&c, &url);
    let got: BTreeMap<String, usize> = x["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["id"].as_str().unwrap().to_string(),
                g["event_count"].as_u64().unwrap() as usize,
            )
        })
        .collect();
    assert_eq!(got, want);
    let events: BTreeSet<String> = x["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ids);
    assert_eq!(s.terminate().code(), Some(0));
}

/// An ingest whose counting step changes no row (a variant that never
/// creates the group) is no `ok`: 503 with a JSON error.
#[test]
fn ingest_that_does_not_count_is_503() {
    let dir = tempfile::tempdir().unwrap();
    let text = include_str!("../../targets/sqlite/groups-atomic.sql");
    let start = text.find("-- name: ingest.s2").unwrap();
    let end = text.find("-- name: ingest.s3").unwrap();
    let broken = format!(
        "{}-- name: ingest.s2\nUPDATE error_groups SET status = status WHERE id = :group_id;\n\n{}",
        &text[..start],
        &text[end..]
    );
    let sql = dir.path().join("no-group.sql");
    std::fs::write(&sql, broken).unwrap();
    let s = Server::start(sql.to_str().unwrap());
    let c = client();
    let (st, b) = ingest(&c, &s.url, "e1", "p", "f");
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{b}");
    assert!(b["error"].is_string(), "{b}");
    assert_eq!(s.terminate().code(), Some(0));
}

#[test]
fn busy_with_nothing_applied_is_429_not_503() {
    // Another connection holds the write lock; the server waits 1 ms, gets
    // SQLITE_BUSY at s1, and nothing of the op applied: 429 (send again
    // later), which the bench reads as a certain `fail`.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("target.db");
    let s = Server::start_with("groups-atomic", &db, &["--busy-timeout", "1ms"]);
    let c = client();
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (status, body) = ingest(&c, &s.url, "e1", "p", "f");
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("nothing applied"),
        "{body}"
    );
    lock.execute_batch("COMMIT").unwrap();
    let (status, body) = ingest(&c, &s.url, "e1", "p", "f");
    assert_eq!(
        (status, body["accepted"].clone()),
        (StatusCode::OK, json!(true))
    );
}

#[test]
fn the_fault_hook_crashes_only_when_enabled() {
    let post = |url: &str, id: &str| {
        client()
            .post(format!("{url}/v1/events"))
            .header("x-specstorm-fault", "crash-after=s1")
            .json(&json!({"id": id, "project": "p", "fingerprint": "f", "message": "m"}))
            .send()
            .unwrap()
    };
    // Without --fault-hooks the header is ignored.
    let plain = Server::start("groups-atomic");
    assert_eq!(post(&plain.url, "e1").status(), StatusCode::OK);
    // With it, the op stops after s1: 500 naming the step, the row is
    // there, and no group counted it (a stranded event).
    let dir = tempfile::tempdir().unwrap();
    let hooked = Server::start_with(
        "groups-atomic",
        &dir.path().join("t.db"),
        &["--fault-hooks"],
    );
    let r = post(&hooked.url, "e1");
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(r.json::<Value>().unwrap()["crashed_after"], "s1");
    let x = export(&client(), &hooked.url);
    assert_eq!(x["events"].as_array().unwrap().len(), 1, "{x}");
    assert!(x["groups"].as_array().unwrap().is_empty(), "{x}");
    // A retry is a duplicate: the event stays uncounted.
    let (status, body) = ingest(&client(), &hooked.url, "e1", "p", "f");
    assert_eq!(
        (status, body["accepted"].clone()),
        (StatusCode::OK, json!(false))
    );
}

/// `groups-atomic.sql` with the blocks from `first` up to (not including)
/// `next` replaced by `blocks`, and `schema_extra` appended to the schema
/// block; written into `dir` as `name`.
fn variant_with(
    dir: &std::path::Path,
    name: &str,
    schema_extra: &str,
    first: &str,
    next: &str,
    blocks: &str,
) -> String {
    let text = include_str!("../../targets/sqlite/groups-atomic.sql");
    let start = text.find(&format!("-- name: {first}\n")).unwrap();
    let end = text.find(&format!("-- name: {next}\n")).unwrap();
    let schema_end = text.find("-- name: ingest.s1\n").unwrap();
    let out = format!(
        "{}{schema_extra}\n\n{}{blocks}\n\n{}",
        &text[..schema_end].trim_end(),
        &text[schema_end..start],
        &text[end..]
    );
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path.to_str().unwrap().to_string()
}

/// A duplicate is the contract's duplicate (200, accepted = false) even
/// when a step before the stop, or a trigger its statement fired, changed
/// rows: the op's completion is `ok`, as in-process.
#[test]
fn a_duplicate_after_a_trigger_or_a_write_is_the_contracts_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    // Every attempt logs itself: a BEFORE INSERT trigger fires even for an
    // insert OR IGNORE drops, and a first step writes a row of its own.
    let extra = "CREATE TABLE IF NOT EXISTS attempts (event_id TEXT, via TEXT);\n\
                 CREATE TRIGGER IF NOT EXISTS log_attempt BEFORE INSERT ON error_events\n\
                 BEGIN INSERT INTO attempts VALUES (NEW.id, 'trigger'); END;";
    let blocks = "-- name: ingest.s0\n\
                  INSERT INTO attempts VALUES (:event_id, 'step');\n\n\
                  -- name: ingest.s1\n\
                  -- stop-if: changes = 0\n\
                  INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)\n\
                  VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);";
    let sql = variant_with(
        dir.path(),
        "logged.sql",
        extra,
        "ingest.s1",
        "ingest.s2",
        blocks,
    );
    let db = dir.path().join("t.db");
    let s = Server::start_on(&sql, &db);
    let c = client();
    assert_eq!(
        ingest(&c, &s.url, "e1", "p", "f"),
        (
            StatusCode::OK,
            json!({"accepted": true, "group_id": "g:p:f"})
        )
    );
    assert_eq!(
        ingest(&c, &s.url, "e1", "p", "f"),
        (
            StatusCode::OK,
            json!({"accepted": false, "group_id": "g:p:f"})
        )
    );
    let log: Vec<(String, i64)> = rusqlite::Connection::open(&db)
        .unwrap()
        .prepare("SELECT via, count(*) FROM attempts GROUP BY via ORDER BY via")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        log,
        [("step".to_string(), 2), ("trigger".to_string(), 2)],
        "the duplicate wrote rows before it stopped"
    );
    assert_eq!(export(&c, &s.url)["groups"][0]["event_count"], 1);
}

/// A compare-and-swap resolver: status and count read in one step, the
/// update conditional on the status read, then a probe.
const CAS_RESOLVE: &str = "-- name: resolve.read\n\
SELECT status AS cur, event_count FROM error_groups WHERE id = :group_id;\n\n\
-- name: resolve.update\n\
-- stop-if: rows > 0\n\
UPDATE error_groups SET status = 'resolved'\n\
WHERE id = :group_id AND status = :cur AND :cur IN ('open', 'regressed')\n\
RETURNING event_count;\n\n\
-- name: resolve.probe\n\
SELECT status, event_count FROM error_groups WHERE id = :group_id;";

#[test]
fn a_compare_and_swap_resolver_is_answered_as_the_contract_says() {
    let dir = tempfile::tempdir().unwrap();
    let sql = variant_with(
        dir.path(),
        "cas.sql",
        "",
        "resolve.update",
        "export.events",
        CAS_RESOLVE,
    );
    let s = Server::start_with(&sql, &dir.path().join("t.db"), &["--fault-hooks"]);
    let c = client();
    assert_eq!(ingest(&c, &s.url, "e1", "p", "f").0, StatusCode::OK);
    // Two resolves race; the one paused before its update reads the
    // status first or second: either way exactly one resolves, and the
    // other is refused with its probe (never 503).
    let paused = {
        let url = s.url.clone();
        std::thread::spawn(move || {
            let r = client()
                .post(format!("{url}/v1/groups/g:p:f/resolve"))
                .header("x-specstorm-fault", "pause=update:300000000")
                .send()
                .unwrap();
            (r.status(), r.json::<Value>().unwrap())
        })
    };
    let other = resolve(&c, &s.url, "g:p:f");
    let mut answers = vec![other, paused.join().unwrap()];
    answers.sort_by_key(|(st, _)| *st);
    assert_eq!(
        answers,
        [
            (StatusCode::OK, json!({"resolved": true, "event_count": 1})),
            (
                StatusCode::CONFLICT,
                json!({"resolved": false, "status": "resolved", "event_count": 1})
            ),
        ]
    );
    assert_eq!(
        resolve(&c, &s.url, "g:p:f"),
        (
            StatusCode::CONFLICT,
            json!({"resolved": false, "status": "resolved", "event_count": 1})
        )
    );
    assert_eq!(resolve(&c, &s.url, "g:p:nope").0, StatusCode::NOT_FOUND);
    // Regressed, then resolved again with the new count.
    assert_eq!(ingest(&c, &s.url, "e2", "p", "f").0, StatusCode::OK);
    assert_eq!(
        resolve(&c, &s.url, "g:p:f"),
        (StatusCode::OK, json!({"resolved": true, "event_count": 2}))
    );
}

/// A refused resolve whose steps took no probe (no statement read both
/// status and count) changed nothing: 409 without a probe, never 503 (and
/// never 404, which says the group does not exist).
#[test]
fn a_refusal_without_a_probe_is_409_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let cas = CAS_RESOLVE.replace(
        "SELECT status, event_count FROM error_groups WHERE id = :group_id;",
        "SELECT status FROM error_groups WHERE id = :group_id;",
    );
    let no_probe = &cas[..cas.find("\n\n-- name: resolve.probe").unwrap()];
    for (name, blocks) in [
        ("status-only.sql", cas.as_str()),
        ("no-probe.sql", no_probe),
    ] {
        let sql = variant_with(
            dir.path(),
            name,
            "",
            "resolve.update",
            "export.events",
            blocks,
        );
        let s = Server::start_on(&sql, &dir.path().join(format!("{name}.db")));
        let c = client();
        assert_eq!(ingest(&c, &s.url, "e1", "p", "f").0, StatusCode::OK);
        assert_eq!(resolve(&c, &s.url, "g:p:f").0, StatusCode::OK, "{name}");
        assert_eq!(
            resolve(&c, &s.url, "g:p:f"),
            (StatusCode::CONFLICT, json!({"resolved": false})),
            "{name}"
        );
    }
}

/// An op that ended `fail` for a reason that certainly applied nothing
/// (not a busy lock) is the contract's "not applied" (422), not 503.
#[test]
fn a_failure_that_applied_nothing_is_422() {
    let dir = tempfile::tempdir().unwrap();
    // Resolve: the read returns every group, more than one row: the op
    // ends before any write.
    let many = CAS_RESOLVE.replace(
        "SELECT status AS cur, event_count FROM error_groups WHERE id = :group_id;",
        "SELECT status AS cur, event_count FROM error_groups WHERE :group_id IS NOT NULL;",
    );
    let sql = variant_with(
        dir.path(),
        "many.sql",
        "",
        "resolve.update",
        "export.events",
        &many,
    );
    let s = Server::start_on(&sql, &dir.path().join("many.db"));
    let c = client();
    assert_eq!(ingest(&c, &s.url, "e1", "p", "f").0, StatusCode::OK);
    assert_eq!(ingest(&c, &s.url, "e2", "p", "g").0, StatusCode::OK);
    let (st, b) = resolve(&c, &s.url, "g:p:f");
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert!(b["error"].as_str().unwrap().contains("not applied"), "{b}");
    // Ingest: a read-only first step that fails (the message is no JSON).
    let blocks = "-- name: ingest.s0\n\
                  SELECT json_extract(:message, '$.level') AS level;\n\n\
                  -- name: ingest.s1\n\
                  -- stop-if: changes = 0\n\
                  INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)\n\
                  VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);";
    let sql = variant_with(dir.path(), "json.sql", "", "ingest.s1", "ingest.s2", blocks);
    let s = Server::start_on(&sql, &dir.path().join("json.db"));
    let (st, b) = ingest(&c, &s.url, "e1", "p", "f");
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert!(export(&c, &s.url)["events"].as_array().unwrap().is_empty());
}

/// The fault hook's 500 says what the op did before it crashed: the steps
/// it ran with the rows each changed, whether the event was counted, the
/// count a resolve returned.
#[test]
fn the_fault_hooks_answer_carries_what_the_op_did() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_with(
        "groups-atomic",
        &dir.path().join("t.db"),
        &["--fault-hooks"],
    );
    let post = |path: &str, hook: &str, body: Option<Value>| {
        let mut r = client()
            .post(format!("{}{path}", s.url))
            .header("x-specstorm-fault", hook);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let r = r.send().unwrap();
        (r.status(), r.json::<Value>().unwrap())
    };
    let ev = |id: &str| Some(json!({"id": id, "project": "p", "fingerprint": "f"}));
    let (st, b) = post("/v1/events", "crash-after=s3", ev("e1"));
    assert_eq!(st, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(b["crashed_after"], "s3");
    assert_eq!(b["accepted"], true, "{b}");
    assert_eq!(
        b["steps"],
        json!([{"step": "s1", "changes": 1}, {"step": "s2", "changes": 1},
               {"step": "s3", "changes": 1}])
    );
    let (_, b) = post("/v1/events", "crash-after=s1", ev("e2"));
    assert_eq!(b["steps"], json!([{"step": "s1", "changes": 1}]));
    assert!(b.get("accepted").is_none(), "{b}");
    // A duplicate stopped at s1: the op had ended as one.
    let (_, b) = post("/v1/events", "crash-after=s1", ev("e1"));
    assert_eq!(b["steps"], json!([{"step": "s1", "changes": 0}]));
    assert_eq!(b["accepted"], false, "{b}");
    // A resolve that crashed after resolving: its count and its step.
    let (st, b) = post("/v1/groups/g:p:f/resolve", "crash-after=update", None);
    assert_eq!(st, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        (
            &b["resolved"],
            &b["event_count"],
            &b["effect_step"],
            &b["steps"]
        ),
        (
            &json!(true),
            &json!(1),
            &json!(0),
            &json!([{"step": "update", "changes": 1}])
        ),
        "{b}"
    );
    // Refused, then crashed after its probe: nothing changed.
    let (_, b) = post("/v1/groups/g:p:f/resolve", "crash-after=probe", None);
    assert_eq!(
        b["steps"],
        json!([{"step": "update", "changes": 0}, {"step": "probe", "changes": 0}])
    );
    assert_eq!(b["resolved"], false, "{b}");
}

/// The atomic file with group ids of its own (`grp-PROJECT:FINGERPRINT`),
/// which its resolve steps compute from `:project` and `:fingerprint`.
fn own_ids_file(dir: &std::path::Path) -> std::path::PathBuf {
    let own = "'grp-' || :project || ':' || :fingerprint";
    let text = include_str!("../../targets/sqlite/groups-atomic.sql")
        .replace(
            "VALUES (:group_id, :project, :fingerprint, 'open', 0);",
            &format!("VALUES ({own}, :project, :fingerprint, 'open', 0);"),
        )
        .replace("WHERE id = :group_id", &format!("WHERE id = {own}"));
    assert!(!text.contains("id = :group_id"), "{text}");
    let sql = dir.join("own-ids.sql");
    std::fs::write(&sql, text).unwrap();
    sql
}

fn resolve_with(c: &Client, url: &str, group: &str, body: &str) -> (StatusCode, Value) {
    let r = c
        .post(format!("{url}/v1/groups/{group}/resolve"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .unwrap();
    let status = r.status();
    (status, r.json().unwrap_or(Value::Null))
}

/// A resolve carries the group's project and fingerprint (an optional
/// body): a design with its own group ids resolves its row by them. Without
/// the body the server reads them from its own `g:PROJECT:FINGERPRINT` id.
#[test]
fn resolve_binds_project_and_fingerprint_for_own_group_ids() {
    let dir = tempfile::tempdir().unwrap();
    let sql = own_ids_file(dir.path());
    let s = Server::start(sql.to_str().unwrap());
    let (c, url) = (client(), s.url.clone());
    let (st, b) = ingest(&c, &url, "e1", "p", "f");
    assert_eq!((st, b["accepted"].clone()), (StatusCode::OK, json!(true)));
    assert_eq!(export(&c, &url)["groups"][0]["id"], "grp-p:f");

    let body = r#"{"project": "p", "fingerprint": "f"}"#;
    let (st, b) = resolve_with(&c, &url, "g:p:f", body);
    assert_eq!(st, StatusCode::OK, "{b}");
    assert_eq!(b, json!({"resolved": true, "event_count": 1}));
    // No body: (p, f) from the server's own id.
    let (st, b) = resolve(&c, &url, "g:p:f");
    assert_eq!(st, StatusCode::CONFLICT, "{b}");
    assert_eq!(
        b,
        json!({"resolved": false, "status": "resolved", "event_count": 1})
    );
    // The design's own id (as its export names it), with the body.
    let (st, _) = resolve_with(&c, &url, "grp-p:f", body);
    assert_eq!(st, StatusCode::CONFLICT);

    // Requests that cannot be answered soundly run nothing.
    let (st, b) = resolve_with(&c, &url, "g:p:f", r#"{"project": "q", "fingerprint": "f"}"#);
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    let (st, _) = resolve_with(&c, &url, "g:p:f", r#"{"project": "p"}"#);
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
    let (st, _) = resolve_with(&c, &url, "g:p:f", "{not json");
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, _) = resolve(&c, &url, "grp-p:f");
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(s.terminate().code(), Some(0));
}

/// The bench's client sends the body on the contract's resolve: with an
/// id the server never gave, only the body can address the row.
#[test]
fn the_bench_sends_project_and_fingerprint_with_a_resolve() {
    use specstorm::target::http::client::HttpClient;
    use specstorm::workload::groups::http_client::resolve;
    let dir = tempfile::tempdir().unwrap();
    let sql = own_ids_file(dir.path());
    let s = Server::start(sql.to_str().unwrap());
    let (st, _) = ingest(&client(), &s.url, "e1", "p", "f");
    assert_eq!(st, StatusCode::OK);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let a = rt.block_on(async {
        let c = HttpClient::new(&s.url, Duration::from_secs(2), Duration::from_secs(20)).unwrap();
        resolve(&c, "grp-p:f", "p", "f", None).await
    });
    assert_eq!(a.kind, specstorm::history::CompletionType::Ok, "{a:?}");
    assert_eq!(a.result.event_count, Some(1), "{a:?}");
    assert_eq!(s.terminate().code(), Some(0));
}

/// `specstorm serve --addr ADDR FLAGS` until it listens, then SIGTERM:
/// its first stdout line and its whole stderr.
fn serve_once(addr: &str, flags: &[&str]) -> (String, String) {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let mut child = command()
        .args(["serve", "--variant", "groups-atomic", "--db"])
        .arg(dir.path().join("t.db"))
        .args(["--addr", addr])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    // Only a hang is caught here, never a slow stop.
    wait_bounded(&mut child, "serve did not stop on SIGTERM");
    (line, errs.join().unwrap())
}

#[test]
fn fault_hooks_on_a_non_loopback_address_print_a_warning() {
    let (line, err) = serve_once("0.0.0.0:0", &["--fault-hooks"]);
    assert!(line.starts_with("listening on http://0.0.0.0:"), "{line}");
    assert!(
        err.contains(
            "specstorm: warning: --fault-hooks on 0.0.0.0:0, which is not a loopback address: \
             anyone who can reach it can make the server abandon ops"
        ),
        "{err}"
    );
    // On loopback, or without the hooks, nothing to warn of.
    for (addr, flags) in [
        ("127.0.0.1:0", &["--fault-hooks"][..]),
        ("[::1]:0", &["--fault-hooks"][..]),
        ("0.0.0.0:0", &[][..]),
    ] {
        let (line, err) = serve_once(addr, flags);
        if addr.starts_with('[') && !line.starts_with("listening") {
            // No IPv6 loopback on this machine: nothing to check there.
            continue;
        }
        assert!(line.starts_with("listening on"), "{addr}: {line}");
        assert!(!err.contains("warning"), "{addr} {flags:?}: {err}");
    }
}
