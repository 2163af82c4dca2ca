//! Tests of the statement-file format: every error `parse` and
//! `compile_groups` report (line and reason), and the shipped variants.

use std::path::{Path, PathBuf};

use specstorm::statements::*;
use specstorm::workload::groups::statements::{
    compile_groups, GroupsVariant, INGEST_BUILTINS, RESOLVE_BUILTINS,
};

const SCHEMA: &str = "\
-- name: schema
CREATE TABLE error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, group_id TEXT, received_at INTEGER);
CREATE TABLE error_groups (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, status TEXT, event_count INTEGER);
";

const INGEST: &str = "\
-- name: ingest.s1
-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
-- counts: true
UPDATE error_groups SET event_count = event_count + 1,
  status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;
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

fn path() -> &'static Path {
    Path::new("test.sql")
}

fn text(schema: &str, ingest: &str, resolve: &str, exports: &str) -> String {
    format!("{schema}\n{ingest}\n{resolve}\n{exports}")
}

/// A valid file with the ingest steps replaced.
fn with_ingest(ingest: &str) -> String {
    text(SCHEMA, ingest, RESOLVE, EXPORTS)
}

/// A valid file with the resolve steps replaced.
fn with_resolve(resolve: &str) -> String {
    text(SCHEMA, INGEST, resolve, EXPORTS)
}

/// 1-based line of the first line of `text` equal to `line`.
fn line_of(text: &str, line: &str) -> usize {
    text.lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("no line `{line}` in:\n{text}"))
        + 1
}

fn parse_err(text: &str) -> FileError {
    match parse(path(), text) {
        Ok(f) => panic!("expected a parse error, got blocks {:?}", f.blocks),
        Err(e) => e,
    }
}

fn compile(text: &str) -> Result<GroupsVariant, FileError> {
    let file = parse(path(), text).unwrap_or_else(|e| panic!("parse failed: {e}"));
    compile_groups(&file)
}

fn compile_err(text: &str) -> FileError {
    match compile(text) {
        Ok(_) => panic!("expected a compile error for:\n{text}"),
        Err(e) => e,
    }
}

#[track_caller]
fn assert_err(e: &FileError, line: usize, reason: &str) {
    assert_eq!(e.line, line, "wrong line for error: {e}");
    assert!(
        e.reason.contains(reason),
        "reason `{}` lacks `{reason}`",
        e.reason
    );
    assert_eq!(e.file, PathBuf::from("test.sql"));
}

// ---------------------------------------------------------------- parse: ok

#[test]
fn parse_blocks_directives_and_sql() {
    let t = "-- header comment: free before the first block\n\n\
             -- name: ingest.s1\n--stop-if:changes>0\n-- counts: false\nSELECT 1;\n\n\
             -- name: resolve.r\n-- a free comment\n-- stop-if: rows= 0\nSELECT 2 AS x;   \n";
    let f = parse(path(), t).unwrap();
    assert_eq!(f.blocks.len(), 2);
    let b = &f.blocks[0];
    assert_eq!((b.name.as_str(), b.line), ("ingest.s1", 3));
    assert_eq!(b.stop_if, Some(StopIf::ChangesPositive));
    assert!(!b.counts);
    assert_eq!(b.sql, "--stop-if:changes>0\n-- counts: false\nSELECT 1;");
    // A directive after a free comment, still before the SQL, is a directive.
    let b = &f.blocks[1];
    assert_eq!((b.name.as_str(), b.line), ("resolve.r", 8));
    assert_eq!(b.stop_if, Some(StopIf::RowsZero));
    assert_eq!(
        b.sql,
        "-- a free comment\n-- stop-if: rows= 0\nSELECT 2 AS x;"
    );
}

#[test]
fn parse_name_inside_string_or_block_comment_is_sql() {
    let t = "-- name: a\nSELECT '\n-- name: b\n';\n/*\n-- name: c\n*/\n";
    let f = parse(path(), t).unwrap();
    assert_eq!(f.blocks.len(), 1);
    assert!(f.blocks[0].sql.contains("-- name: c"));
}

#[test]
fn parse_free_comment_after_sql_is_ignored_and_exports_need_not_be_contiguous() {
    let t = "-- name: export.events\nSELECT 1;\n-- note: fine here\n\
             -- name: ingest.s1\nSELECT 1;\n-- name: export.groups\nSELECT 1;\n";
    let f = parse(path(), t).unwrap();
    assert_eq!(f.blocks.len(), 3);
}

#[test]
fn parse_crlf_and_bom() {
    let t = "\u{feff}-- name: a\r\n-- counts: true\r\nSELECT 1;\r\n";
    let f = parse(path(), t).unwrap();
    assert!(f.blocks[0].counts);
    assert_eq!(f.blocks[0].sql, "-- counts: true\nSELECT 1;");
}

// ------------------------------------------------------------ parse: errors

#[test]
fn parse_err_text_before_first_block() {
    let e = parse_err("-- fine\n\nSELECT 1;\n-- name: a\nSELECT 1;\n");
    assert_err(&e, 3, "text before the first `-- name:` block");
    let e = parse_err("/* fine */\n  x /* not fine */\n-- name: a\nSELECT 1;\n");
    assert_err(&e, 2, "text before the first");
}

