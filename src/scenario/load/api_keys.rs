//! The loader's checks of `[api]` and `[audit]` (see `scenario::api`):
//! their keys and value types while the file still keeps its spans, then,
//! on the typed scenario, what spans several keys (a mapping only for an
//! external HTTP service, export queries only with `sqlite`, templates,
//! pointers, codes and `${NAME}` secrets through the mapping compiler).
//!
//! May import: its sibling files, `scenario`'s types and
//! `crate::scenario::mapping` (the compiler).

use super::context::Context;
use super::error::ScenarioError;
use super::schema::Kind;
use super::values::{check_value, describe};
use crate::scenario::mapping::Mapping;
use crate::scenario::{Scenario, TargetKind, Workload};
use toml_edit::Item;

/// A key's expected shape.
#[derive(Clone, Copy)]
pub(super) enum Shape {
    Val(Kind),
    Table(&'static [(&'static str, Shape)]),
}

use Shape::{Table, Val};

const REQUEST: Shape = Val(Kind::Str);
const MAP: Shape = Val(Kind::StrMap);
const STR: Shape = Val(Kind::Str);

const INGEST: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("body", STR),
    ("batch", Val(Kind::Int { min: 1, max: 1000 })),
    ("envelope", STR),
    ("items", STR),
    ("item_id", STR),
    ("accepted", STR),
    ("duplicate", STR),
    ("group_id", STR),
    ("codes", MAP),
    ("may_drop", Val(Kind::Bool)),
];
const RESOLVE: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("body", STR),
    ("resolved", STR),
    ("event_count", STR),
    ("status", STR),
    ("codes", MAP),
];
const LOOKUP: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("group_id", STR),
    ("codes", MAP),
];
/// `[api]`.
pub(super) const API: &[(&str, Shape)] = &[
    ("health", REQUEST),
    ("headers", MAP),
    (
        "group_ids",
        Val(Kind::OneOf(&["answer", "lookup", "audit"])),
    ),
    ("release", STR),
    ("ingest", Table(INGEST)),
    ("resolve", Table(RESOLVE)),
    ("lookup", Table(LOOKUP)),
];
const EXPORT: &[(&str, Shape)] = &[("events", STR), ("groups", STR)];
/// `[audit]`.
pub(super) const AUDIT: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("sqlite", STR),
    ("export", Table(EXPORT)),
    ("events", Val(Kind::OneOf(&["complete", "pruned"]))),
];
const HANDLE: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("headers", MAP),
    ("body", STR),
    ("acked", STR),
    ("sent_msg_id", STR),
    ("sent_ver", STR),
    ("codes", MAP),
];
/// `[api]` of an outbox scenario: groups' request kinds and group ids
/// mean nothing there, and are unknown keys.
pub(super) const OUTBOX_API: &[(&str, Shape)] = &[
    ("health", REQUEST),
    ("headers", MAP),
    ("handle", Table(HANDLE)),
];
/// The outbox's canonical tables (`docs/outbox.md`, "The tables").
const OUTBOX_EXPORT: &[(&str, Shape)] = &[
    ("state_log", STR),
    ("outbox", STR),
    ("out_queue", STR),
    ("processed", STR),
];
/// `[audit]` of an outbox scenario (no `events`: it has no event rows).
pub(super) const OUTBOX_AUDIT: &[(&str, Shape)] = &[
    ("request", REQUEST),
    ("sqlite", STR),
    ("export", Table(OUTBOX_EXPORT)),
];
/// The export queries `audit.sqlite` needs, per workload: (key, the
/// canonical table, an example).
const GROUPS_QUERIES: &[(&str, &str, &str)] = &[
    (
        "events",
        "error_events",
        "\"SELECT id, project, fingerprint, group_id, received_at FROM events\"",
    ),
    (
        "groups",
        "error_groups",
        "\"SELECT id, project, fingerprint, status, event_count FROM groups\"",
    ),
];
const OUTBOX_QUERIES: &[(&str, &str, &str)] = &[
    (
        "state_log",
        "state_log",
        "\"SELECT ver, msg_id, tx_id, kind FROM state_log\"",
    ),
    (
        "out_queue",
        "out_queue",
        "\"SELECT seq, msg_id, ver FROM out_queue\"",
    ),
    (
        "processed",
        "processed",
        "\"SELECT msg_id, dup_id FROM processed\"",
    ),
];

/// The keys of `[api]` for a scenario of the outbox workload or not.
pub(super) fn api_shape(outbox: bool) -> &'static [(&'static str, Shape)] {
    if outbox {
        OUTBOX_API
    } else {
        API
    }
}

/// The keys of `[audit]` for a scenario of the outbox workload or not.
pub(super) fn audit_shape(outbox: bool) -> &'static [(&'static str, Shape)] {
    if outbox {
        OUTBOX_AUDIT
    } else {
        AUDIT
    }
}

/// An outbox scenario's `[audit] request` defaults to the contract's
/// outbox export (serde's default is groups' `GET /v1/export`).
pub(super) fn fill_audit_default(root: &mut toml_edit::Table) {
    if let Some(audit) = root.get_mut("audit").and_then(Item::as_table_like_mut) {
        if !audit.contains_key("request") {
            audit.insert(
                "request",
                toml_edit::value(crate::scenario::api::CONTRACT_OUTBOX_EXPORT),
            );
        }
    }
}

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
/// `sqlite` comes with the workload's `export` queries (groups: both;
/// outbox: all but `export.outbox`, which a design without an outbox
/// lacks); `command` with `url`.
pub(super) fn check_mapping(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let t = &s.target;
    let outbox = s.workload == Workload::Outbox;
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
                let (queries, page) = if outbox {
                    (OUTBOX_QUERIES, "docs/outbox.md")
                } else {
                    (GROUPS_QUERIES, "docs/groups.md")
                };
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
