//! Shards of an outbox run (`run --shard i/n --run-id ID` on `workload =
//! "outbox"`) against one reference server, and their merge: each shard
//! sends only the deliveries of the message ids it owns ((m - 1) mod n =
//! i), together exactly the unsharded run's; a shard alone is not judged
//! (exit 4); the merge judges the merged history against the final tables
//! with the outbox checkers (the protocol holds, a naive variant is
//! caught, and `audit` confirms the merged folder). Refused (exit 2):
//! shards of two workloads, a missing shard, a shard whose history has no
//! footer, a run id used before on the service, and `--shard` on what no
//! two runners can share. Every figure asserted is a count the plan fixes
//! (no faults, a queue drained to its end), none a time.

use crate::common::shard::{hlog_totals, merge};
use crate::common::{command, json, specstorm, summary, text, verdict, Server};
use specstorm::history::OpKind;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

const INVARIANTS: [&str; 5] = [
    "TypeOK",
    "AtMostOneStateChange",
    "AtMostOneOutQueueMsg",
    "ConsistentStateAndOutQueue",
    "NoLostOutput",
];
const DELIVERIES: u32 = 3;

/// An outbox scenario in `dir` against the service at `url` (`variant`,
/// `messages` x 3 deliveries, 4 handlers, no faults): its path.
fn scenario(dir: &Path, name: &str, url: &str, variant: &str, messages: u64) -> String {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "workload = \"outbox\"\nvariant = \"{variant}\"\nseed = 7\n[target]\nkind = \
             \"http\"\nurl = \"{url}\"\n[outbox]\nmessages = {messages}\ndeliveries = \
             {DELIVERIES}\nhandlers = 4\nmax_attempts = 1000\n[stop]\nduration = \"120s\"\n"
        ),
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

fn spawn_shard(scenario: &str, shard: &str, run_id: &str, out: &Path) -> Child {
    command()
        .args(["run", scenario, "-q", "--shard", shard, "--run-id", run_id])
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run specstorm")
}

/// Waits for a shard; a shard alone is inconclusive (exit 4: only the
/// merge is judged), else the test fails with what it said.
fn shard_alone(c: Child, what: &str) {
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{what}: {}", text(&o));
}

/// Shards 0/2 and 1/2 of `scenario`, run at once.
fn shard_pair(scenario: &str, run_id: &str, dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (
        dir.join(format!("{run_id}-0")),
        dir.join(format!("{run_id}-1")),
    );
    let c0 = spawn_shard(scenario, "0/2", run_id, &a);
    let c1 = spawn_shard(scenario, "1/2", run_id, &b);
    shard_alone(c0, "shard 0");
    shard_alone(c1, "shard 1");
    (a, b)
}

/// Every (msg_id, dup_id) a run's history invoked an attempt of.
fn deliveries(run: &Path) -> BTreeSet<(i64, i64)> {
    crate::common::folder::history_text(run)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "invoke")
        .map(|v| {
            let d = &v["delivery"];
            (d["msg_id"].as_i64().unwrap(), d["dup_id"].as_i64().unwrap())
        })
        .collect()
}

fn all_deliveries(messages: u64) -> BTreeSet<(i64, i64)> {
    (1..=messages as i64)
        .flat_map(|m| (1..=i64::from(DELIVERIES)).map(move |d| (m, d)))
        .collect()
}