#[test]
fn parse_err_directive_before_first_block() {
    let e = parse_err("-- stop-if: rows > 0\n-- name: a\nSELECT 1;\n");
    assert_err(
        &e,
        1,
        "directive `stop-if` before the first `-- name:` block",
    );
}

#[test]
fn parse_err_invalid_names() {
    for bad in [
        "Ingest.s1",
        "ingest.s1.x",
        "1a",
        "a.",
        ".b",
        "a-b",
        "",
        "a.B",
        "a b",
    ] {
        let e = parse_err(&format!("\n-- name: {bad}\nSELECT 1;\n"));
        assert_err(&e, 2, "invalid block name");
    }
}

#[test]
fn parse_err_repeated_name() {
    let e = parse_err("-- name: a\nSELECT 1;\n-- name: b\nSELECT 1;\n-- name: a\nSELECT 1;\n");
    assert_err(&e, 5, "block name `a` repeated (first at line 1)");
}

#[test]
fn parse_err_unknown_directive() {
    let e = parse_err("-- name: a\n-- stop_if: rows > 0\nSELECT 1;\n");
    assert_err(&e, 2, "unknown directive `stop_if`");
    // A free comment of the directive form before the SQL is an error too.
    let e = parse_err("-- name: a\n-- some words\n\n-- TODO: later\nSELECT 1;\n");
    assert_err(&e, 4, "unknown directive `TODO`");
}

#[test]
fn parse_err_repeated_directive() {
    let e = parse_err("-- name: a\n-- stop-if: rows > 0\n-- stop-if: rows = 0\nSELECT 1;\n");
    assert_err(&e, 3, "directive `stop-if` repeated (first at line 2)");
    let e = parse_err("-- name: a\n-- counts: true\n-- counts: true\nSELECT 1;\n");
    assert_err(&e, 3, "directive `counts` repeated");
}

#[test]
fn parse_err_bad_stop_if_value() {
    for bad in [
        "rows >= 0",
        "rows = 1",
        "row = 0",
        "changes < 0",
        "",
        "Rows > 0",
        "rows > 0 x",
    ] {
        let e = parse_err(&format!("-- name: a\n-- stop-if: {bad}\nSELECT 1;\n"));
        assert_err(&e, 2, "bad `stop-if` value");
    }
}

#[test]
fn parse_err_bad_counts_value() {
    let e = parse_err("-- name: a\n-- counts: yes\nSELECT 1;\n");
    assert_err(&e, 2, "bad `counts` value `yes`");
}

#[test]
fn parse_err_directive_after_sql() {
    let e = parse_err("-- name: a\nSELECT 1;\n-- stop-if: rows > 0\n");
    assert_err(
        &e,
        3,
        "directive `stop-if` after the SQL of `a` would be ignored",
    );
}

#[test]
fn parse_err_empty_block() {
    let e = parse_err("-- name: a\n-- only a comment\n\n-- name: b\nSELECT 1;\n");
    assert_err(&e, 1, "block `a` holds no SQL");
    let e = parse_err("-- name: a\nSELECT 1;\n-- name: b\n-- counts: true\n");
    assert_err(&e, 3, "block `b` holds no SQL");
    let e = parse_err("-- name: a\n/* a\n block comment */\n");
    assert_err(&e, 1, "block `a` holds no SQL");
}

#[test]
fn parse_err_op_split() {
    let e = parse_err(
        "-- name: ingest.s1\nSELECT 1;\n-- name: resolve.r\nSELECT 1;\n-- name: ingest.s2\nSELECT 1;\n",
    );
    assert_err(&e, 5, "steps of op `ingest` must be contiguous");
    assert!(e.reason.contains("first at line 1"), "{}", e.reason);
    let e = parse_err("-- name: ingest.s1\nSELECT 1;\n-- name: schema\nSELECT 1;\n-- name: ingest.s2\nSELECT 1;\n");
    assert_err(&e, 5, "steps of op `ingest` must be contiguous");
}

#[test]
fn parse_sha256_is_of_the_bytes() {
    let f = parse(path(), "-- name: a\nSELECT 1;\n").unwrap();
    // Independently computed: printf -- '-- name: a\nSELECT 1;\n' | sha256sum
    assert_eq!(
        f.sha256,
        "7e1bd3208607fc55648762675bd461db0cadd2efe140cb06266c06a1e17b0b27"
    );
    let g = parse(path(), "-- name: a\nSELECT 2;\n").unwrap();
    assert_ne!(f.sha256, g.sha256);
}

// ----------------------------------------------------------- compile: names

#[test]
fn compile_base_file() {
    let v = compile(&text(SCHEMA, INGEST, RESOLVE, EXPORTS)).unwrap();
    assert_eq!(v.ingest.steps.len(), 3);
    assert_eq!(v.counting_step, 2);
    assert_eq!(v.resolve.builtins, RESOLVE_BUILTINS.to_vec());
    assert_eq!(v.resolve.steps[0].columns, vec!["event_count"]);
    assert_eq!(v.resolve.steps[1].params, vec![ParamSource::Builtin(0)]);
}

