//! Syntax of statement files: `-- name:` blocks, their directives and SQL.
//!
//! This module knows nothing of workloads: it splits the text into
//! [`Block`]s, validates names and directives, and enforces the rules that
//! hold for every workload (unique names, contiguous op steps, no stray
//! text). Meaning (which ops exist, what a step may do) is checked by each
//! workload's own compile.
//!
//! Lines are scanned with a small SQL lexer state (string literals, quoted
//! identifiers, `/* */` comments) so that a `-- name:` inside a multi-line
//! string or block comment is not mistaken for the start of a block, and so
//! that "does this block hold SQL" is answered on tokens, not on guesses.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{Block, BranchSpec, CondSpec, FileError, StatementFile, StopIf, TxnMode};

/// Directive words the format knows. Any other `-- word: value` line in a
/// directive position is an error, so that a typo never silently disables a
/// stop condition.
const DIRECTIVES: [&str; 7] = [
    "stop-if", "counts", "goto-if", "goto", "fail-if", "begin", "end",
];

impl FileError {
    /// A file error for `file` at 1-based `line` (0: the whole file).
    pub(crate) fn at(file: &Path, line: usize, reason: impl Into<String>) -> FileError {
        FileError {
            file: file.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }
}

/// Parses the text of a statement file into blocks.
///
/// `path` is used for error messages and recorded in the result; `text` is
/// the file's content. The result's `sha256` is the lowercase hex SHA-256 of
/// `text`'s bytes.
///
/// # Errors
///
/// A [`FileError`] (1-based line, reason) when:
/// - text other than blank lines and comments precedes the first
///   `-- name:` line;
/// - a name does not match `[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?`, or is
///   repeated (reported at the second occurrence);
/// - a directive line (`-- word: value` after the name line, before the
///   SQL) has an unknown word, a bad value, or repeats a directive;
/// - a known directive (`stop-if`, `counts`, `goto-if`, `goto`, `fail-if`)
///   appears anywhere else (where it
///   would be silently ignored);
/// - a block holds no SQL;
/// - the steps of one op (`OP.STEP`, `OP` other than `export`) are split by
///   another block.
pub fn parse(path: &Path, text: &str) -> Result<StatementFile, FileError> {
    let err = |line: usize, reason: String| FileError::at(path, line, reason);
    // A UTF-8 byte-order mark is not text the user wrote.
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);

    let mut blocks: Vec<Block> = Vec::new();
    // Per block under construction: its SQL lines, whether any line held
    // SQL, and whether we are still in the directive region.
    let mut sql_lines: Vec<&str> = Vec::new();
    let mut has_sql = false;
    let mut in_directives = false;
    let mut directive_lines: HashMap<&'static str, usize> = HashMap::new();
    let mut seen_names: HashMap<String, usize> = HashMap::new();
    // op -> line of its first step, for the contiguity rule.
    let mut seen_ops: HashMap<String, usize> = HashMap::new();
    let mut state = LexState::Normal;

