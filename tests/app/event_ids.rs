//! `keys.event_id`: event ids in the shapes services validate (`uuid`, a
//! canonical v4 UUID; `hex32`, 32 hex digits, a Sentry event id) next to
//! the default `namespaced` one. Each shape's ids have their shape in the
//! history and in the rows the service stored; a run of each holds on the
//! in-process SQLite target and on the reference server; two runs of one
//! seed into one database or one service send no id in common and both
//! hold (and their folders audit again); a sharded run of plain ids
//! merges and holds, and a shard whose run id was used before is refused
//! whatever shape the earlier run's ids had; an unknown shape is refused
//! with its place.

use crate::common::run::{load_text, run_into};
use crate::common::{history, json, specstorm, text, Server};
use std::collections::HashSet;
use std::path::Path;
use std::process::{Output, Stdio};

const INVARIANTS: [&str; 4] = [
    "TypeOK",
    "OneGroupPerFingerprint",
    "CountExact",
    "NoMissedRegression",
];

/// Whether `id` is a canonical lowercase version 4 UUID (what a UUID
/// column or a validating service takes).
fn is_uuid(id: &str) -> bool {
    id.len() == 36
        && id.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            14 => c == '4',
            19 => "89ab".contains(c),
            _ => c.is_ascii_digit() || ('a'..='f').contains(&c),
        })
}