#[test]
fn compile_err_schema_with_step() {
    let t = text(SCHEMA, INGEST, RESOLVE, EXPORTS) + "-- name: schema.x\nSELECT 1;\n";
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: schema.x"),
        "`schema` takes no step name",
    );
}

#[test]
fn compile_err_op_without_step() {
    let t = text(SCHEMA, INGEST, RESOLVE, EXPORTS) + "-- name: resolve\nSELECT 1;\n";
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve"),
        "`resolve` needs a step name",
    );
    let t = text(SCHEMA, INGEST, RESOLVE, EXPORTS) + "-- name: export\nSELECT 1;\n";
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: export"),
        "`export` needs a table name",
    );
}

#[test]
fn compile_err_unknown_export() {
    let t = text(SCHEMA, INGEST, RESOLVE, EXPORTS) + "-- name: export.outbox\nSELECT 1;\n";
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: export.outbox"),
        "unknown export `outbox`",
    );
}

#[test]
fn compile_err_unknown_op() {
    let t = text(SCHEMA, INGEST, RESOLVE, EXPORTS) + "-- name: delete.s1\nSELECT 1;\n";
    let e = compile_err(&t);
    assert_err(&e, line_of(&t, "-- name: delete.s1"), "unknown op `delete`");
    let t = text(SCHEMA, INGEST, RESOLVE, EXPORTS) + "-- name: setup\nSELECT 1;\n";
    let e = compile_err(&t);
    assert_err(&e, line_of(&t, "-- name: setup"), "unknown op `setup`");
}

#[test]
fn compile_err_counts_outside_ingest() {
    let r = RESOLVE.replace(
        "-- name: resolve.probe\n",
        "-- name: resolve.probe\n-- counts: true\n",
    );
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "`counts` is allowed in `ingest` steps only",
    );
    let t = text(
        SCHEMA,
        INGEST,
        RESOLVE,
        "-- name: export.events\n-- counts: false\n",
    ) + "SELECT 1;\n";
    // `counts: false` is the default and is harmless anywhere.
    assert!(!compile_err(&t).reason.contains("counts"));
}

#[test]
fn compile_err_stop_if_outside_ops() {
    let ex = EXPORTS.replace(
        "-- name: export.groups\n",
        "-- name: export.groups\n-- stop-if: rows = 0\n",
    );
    let t = text(SCHEMA, INGEST, RESOLVE, &ex);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: export.groups"),
        "`stop-if` is allowed on op steps only",
    );
    let s = SCHEMA.replace(
        "-- name: schema\n",
        "-- name: schema\n-- stop-if: changes > 0\n",
    );
    let t = text(&s, INGEST, RESOLVE, EXPORTS);
    let e = compile_err(&t);
    assert_err(
        &e,
        1,
        "`stop-if` is allowed on op steps only (found in `schema`)",
    );
}

#[test]
fn compile_err_missing_blocks() {
    let e = compile_err(&text("", INGEST, RESOLVE, EXPORTS));
    assert_err(&e, 0, "missing block `schema`");
    let e = compile_err(&text(SCHEMA, "", RESOLVE, EXPORTS));
    assert_err(&e, 0, "missing op `ingest`");
    let e = compile_err(&text(SCHEMA, INGEST, "", EXPORTS));
    assert_err(&e, 0, "missing op `resolve`");
    let only_groups = &EXPORTS[EXPORTS.find("-- name: export.groups").unwrap()..];
    let e = compile_err(&text(SCHEMA, INGEST, RESOLVE, only_groups));
    assert_err(&e, 0, "missing block `export.events`");
    let only_events = &EXPORTS[..EXPORTS.find("-- name: export.groups").unwrap()];
    let e = compile_err(&text(SCHEMA, INGEST, RESOLVE, only_events));
    assert_err(&e, 0, "missing block `export.groups`");
    let e = compile_err("");
    assert_err(&e, 0, "missing block `schema`");
}

// ------------------------------------------------------- compile: counting

#[test]
fn compile_err_several_counting_steps() {
    let i = INGEST.replace(
        "-- name: ingest.s2\n",
        "-- name: ingest.s2\n-- counts: true\n",
    );
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s3"),
        "ingest has several counting steps",
    );
}

#[test]
fn compile_err_no_counting_step() {
    let i = INGEST.replace("-- counts: true\n", "");
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s1"),
        "ingest has no counting step",
    );
}

#[test]
fn compile_err_stop_at_or_after_counting_step() {
    let i = INGEST.replace(
        "-- counts: true\n",
        "-- counts: true\n-- stop-if: changes = 0\n",
    );
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s3"),
        "at or after the counting step",
    );
    let i = format!("{INGEST}\n-- name: ingest.s4\n-- stop-if: rows = 0\nSELECT 1 AS one;\n");
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s4"),
        "at or after the counting step",
    );
}

#[test]
fn compile_err_counting_step_read_only() {
    let i = "-- name: ingest.s1\n-- counts: true\nSELECT :group_id AS g;\n";
    let t = with_ingest(i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s1"),
        "counting step `ingest.s1` is read-only",
    );
}

// -------------------------------------------------------- compile: SQLite

