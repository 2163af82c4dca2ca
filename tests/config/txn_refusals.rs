//! What a transaction block cannot run on, refused before anything runs
//! (`specstorm check`, and the first step of `run`, `compare` and
//! `explore`), at `file:line` with the reason: `journal_mode = off`, which
//! has no rollback journal, wherever the bench runs the file's blocks (in
//! process, or on the reference server it spawns, which refuses it at
//! start too); and `ATTACH` in a file with blocks (a WAL transaction is
//! not atomic across database files).

use specstorm::prepare::RunError;
use specstorm::statements::parse;
use specstorm::workload::groups::prepare::prepare;
use specstorm::workload::groups::statements::compile_groups;
use std::path::{Path, PathBuf};

fn shipped(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("targets/sqlite")
        .join(file)
}

/// `prepare` of a scenario file `text` (with `{variant}` the shipped file
/// `variant`), written in a temporary folder: the error's text, if any.
fn check(text: &str, variant: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    let text = text.replace("{variant}", &shipped(variant).display().to_string());
    std::fs::write(&path, &text).unwrap();
    match prepare(Some(&path), &[]) {
        Ok(_) => Ok(()),
        Err(RunError::Input(e)) => Err(e.replace(&path.display().to_string(), "s.toml")),
        Err(e) => panic!("not an input error: {e}"),
    }
}

/// The line of the first `-- begin:` in a shipped file.
fn begin_line(variant: &str) -> usize {
    let text = std::fs::read_to_string(shipped(variant)).unwrap();
    let begin = text
        .lines()
        .position(|l| l.starts_with("-- begin:"))
        .unwrap();
    // The step's `-- name:` line above it.
    text.lines()
        .take(begin)
        .collect::<Vec<_>>()
        .iter()
        .rposition(|l| l.starts_with("-- name:"))
        .unwrap()
        + 1
}

#[test]
fn blocks_with_journal_mode_off_are_refused_at_the_key_s_line() {
    let e = check(
        "variant = \"{variant}\"\n\n[target]\njournal_mode = \"off\"\n",
        "groups-txn.sql",
    )
    .expect_err("refused before the run");
    assert!(
        e.starts_with("s.toml:4: `target.journal_mode = \"off\"` has no rollback journal"),
        "{e}"
    );
    let at = format!(
        "{}:{} opens one (`-- begin: immediate` at step ingest.s1)",
        shipped("groups-txn.sql").display(),
        begin_line("groups-txn.sql")
    );
    assert!(e.contains(&at), "{at:?} not in {e}");
    // A block of the resolver, as a spawned server would run it.
    let e = check(
        "variant = \"{variant}\"\n[target]\nkind = \"http\"\nspawn = true\njournal_mode = \"off\"\n",
        "groups-deferred-resolve.sql",
    )
    .expect_err("refused before the run");
    assert!(e.starts_with("s.toml:5: "), "{e}");
    assert!(
        e.contains("`-- begin: deferred` at step resolve.read"),
        "{e}"
    );
}

#[test]
fn journal_mode_off_without_blocks_or_where_the_service_runs_its_own_statements_is_valid() {
    check(
        "variant = \"{variant}\"\n[target]\njournal_mode = \"off\"\n",
        "groups-atomic.sql",
    )
    .unwrap();
    // A service at a URL runs its own statements on its own database: the
    // scenario's journal_mode is not its.
    check(
        "variant = \"{variant}\"\n[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n\
         journal_mode = \"off\"\n",
        "groups-txn.sql",
    )
    .unwrap();
    check(
        "variant = \"{variant}\"\n[target]\njournal_mode = \"memory\"\n",
        "groups-txn.sql",
    )
    .unwrap();
}

#[test]
fn the_reference_server_refuses_blocks_with_journal_mode_off_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let mut child = crate::common::command()
        .args(["serve", "--variant"])
        .arg(shipped("groups-txn.sql"))
        .arg("--db")
        .arg(&db)
        .args(["--addr", "127.0.0.1:0", "--journal-mode", "off"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Only to detect a hang: a server that does not refuse keeps serving.
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > std::time::Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("the server started instead of refusing");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(err.contains("no rollback journal"), "{err}");
    assert!(err.contains("groups-txn.sql:"), "{err}");
    assert!(!db.exists(), "no database was created");
}

#[test]
fn attach_in_a_file_with_blocks_is_refused_at_its_line() {
    let text = std::fs::read_to_string(shipped("groups-txn.sql")).unwrap();
    // An ATTACH step inside the ingest's block.
    let bad = text.replacen(
        "-- name: ingest.s2\n",
        "-- name: ingest.s2\nATTACH 'other.db' AS other;\n-- name: ingest.s2b\n",
        1,
    );
    let line = bad.lines().position(|l| l == "-- name: ingest.s2").unwrap() + 1;
    let e = parse(Path::new("t.sql"), &bad)
        .and_then(|f| compile_groups(&f))
        .expect_err("refused");
    assert_eq!(e.line, line, "{e}");
    assert!(e.reason.contains("must be a query or a row change"), "{e}");
    // ATTACH in the schema of a file with blocks.
    let bad = text.replacen(
        "-- name: schema\n",
        "-- name: schema\nATTACH 'other.db' AS other;\n",
        1,
    );
    let line = bad
        .lines()
        .position(|l| l == "ATTACH 'other.db' AS other;")
        .unwrap()
        + 1;
    let e = parse(Path::new("t.sql"), &bad)
        .and_then(|f| compile_groups(&f))
        .expect_err("refused");
    assert_eq!(e.line, line, "{e}");
    assert!(e.reason.contains("ATTACH"), "{e}");
}
