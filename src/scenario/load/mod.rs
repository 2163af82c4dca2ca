//! Loading a scenario: TOML text, then `--set` overrides, then defaults, then
//! a typed [`Scenario`], then the checks that span several keys.
//!
//! A scenario is refused before anything runs, so every error must let the
//! user fix it without guessing: it names the file and the line of the
//! offending key, or the `--set` that caused it. Serde alone cannot do that
//! (it loses positions inside `Target`'s internally tagged enum, and its
//! positions would refer to the text after overrides and defaults), so the
//! keys are checked here against [`schema::SCHEMA`], which mirrors the
//! types in `scenario/mod.rs` (a test holds the two together), while the
//! file is still a span-keeping `toml_edit` document. Serde then only
//! converts an already valid document.
//!
//! `[[faults]]` entries are checked the same way against
//! [`faults::FAULT_FIELDS`] and [`faults::fault_keys`]: which keys an entry
//! may hold, and their defaults, depend on its `kind` (and, for the proxy,
//! its `toxic`).
//!
//! One file per part of the scenario: [`top`] (the document's keys and
//! tables, `name`, `variant`), [`target`], [`load_keys`] (`[stop]`, and
//! the checks across a workload's own keys), [`explore`], [`workload`]
//! (what a scenario of a workload may hold: each built-in workload says
//! it in its own sections, `crate::scenario::section`), [`faults`], [`api_keys`]
//! (`[api]`, `[audit]`), [`expectations`] (`expect`, `thresholds`,
//! `[[variants]]`), [`fuzz`] (`[fuzz]`), [`overrides`] (`--set`), [`schema`] (each key's kind
//! and default), [`defaults`], [`limits`]; besides them [`context`]
//! (where an error points), [`values`] (one value against its kind),
//! [`error`] and [`to_toml`] (the resolved scenario as saved).
//!
//! May import: the types of `crate::scenario`, `crate::input` (reading
//! the file), `crate::scenario::section` (the workloads' own sections and
//! rules) and `crate::scenario::figures` (the figures a threshold may name, in
//! [`expectations`], with `crate::summary`'s live figures) and
//! `crate::scenario::mapping` (the `[api]`
//! compiler, in [`api_keys`]).

mod api_keys;
mod context;
mod defaults;
mod error;
mod expectations;
mod explore;
mod faults;
mod fuzz;
pub mod limits;
mod load_keys;
mod overrides;
mod schema;
#[cfg(test)]
mod schema_drift;
mod target;
mod to_toml;
mod top;
mod values;
mod workload;

pub use context::{fault_line, key_line};
pub use error::ScenarioError;

use super::{Scenario, Source};
use context::{line_of, Context, Override};
use defaults::fill_defaults;
use overrides::set_path;
use std::path::Path;
use toml_edit::{Document, Item};
use top::check_keys;

/// The scenario run when none is given: `scenarios/default.toml`, built in.
pub const DEFAULT_SCENARIO: &str = include_str!("../../../scenarios/default.toml");

/// How errors name the embedded default, which has no path.
const EMBEDDED: &str = "<embedded default>";

/// Loads a scenario file, or the embedded default when `path` is None, and
/// applies `overrides` (`--set KEY=VALUE`).
///
/// The name defaults to the file stem (`default` for the embedded one).
/// Returns the resolved scenario and where it came from.
///
/// # Errors
/// [`ScenarioError::Read`] when the file cannot be read; otherwise every
/// error of [`load_str`].
pub fn load(
    path: Option<&Path>,
    overrides: &[String],
) -> Result<(Scenario, Source), ScenarioError> {
    let Some(path) = path else {
        let scenario = load_str("default", None, DEFAULT_SCENARIO, overrides)?;
        let source = Source {
            path: None,
            text: DEFAULT_SCENARIO.to_owned(),
        };
        return Ok((scenario, source));
    };
    let text = crate::input::read_to_string(path, crate::input::SCENARIO).map_err(|source| {
        ScenarioError::Read {
            file: path.display().to_string(),
            source,
        }
    })?;
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".to_owned());
    let scenario = load_str(&name, Some(path), &text, overrides)?;
    let source = Source {
        path: Some(path.to_owned()),
        text,
    };
    Ok((scenario, source))
}

