//! `specstorm audit RUN_DIR`: the checkers again over a saved run folder
//! give the run's verdicts (SQLite and HTTP runs, a naive run's violation),
//! a tampered database is reported as a difference (exit 3), a folder
//! judged by other checkers gets the new verdicts (the run's rule decides
//! the exit, not "differs"), and a folder without its history is refused
//! (exit 2). An outbox run against an external service is audited from
//! its `export.json`, as a groups one is.

use std::path::Path;

use crate::common::folder::{copy_files as copy_folder, names as files};
use crate::common::run::run_into;
use crate::common::{json, specstorm, text};

fn audit(dir: &Path) -> (Option<i32>, String) {
    let o = specstorm(&["audit", dir.to_str().unwrap()]);
    (o.status.code(), text(&o))
}

fn small_sqlite_run(out: &Path) {
    let o = run_into("scenarios/smoke.toml", out, &["--set", "stop.events=1500"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn sqlite_run_audits_to_the_same_verdicts_and_writes_only_audit_json() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    let before = files(&out);
    let (code, text) = audit(&out);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("same verdicts as the run"), "{text}");
    let mut after = before.clone();
    after.push("audit.json".into());
    after.sort();
    assert_eq!(files(&out), after, "only audit.json is written");
    let a = json(&out.join("audit.json"));
    assert_eq!(a["same_as_run"], true);
    assert_eq!(a["exit"]["code"], 0);
    assert_eq!(a["results"].as_array().unwrap().len(), 4);
}

#[test]
fn http_run_audits_to_the_same_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/http-atomic.toml",
        "-q",
        "--set",
        "target.kind=\"http\"",
        "--set",
        "target.spawn=true",
        "--set",
        "stop.events=2000",
        "--set",
        "load.ingesters=8",
        "--set",
        "load.resolvers=2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let (code, text) = audit(&out);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("export.json"), "{text}");
    assert!(text.contains("same verdicts as the run"), "{text}");
}

#[test]
fn naive_run_audit_reproduces_the_violation() {
    // Whether a short live naive run loses a regression is a race, so the
    // run is a committed one that did (tests/fixtures/README.md): its
    // audit must find the violation again, with the same verdicts.
    let tmp = tempfile::tempdir().unwrap();
    let out = crate::common::folder::fixture("naive-caught", &tmp.path().join("run"));
    let (code, text) = audit(&out);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("same verdicts as the run"), "{text}");
    let a = json(&out.join("audit.json"));
    let verdict = |inv: &str| {
        a["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["invariant"] == inv)
            .unwrap()["verdict"]
            .clone()
    };
    assert_eq!(verdict("NoMissedRegression"), "violated");
    for inv in ["TypeOK", "OneGroupPerFingerprint", "CountExact"] {
        assert_eq!(verdict(inv), "holds", "{inv}");
    }
    assert!(text.contains("first: "), "{text}");
    assert!(text.contains("missed resolved->regressed"), "{text}");
}

#[test]
fn tampered_database_is_a_difference_exit_3() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    let conn = rusqlite::Connection::open(out.join("target.db")).unwrap();
    let n = conn
        .execute(
            "UPDATE error_groups SET event_count = event_count + 1 \
             WHERE rowid = (SELECT min(rowid) FROM error_groups)",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(conn);
    let (code, text) = audit(&out);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("differs from the run"), "{text}");
    assert!(text.contains("CountExact: the run said holds"), "{text}");
    let a = json(&out.join("audit.json"));
    assert_eq!(a["same_as_run"], false);
    assert_eq!(a["exit"]["code"], 3);
}

#[test]
fn missing_history_exits_2_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    std::fs::remove_file(out.join("history.bin")).unwrap();
    let (code, text) = audit(&out);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("history.bin is missing"), "{text}");
    let (code, text) = audit(&tmp.path().join("nowhere"));
    assert_eq!(code, Some(2), "{text}");
}

