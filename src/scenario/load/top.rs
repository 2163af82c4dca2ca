//! The document's own level: which keys and tables it may hold (the keys
//! of each table checked against [`SCHEMA`], `[api]`, `[audit]`,
//! `[[faults]]` and `[[variants]]` handed to their own files), and
//! `name` and `variant`.
//!
//! May import: its sibling files and `scenario`'s types.

use super::api_keys;
use super::context::Context;
use super::error::ScenarioError;
use super::expectations::check_variants;
use super::faults::check_faults;
use super::schema::quoted_list;
use super::schema::{rules_of, section_fields, table_names, SCHEMA};
use super::values::{check_value, describe};
use crate::scenario::section::Elsewhere;
use crate::scenario::Scenario;
use toml_edit::DocumentMut;

/// Variants built into the bench (each workload's, in the registry's
/// order); any other variant must be a statement file (a path ending in
/// `.sql`).
fn builtin_variants() -> Vec<&'static str> {
    crate::scenario::section::built_in_variants()
        .map(|v| v.name)
        .collect()
}

/// Refuses unknown keys, values of the wrong type and per-key impossible
/// values, in the order they appear.
pub(super) fn check_keys(ctx: &Context, doc: &DocumentMut) -> Result<(), ScenarioError> {
    let top = &SCHEMA[0];
    for (key, item) in doc.iter() {
        if let Some(field) = top.fields.iter().find(|f| f.key == key) {
            check_value(ctx, &[key], field.kind, item)?;
        } else if let Some(fields) = section_fields(key).filter(|_| !key.is_empty()) {
            if let Some((owner, spec)) = crate::scenario::section::owner_of(key) {
                // A section filled in other workloads' scenarios is refused
                // there by that workload's checks, after the keys.
                if owner != ctx.workload {
                    if let Elsewhere::Refused(reason) = (spec.elsewhere)(&ctx.workload) {
                        return Err(ctx.error(
                            &[key],
                            reason.map_or_else(
                                || format!("[{key}] only applies to workload = \"{owner}\""),
                                str::to_owned,
                            ),
                        ));
                    }
                }
            }
            let Some(table) = item.as_table_like() else {
                return Err(ctx.error(
                    &[key],
                    format!(
                        "`{key}` must be a table ([{key}]), found {}",
                        describe(item)
                    ),
                ));
            };
            for (sub, item) in table.iter() {
                let Some(field) = fields.iter().find(|f| f.key == sub) else {
                    return Err(ctx.error(
                        &[key, sub],
                        format!(
                            "unknown key `{sub}` in [{key}]; valid keys: {}",
                            fields.iter().map(|f| f.key).collect::<Vec<_>>().join(", ")
                        ),
                    ));
                };
                check_value(ctx, &[key, sub], field.kind, item)?;
            }
        } else if key == "api" {
            api_keys::check_table(ctx, &[key], item, rules_of(&ctx.workload).api)?;
        } else if key == "audit" {
            api_keys::check_table(ctx, &[key], item, rules_of(&ctx.workload).audit)?;
        } else if key == "faults" {
            check_faults(ctx, item)?;
        } else if key == "variants" {
            check_variants(ctx, item)?;
        } else {
            return Err(ctx.error(
                &[key],
                format!(
                    "unknown key `{key}`; valid top-level keys: {}, and the tables {}, [api], [audit], [[faults]], [[variants]]",
                    top.fields
                        .iter()
                        .map(|f| f.key)
                        .collect::<Vec<_>>()
                        .join(", "),
                    table_names()
                        .iter()
                        .map(|name| format!("[{name}]"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `name` and `variant` must not be empty; a variant is a statement file
/// (`.sql`) or a built-in one.
pub(super) fn check_name_and_variant(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    if s.name.trim().is_empty() {
        return Err(ctx.error(&["name"], "`name` must not be empty"));
    }
    if s.variant.trim().is_empty() {
        return Err(ctx.error(
            &["variant"],
            format!(
                "`variant` must not be empty: give a statement file (.sql) or one of {}",
                quoted_list(&builtin_variants())
            ),
        ));
    }
    if !s.variant.ends_with(".sql") && !builtin_variants().contains(&s.variant.as_str()) {
        return Err(ctx.error(
            &["variant"],
            format!(
                "unknown built-in variant {:?}: expected one of {}, or a statement file path ending in .sql",
                s.variant,
                quoted_list(&builtin_variants())
            ),
        ));
    }
    Ok(())
}