#[test]
fn two_protocol_shards_merge_into_one_run_that_holds() {
    const M: u64 = 301;
    let server = Server::start("outbox-protocol");
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "s", &server.url, "outbox-protocol", M);
    let (a, b) = shard_pair(&sc, "pair1", tmp.path());

    // Each shard sent the deliveries of its own message ids, all of them.
    let (da, db) = (deliveries(&a), deliveries(&b));
    assert!(da.iter().all(|&(m, _)| (m - 1) % 2 == 0), "shard 0: {da:?}");
    assert!(db.iter().all(|&(m, _)| (m - 1) % 2 == 1), "shard 1: {db:?}");
    let union: BTreeSet<_> = da.union(&db).copied().collect();
    assert_eq!(union, all_deliveries(M), "the shards together");
    // Each shard's own liveness is of its own messages: 151 and 150.
    assert_eq!(summary(&a)["outbox"]["liveness"]["messages"], 151);
    assert_eq!(summary(&b)["outbox"]["liveness"]["messages"], 150);
    assert_eq!(summary(&b)["outbox"]["liveness"]["ack_disagreements"], 0);
    assert_eq!(summary(&a)["shard"]["run_id"], "pair1");

    let out = tmp.path().join("merged");
    let o = merge(&[&a, &b], &out);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s = summary(&out);
    for inv in INVARIANTS {
        assert_eq!(verdict(&s, inv), "holds", "{inv}");
    }
    assert_eq!(s["workload"], "outbox");
    assert_eq!(s["outbox"]["messages"], M);
    assert_eq!(s["outbox"]["handlers"], 8);
    let live = &s["outbox"]["liveness"];
    assert_eq!(live["messages"], M);
    assert_eq!(live["acked_messages"], M);
    assert_eq!(live["deliveries"], M * u64::from(DELIVERIES));
    assert_eq!(live["drained"], true);
    assert_eq!(live["ack_disagreements"], 0);
    assert_eq!(s["merged"]["shards"].as_array().unwrap().len(), 2);
    let tables = s["merged"]["tables"].as_str().unwrap();
    assert!(tables.contains("/v1/outbox/export"), "{tables}");
    // The merged latency log adds the shards' up, op for op.
    let kinds = [OpKind::Handle];
    let (ta, tb) = (hlog_totals(&a, &kinds), hlog_totals(&b, &kinds));
    let sum: Vec<u64> = ta.iter().zip(&tb).map(|(x, y)| x + y).collect();
    assert_eq!(hlog_totals(&out, &kinds), sum);
    let ops: u64 = ["ok", "fail", "info"]
        .iter()
        .map(|c| s["ops"]["handle"][c].as_u64().unwrap())
        .sum();
    assert_eq!(ops, sum.iter().sum::<u64>());
    assert_eq!(s["history"]["ops"], ops);
    let header = &crate::common::history(&out)[0];
    assert_eq!(header["outbox"]["messages"], M, "{header}");
    assert_eq!(header["merged"]["shards"], 2, "{header}");

    // The merged folder is a run folder: the audit confirms it; a shard's
    // audit, like its run, judges nothing.
    let o = specstorm(&["audit", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("same verdicts as the run"),
        "{}",
        text(&o)
    );
    let o = specstorm(&["audit", a.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));

    // The unsharded run of the same scenario sends the same deliveries.
    let fresh = Server::start("outbox-protocol");
    let whole_sc = scenario(tmp.path(), "w", &fresh.url, "outbox-protocol", M);
    let whole = tmp.path().join("whole");
    let o = specstorm(&["run", &whole_sc, "-q", "--out", whole.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(deliveries(&whole), union);
    assert_eq!(summary(&whole)["outbox"]["liveness"]["messages"], M);
}

#[test]
fn a_naive_variant_sharded_and_merged_is_caught() {
    // naive-no-outbox changes the state once per acked delivery: with 3
    // deliveries and no faults, every message changes it 3 times, which
    // only the merge (not a shard alone) may judge.
    const M: u64 = 40;
    let server = Server::start("outbox-naive-no-outbox");
    let tmp = tempfile::tempdir().unwrap();
    let sc = scenario(tmp.path(), "s", &server.url, "outbox-naive-no-outbox", M);
    let (a, b) = shard_pair(&sc, "naive1", tmp.path());
    let out = tmp.path().join("merged");
    let o = merge(&[&a, &b], &out);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let s = summary(&out);
    assert_eq!(verdict(&s, "AtMostOneStateChange"), "violated");
    assert_eq!(s["invariants"]["AtMostOneStateChange"]["violations"], M);
    assert_eq!(verdict(&s, "TypeOK"), "holds");
    assert_eq!(s["outbox"]["liveness"]["acked_messages"], M);
}

#[test]
fn merges_of_mixed_workloads_missing_or_killed_shards_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let outbox = Server::start("outbox-protocol");
    let sc = scenario(tmp.path(), "s", &outbox.url, "outbox-protocol", 20);
    let (a, b) = shard_pair(&sc, "mix", tmp.path());

    // Shard 0 of a groups run with the same run id, against a groups server.
    let groups = Server::start("groups-atomic");
    let g = tmp.path().join("groups-0");
    let o = specstorm(&[
        "run",
        "scenarios/http-external.toml",
        "-q",
        "--set",
        &format!("target.url=\"{}\"", groups.url),
        "--set",
        "stop.events=200",
        "--shard",
        "0/2",
        "--run-id",
        "mix",
        "--out",
        g.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let m = tmp.path().join("m1");
    let o = merge(&[&g, &b], &m);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("the workload differs"), "{}", text(&o));
    assert!(!m.exists());

    // One shard alone: its sibling is missing.
    let o = merge(&[&b], &m);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("missing"), "{}", text(&o));

    // A shard whose runner was killed: its history has no footer.
    let cut = tmp.path().join("cut-1");
    crate::common::folder::copy_files(&b, &cut);
    let h = crate::common::folder::history_text(&cut).unwrap();
    let lines: Vec<&str> = h.lines().collect();
    assert!(lines.last().unwrap().contains("\"footer\""));
    crate::common::folder::write_history_text(&cut, lines[..lines.len() - 1].join("\n") + "\n");
    let o = merge(&[&a, &cut], &m);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no footer"), "{}", text(&o));
    assert!(!m.exists());

    // The two real shards still merge.
    let o = merge(&[&a, &b], &m);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_used_run_id_and_unshareable_targets_are_refused_before_the_load() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start("outbox-protocol");
    let sc = scenario(tmp.path(), "s", &server.url, "outbox-protocol", 20);
    // One shard after the other: shard 1 meets all of shard 0's rows
    // before its load, and goes on (a sibling's rows are no reason).
    let a = tmp.path().join("used-0");
    let b = tmp.path().join("used-1");
    for (shard, dir) in [("0/2", &a), ("1/2", &b)] {
        shard_alone(spawn_shard(&sc, shard, "used", dir), shard);
    }
    assert!(!deliveries(&b).is_empty());
    // Either shard of run `used` again: the service holds its messages.
    for shard in ["0/2", "1/2"] {
        let again = tmp.path().join(format!("again-{}", &shard[..1]));
        let o = command()
            .args(["run", &sc, "-q", "--shard", shard, "--run-id", "used"])
            .arg("--out")
            .arg(&again)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{shard}: {}", text(&o));
        assert!(text(&o).contains("was used before"), "{}", text(&o));
        // Refused before its load: no attempt in its history.
        assert!(deliveries(&again).is_empty());
    }
    // Another run id on the same service: its rows are another run's too.
    let o = command()
        .args(["run", &sc, "-q", "--shard", "1/2", "--run-id", "other"])
        .arg("--out")
        .arg(tmp.path().join("other"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("already holds"), "{}", text(&o));
    assert_eq!(json(&a.join("summary.json"))["exit"]["code"], 4);

    // What no two runners can share, or split (one message id: shard 1/2
    // would send nothing): refused, nothing written.
    let out = tmp.path().join("x");
    for (args, says) in [
        (
            vec![
                "scenarios/outbox-http.toml",
                "--shard",
                "0/2",
                "--run-id",
                "r",
            ],
            "target.url",
        ),
        (
            vec![
                "scenarios/outbox-protocol.toml",
                "--shard",
                "0/2",
                "--run-id",
                "r",
            ],
            "target.url",
        ),
        (vec![sc.as_str(), "--shard", "0/2"], "--run-id"),
        (vec![sc.as_str(), "--run-id", "r"], "--shard"),
        (
            vec![
                sc.as_str(),
                "--shard",
                "1/2",
                "--run-id",
                "r",
                "--set",
                "outbox.messages=1",
            ],
            "cannot be split",
        ),
    ] {
        let mut all = vec!["run"];
        all.extend(&args);
        all.extend(["-q", "--out", out.to_str().unwrap()]);
        let o = specstorm(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
        assert!(!out.exists(), "{args:?}");
    }
}