#[test]
fn compile_err_schema_fails() {
    let s = "-- name: schema\nCREATE TABLE error_events (id TEXT);\nCREATE TABL oops;\n";
    let t = text(s, INGEST, RESOLVE, EXPORTS);
    let e = compile_err(&t);
    // The failing statement's own line, not the block's.
    assert_err(&e, 3, "schema fails: SQLite:");
    assert!(e.reason.contains("syntax error"), "{}", e.reason);
}

#[test]
fn compile_err_multiple_statements() {
    let r = RESOLVE.replace(
        "SELECT status, event_count FROM error_groups WHERE id = :group_id;",
        "SELECT status, event_count FROM error_groups WHERE id = :group_id; SELECT 1;",
    );
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "holds more than one statement",
    );
    // A trailing comment after the single statement is fine.
    let r = RESOLVE.replace("WHERE id = :group_id;", "WHERE id = :group_id; -- trailing");
    assert!(compile(&with_resolve(&r)).is_ok());
}

#[test]
fn compile_err_no_statement() {
    // Parse accepts it (a lone `;` is a token), SQLite finds no statement.
    let t = text(SCHEMA, INGEST, RESOLVE, EXPORTS).replace(
        "SELECT id, project, fingerprint, status, event_count FROM error_groups;",
        ";",
    );
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: export.groups"),
        "holds no SQL statement",
    );
}

#[test]
fn compile_err_sqlite_prepare_fails() {
    let r = RESOLVE.replace("FROM error_groups WHERE", "FROM no_such_table WHERE");
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "SQLite: no such table: no_such_table",
    );
    let r = RESOLVE.replace("SELECT status,", "SELEC status,");
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(&e, line_of(&t, "-- name: resolve.probe"), "syntax error");
}

// ---------------------------------------------------- compile: parameters

#[test]
fn compile_err_not_named_parameters() {
    for (p, reason) in [
        ("?", "positional parameter `?` is not allowed"),
        ("?1", "parameter `?1` is not allowed"),
        ("@group_id", "parameter `@group_id` is not allowed"),
        ("$group_id", "parameter `$group_id` is not allowed"),
    ] {
        let r = RESOLVE.replace("WHERE id = :group_id;", &format!("WHERE id = {p};"));
        let t = with_resolve(&r);
        let e = compile_err(&t);
        assert_err(&e, line_of(&t, "-- name: resolve.probe"), reason);
    }
}

#[test]
fn compile_err_unknown_parameter() {
    // `:message` is a builtin of ingest, not of resolve.
    let r = RESOLVE.replace(
        "WHERE id = :group_id;",
        "WHERE id = :group_id AND :message IS NULL;",
    );
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "unknown parameter `:message`",
    );
    // A column of a LATER step is not available.
    let i = INGEST.replace(
        "WHERE id = :group_id;",
        "WHERE id = :group_id AND :later IS NULL;",
    ) + "\n-- name: ingest.s4\nSELECT 1 AS later;\n";
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s3"),
        "unknown parameter `:later`",
    );
    // A column of another op is not available.
    let r = RESOLVE.replace(
        "WHERE id = :group_id;",
        "WHERE id = :group_id AND :marker IS NULL;",
    );
    let i = INGEST.replace(
        "-- name: ingest.s2\n",
        "-- name: ingest.s1b\nSELECT 1 AS marker;\n\n-- name: ingest.s2\n",
    );
    let t = text(SCHEMA, &i, &r, EXPORTS);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "unknown parameter `:marker`",
    );
}

#[test]
fn compile_params_latest_earlier_column_wins() {
    let i = INGEST.replace(
        "-- name: ingest.s2\n",
        "-- name: ingest.a\nSELECT 1 AS x, 2 AS y;\n\n-- name: ingest.b\nSELECT 3 AS y;\n\n-- name: ingest.s2\n",
    )
    .replace("WHERE id = :group_id;", "WHERE id = :group_id AND :y = :x;");
    let v = compile(&with_ingest(&i)).unwrap();
    assert_eq!(v.counting_step, 4);
    let s3 = &v.ingest.steps[4];
    // Parameters in SQLite index order: :group_id, :y, :x.
    assert_eq!(
        s3.params,
        vec![
            ParamSource::Builtin(3),
            ParamSource::Column { step: 2, column: 0 },
            ParamSource::Column { step: 1, column: 0 },
        ]
    );
}

// ------------------------------------------------------- compile: columns

#[test]
fn compile_err_column_not_plain() {
    let r = RESOLVE.replace("SELECT status, event_count", "SELECT status, count(*)");
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "column `count(*)` has no plain name: alias it",
    );
}

#[test]
fn compile_err_column_named_like_builtin() {
    let r = RESOLVE.replace(
        "SELECT status, event_count",
        "SELECT status, event_count, id AS group_id",
    );
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "column `group_id` is named like a built-in parameter",
    );
}

#[test]
fn compile_err_column_returned_twice() {
    let r = RESOLVE.replace(
        "SELECT status, event_count",
        "SELECT status, event_count, status",
    );
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.probe"),
        "column `status` is returned twice",
    );
}

// ------------------------------------------------- compile: stop conditions

