//! The key schema: every key of a scenario's tables, the kind of value it
//! holds and its default, checked while the file is still a span-keeping
//! document (before serde sees it). It mirrors the types of
//! `scenario/mod.rs`; `schema_drift` (a test) fails when the two differ.
//!
//! May import: its sibling files and `crate::scenario::section` (the
//! workloads' own sections).

pub(super) use crate::scenario::key_schema::{field, quoted_list, Field, Kind, MAX_WORKERS};

pub(super) const JOURNAL_MODES: &[&str] =
    &["wal", "delete", "truncate", "persist", "memory", "off"];
pub(super) const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];

pub(super) struct Section {
    /// The table's name; "" for the top level.
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

/// Every key of a scenario, its type and default: mirrors `mod.rs` and
/// `scenarios/README.md`.
pub(super) const SCHEMA: &[Section] = &[
    Section {
        name: "",
        fields: &[
            field("name", Kind::Str, None),
            field(
                "workload",
                Kind::OneOf(&["groups", "outbox"]),
                Some("\"groups\""),
            ),
            field("variant", Kind::Str, Some("\"groups-atomic\"")),
            field(
                "seed",
                Kind::Int {
                    min: 0,
                    max: i64::MAX,
                },
                Some("1"),
            ),
            field("expect", Kind::Expect, Some("\"holds\"")),
            field("thresholds", Kind::Thresholds, None),
        ],
    },
    Section {
        name: "target",
        fields: &[
            field("kind", Kind::OneOf(&["sqlite", "http"]), Some("\"sqlite\"")),
            field("path", Kind::Str, None),
            field("journal_mode", Kind::OneOf(JOURNAL_MODES), Some("\"wal\"")),
            field("synchronous", Kind::OneOf(SYNCHRONOUS), Some("\"normal\"")),
            field("busy_timeout", Kind::Duration, Some("\"5s\"")),
            field("txn_retries", Kind::Int { min: 0, max: 1000 }, Some("16")),
            field("txn_backoff", Kind::Duration, Some("\"0s\"")),
            field("txn_backoff_max", Kind::Duration, Some("\"100ms\"")),
            field("reuse", Kind::Bool, Some("false")),
            field("url", Kind::Str, None),
            field("spawn", Kind::Bool, Some("false")),
            field("connect_timeout", Kind::Duration, Some("\"2s\"")),
            field("request_timeout", Kind::Duration, Some("\"10s\"")),
            field("retries", Kind::Int { min: 0, max: 100 }, Some("3")),
            field(
                "server_workers",
                Kind::Int {
                    min: 1,
                    max: MAX_WORKERS,
                },
                Some("8"),
            ),
            field("command", Kind::Str, None),
            field("workdir", Kind::Str, None),
            field("startup_timeout", Kind::Duration, Some("\"60s\"")),
        ],
    },
    Section {
        name: "stop",
        fields: &[
            field(
                "events",
                Kind::Int {
                    min: 0,
                    max: i64::MAX,
                },
                Some("10000"),
            ),
            // "0s" is how the file says "no time limit": serde reads it as
            // None, and refuses a missing `duration` (it has `with` and no
            // `default`).
            field("duration", Kind::Duration, Some("\"0s\"")),
            field("grace", Kind::Duration, Some("\"30s\"")),
        ],
    },
    // Mirrors `Explore::default()`: the spec's own world.
    Section {
        name: "explore",
        fields: &[
            field(
                "queues",
                Kind::Queues,
                Some("[[\"e1\", \"e2\"], [\"e1\", \"e3\"]]"),
            ),
            field(
                "fingerprints",
                Kind::StrMap,
                Some("{ e1 = \"f1\", e2 = \"f1\", e3 = \"f2\" }"),
            ),
            field("resolves", Kind::Int { min: 0, max: 1000 }, Some("2")),
            field("project", Kind::Str, Some("\"p1\"")),
            field(
                "now_ms",
                Kind::Int {
                    min: 0,
                    max: i64::MAX,
                },
                Some("1700000000000"),
            ),
            field("messages", Kind::Int { min: 1, max: 9 }, Some("2")),
            field("deliveries", Kind::Int { min: 1, max: 9 }, Some("2")),
            field("handlers", Kind::Int { min: 1, max: 6 }, Some("2")),
            field("fails", Kind::Int { min: 0, max: 20 }, Some("1")),
            field("redeliveries", Kind::Int { min: 0, max: 20 }, Some("0")),
            field(
                "max_depth",
                Kind::Int {
                    min: 0,
                    max: i64::MAX,
                },
                Some("0"),
            ),
            field(
                "max_states",
                Kind::Int {
                    min: 0,
                    max: i64::MAX,
                },
                Some("0"),
            ),
        ],
    },
    // The schedule fuzzer (`scenario::Fuzz`); off unless set on (it costs
    // the in-process load more than 10% of its throughput).
    Section {
        name: "fuzz",
        fields: &[
            field("enabled", Kind::Bool, Some("false")),
            field("probability", Kind::Fraction, Some("0.5")),
            field("yield_share", Kind::Fraction, Some("0.25")),
            field("max_sleep", Kind::Duration, Some("\"500us\"")),
        ],
    },
];

/// The field at `path` (`["load", "ingesters"]`, or `["seed"]`), if any:
/// of [`SCHEMA`] or of a workload's own section.
pub(super) fn schema_field(path: &[String]) -> Option<&'static Field> {
    let (section, key) = match path {
        [key] => ("", key),
        [section, key] => (section.as_str(), key),
        _ => return None,
    };
    section_fields(section)?.iter().find(|f| f.key == key)
}

/// The keys of the table `name`: of [`SCHEMA`] (`""`: the top level), or
/// of the workload section of that name.
pub(super) fn section_fields(name: &str) -> Option<&'static [Field]> {
    match SCHEMA.iter().find(|s| s.name == name) {
        Some(s) => Some(s.fields),
        None => crate::scenario::section::spec_of(name).map(|s| s.fields),
    }
}

/// What the loader knows of `workload` (`crate::scenario::section`); a
/// workload that brings none (one registered at run time, or a name
/// refused elsewhere) is read with the default workload's rules, as it
/// always was.
pub(super) fn rules_of(workload: &str) -> &'static crate::scenario::section::WorkloadSections {
    crate::scenario::section::of(workload)
        .or_else(|| crate::scenario::section::of(&default_workload()))
        .expect("the default workload registers its sections")
}

/// `workload`'s default, as the top level's entry says it.
pub(super) fn default_workload() -> String {
    let text = SCHEMA[0]
        .fields
        .iter()
        .find(|f| f.key == "workload")
        .and_then(|f| f.default)
        .expect("`workload` has a default");
    let value: toml_edit::Value = text.parse().expect("SCHEMA defaults are valid TOML");
    value.as_str().expect("`workload` is a string").to_owned()
}

/// Every table's name in the order a scenario lists them: [`SCHEMA`]'s,
/// each followed by the workload sections listed after it.
pub(super) fn table_names() -> Vec<&'static str> {
    let mut names = Vec::new();
    for s in &SCHEMA[1..] {
        names.push(s.name);
        names.extend(crate::scenario::section::listed_after(s.name).map(|w| w.table));
    }
    names
}
