//! The one registry of the workloads' own scenario sections: each
//! workload plugs in a [`WorkloadSections`] (its tables, each with its key
//! schema, defaults and type, where it stands among the scenario's tables,
//! and its `file:line` checks), and the loader reads, checks, fills and
//! writes those tables through it without naming any workload.
//!
//! Why a link-time list ([`linkme::distributed_slice`]) and not a list
//! here or a table filled at run time: the config layer may not import the
//! workload folders (they sit above it), so a list here would be an
//! upward import; a table filled at run time would be empty for whoever
//! loads a scenario before the workload registry ran (every test that
//! calls `scenario::load_str`), and a scenario would then be refused or
//! read differently depending on call order. With the distributed slice
//! each workload's `config` module adds its entry where it defines the
//! section, the linker gathers them, and the list is complete before
//! `main` runs, whoever loads first.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::key_schema::{Field, Shape};
use super::mapping::requests::CompileRequests;
use super::part::{Part, ReadPart};
use super::Scenario;
use crate::fault_kind::FaultKind;
use crate::scenario::ScenarioError;

/// Where a workload's check points when it refuses a key: the loader's
/// file, line and `--set` bookkeeping, as a workload's checks see it.
pub trait KeyPlace {
    /// The error for the key at `path` (`["table", "key"]`): `FILE:LINE:
    /// reason`, `--set KEY=VALUE: reason`, or the line of its nearest table
    /// when the key is left to its default.
    fn error(&self, path: &[&str], reason: String) -> ScenarioError;
    /// Whether `path` was written in the file or set by an override.
    fn is_given(&self, path: &[&str]) -> bool;
}

/// One table a workload owns.
pub struct SectionSpec {
    /// Its name, as the scenario writes it (`[name]`).
    pub table: &'static str,
    /// The scenario's field it is written right after (in the saved
    /// `scenario.toml` and the summary's `resolved_scenario`), whether or
    /// not that field itself is written. Sections that follow the same
    /// field are written in the registry's order.
    pub follows: &'static str,
    /// The scenario's table it comes right after in the list of tables an
    /// unknown key's error names (a table of the common key schema).
    pub listed_after: &'static str,
    /// What it is in a scenario of another workload.
    pub elsewhere: fn(workload: &str) -> Elsewhere,
    /// Its keys, their kinds and defaults (filled only when the scenario
    /// runs the owning workload).
    pub fields: &'static [Field],
    /// Reads the table as its type ([`crate::scenario::part::read_part`]).
    pub read: ReadPart,
    /// Its type's JSON schema, for the key schema's drift test.
    #[cfg(test)]
    pub schema: fn() -> schemars::Schema,
}

/// A workload's own requests of `[api]`, as the loader and the mapping
/// compiler (`crate::scenario::mapping`) reach them without naming it.
pub struct ApiRequests {
    /// Reads its part of `[api]` (the keys it owns; none: its defaults)
    /// as its type ([`crate::scenario::part::read_part`]).
    pub read: ReadPart,
    /// Compiles its part.
    pub compile: CompileRequests,
    /// Its keys that may hold a `${NAME}` and their texts in its part, in
    /// the order a missing secret's error names the first.
    pub secret_keys: fn(&dyn Part) -> Vec<(&'static [&'static str], Vec<String>)>,
    /// Its part's JSON schema, for the key schema's drift test.
    #[cfg(test)]
    pub schema: fn() -> schemars::Schema,
}

/// What a workload's section is in a scenario of another workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elsewhere {
    /// Refused when given, with this reason (None: "[table] only applies
    /// to workload = ..."), and absent from the resolved scenario.
    Refused(Option<&'static str>),
    /// Filled with its defaults, as the tables that predate the registry
    /// always were (a summary's `resolved_scenario` shows them), but
    /// neither written in the saved `scenario.toml` nor to be set: the
    /// scenario's own workload refuses it when given.
    Filled,
}