#[test]
fn compile_err_stop_on_changes_of_read_only() {
    let i = INGEST.replace("-- name: ingest.s2\n", "-- name: ingest.s2\n-- stop-if: changes > 0\n")
        .replace("INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)\nVALUES (:group_id, :project, :fingerprint, 'open', 0);",
                 "SELECT 1 AS one;");
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s2"),
        "`stop-if: changes ...` needs a statement that modifies rows",
    );
}

#[test]
fn compile_err_stop_on_rows_without_columns() {
    let i = INGEST.replace("-- stop-if: changes = 0", "-- stop-if: rows = 0");
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s1"),
        "`stop-if: rows ...` needs a statement that returns rows",
    );
}

#[test]
fn compile_stop_on_changes_of_returning_is_allowed() {
    let r = RESOLVE.replace("-- stop-if: rows > 0", "-- stop-if: changes > 0");
    let v = compile(&with_resolve(&r)).unwrap();
    assert_eq!(v.resolve.steps[0].stop_if, Some(StopIf::ChangesPositive));
    assert!(!v.resolve.steps[0].readonly);
    assert!(v.resolve.steps[1].readonly);
}

// -------------------------------------------------------- compile: resolve

#[test]
fn compile_err_resolve_without_successful_stop() {
    let r = RESOLVE.replace("-- stop-if: rows > 0\n", "");
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.update"),
        "resolve has no step that can stop with an event_count column",
    );
}

#[test]
fn compile_err_resolve_stop_without_event_count() {
    let r = RESOLVE.replace("RETURNING event_count;", "RETURNING status;");
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.update"),
        "returns no `event_count` column",
    );
}

#[test]
fn compile_err_resolve_count_from_read_only_statement() {
    // The update no longer stops; a later SELECT reads the count and stops.
    let r = "-- name: resolve.update\n\
             UPDATE error_groups SET status = 'resolved' WHERE id = :group_id AND status IN ('open', 'regressed');\n\n\
             -- name: resolve.read\n-- stop-if: rows > 0\n\
             SELECT event_count FROM error_groups WHERE id = :group_id;\n";
    let t = with_resolve(r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.read"),
        "count must come from the statement that changed the status",
    );
}

#[test]
fn compile_err_resolve_stops_when_nothing_changed() {
    let r = RESOLVE.replace("-- stop-if: rows > 0", "-- stop-if: changes = 0");
    let t = with_resolve(&r);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.update"),
        "stops when nothing changed",
    );
}

// -------------------------------------------------------- compile: exports

#[test]
fn compile_err_export_with_parameter() {
    let ex = EXPORTS.replace(
        "FROM error_events;",
        "FROM error_events WHERE project = :project;",
    );
    let t = text(SCHEMA, INGEST, RESOLVE, &ex);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: export.events"),
        "export blocks take no parameters (found `:project`)",
    );
}

#[test]
fn compile_err_export_writes() {
    let ex = EXPORTS.replace(
        "SELECT id, project, fingerprint, status, event_count FROM error_groups;",
        "DELETE FROM error_groups RETURNING id, project, fingerprint, status, event_count;",
    );
    let t = text(SCHEMA, INGEST, RESOLVE, &ex);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: export.groups"),
        "an export must be read-only",
    );
}

#[test]
fn compile_err_export_columns() {
    let ex = EXPORTS.replace(
        "SELECT id, project, fingerprint, group_id, received_at",
        "SELECT id, project, fingerprint, received_at, group_id",
    );
    let t = text(SCHEMA, INGEST, RESOLVE, &ex);
    let e = compile_err(&t);
    assert_err(&e, line_of(&t, "-- name: export.events"), "must return exactly the columns id, project, fingerprint, group_id, received_at in this order");
    let ex = EXPORTS.replace("status, event_count FROM", "status, event_count AS n FROM");
    let t = text(SCHEMA, INGEST, RESOLVE, &ex);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: export.groups"),
        "it returns [id, project, fingerprint, status, n]",
    );
}

// --------------------------------------------------------- shipped variants

fn shipped(name: &str) -> (StatementFile, GroupsVariant) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("targets/sqlite")
        .join(name);
    let t = std::fs::read_to_string(&p).unwrap();
    let f = parse(&p, &t).unwrap_or_else(|e| panic!("{e}"));
    let v = compile_groups(&f).unwrap_or_else(|e| panic!("{e}"));
    (f, v)
}

#[test]
fn shipped_atomic_compiles() {
    let (f, v) = shipped("groups-atomic.sql");
    let names: Vec<_> = v.ingest.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["s1", "s2", "s3"]);
    assert_eq!(v.counting_step, 2);
    assert_eq!(v.ingest.steps[0].stop_if, Some(StopIf::ChangesZero));
    assert_eq!(v.ingest.builtins, INGEST_BUILTINS.to_vec());
    // s1 binds :event_id, :project, :fingerprint, :group_id, :now_ms.
    assert_eq!(
        v.ingest.steps[0].params,
        [0, 1, 2, 3, 5].map(ParamSource::Builtin).to_vec()
    );
    let names: Vec<_> = v.resolve.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["update", "probe"]);
    assert_eq!(v.resolve.steps[0].stop_if, Some(StopIf::RowsPositive));
    assert_eq!(v.resolve.steps[0].columns, ["event_count"]);
    assert_eq!(v.resolve.steps[1].columns, ["status", "event_count"]);
    // The canonical schema: no UNIQUE(project, fingerprint), no CHECK.
    let sql: String = v
        .schema
        .lines()
        .map(|l| l.split("--").next().unwrap().to_uppercase())
        .collect();
    assert!(sql.contains("CREATE TABLE IF NOT EXISTS ERROR_GROUPS"));
    assert!(!sql.contains("UNIQUE") && !sql.contains("CHECK"), "{sql}");
    assert_eq!(f.sha256.len(), 64);
    assert!(f.text.starts_with("-- groups, variant \"atomic\""));
    assert!(f.text.contains("BacktalkGroups.tla"));
}

