//! The loader's checks of `[api]` and `[audit]` (see `scenario::api`):
//! their keys and value types while the file still keeps its spans (each
//! workload's keys are its own, `crate::scenario::section`), then,
//! on the typed scenario, what spans several keys (a mapping only for an
//! external HTTP service, export queries only with `sqlite`, templates,
//! pointers, codes and `${NAME}` secrets through the mapping compiler).
//!
//! May import: its sibling files, `scenario`'s types and
//! `crate::scenario::mapping` (the compiler).

use super::context::Context;
use super::error::ScenarioError;
use super::values::{check_value, describe};
use crate::scenario::mapping::Mapping;
use crate::scenario::{Scenario, TargetKind};
use toml_edit::Item;

pub(super) use crate::scenario::key_schema::Shape;
use Shape::{Table, Val};

/// Refuses unknown keys and values of the wrong type below `[name]`.
pub(super) fn check_table(
    ctx: &Context,
    path: &[&str],
    item: &Item,
    shape: &[(&str, Shape)],
) -> Result<(), ScenarioError> {
    let name = path.join(".");
    let Some(table) = item.as_table_like() else {
        return Err(ctx.error(
            path,
            format!(
                "`{name}` must be a table ([{name}]), found {}",
                describe(item)
            ),
        ));
    };
    for (key, value) in table.iter() {
        let at: Vec<&str> = path.iter().copied().chain([key]).collect();
        let Some((_, s)) = shape.iter().find(|(k, _)| *k == key) else {
            return Err(ctx.error(
                &at,
                format!(
                    "unknown key `{key}` in [{name}]; valid keys: {}",
                    shape.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
                ),
            ));
        };
        match s {
            Val(kind) => check_value(ctx, &at, *kind, value)?,
            Table(sub) => check_table(ctx, &at, value, sub)?,
        }
    }
    Ok(())
}

/// What spans several keys: `[api]` and `[audit]` apply to a run
/// against an HTTP service the bench does not spawn; the mapping compiles
/// (templates, pointers, codes, secrets present in the environment);
/// `sqlite` comes with the workload's `export` queries (its
/// `export_queries`, `crate::scenario::section`); `command` with `url`.
pub(super) fn check_mapping(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let t = &s.target;
    for (key, given) in [("api", s.api.is_some()), ("audit", s.audit.is_some())] {
        if !given {
            continue;
        }
        if t.kind != TargetKind::Http || t.url.is_none() {
            return Err(ctx.error(
                &[key],
                format!(
                    "[{key}] applies to an HTTP service of your own: target.kind = \"http\" with \
                     `target.url` (the spawned reference server speaks the contract)"
                ),
            ));
        }
    }
    for key in ["command", "workdir"] {
        let given = match key {
            "command" => t.command.is_some(),
            _ => t.workdir.is_some(),
        };
        if given && (t.kind != TargetKind::Http || t.url.is_none()) {
            return Err(ctx.error(
                &["target", key],
                format!(
                    "`target.{key}` starts your own service: it needs target.kind = \"http\" and \
                     `target.url` (where the service will answer)"
                ),
            ));
        }
    }
    if t.workdir.is_some() && t.command.is_none() {
        return Err(ctx.error(
            &["target", "workdir"],
            "`target.workdir` is where `target.command` runs: give the command too",
        ));
    }
    if let Some(c) = &t.command {
        if c.trim().is_empty() {
            return Err(ctx.error(&["target", "command"], "`target.command` is empty"));
        }
    }
    if let Some(a) = &s.audit {
        let has = |k: &str| a.export.get(k).is_some_and(|q| !q.trim().is_empty());
        match &a.sqlite {
            Some(p) if p.trim().is_empty() => {
                return Err(ctx.error(&["audit", "sqlite"], "`audit.sqlite` is empty"))
            }
            Some(_) => {
                let (queries, page) = super::schema::rules_of(s.workload.name()).export_queries;
                for (k, table, example) in queries {
                    if !has(k) {
                        return Err(ctx.error(
                            &["audit", "sqlite"],
                            format!(
                                "`audit.sqlite` needs `export.{k}`: a query that maps the \
                                 service's schema onto the canonical {table} table ({page}), \
                                 e.g. {example}"
                            ),
                        ));
                    }
                }
            }
            None if !a.export.is_empty() => {
                return Err(ctx.error(
                    &["audit", "export"],
                    "`export.*` queries read the service's database: give `audit.sqlite` too",
                ))
            }
            None => {}
        }
    }
    if s.api.is_some() || s.audit.is_some() {
        // Secrets are read when a run starts (`run::prepare`), not here:
        // an offline audit of a saved scenario needs no secrets.
        Mapping::compile_for(s.workload, s.api.as_ref(), s.audit.as_ref(), false).map_err(|e| {
            let path: Vec<&str> = e.path.iter().map(String::as_str).collect();
            ctx.error(&path, e.reason)
        })?;
    }
    Ok(())
}
