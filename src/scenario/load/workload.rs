//! `workload`: what a scenario of a workload may hold. A built-in
//! workload states it itself (its `check` in `crate::scenario::section`:
//! which tables, keys, variants and fault ops it takes); a workload
//! registered at run time takes no built-in workload's tables, no faults
//! and no HTTP target.
//!
//! Layer: config. May import its sibling files and `scenario`'s types
//! (and its workload sections' registry, `crate::scenario::section`).

use super::context::Context;
use super::error::ScenarioError;
use crate::scenario::Scenario;

/// A workload registered at run time is checked here; a built-in one
/// checks its own rules (`crate::scenario::section`): which tables, keys,
/// variants and fault ops it takes.
pub(super) fn check_workload(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    match crate::scenario::section::of(s.workload.name()) {
        Some(own) => (own.check)(ctx, s),
        None => check_registered(ctx, s, s.workload.name()),
    }
}

/// Tables a workload registered at run time does not take besides the
/// built-in workloads' own: what needs the engine's step driver or the
/// HTTP target, which such a workload does not use (yet).
pub(super) const NOT_REGISTERED: &[&str] = &["api", "audit", "explore"];

/// The built-in workloads' tables that every scenario is filled with
/// (`crate::scenario::section::Elsewhere::Filled`): a registered
/// workload's scenario has them, refuses them when given, and leaves them
/// out of its saved text.
pub(super) fn filled_tables(workload: &str) -> Vec<&'static str> {
    crate::scenario::section::workloads()
        .into_iter()
        .flat_map(|w| w.sections.iter().map(move |spec| (w.workload, spec)))
        .filter(|(owner, spec)| {
            *owner != workload
                && (spec.elsewhere)(workload) == crate::scenario::section::Elsewhere::Filled
        })
        .map(|(_, spec)| spec.table)
        .collect()
}

/// A workload registered at run time brings its own statement file, load
/// and checkers, on the in-process SQLite target: the built-in workloads'
/// tables, `stop.events`, faults and the HTTP target are refused (none of
/// them would take effect).
fn check_registered(ctx: &Context, s: &Scenario, name: &str) -> Result<(), ScenarioError> {
    for table in filled_tables(name).iter().chain(NOT_REGISTERED) {
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
