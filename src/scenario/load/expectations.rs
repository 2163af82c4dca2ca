//! What a run must reach: `expect` (invariants named by the workload),
//! `thresholds` (figures `summary.json` has for this scenario) and the
//! `[[variants]]` entries, each with its own.
//!
//! May import: its sibling files, `scenario`'s types, `crate::variant`
//! (a statement file's short name), `crate::scenario::invariants` (the
//! names `expect` may use) and, until the workloads own their figures,
//! `crate::report::summary::skeleton`.

use super::context::{display_path, Context};
use super::error::ScenarioError;
use super::schema::{field, Field, Kind};
use super::values::{check_value, describe, quoted_list, table_entries};
use crate::scenario::invariants::{GROUPS_INVARIANTS, OUTBOX_INVARIANTS};
use crate::scenario::Scenario;
use toml_edit::Item;

/// Checks an `expect`: `"holds"`, or a table with `violated = [names]`
/// and/or `not_judged = [names]`, each naming known invariants once, no
/// invariant in both. Err(None): the wrong type; Err(Some): why.
pub(super) fn check_expect(
    ctx: &Context,
    path: &[&str],
    item: &Item,
) -> Result<(), Option<String>> {
    let key = display_path(path);
    let known: &[&str] = if ctx.outbox {
        &OUTBOX_INVARIANTS
    } else {
        &GROUPS_INVARIANTS
    };
    let workload = if ctx.outbox { "outbox" } else { "groups" };
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

/// The keys of a `[[variants]]` entry and their kinds.
pub(super) const VARIANT_FIELDS: &[Field] = &[
    field("variant", Kind::Str, None),
    field("name", Kind::Str, None),
    field("expect", Kind::Expect, None),
    field("thresholds", Kind::Thresholds, None),
];

/// Refuses a `variants` that is not an array of tables, an entry without
/// a `variant`, an unknown key, a bad `expect` or threshold, and two
/// entries with the same name (their run folders would collide).
pub(super) fn check_variants(ctx: &Context, item: &Item) -> Result<(), ScenarioError> {
    let entries = table_entries(item).ok_or_else(|| {
        ctx.error(
            &["variants"],
            format!(
                "`variants` must be an array of tables ([[variants]] entries, or \
                 variants = [{{ variant = ... }}]), found {}",
                describe(item)
            ),
        )
    })?;
    let mut names: Vec<String> = Vec::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let i = index.to_string();
        let entry = entry.map_err(|found| {
            ctx.error(
                &["variants", &i],
                format!("`variants[{index}]` must be a table such as {{ variant = \"groups-naive\" }}, found {found}"),
            )
        })?;
        for (key, value) in entry.iter() {
            let Some(f) = VARIANT_FIELDS.iter().find(|f| f.key == key) else {
                return Err(ctx.error(
                    &["variants", &i, key],
                    format!(
                        "unknown key `{key}` in `variants[{index}]`; valid keys: {}",
                        VARIANT_FIELDS
                            .iter()
                            .map(|f| f.key)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            check_value(ctx, &["variants", &i, key], f.kind, value)?;
        }
        let Some(variant) = entry.get("variant").and_then(Item::as_str) else {
            return Err(ctx.error(
                &["variants", &i],
                format!("`variants[{index}]` has no `variant`: give a statement file (.sql) or a built-in variant's name"),
            ));
        };
        let name = entry
            .get("name")
            .and_then(Item::as_str)
            .map_or_else(|| crate::variant::short_name(variant), str::to_string);
        if names.contains(&name) {
            return Err(ctx.error(
                &["variants", &i],
                format!("two variants are named {name:?}: give one a distinct `name`, so their results do not mix"),
            ));
        }
        names.push(name);
    }
    Ok(())
}

/// Refuses a threshold on a figure `summary.json` does not have for this
/// scenario (a misspelled name must never pass silently), naming the
/// figures next to it.
pub(super) fn check_threshold_figures(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let skeleton = crate::report::summary::skeleton(s);
    let top = s
        .thresholds
        .iter()
        .enumerate()
        .map(|(i, t)| (vec!["thresholds".to_string(), i.to_string()], t));
    let per_variant = s.variants.iter().enumerate().flat_map(|(v, e)| {
        e.thresholds.iter().enumerate().map(move |(i, t)| {
            (
                vec![
                    "variants".to_string(),
                    v.to_string(),
                    "thresholds".into(),
                    i.to_string(),
                ],
                t,
            )
        })
    });
    for (at, t) in top.chain(per_variant) {
        if t.actual(&skeleton).is_some() {
            continue;
        }
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        if let Some(v) = crate::scenario::lookup(&skeleton, &t.path) {
            return Err(ctx.error(
                &at,
                format!(
                    "`{}`: `{}` is not a number (it is {}): a threshold compares a number",
                    display_path(&at),
                    t.figure(),
                    if v.is_object() {
                        "a table of figures"
                    } else {
                        "text"
                    }
                ),
            ));
        }
        // The deepest prefix that exists, to show what is there instead.
        let mut depth = t.path.len();
        while depth > 0 && crate::scenario::lookup(&skeleton, &t.path[..depth]).is_none() {
            depth -= 1;
        }
        let here = crate::scenario::lookup(&skeleton, &t.path[..depth]).expect("the root exists");
        let options = match here.as_object() {
            Some(o) if depth == 0 => format!(
                "top-level figures: {}",
                o.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            Some(o) => format!(
                "figures under `{}`: {}",
                t.path[..depth].join("."),
                o.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            None => format!("`{}` is a figure itself", t.path[..depth].join(".")),
        };
        return Err(ctx.error(
            &at,
            format!(
                "`{}`: summary.json has no figure `{}` for this scenario ({options}); \
                 see \"Reading the summary\" in the README",
                display_path(&at),
                t.figure()
            ),
        ));
    }
    Ok(())
}