    for (idx, raw) in body.lines().enumerate() {
        let lineno = idx + 1;
        let starts_normal = state == LexState::Normal;
        let scan = scan_line(raw, state);
        state = scan.end;
        let comment = if starts_normal {
            comment_directive(raw)
        } else {
            None
        };

        if let Some((word, value)) = comment {
            if word == "name" {
                if let Some(block) = blocks.last_mut() {
                    finish_block(block, &sql_lines, has_sql).map_err(|r| err(block.line, r))?;
                }
                let name = value.trim();
                check_name(name).map_err(|r| err(lineno, r))?;
                if let Some(first) = seen_names.get(name) {
                    return Err(err(
                        lineno,
                        format!("block name `{name}` repeated (first at line {first})"),
                    ));
                }
                seen_names.insert(name.to_string(), lineno);
                check_contiguous(name, lineno, blocks.last(), &mut seen_ops)
                    .map_err(|r| err(lineno, r))?;
                blocks.push(Block {
                    name: name.to_string(),
                    line: lineno,
                    stop_if: None,
                    counts: false,
                    goto_if: None,
                    goto: None,
                    fail_if: None,
                    begin: None,
                    commit: false,
                    sql: String::new(),
                });
                sql_lines.clear();
                has_sql = false;
                in_directives = true;
                directive_lines.clear();
                continue;
            }
        }

        let Some(block) = blocks.last_mut() else {
            // Before the first block: only blank lines and comments.
            if scan.has_sql {
                return Err(err(
                    lineno,
                    "text before the first `-- name:` block (only blank lines and comments may precede it)"
                        .to_string(),
                ));
            }
            if let Some((word, _)) = comment {
                if let Some(known) = known_directive(word) {
                    return Err(err(
                        lineno,
                        format!("directive `{known}` before the first `-- name:` block"),
                    ));
                }
            }
            continue;
        };

        // The block's SQL keeps every line after the name line (directives
        // included: they are comments to SQLite), so line k of `sql` is file
        // line `block.line + 1 + k`.
        sql_lines.push(raw);
        if scan.has_sql {
            has_sql = true;
            in_directives = false;
            continue;
        }
        let Some((word, value)) = comment else {
            continue;
        };
        if !in_directives {
            if let Some(known) = known_directive(word) {
                return Err(err(
                    lineno,
                    format!(
                        "directive `{known}` after the SQL of `{}` would be ignored; \
                         directives go directly under the `-- name:` line",
                        block.name
                    ),
                ));
            }
            continue;
        }
        let Some(known) = known_directive(word) else {
            return Err(err(
                lineno,
                format!(
                    "unknown directive `{word}` (known: {}); write free comments \
                     without the `-- word: value` form, or after the SQL",
                    DIRECTIVES.join(", ")
                ),
            ));
        };
        if let Some(first) = directive_lines.get(known) {
            return Err(err(
                lineno,
                format!("directive `{known}` repeated (first at line {first})"),
            ));
        }
        directive_lines.insert(known, lineno);
        match known {
            "stop-if" => {
                block.stop_if = Some(parse_stop_if(value).map_err(|r| err(lineno, r))?);
            }
            "counts" => {
                block.counts = match value.trim() {
                    "true" => true,
                    "false" => false,
                    other => {
                        return Err(err(
                            lineno,
                            format!("bad `counts` value `{other}` (expected `true` or `false`)"),
                        ))
                    }
                };
            }
            "goto-if" => {
                let (cond, target) = value.split_once("->").ok_or_else(|| {
                    err(
                        lineno,
                        format!(
                            "bad `goto-if` value `{}` (expected `CONDITION -> STEP`, e.g. \
                             `changes = 0 -> publish` or `head_tx is null -> process`)",
                            value.trim()
                        ),
                    )
                })?;
                let cond = parse_cond(cond).map_err(|r| err(lineno, format!("`goto-if`: {r}")))?;
                let target =
                    parse_target(target).map_err(|r| err(lineno, format!("`goto-if`: {r}")))?;
                block.goto_if = Some(BranchSpec {
                    cond: Some(cond),
                    target,
                    line: lineno,
                });
            }
            "goto" => {
                let target =
                    parse_target(value).map_err(|r| err(lineno, format!("`goto`: {r}")))?;
                block.goto = Some(BranchSpec {
                    cond: None,
                    target,
                    line: lineno,
                });
            }
            "fail-if" => {
                let cond = parse_cond(value).map_err(|r| err(lineno, format!("`fail-if`: {r}")))?;
                block.fail_if = Some(BranchSpec {
                    cond: Some(cond),
                    target: String::new(),
                    line: lineno,
                });
            }
            "begin" => {
                block.begin = Some(parse_begin(value).map_err(|r| err(lineno, r))?);
            }
            "end" => {
                if value.trim() != "commit" {
                    return Err(err(
                        lineno,
                        format!(
                            "bad `end` value `{}` (expected `commit`: the step that \
                             closes a transaction block)",
                            value.trim()
                        ),
                    ));
                }
                block.commit = true;
            }
            _ => unreachable!("DIRECTIVES lists every directive matched here"),
        }
    }
    if let Some(block) = blocks.last_mut() {
        finish_block(block, &sql_lines, has_sql).map_err(|r| err(block.line, r))?;
    }
    check_txns(&blocks).map_err(|(line, r)| err(line, r))?;