#[test]
fn shipped_naive_compiles() {
    let (f, v) = shipped("groups-naive.sql");
    let names: Vec<_> = v.ingest.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["s1", "s2", "s3_read", "s3_write"]);
    assert_eq!(v.counting_step, 3);
    assert_eq!(v.ingest.steps[2].columns, ["read_status"]);
    let write = &v.ingest.steps[3];
    assert!(write.counts && !write.readonly);
    let read_status = write
        .sql
        .find(":read_status")
        .expect("s3_write uses :read_status");
    let group_id = write.sql.find(":group_id").unwrap();
    // SQLite numbers parameters in order of first appearance.
    assert!(read_status < group_id);
    assert_eq!(
        write.params,
        vec![
            ParamSource::Column { step: 2, column: 0 },
            ParamSource::Builtin(3)
        ]
    );
    assert!(f.text.starts_with("-- groups, variant \"naive\""));
}

#[test]
fn shipped_sha256_is_stable() {
    let (a, _) = shipped("groups-atomic.sql");
    let (b, _) = shipped("groups-atomic.sql");
    assert_eq!(a.sha256, b.sha256);
    assert!(a.sha256.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
    let (n, _) = shipped("groups-naive.sql");
    assert_ne!(a.sha256, n.sha256);
    // Any byte changes the digest.
    let c = parse(&a.path, &(a.text.clone() + "\n")).unwrap();
    assert_ne!(a.sha256, c.sha256);
}

#[test]
fn compile_err_transaction_control_as_a_step() {
    let i = INGEST.replace(
        "-- name: ingest.s2\nINSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)\nVALUES (:group_id, :project, :fingerprint, 'open', 0);",
        "-- name: ingest.s2\n/* open a transaction */ BEGIN IMMEDIATE;",
    );
    let t = with_ingest(&i);
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: ingest.s2"),
        "is a BEGIN statement",
    );
}

#[test]
fn compile_err_pragma_or_attach_as_a_step() {
    for bad in [
        "PRAGMA journal_mode = delete;",
        "ATTACH ':memory:' AS other;",
    ] {
        let i = INGEST.replace(
            "-- name: ingest.s2\nINSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)\nVALUES (:group_id, :project, :fingerprint, 'open', 0);",
            &format!("-- name: ingest.s2\n{bad}"),
        );
        let t = with_ingest(&i);
        let e = compile_err(&t);
        assert_err(
            &e,
            line_of(&t, "-- name: ingest.s2"),
            "must be a query or a row change",
        );
    }
}

// ------------------------------------------ compile: the resolve's count

/// The premise of the count-origin check: SQLite reports the origin of a
/// `RETURNING` column as it does for a SELECT's, and none for a
/// parameter or an expression.
#[test]
fn sqlite_reports_the_origin_of_returning_columns() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE error_groups (id TEXT PRIMARY KEY, status TEXT, event_count INTEGER);",
    )
    .unwrap();
    let origin = |sql: &str| {
        let stmt = conn.prepare(sql).unwrap();
        let m: Vec<_> = stmt
            .columns_with_metadata()
            .map(|c| {
                c.table_name()
                    .zip(c.origin_name())
                    .map(|(t, o)| format!("{t}.{o}"))
            })
            .collect();
        m
    };
    let update = "UPDATE error_groups SET status = 'resolved' WHERE id = :g RETURNING ";
    assert_eq!(
        origin(&format!("{update}event_count")),
        [Some("error_groups.event_count".to_string())]
    );
    assert_eq!(
        origin(&format!("{update}event_count AS n")),
        [Some("error_groups.event_count".to_string())]
    );
    assert_eq!(origin(&format!("{update}:seen AS event_count")), [None]);
    assert_eq!(
        origin(&format!("{update}event_count + 0 AS event_count")),
        [None]
    );
    assert_eq!(
        origin(
            "INSERT INTO error_groups VALUES (:g, 'resolved', 0) ON CONFLICT(id) DO UPDATE \
             SET status = 'resolved' RETURNING event_count"
        ),
        [Some("error_groups.event_count".to_string())]
    );
}

/// A compare-and-swap resolver: reads status and count in one step, then
/// resolves only if the status is still the one read.
fn cas_resolver(returning: &str) -> String {
    format!(
        "-- name: resolve.read\n\
         SELECT status AS cur, event_count AS seen FROM error_groups WHERE id = :group_id;\n\n\
         -- name: resolve.update\n-- stop-if: rows > 0\n\
         UPDATE error_groups SET status = 'resolved'\n\
         WHERE id = :group_id AND status = :cur AND :cur IN ('open', 'regressed')\n\
         RETURNING {returning};\n\n\
         -- name: resolve.probe\n\
         SELECT status, event_count FROM error_groups WHERE id = :group_id;\n"
    )
}