/// What the loader knows of a workload's own sections.
pub struct WorkloadSections {
    /// The workload (`workload = "..."`).
    pub workload: &'static str,
    /// Whether a scenario that names no workload runs this one: exactly
    /// one built-in workload says so ([`default_workload`]).
    pub default: bool,
    /// Its tables.
    pub sections: &'static [SectionSpec],
    /// Its checks on the typed scenario (bounds of one key that depend on
    /// another, ...), run where the loader checks which keys belong to
    /// the workload.
    pub check: fn(&dyn KeyPlace, &Scenario) -> Result<(), ScenarioError>,
    /// Its checks that span its sections' keys, run where the loader checks
    /// `[stop]`.
    pub keys: fn(&dyn KeyPlace, &Scenario) -> Result<(), ScenarioError>,
    /// Its bounds that span several keys, run with the loader's `limits`.
    pub limits: fn(&dyn KeyPlace, &Scenario) -> Result<(), ScenarioError>,
    /// A comment the saved `scenario.toml` puts right after the header of
    /// one of its tables (a key left unset, and what that means).
    pub unset_note: fn(&Scenario, &str) -> Option<&'static str>,
    /// How long its load runs when `stop.duration` is unset (the groups'
    /// `[[load.stages]]`' total), if its keys say.
    pub run_length: fn(&Scenario) -> Option<std::time::Duration>,
    /// Its built-in variants (`variant = "<name>"`), compiled into the
    /// binary.
    pub variants: &'static [BuiltIn],
    /// The variant a scenario of it runs when it names none (and lists no
    /// `[[variants]]`); the default workload's is the key schema's default
    /// `variant` (what a workload that declares none runs). None: it
    /// brings its statement files, no built-in one.
    pub default_variant: Option<&'static str>,
    /// Its invariants, by their spec names, in report order: what
    /// `expect` may name.
    pub invariants: &'static [&'static str],
    /// Whether it takes `stop.events` (else the key is refused when given
    /// and left out of the saved scenario).
    pub stop_events: bool,
    /// The keys `[api]` takes in a scenario of it: the common ones
    /// (`crate::scenario::api::COMMON_KEYS`), then its requests'.
    pub api: &'static [(&'static str, Shape)],
    /// Its own requests of `[api]` (the keys of `api` besides the common
    /// ones): how they are read, compiled, and where a secret is written.
    pub requests: ApiRequests,
    /// The placeholders `[api] headers` may use in a scenario of it: what
    /// every one of its requests (and the health and export requests) can
    /// fill in.
    pub api_header_vars: &'static [&'static str],
    /// The keys `[audit]` takes in a scenario of it.
    pub audit: &'static [(&'static str, Shape)],
    /// Its export request, the contract's: `[audit] request`'s default
    /// (None: serde's, the contract's `GET /v1/export`).
    pub audit_request: Option<&'static str>,
    /// The export queries `audit.sqlite` needs: (key, the canonical table,
    /// an example), and the page that defines those tables.
    pub export_queries: (
        &'static [(&'static str, &'static str, &'static str)],
        &'static str,
    ),
    /// A crash fault's `ops` when not given (None: the fault schema's).
    pub crash_ops: Option<&'static str>,
    /// The `[explore]` keys of its world (besides the shared bounds): given
    /// on another workload's scenario with another value than their
    /// default, they are refused.
    pub explore_keys: &'static [&'static str],
    /// Its checks of its `[explore]` world.
    pub explore_check: fn(&dyn KeyPlace, &Scenario) -> Result<(), ScenarioError>,
    /// The figures `summary.json` has for a scenario of it, as JSON with
    /// zeros, given the scenario's fault kinds and whether its run
    /// watches a WAL (`crate::scenario::figures`).
    pub skeleton: fn(&Scenario, &[FaultKind], bool) -> serde_json::Value,
}

/// A built-in variant: its name, the file path it shows, its text.
pub struct BuiltIn {
    /// `variant = "<name>"`.
    pub name: &'static str,
    /// The shipped file it is (`targets/sqlite/<name>.sql`).
    pub path: &'static str,
    /// The file's text.
    pub text: &'static str,
}