#[test]
fn a_changed_history_is_a_difference_exit_3() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    let history = crate::common::folder::history_text(&out).unwrap();
    let lines: Vec<&str> = history.lines().collect();

    // The footer cut off.
    let cut = tmp.path().join("cut");
    std::fs::create_dir(&cut).unwrap();
    for f in files(&out) {
        std::fs::copy(out.join(&f), cut.join(&f)).unwrap();
    }
    crate::common::folder::write_history_text(&cut, lines[..lines.len() - 1].join("\n") + "\n");
    let (code, text) = audit(&cut);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("no footer"), "{text}");

    // Ten ok completions taken out: the verdicts may stay, the counts do not.
    let mut dropped = 0;
    let kept: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| {
            let drop = dropped < 10 && l.contains("\"type\":\"ok\"");
            dropped += drop as u32;
            !drop
        })
        .collect();
    assert_eq!(dropped, 10);
    crate::common::folder::write_history_text(&out, kept.join("\n") + "\n");
    let (code, text) = audit(&out);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("unfinished_ops"), "{text}");
}

/// Rewrites a folder's recorded verdict of CountExact to `violated` (one
/// violation), as other checkers could have judged the same history, and
/// its recorded checker version to `version` (None: no version recorded,
/// as in folders written before it was).
fn rewrite_verdict_and_version(dir: &Path, version: Option<u64>) {
    let mut checks = json(&dir.join("checks.json"));
    let ce = checks
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["invariant"] == "CountExact")
        .unwrap();
    assert_eq!(ce["verdict"], "holds");
    ce["verdict"] = "violated".into();
    ce["violations"] = 1.into();
    std::fs::write(dir.join("checks.json"), checks.to_string()).unwrap();
    let mut summary = json(&dir.join("summary.json"));
    let prov = summary["provenance"].as_object_mut().unwrap();
    match version {
        Some(v) => {
            prov.insert("checker_version".into(), v.into());
        }
        None => {
            prov.remove("checker_version");
        }
    }
    std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
}

#[test]
fn a_run_records_the_checker_version() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    let now = specstorm::workload::groups::checker::CHECKER_VERSION;
    assert!(now >= 2, "{now}");
    let s = json(&out.join("summary.json"));
    assert_eq!(s["provenance"]["checker_version"], now, "{s}");
    let (code, text) = audit(&out);
    assert_eq!(code, Some(0), "{text}");
    let a = json(&out.join("audit.json"));
    assert_eq!(a["checker_version"], now);
    assert_eq!(a["run_checker_version"], now);
}

#[test]
fn other_checkers_verdicts_are_reported_as_the_checkers_change_not_as_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    let now = specstorm::workload::groups::checker::CHECKER_VERSION;

    // Judged by checkers of version 1, which said CountExact violated: the
    // new checkers say it holds, and the run's rule over that is exit 0.
    let old = tmp.path().join("old");
    copy_folder(&out, &old);
    rewrite_verdict_and_version(&old, Some(1));
    let (code, text) = audit(&old);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(&format!(
            "the checkers changed since this run (run: v1, now: v{now})"
        )),
        "{text}"
    );
    assert!(text.contains("CountExact: the run said violated"), "{text}");
    assert!(!text.contains("differs from the run"), "{text}");
    assert!(!text.contains("same verdicts as the run"), "{text}");
    let a = json(&old.join("audit.json"));
    assert_eq!(a["exit"]["code"], 0);
    assert_eq!(a["same_as_run"], false);
    assert_eq!(a["run_checker_version"], 1);
    assert_eq!(a["differences"].as_array().unwrap().len(), 0);
    assert_eq!(a["checker_changes"].as_array().unwrap().len(), 1);

    // A folder that records no version was judged by version 1.
    let unversioned = tmp.path().join("unversioned");
    copy_folder(&out, &unversioned);
    rewrite_verdict_and_version(&unversioned, None);
    let (code, text) = audit(&unversioned);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("(run: v1, now: v"), "{text}");

    // The same checkers: the changed verdict is tampering, exit 3.
    let same = tmp.path().join("same");
    copy_folder(&out, &same);
    rewrite_verdict_and_version(&same, Some(now as u64));
    let (code, text) = audit(&same);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("differs from the run"), "{text}");
    assert!(!text.contains("the checkers changed"), "{text}");

    // Other checkers do not excuse a history that is not the run's.
    let cut = tmp.path().join("cut");
    copy_folder(&out, &cut);
    rewrite_verdict_and_version(&cut, Some(1));
    let history = crate::common::folder::history_text(&cut).unwrap();
    let lines: Vec<&str> = history.lines().collect();
    crate::common::folder::write_history_text(&cut, lines[..lines.len() - 1].join("\n") + "\n");
    let (code, text) = audit(&cut);
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("no footer"), "{text}");
    assert!(
        text.contains("the checkers changed since this run"),
        "{text}"
    );
}

