//! The registry of workloads: the one place that names each of them. A
//! scenario's `workload` key selects one here; every command (run,
//! compare, check, explore) asks the registry and never branches on the
//! workload itself. A workload that is not built in (one a test suite
//! brings) registers at run time with [`register`].
//!
//! App layer (with [`super::traits`]): imports each workload's
//! implementation and the scenario loader.

use super::traits::Workload;
use crate::prepare::RunError;
use crate::scenario::registered::{self, Registered};
use std::path::Path;
use std::sync::RwLock;

/// The workloads built into the binary.
static BUILT_IN: [&dyn Workload; 2] = [&super::groups::run::Groups, &super::outbox::run::Outbox];

/// The workloads registered at run time.
static REGISTERED: RwLock<Vec<&'static dyn Workload>> = RwLock::new(Vec::new());

/// Makes `w` a workload of this process: scenarios may name it
/// (`workload = "<name>"`, and its invariants in `expect`), and every
/// command runs it through the same pipeline as the built-in ones.
/// Registering the same workload again is a no-op. Errors: its name is a
/// built-in workload's, or another workload's.
pub fn register(w: &'static dyn Workload) -> Result<(), String> {
    registered::register(Registered {
        name: w.name(),
        invariants: w.invariants(),
    })?;
    let mut table = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
    if !table.iter().any(|t| t.name() == w.name()) {
        table.push(w);
    }
    Ok(())
}

/// The workload named `name`, if there is one.
pub fn get(name: &str) -> Option<&'static dyn Workload> {
    BUILT_IN
        .iter()
        .copied()
        .find(|w| w.name() == name)
        .or_else(|| {
            REGISTERED
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .copied()
                .find(|w| w.name() == name)
        })
}

/// The names of every workload: the built-in ones, then the registered.
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = BUILT_IN.iter().map(|w| w.name()).collect();
    names.extend(registered::names());
    names
}

/// The workload of the scenario at `path` (with `overrides`). Errors: the
/// scenario is invalid (exit 2).
pub fn of_scenario(
    path: Option<&Path>,
    overrides: &[String],
) -> Result<&'static dyn Workload, RunError> {
    let (s, _) =
        crate::scenario::load(path, overrides).map_err(|e| RunError::Input(e.to_string()))?;
    let name = s.workload.name();
    get(name).ok_or_else(|| {
        RunError::Input(format!(
            "workload = {name:?} is no workload of this build (there are {})",
            names().join(", ")
        ))
    })
}

/// The built-in workloads' summary parts, for the published `summary.json`
/// schema (`crate::schemas`): each part's type is added to `g`, and the
/// names of their definitions are returned, so the schema's generator
/// names no workload.
#[cfg(test)]
pub fn summary_part_schemas(g: &mut schemars::generate::SchemaGenerator) -> Vec<String> {
    use schemars::JsonSchema;
    g.subschema_for::<super::groups::figures::GroupsFigures>();
    g.subschema_for::<super::outbox::figures::OutboxFigures>();
    vec![
        super::groups::figures::GroupsFigures::schema_name().into_owned(),
        super::outbox::figures::OutboxFigures::schema_name().into_owned(),
    ]
}