#[test]
fn compile_cas_resolver_returning_its_rows_count() {
    let v = compile(&with_resolve(&cas_resolver("event_count"))).unwrap();
    assert_eq!(v.resolve.steps[1].columns, ["event_count"]);
}

#[test]
fn compile_err_cas_resolver_returning_the_count_it_read() {
    let t = with_resolve(&cas_resolver(":seen AS event_count"));
    let e = compile_err(&t);
    assert_err(
        &e,
        line_of(&t, "-- name: resolve.update"),
        "`resolve.update` returns `event_count` from a parameter, a literal or an expression \
         (SQLite reports no table column as its origin), not from error_groups.event_count of \
         the row it changes: NoMissedRegression's count rule needs the group's count at the \
         instant its status changed",
    );
    let t = with_resolve(&cas_resolver("event_count + 0 AS event_count"));
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: resolve.update"),
        "from a parameter, a literal or an expression",
    );
}

#[test]
fn compile_err_resolve_returning_another_column() {
    let s = SCHEMA.replace(
        "status TEXT, event_count INTEGER);",
        "status TEXT, event_count INTEGER, seen INTEGER);",
    );
    let r = RESOLVE.replace("RETURNING event_count;", "RETURNING seen AS event_count;");
    let t = text(&s, INGEST, &r, EXPORTS);
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: resolve.update"),
        "returns `event_count` from error_groups.seen, not from error_groups.event_count of the row it changes",
    );
}

#[test]
fn compile_err_resolve_stop_that_does_not_change_the_status() {
    let r = RESOLVE.replace(
        "UPDATE error_groups SET status = 'resolved'",
        "UPDATE error_groups SET event_count = event_count",
    );
    let t = with_resolve(&r);
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: resolve.update"),
        "`resolve.update` stops with an `event_count` but does not update error_groups.status \
         (the column `export.groups` returns as status)",
    );
    // A trigger that changes the status is not the statement itself.
    let s = format!(
        "{SCHEMA}CREATE TABLE resolutions (group_id TEXT);\n\
         CREATE TRIGGER r AFTER UPDATE OF event_count ON error_groups BEGIN\n\
         UPDATE error_groups SET status = 'resolved' WHERE id = new.id; END;\n"
    );
    let t = text(&s, INGEST, &r, EXPORTS);
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: resolve.update"),
        "does not update error_groups.status",
    );
}

#[test]
fn compile_upsert_resolver_is_accepted() {
    let r = "-- name: resolve.upsert\n-- stop-if: rows > 0\n\
             INSERT INTO error_groups (id, project, fingerprint, status, event_count)\n\
             VALUES (:group_id, :project, :fingerprint, 'resolved', 0)\n\
             ON CONFLICT(id) DO UPDATE SET status = 'resolved' WHERE status IN ('open', 'regressed')\n\
             RETURNING event_count;\n\n\
             -- name: resolve.probe\n\
             SELECT status, event_count FROM error_groups WHERE id = :group_id;\n";
    let v = compile(&with_resolve(r)).unwrap();
    // :project and :fingerprint are built-ins of resolve.
    assert_eq!(
        v.resolve.steps[0].params,
        [0, 2, 3].map(ParamSource::Builtin).to_vec()
    );
}

/// A design with its own schema: the count is `issues.times_seen`, the
/// status computed from `issues.state`.
const OWN_SCHEMA: &str = "\
-- name: schema
CREATE TABLE seen (id TEXT PRIMARY KEY, project TEXT, fp TEXT, issue TEXT, at INTEGER);
CREATE TABLE issues (id TEXT PRIMARY KEY, project TEXT, fp TEXT, state TEXT, times_seen INTEGER);

-- name: ingest.s1
-- stop-if: changes = 0
INSERT OR IGNORE INTO seen VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO issues VALUES (:group_id, :project, :fingerprint, 'active', 0);

-- name: ingest.s3
-- counts: true
UPDATE issues SET times_seen = times_seen + 1,
  state = CASE WHEN state = 'resolved' THEN 'regressed' ELSE state END
WHERE id = :group_id;

-- name: export.events
SELECT id, project, fp AS fingerprint, issue AS group_id, at AS received_at FROM seen;

-- name: export.groups
SELECT id, project, fp AS fingerprint,
  CASE state WHEN 'active' THEN 'open' ELSE state END AS status,
  times_seen AS event_count FROM issues;
";

fn own_resolve(returning: &str) -> String {
    format!(
        "{OWN_SCHEMA}\n-- name: resolve.update\n-- stop-if: rows > 0\n\
         UPDATE issues SET state = 'resolved'\n\
         WHERE id = :group_id AND state IN ('active', 'regressed') RETURNING {returning};\n\n\
         -- name: resolve.probe\n\
         SELECT CASE state WHEN 'active' THEN 'open' ELSE state END AS status,\n\
         times_seen AS event_count FROM issues WHERE id = :group_id;\n"
    )
}