/// Whether `id` is 32 lowercase hex digits (a Sentry event id).
fn is_hex32(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// The check of a shape's ids.
fn shape_check(shape: &str) -> fn(&str) -> bool {
    match shape {
        "uuid" => is_uuid,
        "hex32" => is_hex32,
        other => panic!("no check for {other}"),
    }
}

/// The event ids a run folder's history sent.
fn sent_ids(run: &Path) -> HashSet<String> {
    history(run)
        .into_iter()
        .filter(|v| v["type"] == "invoke")
        .filter_map(|v| v["event_id"].as_str().map(String::from))
        .collect()
}

/// The event ids of the rows a run folder's `export.json` holds (every
/// row the service had, of any run).
fn stored_ids(run: &Path) -> Vec<String> {
    json(&run.join("export.json"))["events"]
        .as_array()
        .expect("an export's events")
        .iter()
        .map(|r| r["id"].as_str().expect("a string id").to_string())
        .collect()
}

/// Exit 0, every invariant holds, and `specstorm audit` of the folder
/// agrees.
fn holds_and_audits(o: &Output, run: &Path) {
    assert_eq!(o.status.code(), Some(0), "{}", text(o));
    let s = json(&run.join("summary.json"));
    for inv in INVARIANTS {
        assert_eq!(
            s["invariants"][inv]["verdict"],
            "holds",
            "{inv}: {}",
            text(o)
        );
    }
    let a = specstorm(&["audit", run.to_str().unwrap()]);
    assert_eq!(a.status.code(), Some(0), "audit: {}", text(&a));
}

/// Two runs of one seed on one target (`what`): each sent 3000 ids, none
/// of them the other's, both hold and audit again, and the second judged
/// only its own 3000 rows.
fn apart_and_holding(what: &str, (oa, a): (&Output, &Path), (ob, b): (&Output, &Path)) {
    let (ia, ib) = (sent_ids(a), sent_ids(b));
    assert_eq!((ia.len(), ib.len()), (3000, 3000));
    assert!(ia.is_disjoint(&ib), "the runs share event ids");
    holds_and_audits(oa, a);
    holds_and_audits(ob, b);
    assert_eq!(json(&b.join("summary.json"))["history"]["event_rows"], 3000);
    println!(
        "two runs of seed 1, {what}: {} + {} ids, {} in common; exit {:?} and {:?}",
        ia.len(),
        ib.len(),
        ia.intersection(&ib).count(),
        oa.status.code(),
        ob.status.code()
    );
}

fn shape_set(shape: &str) -> String {
    format!("keys.event_id=\"{shape}\"")
}

/// The recorded shape: the header's `event_id`, absent for namespaced.
fn header_shape(run: &Path) -> serde_json::Value {
    history(run)[0]["event_id"].clone()
}

#[test]
fn each_shape_holds_on_sqlite_with_ids_of_its_shape() {
    let tmp = tempfile::tempdir().unwrap();
    for shape in ["uuid", "hex32"] {
        let out = tmp.path().join(shape);
        let set = shape_set(shape);
        let o = run_into(
            "scenarios/groups-atomic.toml",
            &out,
            &["--set", "stop.events=3000", "--set", &set],
        );
        holds_and_audits(&o, &out);
        let ids = sent_ids(&out);
        assert_eq!(ids.len(), 3000, "{shape}");
        let check = shape_check(shape);
        assert!(ids.iter().all(|id| check(id)), "{shape}: {ids:?}");
        assert_eq!(header_shape(&out), shape);
        let saved = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
        assert!(
            saved.contains(&format!("event_id = \"{shape}\"\n")),
            "{saved}"
        );
    }
    // Unset: the header and the saved scenario say nothing of it.
    let out = tmp.path().join("default");
    let o = run_into(
        "scenarios/groups-atomic.toml",
        &out,
        &["--set", "stop.events=300"],
    );
    assert!(o.status.code().is_some(), "{}", text(&o));
    assert_eq!(header_shape(&out), serde_json::Value::Null);
    let saved = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(!saved.contains("event_id"), "{saved}");
}

/// `scenarios/http-external.toml` against `url`, with `sets`.
fn http_run(url: &str, out: &Path, sets: &[&str]) -> Output {
    let target = format!("target.url=\"{url}\"");
    let mut args = vec!["--set", &target, "--set", "stop.events=3000"];
    for s in sets {
        args.extend(["--set", s]);
    }
    run_into("scenarios/http-external.toml", out, &args)
}

#[test]
fn each_plain_shape_holds_on_the_reference_server_and_every_stored_id_has_it() {
    let tmp = tempfile::tempdir().unwrap();
    for shape in ["uuid", "hex32"] {
        let server = Server::start("groups-atomic");
        let out = tmp.path().join(shape);
        let o = http_run(&server.url, &out, &[&shape_set(shape)]);
        holds_and_audits(&o, &out);
        let check = shape_check(shape);
        let sent = sent_ids(&out);
        assert_eq!(sent.len(), 3000, "{shape}");
        assert!(sent.iter().all(|id| check(id)), "{shape}");
        // What the service stored, as a validating service would see it.
        let stored = stored_ids(&out);
        assert_eq!(stored.len(), 3000, "{shape}");
        assert!(stored.iter().all(|id| check(id)), "{shape}: {stored:?}");
        // The project namespace still keeps the run apart.
        let ns = history(&out)[0]["namespace"].as_str().unwrap().to_string();
        assert!(ns.starts_with('r') && ns.ends_with('.'), "{ns}");
        assert!(!sent.iter().any(|id| id.starts_with(&ns)));
    }
}

#[test]
fn two_runs_of_one_seed_into_one_service_share_no_id_and_both_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start("groups-atomic");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let uuid = shape_set("uuid");
    let oa = http_run(&server.url, &a, &[&uuid]);
    let ob = http_run(&server.url, &b, &[&uuid]);
    apart_and_holding("uuid ids, one service", (&oa, &a), (&ob, &b));
    // The second run's export holds both runs' rows, all UUIDs; its audit
    // kept only its own namespace's.
    let stored = stored_ids(&b);
    assert_eq!(stored.len(), 6000);
    assert!(stored.iter().all(|id| is_uuid(id)));
}

