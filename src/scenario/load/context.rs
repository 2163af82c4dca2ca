//! Where an error points: the line of the offending key in the file as
//! written (before overrides and defaults), the `--set` that set it, or,
//! for a key left to its default, the line of its nearest table; and the
//! same lookup for checks made after loading ([`fault_line`],
//! [`key_line`]).
//!
//! May import: its sibling files and `crate::scenario::section` (the
//! face it shows a workload's checks).

use super::error::ScenarioError;
use std::fmt::Write as _;
use toml_edit::{Document, Item, TableLike, Value};

/// One `--set KEY=VALUE` (parsed by [`Override::parse`], in `overrides`:
/// defined here, where every check reads it, so that this file imports no
/// sibling that imports it back).
pub(super) struct Override {
    /// As given, for error messages.
    pub(super) raw: String,
    pub(super) path: Vec<String>,
    pub(super) value: Value,
}

impl crate::scenario::section::KeyPlace for Context<'_> {
    fn error(&self, path: &[&str], reason: String) -> ScenarioError {
        Context::error(self, path, reason)
    }

    fn is_given(&self, path: &[&str]) -> bool {
        Context::is_given(self, path)
    }
}

/// Where a key's value came from.
enum Origin<'a> {
    /// The key is on this line of the file.
    Line(usize),
    /// This override set it (or a table above it).
    Set(&'a Override),
    /// The key is not in the file: its default applies. The line is that of
    /// its nearest table in the file (0: none).
    Default(usize),
}

/// What an error needs to point at the right place.
pub(super) struct Context<'a> {
    pub(super) file: String,
    pub(super) text: &'a str,
    /// The file as parsed, before overrides: it keeps the spans.
    pub(super) spans: &'a Document<&'a str>,
    pub(super) overrides: &'a [Override],
    /// The workload's name (after overrides; its default when unset).
    pub(super) workload: String,
    /// A workload registered at run time (after overrides).
    pub(super) registered: Option<crate::scenario::registered::Registered>,
}

impl Context<'_> {
    /// The last override that set `path` or a table above it.
    pub(super) fn override_of(&self, path: &[&str]) -> Option<&Override> {
        self.overrides
            .iter()
            .rev()
            .find(|ov| ov.path.len() <= path.len() && ov.path.iter().zip(path).all(|(a, b)| a == b))
    }

    fn origin(&self, path: &[&str]) -> Origin<'_> {
        if let Some(ov) = self.override_of(path) {
            return Origin::Set(ov);
        }
        match locate(self.text, self.spans.as_item(), path, 0) {
            Located::Found(line) | Located::Blocked(line) => Origin::Line(line),
            Located::Missing(line) => {
                // Not in the file: an override may have created it on its
                // way to a deeper key (`--set seed.x=1` creates `seed`).
                let below = self.overrides.iter().rev().find(|ov| {
                    ov.path.len() > path.len() && ov.path.iter().zip(path).all(|(a, b)| a == b)
                });
                below.map_or(Origin::Default(line), Origin::Set)
            }
        }
    }

    /// Whether `path` was written in the file or set by an override.
    pub(super) fn is_given(&self, path: &[&str]) -> bool {
        !matches!(self.origin(path), Origin::Default(_))
    }

    pub(super) fn error(&self, path: &[&str], reason: impl Into<String>) -> ScenarioError {
        let reason = reason.into();
        match self.origin(path) {
            Origin::Line(line) => ScenarioError::File {
                file: self.file.clone(),
                line,
                reason,
            },
            Origin::Set(ov) => ScenarioError::Set {
                set: ov.raw.clone(),
                reason,
            },
            Origin::Default(line) => ScenarioError::File {
                file: self.file.clone(),
                line,
                reason: format!(
                    "{reason} (`{}` is not set: its default applies)",
                    display_path(path)
                ),
            },
        }
    }
}

/// Where a path is in the file.
pub(super) enum Located {
    /// On this line.
    Found(usize),
    /// Not in the file; the line is that of its nearest ancestor (0: none).
    Missing(usize),
    /// A value that is not a table (or array) stands in the way: its line.
    Blocked(usize),
}

/// Finds `path` below `item`, whose own line is `line`. A segment below an
/// array (`[[faults]]`, or an array value) is an index; the line of an
/// array element is that of its `[[...]]` header or its value.
pub(super) fn locate(text: &str, item: &Item, path: &[&str], line: usize) -> Located {
    let Some((segment, rest)) = path.split_first() else {
        return Located::Found(line);
    };
    let index = segment.parse::<usize>().ok();
    let line_at =
        |span: Option<std::ops::Range<usize>>| span.map_or(line, |s| line_of(text, s.start));
    match item {
        // A name below an array: the array stands in the way, as a value does.
        Item::ArrayOfTables(_) | Item::Value(Value::Array(_)) if index.is_none() => {
            Located::Blocked(line)
        }
        Item::ArrayOfTables(array) => match index.and_then(|i| array.get(i)) {
            Some(table) => locate_in(text, table, rest, line_at(table.span())),
            None => Located::Missing(line),
        },
        Item::Value(Value::Array(array)) => match index.and_then(|i| array.get(i)) {
            Some(value) => {
                let line = line_at(value.span());
                match value.as_inline_table() {
                    Some(table) => locate_in(text, table, rest, line),
                    None if rest.is_empty() => Located::Found(line),
                    None => Located::Blocked(line),
                }
            }
            None => Located::Missing(line),
        },
        _ => match item.as_table_like() {
            Some(table) => locate_in(text, table, path, line),
            None => Located::Blocked(line),
        },
    }
}

/// Finds `path` below `table`, whose own line is `line`.
fn locate_in(text: &str, table: &dyn TableLike, path: &[&str], line: usize) -> Located {
    let Some((segment, rest)) = path.split_first() else {
        return Located::Found(line);
    };
    let Some((key, child)) = table.get_key_value(segment) else {
        return Located::Missing(line);
    };
    let line = key.span().map_or(line, |span| line_of(text, span.start));
    locate(text, child, rest, line)
}

/// The 1-based line of `faults[index].key` in a scenario's text, or of the
/// entry itself (its `[[faults]]` header, or its inline table) when `key`
/// is None. None when the text is not valid TOML or holds no such entry or
/// key.
///
/// The loader names these lines itself; this is for the checks made after
/// loading (a fault's `step` against the variant's step names).
pub fn fault_line(text: &str, index: usize, key: Option<&str>) -> Option<usize> {
    let doc = Document::parse(text).ok()?;
    let index = index.to_string();
    let mut path = vec!["faults", index.as_str()];
    path.extend(key);
    match locate(text, doc.as_item(), &path, 0) {
        Located::Found(line) => Some(line),
        Located::Missing(_) | Located::Blocked(_) => None,
    }
}

/// The 1-based line of the key at `path` (`["api", "headers"]`) in a
/// scenario's text, or of its nearest table when the key is not written
/// there. None when the text is not valid TOML. For checks made after
/// loading, such as the environment variables a mapping reads.
pub fn key_line(text: &str, path: &[&str]) -> Option<usize> {
    let doc = Document::parse(text).ok()?;
    match locate(text, doc.as_item(), path, 0) {
        Located::Found(line) | Located::Missing(line) | Located::Blocked(line) => {
            Some(line).filter(|&l| l > 0)
        }
    }
}

/// A key path as the user writes it: `load.ingesters`, `faults[1].hold`.
pub(super) fn display_path(path: &[&str]) -> String {
    let mut out = String::new();
    for segment in path {
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            let _ = write!(out, "[{segment}]");
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
    }
    out
}

/// The 1-based line of a byte offset.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
