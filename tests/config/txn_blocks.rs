//! Transaction blocks in statement files (`-- begin: MODE` ... `-- end:
//! commit`, targets/README.md "Transaction blocks"): what a valid file
//! compiles to, and every error the parser and the groups checker report
//! for them, with its line.

use std::path::Path;

use specstorm::statements::*;
use specstorm::workload::groups::statements::{compile_groups, GroupsVariant};
use specstorm::workload::outbox::statements::compile_outbox;

const SCHEMA: &str = "\
-- name: schema
CREATE TABLE error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, group_id TEXT, received_at INTEGER);
CREATE TABLE error_groups (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, status TEXT, event_count INTEGER);
";

const RESOLVE: &str = "\
-- name: resolve.update
-- stop-if: rows > 0
UPDATE error_groups SET status = 'resolved'
WHERE id = :group_id AND status IN ('open', 'regressed') RETURNING event_count;

-- name: resolve.probe
SELECT status, event_count FROM error_groups WHERE id = :group_id;
";

const EXPORTS: &str = "\
-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
";

/// The three ingest statements; `{b1}`..`{b3}` are each step's extra
/// directives.
fn ingest(b1: &str, b2: &str, b3: &str) -> String {
    format!(
        "\
-- name: ingest.s1
{b1}-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
{b2}INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
{b3}-- counts: true
UPDATE error_groups SET event_count = event_count + 1,
  status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;
"
    )
}

fn file(ingest: &str, resolve: &str) -> String {
    format!("{SCHEMA}\n{ingest}\n{resolve}\n{EXPORTS}")
}

fn path() -> &'static Path {
    Path::new("test.sql")
}

fn line_of(text: &str, line: &str) -> usize {
    text.lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("no line `{line}` in:\n{text}"))
        + 1
}

fn parse_err(text: &str) -> FileError {
    parse(path(), text).expect_err("expected a parse error")
}

fn compile(text: &str) -> Result<GroupsVariant, FileError> {
    compile_groups(&parse(path(), text).unwrap_or_else(|e| panic!("parse failed: {e}")))
}

#[track_caller]
fn assert_err(e: &FileError, line: usize, reason: &str) {
    assert_eq!(e.line, line, "wrong line for error: {e}");
    assert!(
        e.reason.contains(reason),
        "reason `{}` lacks `{reason}`",
        e.reason
    );
}

#[test]
fn a_block_compiles_to_its_steps_and_mode() {
    for (word, mode) in [
        ("deferred", TxnMode::Deferred),
        ("immediate", TxnMode::Immediate),
    ] {
        let t = file(
            &ingest(&format!("-- begin: {word}\n"), "", "--end:commit\n"),
            RESOLVE,
        );
        let v = compile(&t).unwrap();
        assert_eq!(
            v.ingest.txns,
            vec![Txn {
                mode,
                first: 0,
                last: 2
            }]
        );
        assert!(v.resolve.txns.is_empty());
        assert_eq!(v.ingest.txn_of(1).map(|t| t.first), Some(0));
    }
    // One step may open and close its own block; two blocks may follow
    // each other; the steps outside any block stay autocommit.
    let t = file(
        &ingest(
            "-- begin: immediate\n-- end: commit\n",
            "-- begin: deferred\n",
            "-- end: commit\n",
        ),
        RESOLVE,
    );
    let v = compile(&t).unwrap();
    assert_eq!(
        v.ingest.txns,
        vec![
            Txn {
                mode: TxnMode::Immediate,
                first: 0,
                last: 0
            },
            Txn {
                mode: TxnMode::Deferred,
                first: 1,
                last: 2
            }
        ]
    );
    assert_eq!(v.ingest.txn_of(0).map(|t| t.last), Some(0));
    // A batch without stops or read-back columns is fine.
    let batch = "\
-- name: ingest.s1
-- begin: batch
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
-- counts: true
-- end: commit
UPDATE error_groups SET event_count = event_count + 1 WHERE id = :group_id;
";
    let v = compile(&file(batch, RESOLVE)).unwrap();
    assert_eq!(v.ingest.txns[0].mode, TxnMode::Batch);
}

#[test]
fn the_fuzzer_has_no_point_inside_a_block() {
    let t = file(
        &ingest("", "-- begin: immediate\n", "-- end: commit\n"),
        RESOLVE,
    );
    let v = compile(&t).unwrap();
    // Before the block's first step another worker may run; not between
    // its steps.
    assert!(specstorm::fuzz::point_allowed(&v.ingest, 1));
    assert!(!specstorm::fuzz::point_allowed(&v.ingest, 2));
    assert!(specstorm::fuzz::point_allowed(&v.resolve, 1));
}