    Ok(StatementFile {
        path: path.to_path_buf(),
        sha256: sha256_hex(text.as_bytes()),
        text: text.to_string(),
        blocks,
    })
}

/// Parses a `begin` value: `deferred`, `immediate` or `batch`.
fn parse_begin(value: &str) -> Result<TxnMode, String> {
    match value.trim() {
        "deferred" => Ok(TxnMode::Deferred),
        "immediate" => Ok(TxnMode::Immediate),
        "batch" => Ok(TxnMode::Batch),
        other => Err(format!(
            "bad `begin` value `{other}` (expected `deferred`, `immediate` or `batch`)"
        )),
    }
}

/// The op of an op step (`OP.STEP`, `OP` other than `export`).
fn op_of(block: &Block) -> Option<&str> {
    block
        .name
        .split_once('.')
        .map(|(op, _)| op)
        .filter(|op| *op != "export")
}

/// Enforces the shape of transaction blocks: `begin` and `end` only on op
/// steps; every block opened by `begin` is closed by `end: commit` on a
/// later (or the same) step of the same op; blocks do not nest. Errors
/// name the offending block's `-- name:` line (the opening one for a
/// block never closed).
fn check_txns(blocks: &[Block]) -> Result<(), (usize, String)> {
    let mut open: Option<&Block> = None;
    let never_closed = |o: &Block| {
        (
            o.line,
            format!(
                "the transaction block opened at `{}` is never closed: put \
                 `-- end: commit` on its last step (a block lies within one op)",
                o.name
            ),
        )
    };
    for b in blocks {
        let op = op_of(b);
        if let Some(o) = open {
            if op != op_of(o) {
                return Err(never_closed(o));
            }
        }
        if (b.begin.is_some() || b.commit) && op.is_none() {
            return Err((
                b.line,
                format!(
                    "`{}`: `begin` and `end` mark transaction blocks of op steps \
                     (`OP.STEP`), not of `schema` or `export.TABLE`",
                    b.name
                ),
            ));
        }
        if b.begin.is_some() {
            if let Some(o) = open {
                return Err((
                    b.line,
                    format!(
                        "`{}` opens a transaction block inside the one opened at `{}` \
                         (line {}): blocks do not nest; close it first with `-- end: commit`",
                        b.name, o.name, o.line
                    ),
                ));
            }
            open = Some(b);
        }
        if b.commit {
            if open.is_none() {
                return Err((
                    b.line,
                    format!(
                        "`{}`: `end: commit` with no open transaction block (open one \
                         with `-- begin: deferred|immediate|batch` on its first step)",
                        b.name
                    ),
                ));
            }
            open = None;
        }
    }
    match open {
        Some(o) => Err(never_closed(o)),
        None => Ok(()),
    }
}

/// Lowercase hex SHA-256 of `bytes`.
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Stores the block's SQL, or reports a block with none.
fn finish_block(block: &mut Block, lines: &[&str], has_sql: bool) -> Result<(), String> {
    if !has_sql {
        return Err(format!("block `{}` holds no SQL", block.name));
    }
    block.sql = lines.join("\n").trim_end().to_string();
    Ok(())
}

/// The canonical spelling of `word` if it is a known directive.
fn known_directive(word: &str) -> Option<&'static str> {
    DIRECTIVES.iter().copied().find(|d| *d == word)
}

/// Validates a block name against `[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?`.
fn check_name(name: &str) -> Result<(), String> {
    let part_ok = |p: &str| {
        let mut chars = p.chars();
        matches!(chars.next(), Some('a'..='z'))
            && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
    };
    let ok = match name.split_once('.') {
        None => part_ok(name),
        Some((op, step)) => part_ok(op) && part_ok(step),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid block name `{name}` (expected `name` or `op.step`: lowercase \
             letters, digits and `_`, starting with a letter)"
        ))
    }
}

