//! The key schema: every key of a scenario's tables, the kind of value it
//! holds and its default, checked while the file is still a span-keeping
//! document (before serde sees it). It mirrors the types of
//! `scenario/mod.rs`; `schema_drift` (a test) fails when the two differ.
//!
//! May import: its sibling files.

use super::limits::MAX_RETRIES;
use std::fmt::Write as _;

pub(super) const JOURNAL_MODES: &[&str] =
    &["wal", "delete", "truncate", "persist", "memory", "off"];
pub(super) const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];

/// Most concurrent workers of one kind: far beyond what SQLite serves, and a
/// typo such as `ingesters = 80000` should not open 80000 connections.
pub(super) const MAX_WORKERS: i64 = 1024;

/// What a key holds; checked before serde sees the document.
#[derive(Clone, Copy)]
#[cfg_attr(test, derive(Debug))]
pub(super) enum Kind {
    Str,
    /// One of these strings (an enum in `mod.rs`, or a SQLite pragma value).
    OneOf(&'static [&'static str]),
    /// A humantime string such as "30s".
    Duration,
    /// A whole number in min..=max.
    Int {
        min: i64,
        max: i64,
    },
    /// A number (integer or float) in 0..=1.
    Fraction,
    /// A finite number >= 0.
    Rate,
    Bool,
    /// `"holds"`, or a table `{ violated = [names], not_judged = [names] }`.
    Expect,
    /// An array of threshold strings (`"latency_us.ingest.p99 < 20000"`).
    Thresholds,
    /// A non-empty array of non-empty arrays of non-empty strings
    /// (`explore.queues`).
    Queues,
    /// A table of non-empty strings (`explore.fingerprints`).
    StrMap,
}

impl Kind {
    pub(super) fn expected(self) -> String {
        match self {
            Kind::Str => "a string".to_owned(),
            Kind::OneOf(options) => format!("one of {}", quoted_list(options)),
            Kind::Duration => "a duration string such as \"30s\" or \"250ms\"".to_owned(),
            Kind::Int { .. } => "a whole number".to_owned(),
            Kind::Fraction => "a number from 0 to 1".to_owned(),
            Kind::Rate => "a number".to_owned(),
            Kind::Bool => "true or false".to_owned(),
            Kind::Expect => "\"holds\" or { violated = [...], not_judged = [...] } naming \
                             invariants of the workload"
                .to_owned(),
            Kind::Thresholds => {
                "an array of strings such as [\"latency_us.ingest.p99 < 20000\"]".to_owned()
            }
            Kind::Queues => {
                "an array of event-id arrays such as [[\"e1\", \"e2\"], [\"e1\", \"e3\"]]"
                    .to_owned()
            }
            Kind::StrMap => "a table of strings such as { e1 = \"f1\", e3 = \"f2\" }".to_owned(),
        }
    }

    pub(super) fn is_string(self) -> bool {
        matches!(self, Kind::Str | Kind::OneOf(_) | Kind::Duration)
    }
}

pub(super) struct Field {
    pub(super) key: &'static str,
    pub(super) kind: Kind,
    /// The default as TOML value text; None: the key may stay unset (or, for
    /// `name`, is filled by the loader).
    pub(super) default: Option<&'static str>,
}

pub(super) struct Section {
    /// The table's name; "" for the top level.
    pub(super) name: &'static str,
    pub(super) fields: &'static [Field],
}

pub(super) const fn field(key: &'static str, kind: Kind, default: Option<&'static str>) -> Field {
    Field { key, kind, default }
}

pub(super) const U32_MAX: i64 = u32::MAX as i64;

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
        name: "load",
        fields: &[
            field(
                "model",
                Kind::OneOf(&["closed", "open"]),
                Some("\"closed\""),
            ),
            field(
                "ingesters",
                Kind::Int {
                    min: 1,
                    max: MAX_WORKERS,
                },
                Some("8"),
            ),
            field(
                "resolvers",
                Kind::Int {
                    min: 0,
                    max: MAX_WORKERS,
                },
                Some("1"),
            ),
            field("rate", Kind::Rate, Some("0.0")),
            field("late_after", Kind::Duration, Some("\"1ms\"")),
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
    Section {
        name: "keys",
        fields: &[
            field(
                "projects",
                Kind::Int {
                    min: 1,
                    max: U32_MAX,
                },
                Some("2"),
            ),
            field(
                "fingerprints",
                Kind::Int {
                    min: 1,
                    max: U32_MAX,
                },
                Some("100"),
            ),
            field(
                "skew",
                Kind::OneOf(&["uniform", "hot"]),
                Some("\"uniform\""),
            ),
            // 0 is refused only with skew = hot, where the hot set is used.
            field(
                "hot_groups",
                Kind::Int {
                    min: 0,
                    max: U32_MAX,
                },
                Some("4"),
            ),
            field("hot_fraction", Kind::Fraction, Some("0.9")),
        ],
    },
    Section {
        name: "retry",
        fields: &[
            field("probability", Kind::Fraction, Some("0.2")),
            field(
                "max_retries",
                Kind::Int {
                    min: 0,
                    max: MAX_RETRIES as i64,
                },
                Some("2"),
            ),
            field("soon_fraction", Kind::Fraction, Some("0.5")),
        ],
    },
    Section {
        name: "resolve",
        fields: &[field("interval", Kind::Duration, Some("\"1ms\""))],
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
    // Filled in only when workload = "outbox" (see fill_defaults).
    Section {
        name: "outbox",
        fields: &[
            field(
                "messages",
                Kind::Int {
                    min: 1,
                    max: 10_000_000,
                },
                Some("1000"),
            ),
            field("deliveries", Kind::Int { min: 1, max: 100 }, Some("3")),
            field(
                "handlers",
                Kind::Int {
                    min: 1,
                    max: MAX_WORKERS,
                },
                Some("8"),
            ),
            field(
                "max_attempts",
                Kind::Int {
                    min: 1,
                    max: U32_MAX,
                },
                Some("100"),
            ),
            // "0s" is how the file says "no lease" (as `stop.duration`):
            // an attempt holds its delivery until it ends.
            field("lease", Kind::Duration, Some("\"0s\"")),
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
    // Mirrors `MinEvidence::default()`; groups only.
    Section {
        name: "min_evidence",
        fields: &[
            field("TypeOK", MIN_EVIDENCE, Some("1")),
            field("OneGroupPerFingerprint", MIN_EVIDENCE, Some("1")),
            field("CountExact", MIN_EVIDENCE, Some("20")),
            field("NoMissedRegression", MIN_EVIDENCE, Some("20")),
        ],
    },
];

/// A `[min_evidence]` entry: a count of evidence (`checker::evidence`).
const MIN_EVIDENCE: Kind = Kind::Int {
    min: 0,
    max: i64::MAX,
};

/// The field at `path` (`["load", "ingesters"]`, or `["seed"]`), if any.
pub(super) fn schema_field(path: &[String]) -> Option<&'static Field> {
    let (section, key) = match path {
        [key] => ("", key),
        [section, key] => (section.as_str(), key),
        _ => return None,
    };
    SCHEMA
        .iter()
        .find(|s| s.name == section)?
        .fields
        .iter()
        .find(|f| f.key == key)
}

/// `"a", "b"`: options as a message lists them.
pub(super) fn quoted_list(options: &[&str]) -> String {
    let mut out = String::new();
    for (i, option) in options.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "\"{option}\"");
    }
    out
}
