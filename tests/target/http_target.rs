//! The HTTP target end to end: the bench spawns the reference server (or
//! is pointed at one), loads it over the contract, audits its export; and
//! targets that are unreachable, answer garbage or die mid-run end the run
//! with exit 3, results saved, and no hang.

use crate::common::http::garbage_server;
use crate::common::procs::{free_port, wait_for_history};
use crate::common::run::run_text;
use crate::common::{command, root, specstorm, summary, Server};

use std::process::{Command, Stdio};

const SMALL: [&str; 8] = [
    "--set",
    "stop.events=3000",
    "--set",
    "load.ingesters=16",
    "--set",
    "load.resolvers=4",
    "--set",
    "stop.duration=\"20s\"",
];

#[test]
fn spawned_reference_server_atomic_holds() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = vec![
        "run",
        "scenarios/http-atomic.toml",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(SMALL);
    let o = specstorm(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let s = summary(&out);
    assert!(s["target"]
        .as_str()
        .unwrap()
        .starts_with("http http://127.0.0.1:"));
    crate::common::folder::groups_invariants_hold(&s);
    assert_eq!(s["history"]["event_rows"], 3000);
    // The export is saved, so the run can be audited again offline.
    assert!(out.join("export.json").exists());
    assert!(out.join("server.log").exists());
}

/// The shipped naive scenario over HTTP, with a pause at its race window:
/// every ingest waits 10 ms after reading its group's status and before
/// its counting write, so the resolves of the hot groups land between the
/// two. The race is then certain on any machine, and the run stops by
/// its event count, not by a duration.
const PAUSE_AT_THE_RACE: &str = "\n[[faults]]\nkind = \"pause\"\nops = \"ingest\"\n\
                                 step = \"s3_write\"\nprobability = 1.0\ndelay = \"10ms\"\n";

#[test]
fn spawned_reference_server_naive_is_judged_and_caught() {
    // Clean but for a NoMissedRegression violation (never anything else),
    // which the run must catch.
    let shipped = root().join("scenarios/http-naive.toml");
    let text = std::fs::read_to_string(&shipped).unwrap().replace(
        "variant = \"../targets/sqlite/groups-naive.sql\"",
        &format!(
            "variant = \"{}\"",
            root().join("targets/sqlite/groups-naive.sql").display()
        ),
    ) + PAUSE_AT_THE_RACE;
    let r = run_text(
        &text,
        &["--set", "stop.events=5000", "--set", "stop.duration=\"0s\""],
    );
    let s = r.summary();
    assert_eq!(s["history"]["event_rows"], 5000, "{}", s["history"]);
    assert!(s["faults_injected"]["pause"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["invariants"]["CountExact"]["verdict"], "holds");
    assert_eq!(s["invariants"]["TypeOK"]["verdict"], "holds");
    assert_eq!(
        r.output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&r.output.stdout)
    );
    assert_eq!(s["invariants"]["NoMissedRegression"]["verdict"], "violated");
}

#[test]
fn unreachable_url_exits_3_with_results_saved() {
    // A port that was free a moment ago: nothing listens there.
    let port = free_port();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let url = format!("target.url=\"http://127.0.0.1:{port}\"");
    let o = specstorm(&[
        "run",
        "scenarios/http-external.toml",
        "-q",
        "--set",
        &url,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not usable"), "{err}");
    assert_eq!(summary(&out)["exit"]["code"], 3);
}

#[test]
fn a_server_that_answers_garbage_exits_3_naming_an_example() {
    let port = garbage_server();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let url = format!("target.url=\"http://127.0.0.1:{port}\"");
    let o = specstorm(&[
        "run",
        "scenarios/http-external.toml",
        "-q",
        "--set",
        &url,
        "--set",
        "stop.events=100",
        "--set",
        "target.retries=1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let s = summary(&out);
    let rule = s["exit"]["rule"].as_str().unwrap();
    assert!(rule.contains("hello"), "{rule}");
    assert!(out.join("history.bin").exists());
}

#[test]
fn a_server_that_dies_mid_run_exits_3_without_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Server::start_on("groups-atomic", &tmp.path().join("srv.db"));
    let url = server.url.clone();
    let out = tmp.path().join("run");
    let mut bench = command()
        .args([
            "run",
            "scenarios/http-external.toml",
            "-q",
            "--set",
            "stop.events=0",
        ])
        .args([
            "--duration",
            "60s",
            "--set",
            &format!("target.url=\"{url}\""),
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Once the load is under way, the server dies (SIGKILL).
    wait_for_history(&mut bench, &out, 8_000);
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    // The run ends on its own, long before its 60 s duration.
    let status = bench.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    let s = summary(&out);
    // No final tables, no verdicts: never "acknowledged data was lost".
    for inv in [
        "TypeOK",
        "OneGroupPerFingerprint",
        "CountExact",
        "NoMissedRegression",
    ] {
        assert_eq!(
            s["invariants"][inv]["verdict"], "unknown",
            "{inv}: {}",
            s["invariants"]
        );
    }
    assert!(
        s["exit"]["rule"].as_str().unwrap().contains("export"),
        "{}",
        s["exit"]
    );
    // It stopped because the target died, not because its 60 s ran out.
    assert!(
        s["duration_s"].as_f64().unwrap() < 55.0,
        "{}",
        s["duration_s"]
    );
}

#[test]
fn concurrent_runs_on_one_service_never_mix() {
    // Same scenario, same seed, same service, at the same time: each run
    // audits exactly its own rows.
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Server::start_on("groups-atomic", &tmp.path().join("shared.db"));
    let url = server.url.clone();
    let set_url = format!("target.url=\"{url}\"");
    let runs: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|r| {
            let out = tmp.path().join(r);
            let child = command()
                .args([
                    "run",
                    "scenarios/http-external.toml",
                    "-q",
                    "--set",
                    &set_url,
                ])
                // 500 events may give NoMissedRegression too little
                // evidence on a slow machine; this test is about the ids.
                .args(["--set", "stop.events=500"])
                .args(["--set", "min_evidence.NoMissedRegression=0", "--out"])
                .arg(&out)
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    for (mut child, out) in runs {
        assert_eq!(child.wait().unwrap().code(), Some(0));
        let s = summary(&out);
        assert_eq!(s["history"]["event_rows"], 500, "{}", s["history"]);
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[cfg(unix)]
#[test]
fn ctrl_c_at_the_terminal_leaves_the_spawned_server_for_the_audit() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // As a terminal does, the interrupt goes to the run's whole process group.
    let mut bench = command()
        .args([
            "run",
            "scenarios/http-atomic.toml",
            "-q",
            "--set",
            "stop.events=0",
        ])
        .args(["--duration", "120s", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for_history(&mut bench, &out, 25_000);
    let group = format!("-{}", bench.id());
    Command::new("kill")
        .args(["-INT", "--", &group])
        .status()
        .unwrap();
    assert_eq!(bench.wait().unwrap().code(), Some(130));
    let s = summary(&out);
    assert_eq!(s["partial"], true);
    for inv in ["TypeOK", "OneGroupPerFingerprint", "CountExact"] {
        assert_eq!(
            s["invariants"][inv]["verdict"], "holds",
            "{inv}: {}",
            s["invariants"]
        );
    }
    assert!(s["history"]["event_rows"].as_u64().unwrap() > 0);
}

#[test]
fn a_server_that_hangs_ends_the_run_without_waiting_for_its_duration() {
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Server::start_on("groups-atomic", &tmp.path().join("hung.db"));
    let url = server.url.clone();
    let out = tmp.path().join("run");
    let mut bench = command()
        .args([
            "run",
            "scenarios/http-external.toml",
            "-q",
            "--set",
            "stop.events=0",
        ])
        .args([
            "--set",
            "target.request_timeout=\"500ms\"",
            "--duration",
            "120s",
        ])
        .args(["--set", &format!("target.url=\"{url}\""), "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_history(&mut bench, &out, 8_000);
    // The server stops answering (but keeps its connections open).
    let pid = server.child.id().to_string();
    Command::new("kill").args(["-STOP", &pid]).status().unwrap();
    let status = bench.wait().unwrap();
    Command::new("kill").args(["-CONT", &pid]).status().unwrap();
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert_eq!(status.code(), Some(3));
    let s = summary(&out);
    // It ended because the target went silent, long before its 120 s.
    assert!(
        s["duration_s"].as_f64().unwrap() < 100.0,
        "{}",
        s["duration_s"]
    );
    assert_eq!(s["invariants"]["TypeOK"]["verdict"], "unknown");
}

/// Resolves the reference server's fault hook crashed right after their
/// update: its answer says what the update did (resolved, with the count
/// it returned, or refused), as the in-process step log would, so none of
/// them leaves NoMissedRegression `unknown`. Every resolve crashes (no
/// resolve answers `ok`): every probe of a resolved group can only be
/// explained by a crashed resolve's reported count.
#[test]
fn resolves_crashed_after_their_update_are_judged_from_the_hooks_report() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("crash.toml");
    std::fs::write(
        &sc,
        "variant = \"groups-atomic\"\nseed = 3\n\
         [target]\nkind = \"http\"\nspawn = true\nrequest_timeout = \"10s\"\n\
         [load]\ningesters = 4\nresolvers = 4\n\
         [stop]\nevents = 3000\nduration = \"60s\"\n\
         [keys]\nprojects = 1\nfingerprints = 8\n\
         [resolve]\ninterval = \"0s\"\n\
         [[faults]]\nkind = \"crash\"\nops = \"resolve\"\nstep = \"update\"\nprobability = 1.0\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        sc.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    let history: Vec<serde_json::Value> = crate::common::folder::history_text(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let resolves = |ty: &'static str| {
        history
            .iter()
            .filter(move |e| e["type"] == ty && e["f"] == "resolve")
    };
    assert_eq!(resolves("ok").count(), 0, "every resolve crashed");
    let crashed: Vec<_> = resolves("info")
        .filter(|e| e["crashed_after"] == "update")
        .collect();
    let resolved = crashed.iter().filter(|e| e["resolved"] == true).count();
    assert!(resolved > 0, "no crashed resolve had resolved");
    assert!(
        crashed
            .iter()
            .filter(|e| e["resolved"] == true)
            .all(|e| e["event_count"].is_i64() && e["hook_steps"].is_array()),
        "the report is recorded"
    );
    // Probes that saw a group resolved (refused resolves before they
    // crashed report no probe: the crash came before their probe step;
    // the final rows are probes too).
    let groups: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("export.json")).unwrap()).unwrap();
    let resolved_rows = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["status"] == "resolved")
        .count();
    assert!(resolved_rows > 0, "no group ended resolved: nothing probed");
    let checks: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("checks.json")).unwrap()).unwrap();
    let nmr = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["invariant"] == "NoMissedRegression")
        .unwrap();
    assert_eq!(nmr["unknowns"], 0, "{nmr}");
    assert_eq!(nmr["verdict"], "holds", "{nmr}");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{} {}",
        s["exit"],
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Ingests the fault hook crashed after any step: its answer says which
/// steps ran and changed a row, so each attempt is certainly counted or
/// certainly not (no "maybe" is left for CountExact's bounds), and an
/// event row nothing counted is stranded by its cause.
#[test]
fn ingests_crashed_by_the_hook_are_counted_or_not_from_its_report() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("crash.toml");
    std::fs::write(
        &sc,
        "variant = \"groups-atomic\"\nseed = 3\n\
         [target]\nkind = \"http\"\nspawn = true\nrequest_timeout = \"10s\"\n\
         [load]\ningesters = 4\nresolvers = 1\n\
         [stop]\nevents = 2000\nduration = \"60s\"\n\
         [keys]\nprojects = 1\nfingerprints = 8\n\
         [min_evidence]\nNoMissedRegression = 0\n\
         [[faults]]\nkind = \"crash\"\nops = \"ingest\"\nprobability = 0.2\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        sc.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    assert_eq!(o.status.code(), Some(0), "{}", s["exit"]);
    let history = crate::common::folder::history_text(&out).unwrap();
    let counted_by_crashed = history
        .lines()
        .filter(|l| l.contains(r#""crashed_after":"s3""#) && l.contains(r#""accepted":true"#))
        .count();
    assert!(counted_by_crashed > 0, "some crash came after counting");
    let stranded = &s["stranded_events"];
    assert!(stranded["total"].as_u64().unwrap() > 0, "{stranded}");
    assert_eq!(stranded["undetermined"], 0, "{stranded}");
    assert!(s.get("precision").is_none(), "no bounds: {s}");
}

/// A compare-and-swap resolver whose probe reads the status but not the
/// count takes no probe: its refusals are `409 {"resolved": false}`, which
/// the bench reads as refusals without a probe (`fail`), neither
/// indeterminate nor non-conforming.
#[test]
fn refusals_without_a_probe_are_fails_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let atomic = include_str!("../../targets/sqlite/groups-atomic.sql");
    let start = atomic.find("-- name: resolve.update\n").unwrap();
    let end = atomic.find("-- name: export.events\n").unwrap();
    let sql = tmp.path().join("cas-status-only.sql");
    std::fs::write(
        &sql,
        format!(
            "{}-- name: resolve.read\n\
             SELECT status AS cur FROM error_groups WHERE id = :group_id;\n\n\
             -- name: resolve.update\n\
             -- stop-if: rows > 0\n\
             UPDATE error_groups SET status = 'resolved'\n\
             WHERE id = :group_id AND status = :cur AND :cur IN ('open', 'regressed')\n\
             RETURNING event_count;\n\n\
             -- name: resolve.probe\n\
             SELECT status FROM error_groups WHERE id = :group_id;\n\n{}",
            &atomic[..start],
            &atomic[end..]
        ),
    )
    .unwrap();
    let sc = tmp.path().join("cas.toml");
    std::fs::write(
        &sc,
        format!(
            "variant = \"{}\"\nseed = 5\n\
             [target]\nkind = \"http\"\nspawn = true\n\
             [load]\ningesters = 4\nresolvers = 4\n\
             [stop]\nevents = 2000\nduration = \"60s\"\n\
             [keys]\nprojects = 1\nfingerprints = 4\n\
             [resolve]\ninterval = \"0s\"\n",
            sql.display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        sc.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    assert_ne!(o.status.code(), Some(3), "{}", s["exit"]);
    let fails = s["ops"]["resolve"]["fail"].as_u64().unwrap();
    assert!(fails > 0, "no refusal: {s}");
    assert_eq!(s["ops"]["resolve"]["info"], 0, "{s}");
    assert_eq!(s["invariants"]["NoMissedRegression"]["verdict"], "holds");
}

/// The spawned server is stopped by a system call, not by running the
/// `kill` program: with no `kill` on PATH (a slim container) the server
/// still gets SIGTERM, says so in `server.log`, and stops by itself (its
/// own `stopped` line, which a SIGKILL after the grace would never let it
/// write).
#[cfg(unix)]
#[test]
fn the_spawned_server_gets_sigterm_without_a_kill_program_on_path() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // Only `sh` (the service's watchdog is a shell), no `kill`.
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    let out = tmp.path().join("run");
    let o = crate::common::command()
        .env("PATH", &bin)
        .args([
            "run",
            "scenarios/smoke.toml",
            "-q",
            "--no-tui",
            "--set",
            "target.kind=\"http\"",
            "--set",
            "target.spawn=true",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert!(log.contains("SIGTERM: shutting down"), "server.log:\n{log}");
    assert!(
        log.contains("specstorm serve: stopped"),
        "server.log:\n{log}"
    );
}

/// CountExact's one-block rule rests on the bench (or the server it
/// spawns) running the variant's blocks. A service at `target.url` runs
/// statements of its own, so a block variant named there claims nothing:
/// the header carries no `ingest_block`, and an autocommit service whose
/// crashes strand events is judged as autocommit (holds), not as a
/// broken block.
#[test]
fn a_block_variant_named_against_an_external_service_claims_no_atomicity() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start_on("groups-atomic", &tmp.path().join("ext.db"));
    let out = tmp.path().join("run");
    let txn = format!("{}/targets/sqlite/groups-txn.sql", root().display());
    let o = specstorm(&[
        "run",
        "scenarios/http-external.toml",
        "-q",
        "--set",
        "stop.events=500",
        // How much evidence 500 events give NoMissedRegression depends on
        // the machine's speed; this test is about the block claim.
        "--set",
        "min_evidence.NoMissedRegression=0",
        "--set",
        &format!("target.url=\"{}\"", server.url),
        "--set",
        &format!("variant={txn:?}"),
        "--out",
        out.to_str().unwrap(),
    ]);
    let history = crate::common::folder::history_text(&out).unwrap();
    let header: serde_json::Value = serde_json::from_str(history.lines().next().unwrap()).unwrap();
    assert!(header.get("ingest_block").is_none(), "{header}");
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
}
