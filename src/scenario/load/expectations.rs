//! What a run must reach: `expect` (invariants named by the workload; an
//! `expect` value is checked with every value, in `values`), `thresholds`
//! (figures `summary.json` has for this scenario) and the `[[variants]]`
//! entries, each with its own.
//!
//! May import: its sibling files, `scenario`'s types (a statement file's
//! short name among them), `crate::scenario::figures` (the figures
//! `summary.json` has) and `crate::summary`'s list of those that exist
//! while the load runs (what `abort_on_fail` may name).

use super::context::{display_path, Context};
use super::error::ScenarioError;
use super::schema::{field, Field, Kind};
use super::values::{check_value, describe, table_entries};
use crate::scenario::{Scenario, Threshold, CATCH_RATE};
use crate::summary::LIVE_FIGURES;
use toml_edit::Item;

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
            .map_or_else(|| crate::scenario::short_name(variant), str::to_string);
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
    let skeleton = crate::scenario::figures::skeleton(s);
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
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        if t.path[0] == CATCH_RATE {
            check_catch_rate(ctx, &at, t, &skeleton)?;
            continue;
        }
        if t.actual(&skeleton).is_some() {
            check_live(ctx, &at, t)?;
            continue;
        }
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

/// Refuses a `catch_rate` threshold that does not name one invariant of
/// the scenario's workload (`catch_rate.NoMissedRegression`), naming
/// them, and one with `abort_on_fail` (a rate is known after the seeds).
fn check_catch_rate(
    ctx: &Context,
    at: &[&str],
    t: &Threshold,
    skeleton: &serde_json::Value,
) -> Result<(), ScenarioError> {
    let names: Vec<&str> = skeleton["invariants"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    match t.catch_rate() {
        Some(name) if names.contains(&name) => check_live(ctx, at, t),
        _ => Err(ctx.error(
            at,
            format!(
                "`{}`: `{}` names no invariant of this workload: a catch rate is \
                 `catch_rate.<Invariant>`, the share of the seeds of `--seeds` that found it \
                 violated, with <Invariant> one of {}",
                display_path(at),
                t.figure(),
                names.join(", ")
            ),
        )),
    }
}

/// Refuses `abort_on_fail` on a figure that does not exist while the load
/// runs (an invariant's verdict, stranded events: what only the audit
/// knows), naming the figures that can abort a run.
fn check_live(ctx: &Context, at: &[&str], t: &Threshold) -> Result<(), ScenarioError> {
    if !t.abort_on_fail || LIVE_FIGURES.contains(&t.path[0].as_str()) {
        return Ok(());
    }
    Err(ctx.error(
        at,
        format!(
            "`{}`: `{}` is known only after the load (the audit's, or the end's), so it \
             cannot abort the run: `abort_on_fail` takes a figure that exists while the load \
             runs, under {}",
            display_path(at),
            t.figure(),
            LIVE_FIGURES
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}