#[test]
fn an_old_run_folder_whose_verdicts_stand_says_same_verdicts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    let mut summary = json(&out.join("summary.json"));
    summary["provenance"]
        .as_object_mut()
        .unwrap()
        .remove("checker_version");
    std::fs::write(out.join("summary.json"), summary.to_string()).unwrap();
    let (code, text) = audit(&out);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("same verdicts as the run"), "{text}");
    assert!(!text.contains("the checkers changed"), "{text}");
}

#[test]
fn a_folder_where_audit_json_cannot_be_written_still_gets_its_verdicts_and_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    small_sqlite_run(&out);
    // A read-only folder; as root, where a mode stops no write, audit.json
    // a folder instead: either way the write fails.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let probe = out.join("probe");
    let read_only = std::fs::write(&probe, b"").is_err();
    if !read_only {
        std::fs::remove_file(&probe).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir(out.join("audit.json")).unwrap();
    }
    let o = specstorm(&["audit", out.to_str().unwrap()]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    // The run's verdicts decide (it held: 0), not "differs" (3).
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("same verdicts as the run"), "{stdout}");
    assert!(stdout.contains("CountExact"), "{stdout}");
    let file = out.join("audit.json");
    assert!(
        stderr.contains(&format!(
            "specstorm: warning: cannot write {}: ",
            file.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("the verdicts above are not saved"),
        "{stderr}"
    );
}

#[test]
fn an_outbox_run_against_an_external_service_audits_from_its_export() {
    let server = crate::common::Server::start("outbox-protocol");
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("external.toml");
    std::fs::write(
        &sc,
        format!(
            "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n[target]\nkind = \"http\"\n\
             url = \"{}\"\n[outbox]\nmessages = 200\ndeliveries = 2\nhandlers = 4\n\
             [stop]\nduration = \"60s\"\n",
            server.url
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
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // The run was judged from the service's export: no database here.
    assert!(out.join("export.json").is_file() && !out.join("target.db").exists());
    let (code, text) = audit(&out);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("same verdicts as the run"), "{text}");
    let a = json(&out.join("audit.json"));
    assert_eq!(a["tables"], "export.json", "{a}");
    assert_eq!(a["results"].as_array().unwrap().len(), 5);

    // The audit reads the export: a second change of message 1 there is
    // a difference from the run.
    let tampered = tmp.path().join("tampered");
    copy_folder(&out, &tampered);
    let mut export = json(&tampered.join("export.json"));
    export["state_log"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!(
            {"ver": 99999999, "msg_id": 1, "tx_id": 424242, "kind": "change"}
        ));
    std::fs::write(tampered.join("export.json"), export.to_string()).unwrap();
    let (code, text) = audit(&tampered);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("AtMostOneStateChange: the run said holds"),
        "{text}"
    );

    // A run that saved no verdicts is judged from the export it read, as
    // a groups run is; one killed before that export has nothing to judge.
    let killed = tmp.path().join("killed");
    copy_folder(&out, &killed);
    for f in ["checks.json", "summary.json", "junit.xml", "audit.json"] {
        let _ = std::fs::remove_file(killed.join(f));
    }
    let (code, text) = audit(&killed);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("nothing to confirm"), "{text}");
    assert_eq!(json(&killed.join("audit.json"))["tables"], "export.json");
    std::fs::remove_file(killed.join("export.json")).unwrap();
    let (code, text) = audit(&killed);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("killed before it read the service's final tables"),
        "{text}"
    );
}