/// Resolves a scenario from its text: `name` is used when the text sets no
/// `name`, `path` only names the file in errors (None: the embedded default).
///
/// Overrides are `key.path=value`: the value is read as a TOML value when it
/// parses as one (and has the type the key expects), else as a bare string;
/// missing tables are created.
///
/// # Errors
/// A [`ScenarioError::File`] or [`ScenarioError::Set`] for: a malformed
/// override (no `=`, empty or invalid key, a key below a non-table), a TOML
/// syntax error, an unknown key (listing the valid keys of its table), a
/// value of the wrong type, an invalid duration or enum value, and an
/// impossible value (worker counts outside their range, no stop condition,
/// open model without a rate or a rate with the closed model, probabilities
/// outside 0..=1, retries enabled with `max_retries = 0`, a hot set of no
/// group or more groups than exist, zero projects or fingerprints, an empty
/// name, variant or path, or an unknown built-in variant).
///
/// `[[faults]]` entries (an array of tables, or `faults = [{ ... }]`) are
/// refused without a `kind` (or a `toxic` for the proxy), with a key that
/// does not apply to their kind, a probability outside 0..=1, a status
/// outside 500..=599, a zero `every` or `hold`, an empty `step`, a `stop`
/// not later than `start`, or a target the kind cannot act on. Each entry
/// gets its kind's defaults. Faults cannot be set with `--set`.
pub fn load_str(
    name: &str,
    path: Option<&Path>,
    text: &str,
    overrides: &[String],
) -> Result<Scenario, ScenarioError> {
    let file = path.map_or_else(|| EMBEDDED.to_owned(), |p| p.display().to_string());
    // Overrides are parsed first: a malformed one is a usage error whatever
    // the file holds.
    let overrides = overrides
        .iter()
        .map(|raw| Override::parse(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let spans = Document::parse(text).map_err(|e| ScenarioError::File {
        file: file.clone(),
        line: e.span().map_or(0, |span| line_of(text, span.start)),
        reason: format!("invalid TOML: {}", e.message().trim_end()),
    })?;
    let mut doc = spans.clone().into_mut();
    for (index, ov) in overrides.iter().enumerate() {
        set_path(doc.as_item_mut(), &ov.path, ov.value.clone()).map_err(|reason| {
            ScenarioError::Set {
                set: overrides[index].raw.clone(),
                reason,
            }
        })?;
    }
    // Which invariants `expect` may name depends on the workload.
    let registered = doc
        .get("workload")
        .and_then(Item::as_str)
        .and_then(crate::scenario::registered::find);
    let ctx = Context {
        file,
        text,
        spans: &spans,
        overrides: &overrides,
        workload: doc
            .get("workload")
            .and_then(Item::as_str)
            .map_or_else(schema::default_workload, str::to_owned),
        registered,
    };
    check_keys(&ctx, &doc)?;
    fill_defaults(&mut doc, name);

    let scenario: Scenario = toml::from_str(&doc.to_string()).map_err(|e| ScenarioError::File {
        file: ctx.file.clone(),
        line: 0,
        // Unreachable while SCHEMA mirrors the types: every key was checked.
        reason: format!("internal error, please report: {}", e.message()),
    })?;
    check_values(&ctx, &scenario)?;
    Ok(scenario)
}

/// The checks that span several keys, on the typed scenario, in the order
/// they have always run (the first refusal is the one shown).
fn check_values(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    api_keys::check_mapping(ctx, s)?;
    top::check_name_and_variant(ctx, s)?;
    workload::check_workload(ctx, s)?;
    target::check_target(ctx, &s.target)?;
    faults::check_fault_targets(ctx, s)?;
    target::check_path(ctx, &s.target)?;
    load_keys::check(ctx, s)?;
    explore::check_explore(ctx, s)?;
    limits::check(ctx, s)?;
    fuzz::check_fuzz(ctx, s)?;
    expectations::check_threshold_figures(ctx, s)
}
