//! One value against its kind (a string, one of a list, a duration, a
//! whole number in a range, ...), and how values are named in messages
//! ("found integer 4").
//!
//! May import: its sibling files and `scenario`'s `Threshold`.

use super::context::{display_path, Context};
use super::error::ScenarioError;
use super::expectations::check_expect;
use super::limits;
use super::schema::{Kind, U32_MAX};
use crate::scenario::Threshold;
use std::fmt::Write as _;
use toml_edit::{Item, TableLike, Value};

/// Checks the value at `path` against `kind`: its type, then its range
/// or options; Err names the key's line (or `--set`) and what was found.
pub(super) fn check_value(
    ctx: &Context,
    path: &[&str],
    kind: Kind,
    item: &Item,
) -> Result<(), ScenarioError> {
    let key = display_path(path);
    let wrong_type = || {
        ctx.error(
            path,
            format!(
                "`{key}` must be {}, found {}",
                kind.expected(),
                describe(item)
            ),
        )
    };
    if let Kind::Expect = kind {
        return check_expect(ctx, path, item).map_err(|reason| match reason {
            Some(reason) => ctx.error(path, reason),
            None => wrong_type(),
        });
    }
    if let Kind::StrMap = kind {
        let table = item.as_table_like().ok_or_else(wrong_type)?;
        for (k, v) in table.iter() {
            let at = [path, &[k]].concat();
            match v.as_str() {
                Some(text) if !text.trim().is_empty() => {}
                _ => {
                    return Err(ctx.error(
                        &at,
                        format!(
                            "`{}` must be a non-empty string, found {}",
                            display_path(&at),
                            describe(v)
                        ),
                    ))
                }
            }
        }
        return Ok(());
    }
    let Some(value) = item.as_value() else {
        return Err(wrong_type());
    };
    match kind {
        Kind::Str => {
            value.as_str().ok_or_else(wrong_type)?;
        }
        Kind::OneOf(options) => {
            let text = value.as_str().ok_or_else(wrong_type)?;
            if !options.contains(&text) {
                return Err(ctx.error(
                    path,
                    format!(
                        "invalid `{key}` {text:?}: expected one of {}",
                        quoted_list(options)
                    ),
                ));
            }
        }
        Kind::Duration => {
            let text = value.as_str().ok_or_else(wrong_type)?;
            if let Err(e) = humantime::parse_duration(text) {
                return Err(ctx.error(
                    path,
                    format!(
                        "invalid duration {text:?} for `{key}`: {e} (write e.g. \"30s\", \"250ms\", \"2m\")"
                    ),
                ));
            }
        }
        Kind::Int { min, max } => {
            let n = value.as_integer().ok_or_else(wrong_type)?;
            if n < min || n > max {
                let range = if max == i64::MAX || max == U32_MAX {
                    format!("at least {min}")
                } else {
                    format!("from {min} to {max}")
                };
                let mut reason = format!("`{key}` must be {range}, found {n}");
                if let Some(why) = (n > max).then(|| limits::why_at_most(path)).flatten() {
                    let _ = write!(reason, ": {why}");
                }
                return Err(ctx.error(path, reason));
            }
        }
        Kind::Fraction | Kind::Rate => {
            let x = match value {
                Value::Float(f) => *f.value(),
                // Integers are fine where a number is expected (`rate = 100`).
                Value::Integer(i) => *i.value() as f64,
                _ => return Err(wrong_type()),
            };
            let ok = match kind {
                Kind::Fraction => (0.0..=1.0).contains(&x),
                _ => x.is_finite() && x >= 0.0,
            };
            if !ok {
                let range = match kind {
                    Kind::Fraction => "from 0 to 1",
                    _ => "a finite number >= 0",
                };
                return Err(ctx.error(path, format!("`{key}` must be {range}, found {x}")));
            }
        }
        Kind::Bool => {
            value.as_bool().ok_or_else(wrong_type)?;
        }
        Kind::Expect | Kind::StrMap => unreachable!("checked above"),
        Kind::Queues => {
            let array = value.as_array().ok_or_else(wrong_type)?;
            if array.is_empty() {
                return Err(ctx.error(path, format!("`{key}` needs at least one worker's queue")));
            }
            for (w, queue) in array.iter().enumerate() {
                let index = w.to_string();
                let at = [path, &[index.as_str()]].concat();
                let ids = queue.as_array().filter(|q| !q.is_empty()).ok_or_else(|| {
                    ctx.error(
                        &at,
                        format!(
                            "`{}` must be a non-empty array of event ids such as [\"e1\", \"e2\"], found {}",
                            display_path(&at),
                            describe(&Item::Value(queue.clone()))
                        ),
                    )
                })?;
                for (i, id) in ids.iter().enumerate() {
                    if id.as_str().is_none_or(|t| t.trim().is_empty()) {
                        let index = i.to_string();
                        let at = [&at[..], &[index.as_str()]].concat();
                        return Err(ctx.error(
                            &at,
                            format!(
                                "`{}` must be a non-empty event id string, found {}",
                                display_path(&at),
                                describe(&Item::Value(id.clone()))
                            ),
                        ));
                    }
                }
            }
        }
        Kind::Thresholds => {
            let array = value.as_array().ok_or_else(wrong_type)?;
            for (i, v) in array.iter().enumerate() {
                let index = i.to_string();
                let mut at = path.to_vec();
                at.push(&index);
                let text = v.as_str().ok_or_else(|| {
                    ctx.error(
                        &at,
                        format!(
                            "`{}` must be a string such as \"latency_us.ingest.p99 < 20000\", found {}",
                            display_path(&at),
                            describe(&Item::Value(v.clone()))
                        ),
                    )
                })?;
                Threshold::parse(text).map_err(|reason| {
                    ctx.error(&at, format!("`{}`: {reason}", display_path(&at)))
                })?;
            }
        }
    }
    Ok(())
}

/// The entries of an array of tables (`[[x]]`, or `x = [{ ... }]`); an
/// element that is not a table is Err(what it is). None: not an array.
pub(super) fn table_entries(item: &Item) -> Option<Vec<Result<&dyn TableLike, String>>> {
    match item {
        Item::ArrayOfTables(array) => Some(array.iter().map(|t| Ok(t as &dyn TableLike)).collect()),
        Item::Value(Value::Array(array)) => Some(
            array
                .iter()
                .map(|v| match v.as_inline_table() {
                    Some(t) => Ok(t as &dyn TableLike),
                    None => Err(describe(&Item::Value(v.clone()))),
                })
                .collect(),
        ),
        _ => None,
    }
}

/// An item's type and value, for "found ..." in messages.
pub(super) fn describe(item: &Item) -> String {
    match item {
        Item::Value(value) => {
            let kind = match value {
                Value::String(_) => "string",
                Value::Integer(_) => "integer",
                Value::Float(_) => "float",
                Value::Boolean(_) => "boolean",
                Value::Datetime(_) => "datetime",
                Value::Array(_) => "array",
                Value::InlineTable(_) => "table",
            };
            let mut bare = value.clone();
            bare.decor_mut().clear();
            format!("{kind} {bare}")
        }
        Item::Table(_) => "a table".to_owned(),
        Item::ArrayOfTables(_) => "an array of tables".to_owned(),
        Item::None => "nothing".to_owned(),
    }
}

/// `"a", "b"`: options as a message lists them.
pub(super) fn quoted_list(options: &[&str]) -> String {
    let mut out = String::new();
    for (i, option) in options.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "\"{option}\"");
    }
    out
}