#[test]
fn two_runs_of_one_seed_into_one_database_share_no_id_and_both_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("shared.db");
    let path = format!("target.path=\"{}\"", db.display());
    let run = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        let mut args = vec![
            "--set",
            "stop.events=3000",
            "--set",
            "keys.event_id=\"hex32\"",
            "--set",
            &path,
        ];
        args.extend_from_slice(extra);
        (run_into("scenarios/groups-atomic.toml", &out, &args), out)
    };
    // The first on a fresh database (no namespace), the second reusing it
    // in a namespace of its own: the same seed draws the same bits.
    let (oa, a) = run("a", &[]);
    let (ob, b) = run("b", &["--set", "target.reuse=true"]);
    apart_and_holding("hex32 ids, one database", (&oa, &a), (&ob, &b));
}

#[test]
fn a_sharded_run_of_plain_ids_merges_and_holds_and_its_run_id_is_then_refused() {
    let server = Server::start("groups-atomic");
    let tmp = tempfile::tempdir().unwrap();
    let shard = |i: &str, shape: &str, out: &Path| {
        let mut c = crate::common::command();
        c.args(["run", "scenarios/http-external.toml", "-q", "--set"])
            .arg(format!("target.url=\"{}\"", server.url))
            .args(["--set", "stop.events=3001", "--set", "load.ingesters=8"])
            .args(["--set", "load.resolvers=2", "--set", &shape_set(shape)])
            .args(["--shard", i, "--run-id", "plain", "--out"])
            .arg(out)
            .stdout(Stdio::null());
        c
    };
    let (a, b) = (tmp.path().join("s0"), tmp.path().join("s1"));
    let spawn = |mut c: std::process::Command| c.spawn().expect("run specstorm");
    let mut c0 = spawn(shard("0/2", "uuid", &a));
    let mut c1 = spawn(shard("1/2", "uuid", &b));
    // A shard alone is inconclusive: only the merge is judged.
    assert_eq!(c0.wait().unwrap().code(), Some(4));
    assert_eq!(c1.wait().unwrap().code(), Some(4));
    let (ia, ib) = (sent_ids(&a), sent_ids(&b));
    assert!(ia.is_disjoint(&ib), "the shards' event ids overlap");
    assert_eq!(ia.len() + ib.len(), 3001);
    assert!(ia.iter().chain(&ib).all(|id| is_uuid(id)));
    let merged = tmp.path().join("merged");
    let o = crate::common::shard::merge(&[&a, &b], &merged);
    holds_and_audits(&o, &merged);
    assert_eq!(json(&merged.join("summary.json"))["events"], 3001);
    println!(
        "sharded uuid run: {} + {} ids, merge exit {:?}",
        ia.len(),
        ib.len(),
        o.status.code()
    );

    // Shard 0 of run id `plain` again, now with hex32 ids: its earlier ids
    // carry no prefix, but their keyed tag says whose they are.
    let again = tmp.path().join("again");
    let o = shard("0/2", "hex32", &again).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was used before"), "{err}");
    println!("shard 0 of the used run id, hex32: exit 2: {}", err.trim());
}

#[test]
fn an_unknown_shape_is_refused_with_its_place() {
    let err = load_text("seed = 1\n[keys]\nevent_id = \"guid\"\n").unwrap_err();
    assert_eq!(
        err,
        "t.toml:3: invalid `keys.event_id` \"guid\": expected one of \"namespaced\", \"uuid\", \"hex32\""
    );
    let o = specstorm(&[
        "run",
        "scenarios/smoke.toml",
        "-q",
        "--set",
        "keys.event_id=UUID",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "--set keys.event_id=UUID: invalid `keys.event_id` \"UUID\": expected one of"
        ),
        "{}",
        text(&o)
    );
    for shape in ["namespaced", "uuid", "hex32"] {
        let s = load_text(&format!("[keys]\nevent_id = \"{shape}\"\n")).unwrap();
        assert!(s.to_toml().contains(&format!("event_id = \"{shape}\"")));
    }
}