#[test]
fn compile_own_schema_count_column_is_the_exports() {
    let v = compile(&own_resolve("times_seen AS event_count")).unwrap();
    assert_eq!(v.event_step, Some(0));
    let t = own_resolve("times_seen + 0 AS event_count");
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: resolve.update"),
        "not from issues.times_seen of the row it changes",
    );
    // The computed status is read from `state`: a stop that does not
    // write it is refused.
    let t = own_resolve("times_seen AS event_count").replace(
        "UPDATE issues SET state = 'resolved'",
        "UPDATE issues SET times_seen = times_seen",
    );
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: resolve.update"),
        "does not update issues.state (the columns `export.groups` computes its status from)",
    );
}

#[test]
fn compile_err_export_groups_count_computed_or_apart_from_the_status() {
    let ex = EXPORTS.replace(
        "status, event_count FROM error_groups;",
        "status, event_count + 0 AS event_count FROM error_groups;",
    );
    let t = text(SCHEMA, INGEST, RESOLVE, &ex);
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: export.groups"),
        "`export.groups` computes `event_count` (SQLite reports no table column as its origin)",
    );
    let s = format!("{SCHEMA}CREATE TABLE counts (id TEXT PRIMARY KEY, n INTEGER);\n");
    let ex = EXPORTS.replace(
        "SELECT id, project, fingerprint, status, event_count FROM error_groups;",
        "SELECT g.id, g.project, g.fingerprint, g.status, c.n AS event_count \
         FROM error_groups g JOIN counts c ON c.id = g.id;",
    );
    let t = text(&s, INGEST, RESOLVE, &ex);
    assert_err(
        &compile_err(&t),
        line_of(&t, "-- name: export.groups"),
        "reads `status` from error_groups.status and `event_count` from counts.n",
    );
}

// ------------------------------------------ compile: the event-insert step

#[test]
fn compile_event_step_of_the_shipped_files() {
    assert_eq!(shipped("groups-atomic.sql").1.event_step, Some(0));
    assert_eq!(shipped("groups-naive.sql").1.event_step, Some(0));
}

/// The group row first, then the event (its duplicate check), then the count.
const GROUP_FIRST: &str = "\
-- name: ingest.s1
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s2
-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s3
-- counts: true
UPDATE error_groups SET event_count = event_count + 1,
  status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;
";

#[test]
fn compile_event_step_is_found_by_what_it_does() {
    let v = compile(&with_ingest(GROUP_FIRST)).unwrap();
    assert_eq!(v.event_step, Some(1));
    assert_eq!(v.counting_step, 2);
}

#[test]
fn compile_event_step_inserting_through_a_trigger() {
    // s2 inserts into an inbox; a trigger on the inbox inserts the event:
    // SQLite authorizes the trigger's insert when it prepares s2.
    let s = format!(
        "{SCHEMA}CREATE TABLE inbox (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, \
         group_id TEXT, at INTEGER);\n\
         CREATE TRIGGER file_event AFTER INSERT ON inbox BEGIN\n\
         INSERT INTO error_events VALUES (new.id, new.project, new.fingerprint, new.group_id, new.at);\n\
         END;\n"
    );
    let i = GROUP_FIRST.replace(
        "INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)",
        "INSERT OR IGNORE INTO inbox (id, project, fingerprint, group_id, at)",
    );
    let v = compile(&text(&s, &i, RESOLVE, EXPORTS)).unwrap();
    assert_eq!(v.event_step, Some(1));
}

#[test]
fn compile_event_step_none_when_no_step_inserts_the_event() {
    let i = GROUP_FIRST.replace(
        "-- name: ingest.s2\n-- stop-if: changes = 0\nINSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)\nVALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);",
        "-- name: ingest.s2\nSELECT count(*) AS n FROM error_events WHERE id = :event_id;",
    );
    let v = compile(&with_ingest(&i)).unwrap();
    assert_eq!(v.event_step, None);
}

// -------------------------------- compile: what a constraint failure undoes

#[test]
fn compile_undone_on_constraint_unless_fail_is_said() {
    let v = compile(&text(SCHEMA, INGEST, RESOLVE, EXPORTS)).unwrap();
    assert!(v.ingest.steps.iter().all(|s| s.undone_on_constraint));
    let i = INGEST.replace(
        "INSERT OR IGNORE INTO error_events",
        "INSERT OR FAIL INTO error_events",
    );
    let v = compile(&with_ingest(&i)).unwrap();
    assert!(!v.ingest.steps[0].undone_on_constraint);
    assert!(v.ingest.steps[1].undone_on_constraint);
    for schema_says in [
        "CREATE TABLE t (x TEXT UNIQUE ON CONFLICT FAIL);",
        "CREATE TRIGGER t BEFORE INSERT ON error_events WHEN new.id = '' BEGIN SELECT RAISE(FAIL, 'empty'); END;",
        "CREATE TABLE t (x TEXT REFERENCES error_events(id) DEFERRABLE INITIALLY DEFERRED);",
    ] {
        let s = format!("{SCHEMA}{schema_says}\n");
        let v = compile(&text(&s, INGEST, RESOLVE, EXPORTS)).unwrap();
        assert!(
            v.ingest.steps.iter().all(|s| !s.undone_on_constraint),
            "{schema_says}"
        );
    }
}