/// Enforces that the steps of one op are contiguous. `export.TABLE` blocks
/// are no op (each runs alone at audit time), so they are exempt.
fn check_contiguous(
    name: &str,
    line: usize,
    previous: Option<&Block>,
    seen_ops: &mut HashMap<String, usize>,
) -> Result<(), String> {
    let Some((op, _)) = name.split_once('.') else {
        return Ok(());
    };
    if op == "export" {
        return Ok(());
    }
    let continues = previous
        .and_then(|b| b.name.split_once('.'))
        .is_some_and(|(prev_op, _)| prev_op == op);
    if continues {
        return Ok(());
    }
    if let Some(first) = seen_ops.get(op) {
        return Err(format!(
            "steps of op `{op}` must be contiguous: `{name}` is separated from the \
             earlier steps (first at line {first}) by another block"
        ));
    }
    seen_ops.insert(op.to_string(), line);
    Ok(())
}

/// Parses a `stop-if` value: `changes = 0`, `changes > 0`, `rows = 0` or
/// `rows > 0`, spaces around the operator optional.
fn parse_stop_if(value: &str) -> Result<StopIf, String> {
    let v = value.trim();
    let bad = || {
        format!(
            "bad `stop-if` value `{v}` (expected `changes = 0`, `changes > 0`, \
             `rows = 0` or `rows > 0`)"
        )
    };
    let (subject, rest) = if let Some(rest) = v.strip_prefix("changes") {
        ("changes", rest)
    } else if let Some(rest) = v.strip_prefix("rows") {
        ("rows", rest)
    } else {
        return Err(bad());
    };
    let rest = rest.trim_start();
    let (op, rest) = if let Some(r) = rest.strip_prefix('=') {
        ('=', r)
    } else if let Some(r) = rest.strip_prefix('>') {
        ('>', r)
    } else {
        return Err(bad());
    };
    if rest.trim_start() != "0" {
        return Err(bad());
    }
    Ok(match (subject, op) {
        ("changes", '=') => StopIf::ChangesZero,
        ("changes", _) => StopIf::ChangesPositive,
        ("rows", '=') => StopIf::RowsZero,
        _ => StopIf::RowsPositive,
    })
}

/// Parses a branch condition: a `stop-if` condition (`changes = 0`, ...),
/// or `COLUMN is null` / `COLUMN is not null` (keywords in any case).
fn parse_cond(value: &str) -> Result<CondSpec, String> {
    let v = value.trim();
    let words: Vec<&str> = v.split_whitespace().collect();
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let column = |w: &str| -> Result<String, String> {
        let plain = w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain {
            Ok(w.to_string())
        } else {
            Err(format!("`{w}` is not a plain column name"))
        }
    };
    match lower.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [_, "is", "null"] => return Ok(CondSpec::IsNull(column(words[0])?)),
        [_, "is", "not", "null"] => return Ok(CondSpec::NotNull(column(words[0])?)),
        _ => {}
    }
    parse_stop_if(v).map(CondSpec::Count).map_err(|_| {
        format!(
            "bad condition `{v}` (expected `changes = 0`, `changes > 0`, `rows = 0`, \
             `rows > 0`, `COLUMN is null` or `COLUMN is not null`)"
        )
    })
}

/// Parses a jump target: a step name of the same op (`STEP`, not `OP.STEP`).
fn parse_target(value: &str) -> Result<String, String> {
    let t = value.trim();
    let mut chars = t.chars();
    let ok = matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'));
    if ok {
        Ok(t.to_string())
    } else {
        Err(format!(
            "bad jump target `{t}` (expected the name of a step of the same op, \
             e.g. `publish` for `handle.publish`)"
        ))
    }
}

/// If `line` is a whole-line comment of the form `-- word: value`, returns
/// `(word, value)`. A word is `[A-Za-z][A-Za-z0-9_-]*`, so that a free
/// comment such as `-- TODO: ...` in a directive position is caught as an
/// unknown directive rather than ignored.
fn comment_directive(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix("--")?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    let word = &rest[..end];
    if !word.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let value = rest[end..].trim_start().strip_prefix(':')?;
    Some((word, value))
}

