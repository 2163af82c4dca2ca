//! Auditing a folder nobody vouches for (docs/cli.md, "Auditing a run
//! folder"): the audit runs the saved `variant.sql`'s schema (on a scratch
//! database, when it checks the file) and export queries, or the saved
//! scenario's `[audit] export.*`, and must still write nothing but
//! `audit.json`, for both workloads. A schema that attaches a file creates
//! none; an endless export ends with a clear error (exit 3); writes,
//! `ATTACH` and `load_extension` in export queries are refused; `check`
//! of such a file creates nothing either.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::folder::{copy_files, names};
use crate::common::procs::wait_bounded;
use crate::common::run::run_into;
use crate::common::{command, specstorm, text};

const ENDLESS: &str = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)";

/// `specstorm audit DIR ARGS`, killed (and failed) if it runs past
/// the hang bound: an audit that does not end is what some tests here look for.
fn audit(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = command()
        .arg("audit")
        .arg(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(
        &mut child,
        &format!(
            "the audit of {}: its queries were not bounded",
            dir.display()
        ),
    );
    let o = child.wait_with_output().unwrap();
    (o.status.code(), text(&o))
}

fn groups_run(tmp: &Path) -> PathBuf {
    let out = tmp.join("groups-run");
    let o = run_into("scenarios/smoke.toml", &out, &["--set", "stop.events=1500"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    out
}

fn outbox_run(tmp: &Path) -> PathBuf {
    let out = tmp.join("outbox-run");
    let o = run_into(
        "scenarios/outbox-protocol.toml",
        &out,
        &["--set", "outbox.messages=400", "--set", "outbox.handlers=4"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    out
}

/// A copy of run folder `from` named `name`, with `file`'s text `old`
/// replaced by `new` (which must be there).
fn crafted(from: &Path, name: &str, file: &str, old: &str, new: &str) -> PathBuf {
    let to = from.with_file_name(name);
    std::fs::create_dir(&to).unwrap();
    copy_files(from, &to);
    let _ = std::fs::remove_file(to.join("audit.json"));
    let t = std::fs::read_to_string(to.join(file)).unwrap();
    assert!(t.contains(old), "{file} has no {old:?}");
    std::fs::write(to.join(file), t.replacen(old, new, 1)).unwrap();
    to
}

/// The schema statement that attaches `target` and writes a table into it.
fn attaching(target: &Path) -> String {
    format!(
        "ATTACH '{}' AS x;\nCREATE TABLE x.planted (a);\n",
        target.display()
    )
}

#[test]
fn a_saved_schema_that_attaches_a_file_creates_none() {
    let tmp = tempfile::tempdir().unwrap();
    let groups = groups_run(tmp.path());
    let outbox = outbox_run(tmp.path());
    let cases = [
        (
            &groups,
            "CREATE TABLE IF NOT EXISTS error_events (",
            "g-attach",
        ),
        (
            &outbox,
            "CREATE TABLE IF NOT EXISTS state_log (",
            "o-attach",
        ),
    ];
    for (run, first_table, name) in cases {
        let target = tmp.path().join(format!("{name}.db"));
        let schema = format!("{}{first_table}", attaching(&target));
        let dir = crafted(run, name, "variant.sql", first_table, &schema);
        let before = names(&dir);
        let (code, t) = audit(&dir, &[]);
        assert!(
            !target.exists(),
            "{name}: the audit created {}",
            target.display()
        );
        assert_eq!(code, Some(2), "{name}: {t}");
        assert!(t.contains("variant.sql:"), "{name}: file and line: {t}");
        assert!(t.contains("ATTACH") && t.contains("refused"), "{name}: {t}");
        assert_eq!(names(&dir), before, "{name}: the folder changed");
    }
    // VACUUM INTO writes a file too: it attaches it.
    let target = tmp.path().join("vacuumed.db");
    let first_table = "CREATE TABLE IF NOT EXISTS error_events (";
    let schema = format!("VACUUM INTO '{}';\n{first_table}", target.display());
    let dir = crafted(&groups, "g-vacuum", "variant.sql", first_table, &schema);
    let (code, t) = audit(&dir, &[]);
    assert!(!target.exists(), "the audit created {}", target.display());
    assert_eq!(code, Some(2), "{t}");
    assert!(t.contains("(by VACUUM) refused"), "{t}");
}

#[test]
fn an_endless_export_ends_with_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    // Groups, with the default budget: the audit ends by itself.
    let groups = groups_run(tmp.path());
    let export = "SELECT id, project, fingerprint, group_id, received_at FROM error_events;";
    let endless = format!(
        "{ENDLESS}\nSELECT id, project, fingerprint, group_id, received_at FROM error_events\n\
         WHERE (SELECT count(*) FROM c) > 0;"
    );
    let dir = crafted(&groups, "g-endless", "variant.sql", export, &endless);
    let (code, t) = audit(&dir, &[]);
    assert_eq!(code, Some(3), "{t}");
    assert!(
        t.contains("ran past their budget of 1000000000 SQLite steps"),
        "{t}"
    );
    assert!(!dir.join("audit.json").exists());
    // Outbox, with a budget given (a smaller one ends sooner).
    let outbox = outbox_run(tmp.path());
    let export = "SELECT ver, msg_id, tx_id, kind FROM state_log;";
    let endless = format!(
        "{ENDLESS}\nSELECT ver, msg_id, tx_id, kind FROM state_log\n\
         WHERE (SELECT count(*) FROM c) > 0;"
    );
    let dir = crafted(&outbox, "o-endless", "variant.sql", export, &endless);
    let (code, t) = audit(&dir, &["--max-steps", "20000000"]);
    assert_eq!(code, Some(3), "{t}");
    assert!(
        t.contains("ran past their budget of 20000000 SQLite steps"),
        "{t}"
    );
    // The budget is enough for a real run's exports.
    let (code, t) = audit(&outbox, &["--max-steps", "20000000"]);
    assert_eq!(code, Some(0), "{t}");
}

/// The groups run folder `run` as a folder of a service audited from its
/// own database (`[audit] sqlite`), whose `export.events` is `events`.
fn service_folder(run: &Path, name: &str, events: &str) -> PathBuf {
    let dir = crafted(
        run,
        name,
        "scenario.toml",
        "kind = \"sqlite\"",
        "kind = \"http\"\nurl = \"http://127.0.0.1:9\"",
    );
    let mut t = std::fs::read_to_string(dir.join("scenario.toml")).unwrap();
    t.push_str(&format!(
        "\n[audit]\nsqlite = \"{{run_dir}}/target.db\"\nexport.events = {events:?}\n\
         export.groups = \"SELECT id, project, fingerprint, status, event_count FROM \
         error_groups\"\n"
    ));
    std::fs::write(dir.join("scenario.toml"), t).unwrap();
    dir
}

#[test]
fn a_service_databases_exports_may_only_read() {
    let tmp = tempfile::tempdir().unwrap();
    let run = groups_run(tmp.path());
    let columns = "id, project, fingerprint, group_id, received_at";
    // The crafted folder is read as such: a plain export audits as the run.
    let plain = format!("SELECT {columns} FROM error_events");
    let dir = service_folder(&run, "plain", &plain);
    let (code, t) = audit(&dir, &[]);
    assert_eq!(code, Some(0), "{t}");

    let attached = tmp.path().join("attached.db");
    for (name, events, says) in [
        (
            "delete",
            format!("DELETE FROM error_events RETURNING {columns}"),
            "DELETE from error_events refused",
        ),
        (
            "update",
            format!("UPDATE error_events SET project = 'x' RETURNING {columns}"),
            "UPDATE of error_events refused",
        ),
        (
            "insert",
            format!(
                "INSERT INTO error_events SELECT {columns} FROM error_events RETURNING {columns}"
            ),
            "INSERT into error_events refused",
        ),
        (
            "extension",
            "SELECT id, project, fingerprint, group_id, load_extension('/nonexistent') \
             FROM error_events"
                .to_string(),
            "the function load_extension refused",
        ),
        (
            "attach",
            format!("ATTACH '{}' AS x", attached.display()),
            "ATTACH",
        ),
        (
            "endless",
            format!(
                "{ENDLESS} SELECT {columns} FROM error_events WHERE (SELECT count(*) FROM c) > 0"
            ),
            "ran past their budget of 20000000 SQLite steps",
        ),
    ] {
        let dir = service_folder(&run, name, &events);
        let db = std::fs::read(dir.join("target.db")).unwrap();
        let before = names(&dir);
        let (code, t) = audit(&dir, &["--max-steps", "20000000"]);
        assert_eq!(code, Some(3), "{name}: {t}");
        assert!(t.contains(says), "{name}: {t}");
        assert!(
            std::fs::read(dir.join("target.db")).unwrap() == db,
            "{name}: target.db changed"
        );
        assert_eq!(names(&dir), before, "{name}: the folder changed");
    }
    assert!(!attached.exists());
}

#[test]
fn a_database_larger_than_the_limit_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let run = groups_run(tmp.path());
    let (code, t) = audit(&run, &["--max-db-mib", "1"]);
    assert_eq!(code, Some(0), "the smoke run's database is smaller: {t}");
    // A -wal file counts: 2 MiB of it is over a limit of 1 MiB, and is
    // refused before anything is copied or read.
    let dir = crafted(&run, "big", "scenario.toml", "seed", "seed");
    std::fs::write(dir.join("target.db-wal"), vec![0u8; 2 << 20]).unwrap();
    let (code, t) = audit(&dir, &["--max-db-mib", "1"]);
    assert_eq!(code, Some(2), "{t}");
    assert!(
        t.contains("larger than 1 MiB, the cap of an audited database: refused"),
        "{t}"
    );
}

#[test]
fn check_of_a_file_that_attaches_creates_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, first_table) in [
        ("groups-atomic", "CREATE TABLE IF NOT EXISTS error_events ("),
        ("outbox-protocol", "CREATE TABLE IF NOT EXISTS state_log ("),
    ] {
        let target = tmp.path().join(format!("{name}-attached.db"));
        let sql = std::fs::read_to_string(root.join(format!("targets/sqlite/{name}.sql"))).unwrap();
        let crafted = sql.replacen(
            first_table,
            &format!("{}{first_table}", attaching(&target)),
            1,
        );
        let file = tmp.path().join(format!("{name}.sql"));
        std::fs::write(&file, &crafted).unwrap();
        let line = crafted
            .lines()
            .position(|l| l.starts_with("ATTACH"))
            .unwrap()
            + 1;
        let scenario = if name.starts_with("outbox") {
            "scenarios/outbox-protocol.toml"
        } else {
            "scenarios/smoke.toml"
        };
        let o = specstorm(&[
            "check",
            scenario,
            "--set",
            &format!("variant={}", file.display()),
        ]);
        let t = text(&o);
        assert!(
            !target.exists(),
            "{name}: check created {}",
            target.display()
        );
        assert_eq!(o.status.code(), Some(2), "{name}: {t}");
        assert!(
            t.contains(&format!("{}:{line}: schema: ATTACH", file.display())),
            "{name}: {t}"
        );
    }
}

#[test]
fn check_refuses_load_extension_in_a_step_or_export() {
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sql = std::fs::read_to_string(root.join("targets/sqlite/groups-atomic.sql")).unwrap();
    let export = "SELECT id, project, fingerprint, status, event_count FROM error_groups;";
    let crafted = sql.replacen(
        export,
        "SELECT id, project, fingerprint, status, event_count FROM error_groups\n\
         WHERE load_extension('/nonexistent') IS NULL;",
        1,
    );
    let file = tmp.path().join("loads.sql");
    std::fs::write(&file, &crafted).unwrap();
    let line = crafted
        .lines()
        .position(|l| l == "-- name: export.groups")
        .unwrap()
        + 1;
    let o = specstorm(&[
        "check",
        "scenarios/smoke.toml",
        "--set",
        &format!("variant={}", file.display()),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!(
            "{}:{line}: `export.groups`: the function load_extension refused",
            file.display()
        )),
        "{t}"
    );
}
