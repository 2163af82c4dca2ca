//! `workload`: which keys belong to which workload (`[load]`, `[keys]`,
//! `[retry]`, `[resolve]` and `stop.events` to groups), which variants
//! and fault ops each takes; then the checks a workload's own sections
//! bring (`crate::scenario::section`).
//!
//! May import: its sibling files and `scenario`'s types (and its workload
//! sections' registry, `crate::scenario::section`).

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::Scenario;

/// Tables and keys of the groups workload that mean nothing to outbox
/// (refused when given, so that nobody believes they took effect).
pub(super) const GROUPS_ONLY: &[&str] = &["load", "keys", "retry", "resolve"];

/// The keys of one workload must not be set on the other: `[load]`, `[keys]`, `[retry]`, `[resolve]` and `stop.events`
/// are groups'. An outbox scenario runs on the in-process SQLite target or
/// over HTTP (`/v1/messages`); its variant must be an outbox one, its
/// faults hit `handle`; `per = "step"` is outbox-only.
pub(super) fn check_workload(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    if let crate::scenario::Workload::Registered(name) = s.workload {
        return check_registered(ctx, s, name);
    }
    let outbox = s.workload == crate::scenario::Workload::Outbox;
    if !outbox {
        // A workload's own sections on another's scenario were refused
        // with the keys (`top::check_keys`).
        for (i, f) in s.faults.iter().enumerate() {
            let i = i.to_string();
            if f.ops == Some(crate::scenario::FaultOps::Handle) {
                return Err(ctx.error(
                    &["faults", &i, "ops"],
                    format!("`faults[{i}].ops` = \"handle\" is the outbox workload's op; groups has ingest and resolve"),
                ));
            }
            if f.per == Some(crate::scenario::CrashPer::Step) {
                return Err(ctx.error(
                    &["faults", &i, "per"],
                    format!("`faults[{i}].per` = \"step\" is supported by the outbox workload only (for now)"),
                ));
            }
        }
        return own_checks(ctx, s);
    }
    for table in GROUPS_ONLY {
        if ctx.is_given(&[table]) {
            return Err(ctx.error(
                &[table],
                format!(
                    "[{table}] does not apply to workload = \"outbox\" (its load is set in \
                     [outbox]: messages, deliveries, handlers, max_attempts, lease)"
                ),
            ));
        }
    }
    if ctx.is_given(&["stop", "events"]) {
        return Err(ctx.error(
            &["stop", "events"],
            "`stop.events` does not apply to workload = \"outbox\": the run ends when its \
             queue drains (outbox.messages x outbox.deliveries), or at `stop.duration`",
        ));
    }
    let is_groups_builtin = |v: &str| v.starts_with("groups-") && !v.ends_with(".sql");
    if is_groups_builtin(&s.variant) {
        return Err(ctx.error(
            &["variant"],
            format!(
                "{:?} is a groups variant; workload = \"outbox\" runs an outbox statement \
                 file or one of \"outbox-protocol\", \"outbox-naive-no-outbox\", \"outbox-naive-no-redo\"",
                s.variant
            ),
        ));
    }
    for (i, f) in s.faults.iter().enumerate() {
        let i = i.to_string();
        if matches!(
            f.ops,
            Some(crate::scenario::FaultOps::Ingest | crate::scenario::FaultOps::Resolve)
        ) {
            return Err(ctx.error(
                &["faults", &i, "ops"],
                format!(
                    "`faults[{i}].ops`: the outbox workload's only op is \"handle\" (or \"all\")"
                ),
            ));
        }
    }
    own_checks(ctx, s)
}

/// The checks the workload's own sections bring
/// (`crate::scenario::section`).
fn own_checks(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    match crate::scenario::section::of(s.workload.name()) {
        Some(own) => (own.check)(ctx, s),
        None => Ok(()),
    }
}

/// Tables a workload registered at run time does not take: the built-in
/// workloads' own, and what needs the engine's step driver or the HTTP
/// target, which such a workload does not use (yet).
pub(super) const NOT_REGISTERED: &[&str] = &[
    "load",
    "keys",
    "retry",
    "resolve",
    "api",
    "audit",
    "explore",
    "min_evidence",
];

/// A workload registered at run time brings its own statement file, load
/// and checkers, on the in-process SQLite target: the built-in workloads'
/// tables, `stop.events`, faults and the HTTP target are refused (none of
/// them would take effect).
fn check_registered(ctx: &Context, s: &Scenario, name: &str) -> Result<(), ScenarioError> {
    for table in NOT_REGISTERED {
        if ctx.is_given(&[table]) {
            return Err(ctx.error(
                &[table],
                format!("[{table}] does not apply to workload = {name:?}"),
            ));
        }
    }
    if ctx.is_given(&["stop", "events"]) {
        return Err(ctx.error(
            &["stop", "events"],
            format!("`stop.events` does not apply to workload = {name:?}"),
        ));
    }
    if !s.faults.is_empty() {
        return Err(ctx.error(
            &["faults", "0", "kind"],
            format!(
                "workload = {name:?} takes no faults: the nemesis drives the built-in \
                 workloads' steps only (for now)"
            ),
        ));
    }
    if s.target.kind != crate::scenario::TargetKind::Sqlite {
        return Err(ctx.error(
            &["target", "kind"],
            format!("workload = {name:?} runs on the in-process SQLite target only"),
        ));
    }
    if !s.variant.ends_with(".sql") {
        return Err(ctx.error(
            &["variant"],
            format!(
                "workload = {name:?} runs its own statement file: set `variant` to a .sql file \
                 (found {:?})",
                s.variant
            ),
        ));
    }
    Ok(())
}
