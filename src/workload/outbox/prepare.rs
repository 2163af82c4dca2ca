//! An outbox scenario and its statement file, loaded and checked before
//! anything runs (the faults' steps against `handle`), and `specstorm
//! check`'s text of it. `run`, `check`, `compare`, `explore` and `audit`
//! of an outbox scenario start here.
//!
//! App layer: imports the config, the statement files and the run's
//! errors; never a command.

use super::statements::OutboxVariant;
use crate::prepare::RunError;
use crate::scenario::{self, Scenario};
use std::path::Path;

/// An outbox scenario and its checked variant, before anything runs.
pub struct OutboxPrepared {
    /// The resolved scenario.
    pub scenario: Scenario,
    /// Where it came from.
    pub source: scenario::Source,
    /// The statement file, checked against the outbox workload.
    pub variant: OutboxVariant,
}

/// Loads and checks an outbox scenario and its statement file, and the
/// faults' step names against `handle`. Errors: file, line, reason (exit 2).
pub fn prepare(path: Option<&Path>, overrides: &[String]) -> Result<OutboxPrepared, RunError> {
    let (scenario, source) =
        scenario::load(path, overrides).map_err(|e| RunError::Input(e.to_string()))?;
    let dir = path.map(|p| p.parent().unwrap_or(Path::new(".")).to_path_buf());
    let variant = super::statements::load_outbox(&scenario.variant, dir.as_deref())
        .map_err(|e| RunError::Input(e.to_string()))?;
    let names: Vec<&str> = variant
        .handle
        .steps
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    for (i, f) in scenario.faults.iter().enumerate() {
        let Some(step) = &f.step else { continue };
        if !names.contains(&step.as_str()) {
            let file = path.map_or("<embedded default>".to_string(), |p| {
                p.display().to_string()
            });
            let line = scenario::fault_line(&source.text, i, Some("step"))
                .map_or(String::new(), |l| format!(":{l}"));
            return Err(RunError::Input(format!(
                "{file}{line}: `faults[{i}].step` = {step:?} is no step of handle (its steps \
                 are {})",
                names.join(", ")
            )));
        }
    }
    Ok(OutboxPrepared {
        scenario,
        source,
        variant,
    })
}

/// The `specstorm check` text of an outbox scenario.
pub fn describe(p: &OutboxPrepared) -> String {
    let v = &p.variant;
    format!(
        "{}# variant: {} (sha256 {}): handle {} steps ({})\n# this run expects: {}\n",
        p.scenario.to_toml(),
        v.file.path.display(),
        v.file.sha256,
        v.handle.steps.len(),
        v.handle
            .steps
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        p.scenario.expectation().0
    )
}