/// Where the SQL lexer is at a line boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LexState {
    Normal,
    /// Inside `/* ... */`.
    BlockComment,
    /// Inside a literal or identifier quoted with this character (`'`, `"`, `` ` ``).
    Quoted(char),
    /// Inside a `[bracketed]` identifier.
    Bracket,
}

/// What one line holds, given the lexer state at its start.
struct LineScan {
    /// Any SQL token (anything but whitespace and comments).
    has_sql: bool,
    end: LexState,
}

/// Scans one line: does it hold SQL, and where does the lexer end.
fn scan_line(line: &str, start: LexState) -> LineScan {
    let mut state = start;
    // A line that starts inside a literal is part of a statement.
    let mut has_sql = matches!(start, LexState::Quoted(_) | LexState::Bracket);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match state {
            LexState::Normal => match c {
                '-' if chars.peek() == Some(&'-') => break,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    state = LexState::BlockComment;
                }
                '\'' | '"' | '`' => {
                    has_sql = true;
                    state = LexState::Quoted(c);
                }
                '[' => {
                    has_sql = true;
                    state = LexState::Bracket;
                }
                c if c.is_whitespace() => {}
                _ => has_sql = true,
            },
            LexState::BlockComment => {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    state = LexState::Normal;
                }
            }
            LexState::Quoted(q) => {
                if c == q {
                    // A doubled quote is an escaped quote, not the end.
                    if chars.peek() == Some(&q) {
                        chars.next();
                    } else {
                        state = LexState::Normal;
                    }
                }
            }
            LexState::Bracket => {
                if c == ']' {
                    state = LexState::Normal;
                }
            }
        }
    }
    LineScan {
        has_sql,
        end: state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_tracks_literals_and_comments() {
        let s = scan_line("  -- only a comment", LexState::Normal);
        assert!(!s.has_sql);
        let s = scan_line("/* open", LexState::Normal);
        assert!(!s.has_sql);
        assert_eq!(s.end, LexState::BlockComment);
        let s = scan_line("close */ SELECT 1", LexState::BlockComment);
        assert!(s.has_sql);
        assert_eq!(s.end, LexState::Normal);
        let s = scan_line("SELECT 'it''s -- not a comment", LexState::Normal);
        assert_eq!(s.end, LexState::Quoted('\''));
    }

    #[test]
    fn comment_directive_forms() {
        assert_eq!(
            comment_directive("--stop-if:rows>0"),
            Some(("stop-if", "rows>0"))
        );
        assert_eq!(comment_directive("  -- name: a.b"), Some(("name", " a.b")));
        assert_eq!(comment_directive("-- Returns the count: n"), None);
        assert_eq!(comment_directive("SELECT 1 -- x: y"), None);
    }

    #[test]
    fn branch_values() {
        assert_eq!(
            parse_cond("head_tx IS NOT null"),
            Ok(CondSpec::NotNull("head_tx".into()))
        );
        assert_eq!(parse_cond(" x is null"), Ok(CondSpec::IsNull("x".into())));
        assert_eq!(
            parse_cond("changes=0"),
            Ok(CondSpec::Count(StopIf::ChangesZero))
        );
        assert!(parse_cond("x is nul").is_err());
        assert!(parse_cond("a.b is null").is_err());
        assert_eq!(parse_target(" publish "), Ok("publish".into()));
        assert!(parse_target("handle.publish").is_err());
        assert!(parse_target("").is_err());
    }

    #[test]
    fn stop_if_values() {
        assert_eq!(parse_stop_if("changes=0"), Ok(StopIf::ChangesZero));
        assert_eq!(parse_stop_if(" changes >0 "), Ok(StopIf::ChangesPositive));
        assert_eq!(parse_stop_if("rows = 0"), Ok(StopIf::RowsZero));
        assert_eq!(parse_stop_if("rows> 0"), Ok(StopIf::RowsPositive));
        assert!(parse_stop_if("rows >= 0").is_err());
        assert!(parse_stop_if("rows = 1").is_err());
        assert!(parse_stop_if("row = 0").is_err());
        assert!(parse_stop_if("rowsx = 0").is_err());
    }
}