#[test]
fn err_bad_begin_and_end_values() {
    let t = file(&ingest("-- begin: exclusive\n", "", ""), RESOLVE);
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- begin: exclusive"),
        "bad `begin` value `exclusive`",
    );
    let t = file(
        &ingest("-- begin: immediate\n", "", "-- end: rollback\n"),
        RESOLVE,
    );
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- end: rollback"),
        "bad `end` value `rollback`",
    );
}

#[test]
fn err_begin_or_end_repeated_on_a_step() {
    let t = file(
        &ingest(
            "-- begin: immediate\n-- begin: deferred\n",
            "",
            "-- end: commit\n",
        ),
        RESOLVE,
    );
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- begin: deferred"),
        "directive `begin` repeated",
    );
}

#[test]
fn err_block_never_closed() {
    // Open at the op's end (the next op begins) ...
    let t = file(&ingest("-- begin: immediate\n", "", ""), RESOLVE);
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- name: ingest.s1"),
        "never closed",
    );
    // ... or at the file's end.
    let t = format!(
        "{SCHEMA}\n{EXPORTS}\n{}\n{}",
        ingest("", "", ""),
        RESOLVE.replace(
            "-- name: resolve.probe\n",
            "-- name: resolve.probe\n-- begin: deferred\n"
        )
    );
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- name: resolve.probe"),
        "never closed",
    );
}

#[test]
fn err_end_without_begin() {
    let t = file(&ingest("", "", "-- end: commit\n"), RESOLVE);
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- name: ingest.s3"),
        "`end: commit` with no open transaction block",
    );
}

#[test]
fn err_blocks_nest() {
    let t = file(
        &ingest(
            "-- begin: immediate\n",
            "-- begin: deferred\n",
            "-- end: commit\n",
        ),
        RESOLVE,
    );
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- name: ingest.s2"),
        "blocks do not nest",
    );
}

#[test]
fn err_begin_or_end_outside_an_op_step() {
    let t = file(&ingest("", "", ""), RESOLVE).replace(
        "-- name: export.events\n",
        "-- name: export.events\n-- begin: deferred\n-- end: commit\n",
    );
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- name: export.events"),
        "not of `schema` or `export.TABLE`",
    );
    let t = file(&ingest("", "", ""), RESOLVE)
        .replace("-- name: schema\n", "-- name: schema\n-- end: commit\n");
    assert_err(&parse_err(&t), 1, "not of `schema` or `export.TABLE`");
}

#[test]
fn err_begin_before_the_first_block_or_after_sql() {
    let t = format!(
        "-- begin: immediate\n{}",
        file(&ingest("", "", ""), RESOLVE)
    );
    assert_err(&parse_err(&t), 1, "directive `begin` before the first");
    let t = file(&ingest("", "", ""), RESOLVE).replace(
        "VALUES (:group_id, :project, :fingerprint, 'open', 0);\n",
        "VALUES (:group_id, :project, :fingerprint, 'open', 0);\n-- end: commit\n",
    );
    assert_err(
        &parse_err(&t),
        line_of(&t, "-- end: commit"),
        "directive `end` after the SQL",
    );
}

#[test]
fn err_batch_stop_if_or_read_back_column() {
    let t = file(
        &ingest("-- begin: batch\n", "", "-- end: commit\n"),
        RESOLVE,
    );
    assert_err(
        &compile(&t).unwrap_err(),
        line_of(&t, "-- name: ingest.s1"),
        "`stop-if` inside a batch",
    );
    let resolve = "\
-- name: resolve.read
-- begin: batch
SELECT status AS cur FROM error_groups WHERE id = :group_id;

-- name: resolve.update
-- end: commit
UPDATE error_groups SET status = 'resolved'
WHERE id = :group_id AND status = :cur RETURNING event_count;
";
    let t = file(&ingest("", "", ""), resolve);
    assert_err(
        &compile(&t).unwrap_err(),
        line_of(&t, "-- name: resolve.update"),
        "parameter `:cur` is a column of `resolve.read`, in the same batch",
    );
}

#[test]
fn err_blocks_in_an_outbox_file() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sqlite/outbox-protocol.sql"),
    )
    .unwrap();
    let first = text
        .lines()
        .find(|l| l.starts_with("-- name: handle."))
        .unwrap()
        .to_string();
    let t = text.replacen(
        &first,
        &format!("{first}\n-- begin: immediate\n-- end: commit"),
        1,
    );
    let f = parse(path(), &t).unwrap();
    let e = compile_outbox(&f).unwrap_err();
    assert_err(&e, line_of(&t, &first), "transaction blocks");
}
