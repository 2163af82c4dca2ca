//! One value against its kind (a string, one of a list, a duration, a
//! whole number in a range, ...), and how values are named in messages
//! ("found integer 4").
//!
//! Holds the check of an `expect` value too (invariants named by the
//! workload), which the value check of every `expect` key calls.
//!
//! May import: its sibling files, `scenario`'s `Threshold` and
//! `crate::scenario::invariants` (the names `expect` may use).

use super::context::{display_path, Context};
use super::error::ScenarioError;
use super::limits;
use super::schema::{quoted_list, Kind};
use crate::scenario::key_schema::U32_MAX;
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
    if let Kind::Stages = kind {
        return check_stages(ctx, path, item, wrong_type);
    }
    if let Kind::Thresholds = kind {
        // An array of strings and inline tables, or `[[thresholds]]` (a
        // saved scenario writes tables so).
        let entries: Vec<Item> = match item {
            Item::ArrayOfTables(a) => a.iter().map(|t| Item::Table(t.clone())).collect(),
            Item::Value(Value::Array(a)) => a.iter().map(|v| Item::Value(v.clone())).collect(),
            _ => return Err(wrong_type()),
        };
        for (i, entry) in entries.iter().enumerate() {
            let index = i.to_string();
            check_threshold(ctx, &[path, &[index.as_str()]].concat(), entry)?;
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
            // `workload` also takes the workloads registered at run time.
            let registered = || {
                if path == ["workload"] {
                    crate::scenario::registered::names()
                } else {
                    Vec::new()
                }
            };
            if !options.contains(&text) && !registered().contains(&text) {
                let mut all = options.to_vec();
                all.extend(registered());
                return Err(ctx.error(
                    path,
                    format!(
                        "invalid `{key}` {text:?}: expected one of {}",
                        quoted_list(&all)
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
        Kind::Expect | Kind::StrMap | Kind::Stages | Kind::Thresholds => {
            unreachable!("checked above")
        }
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
    }
    Ok(())
}

/// Checks one threshold: a string `"<figure> <op> <number>"`, or a table
/// of `threshold` (that string, required), `abort_on_fail` (a bool) and
/// `delay_abort_eval` (a duration, with `abort_on_fail = true` only).
/// Whether its figure exists (live, for `abort_on_fail`) is checked on
/// the typed scenario (`expectations`).
fn check_threshold(ctx: &Context, at: &[&str], v: &Item) -> Result<(), ScenarioError> {
    let shown = display_path(at);
    let parse = |at: &[&str], text: &str| {
        Threshold::parse(text).map_err(|reason| ctx.error(at, format!("`{shown}`: {reason}")))
    };
    if let Some(text) = v.as_str() {
        return parse(at, text).map(drop);
    }
    let Some(table) = v.as_table_like() else {
        return Err(ctx.error(
            at,
            format!(
                "`{shown}` must be a string such as \"latency_us.ingest.p99 < 20000\" or a table \
                 such as {{ threshold = \"latency_us.ingest.p99 < 20000\", abort_on_fail = true }}, \
                 found {}",
                describe(v)
            ),
        ));
    };
    for (k, item) in table.iter() {
        let kind = match k {
            "threshold" => Kind::Str,
            "abort_on_fail" => Kind::Bool,
            "delay_abort_eval" => Kind::Duration,
            _ => {
                return Err(ctx.error(
                    &[at, &[k]].concat(),
                    format!(
                        "unknown key `{k}` in `{shown}`: a threshold's table has `threshold`, \
                         `abort_on_fail` and `delay_abort_eval`"
                    ),
                ))
            }
        };
        check_value(ctx, &[at, &[k]].concat(), kind, item)?;
    }
    let Some(text) = table.get("threshold").and_then(Item::as_str) else {
        return Err(ctx.error(
            at,
            format!("`{shown}` needs `threshold = \"<figure> <op> <number>\"`"),
        ));
    };
    parse(&[at, &["threshold"]].concat(), text)?;
    let aborts = table
        .get("abort_on_fail")
        .and_then(Item::as_bool)
        .unwrap_or(false);
    if !aborts && table.contains_key("delay_abort_eval") {
        return Err(ctx.error(
            &[at, &["delay_abort_eval"]].concat(),
            format!(
                "`{shown}.delay_abort_eval` delays the live judgement of `abort_on_fail = true`; \
                 this threshold is judged at the end only: set `abort_on_fail = true` or leave \
                 the delay out"
            ),
        ));
    }
    Ok(())
}

/// Checks `[[load.stages]]`: at least one entry, each a table of exactly
/// a `duration` and a `target` (a number >= 0). What a target may be
/// besides (whole, at most the ingesters) depends on the model: the
/// workload's checks say.
fn check_stages(
    ctx: &Context,
    path: &[&str],
    item: &Item,
    wrong_type: impl Fn() -> ScenarioError,
) -> Result<(), ScenarioError> {
    let entries = table_entries(item).ok_or_else(&wrong_type)?;
    if entries.is_empty() {
        return Err(ctx.error(
            path,
            format!(
                "`{}` needs at least one stage such as {{ duration = \"10s\", target = 2000 }}",
                display_path(path)
            ),
        ));
    }
    for (i, entry) in entries.into_iter().enumerate() {
        let index = i.to_string();
        let at = [path, &[index.as_str()]].concat();
        let table = entry.map_err(|found| {
            ctx.error(
                &at,
                format!(
                    "`{}` must be a table such as {{ duration = \"10s\", target = 2000 }}, found {found}",
                    display_path(&at)
                ),
            )
        })?;
        for (k, v) in table.iter() {
            let kind = match k {
                "duration" => Kind::Duration,
                "target" => Kind::Rate,
                _ => {
                    return Err(ctx.error(
                        &[&at[..], &[k]].concat(),
                        format!(
                            "unknown key `{k}` in `{}`: a stage has `duration` and `target`",
                            display_path(&at)
                        ),
                    ))
                }
            };
            check_value(ctx, &[&at[..], &[k]].concat(), kind, v)?;
        }
        for key in ["duration", "target"] {
            if table.get(key).is_none() {
                return Err(ctx.error(&at, format!("`{}` needs `{key}`", display_path(&at))));
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

/// Checks an `expect`: `"holds"`, or a table with `violated = [names]`
/// and/or `not_judged = [names]`, each naming known invariants once, no
/// invariant in both. Err(None): the wrong type; Err(Some): why.
pub(super) fn check_expect(
    ctx: &Context,
    path: &[&str],
    item: &Item,
) -> Result<(), Option<String>> {
    let key = display_path(path);
    let (known, workload): (&[&str], &str) = match ctx.registered {
        Some(r) => (r.invariants, r.name),
        None => {
            let own = super::schema::rules_of(&ctx.workload);
            (own.invariants, own.workload)
        }
    };
    if let Some(text) = item.as_str() {
        return if text == "holds" {
            Ok(())
        } else {
            Err(Some(format!(
                "invalid `{key}` {text:?}: write \"holds\" or {{ violated = [\"NoMissedRegression\"] }}"
            )))
        };
    }
    let table = item.as_table_like().ok_or(None)?;
    for (k, _) in table.iter() {
        if k != "violated" && k != "not_judged" {
            return Err(Some(format!(
                "unknown key `{k}` in `{key}`: the keys are `violated` and `not_judged`"
            )));
        }
    }
    if table.get("violated").is_none() && table.get("not_judged").is_none() {
        return Err(Some(format!(
            "`{key}` needs `violated = [...]` (or `not_judged = [...]`)"
        )));
    }
    let list = |list: &str| -> Result<Vec<String>, Option<String>> {
        let Some(item) = table.get(list) else {
            return Ok(Vec::new());
        };
        let names = item.as_array().ok_or_else(|| {
            Some(format!(
                "`{key}.{list}` must be an array of invariant names"
            ))
        })?;
        if names.is_empty() {
            return Err(Some(match list {
                "violated" => format!(
                    "`{key}.violated` is empty: write expect = \"holds\" when no invariant should be violated"
                ),
                _ => format!("`{key}.{list}` is empty: leave it out when every invariant is judged"),
            }));
        }
        let mut seen: Vec<String> = Vec::new();
        for n in names.iter() {
            let Some(name) = n.as_str() else {
                return Err(Some(format!(
                    "`{key}.{list}` must hold invariant names (strings), found {}",
                    describe(&Item::Value(n.clone()))
                )));
            };
            if !known.contains(&name) {
                return Err(Some(format!(
                    "unknown invariant {name:?} in `{key}.{list}`: the {workload} workload's \
                     invariants are {}",
                    quoted_list(known)
                )));
            }
            if seen.iter().any(|s| s == name) {
                return Err(Some(format!("{name:?} is named twice in `{key}.{list}`")));
            }
            seen.push(name.to_string());
        }
        Ok(seen)
    };
    let violated = list("violated")?;
    let not_judged = list("not_judged")?;
    if let Some(both) = violated.iter().find(|v| not_judged.contains(v)) {
        return Err(Some(format!(
            "{both:?} is in both `{key}.violated` and `{key}.not_judged`: an invariant that \
             is not judged cannot be expected violated; keep it in one list"
        )));
    }
    Ok(())
}