/// Every built-in variant, in the registry's order.
pub fn built_in_variants() -> impl Iterator<Item = &'static BuiltIn> {
    workloads().into_iter().flat_map(|w| w.variants.iter())
}

/// The workload whose built-in variant is `name`, if any.
pub fn built_in_owner(name: &str) -> Option<&'static str> {
    workloads()
        .into_iter()
        .find(|w| w.variants.iter().any(|v| v.name == name))
        .map(|w| w.workload)
}

/// How long the load of `s` runs at most: `stop.duration`, else its
/// workload's own length ([`WorkloadSections::run_length`]). None: until
/// its work or `stop.events` runs out.
pub fn load_duration(s: &Scenario) -> Option<std::time::Duration> {
    s.stop
        .duration
        .or_else(|| of(s.workload.name()).and_then(|w| (w.run_length)(s)))
}

/// Every workload's sections, gathered at link time.
#[linkme::distributed_slice]
pub static WORKLOADS: [WorkloadSections];

/// The workloads' sections in a fixed order (by workload name): the link
/// order of [`WORKLOADS`] is the linker's.
pub fn workloads() -> Vec<&'static WorkloadSections> {
    let mut all: Vec<&WorkloadSections> = WORKLOADS.iter().collect();
    all.sort_by_key(|w| w.workload);
    all
}

/// The built-in workloads' names, in the registry's order (by name).
pub fn built_in_names() -> Vec<&'static str> {
    workloads().into_iter().map(|w| w.workload).collect()
}

/// The built-in workload a scenario runs when it names none: the one
/// whose sections say `default` (a test checks there is exactly one).
pub fn default_workload() -> &'static WorkloadSections {
    workloads()
        .into_iter()
        .find(|w| w.default)
        .expect("one built-in workload is the default")
}

/// The sections of `workload`, if it has any.
pub fn of(workload: &str) -> Option<&'static WorkloadSections> {
    WORKLOADS.iter().find(|w| w.workload == workload)
}

/// The spec of the table `table`, with its owner's name.
pub fn owner_of(table: &str) -> Option<(&'static str, &'static SectionSpec)> {
    WORKLOADS.iter().find_map(|w| {
        w.sections
            .iter()
            .find(|s| s.table == table)
            .map(|s| (w.workload, s))
    })
}

/// The spec of the table `table`.
pub fn spec_of(table: &str) -> Option<&'static SectionSpec> {
    owner_of(table).map(|(_, s)| s)
}

/// The sections named right after the scenario's table `table` in the
/// list of tables.
pub fn listed_after(table: &str) -> impl Iterator<Item = &'static SectionSpec> + '_ {
    workloads()
        .into_iter()
        .flat_map(|w| w.sections.iter())
        .filter(move |s| s.listed_after == table)
}

/// The sections written right after the scenario's field `field`.
pub fn following(field: &str) -> impl Iterator<Item = &'static SectionSpec> + '_ {
    workloads()
        .into_iter()
        .flat_map(|w| w.sections.iter())
        .filter(move |s| s.follows == field)
}

/// Whether a scenario of `workload` has the table `spec` of `owner`
/// (filled with its defaults when not given).
pub fn filled_in(owner: &str, spec: &SectionSpec, workload: &str) -> bool {
    owner == workload || (spec.elsewhere)(workload) == Elsewhere::Filled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_built_in_workload_is_the_default_and_names_its_variant() {
        let defaults: Vec<&str> = workloads()
            .into_iter()
            .filter(|w| w.default)
            .map(|w| w.workload)
            .collect();
        assert_eq!(defaults.len(), 1, "{defaults:?}");
        let own = default_workload();
        let variant = own
            .default_variant
            .expect("the default workload names its variant");
        assert_eq!(built_in_owner(variant), Some(own.workload));
    }
}
