//! The key schema: every key of a scenario's tables, the kind of value it
//! holds and its default, checked while the file is still a span-keeping
//! document (before serde sees it). It mirrors the types of
//! `scenario/mod.rs`; `schema_drift` (a test) fails when the two differ.
//!
//! The top level's `workload` (its names and default) and `variant`'s
//! default come from the workloads' registry
//! (`crate::scenario::section`), not from this file.
//!
//! Layer: config. May import its sibling files and
//! `crate::scenario::section` (the workloads' own sections).

pub(super) use crate::scenario::key_schema::{field, quoted_list, Field, Kind, MAX_WORKERS};
use std::sync::LazyLock;

pub(super) const JOURNAL_MODES: &[&str] =
    &["wal", "delete", "truncate", "persist", "memory", "off"];
pub(super) const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];

#[derive(Clone, Copy)]
pub(super) struct Section {
    /// The table's name; "" for the top level.
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

/// Every key of a scenario, its type and default: mirrors `mod.rs` and
/// `scenarios/README.md`. The top level's is built once from the
/// workloads' registry ([`top_fields`]), the tables' are [`TABLES`].
pub(super) static SCHEMA: LazyLock<Vec<Section>> = LazyLock::new(|| {
    let top = Section {
        name: "",
        fields: top_fields(),
    };
    std::iter::once(top).chain(TABLES.iter().copied()).collect()
});

/// The top level's keys. `workload` is one of the built-in workloads
/// (the loader adds those registered at run time), by default the one
/// that declares itself the default, whose default variant is
/// `variant`'s: the registry says, not this file. Built once per process
/// (the leaked slices live as long as it).
fn top_fields() -> &'static [Field] {
    let own = crate::scenario::section::default_workload();
    let names = crate::scenario::section::built_in_names();
    let quoted = |s: &str| -> &'static str { Box::leak(format!("\"{s}\"").into_boxed_str()) };
    let fields = vec![
        field("name", Kind::Str, None),
        field(
            "workload",
            Kind::OneOf(Box::leak(names.into_boxed_slice())),
            Some(quoted(own.workload)),
        ),
        field("variant", Kind::Str, own.default_variant.map(quoted)),
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
    ];
    Box::leak(fields.into_boxed_slice())
}

/// The tables of the common key schema, in the order a scenario lists
/// them.
const TABLES: &[Section] = &[
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
            field("ca_file", Kind::Str, None),
            field("insecure_skip_verify", Kind::Bool, Some("false")),
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

/// `workload`'s default: the workload registry's
/// ([`crate::scenario::section::default_workload`]).
pub(super) fn default_workload() -> String {
    crate::scenario::section::default_workload()
        .workload
        .to_owned()
}

/// Every table's name in the order a scenario lists them: [`SCHEMA`]'s,
/// each followed by the workload sections listed after it.
pub(super) fn table_names() -> Vec<&'static str> {
    let mut names = Vec::new();
    for s in TABLES {
        names.push(s.name);
        names.extend(crate::scenario::section::listed_after(s.name).map(|w| w.table));
    }
    names
}
