//! The kinds of value a scenario key may hold ([`Kind`]) and a key's
//! entry in a key schema ([`Field`]): what the loader's schema
//! (`scenario::load::schema`) and a workload's own sections
//! ([`crate::scenario::section`]) are written in.
//!
//! May import: nothing of the crate.

use std::fmt::Write as _;

/// Most concurrent workers of one kind: far beyond what SQLite serves, and a
/// typo such as `ingesters = 80000` should not open 80000 connections.
pub const MAX_WORKERS: i64 = 1024;

/// What a key holds; checked before serde sees the document.
#[derive(Clone, Copy)]
#[cfg_attr(test, derive(Debug))]
pub enum Kind {
    /// Any string.
    Str,
    /// One of these strings (an enum in `mod.rs`, or a SQLite pragma value).
    OneOf(&'static [&'static str]),
    /// A humantime string such as "30s".
    Duration,
    /// A whole number in min..=max.
    Int {
        /// The least value.
        min: i64,
        /// The greatest value.
        max: i64,
    },
    /// A number (integer or float) in 0..=1.
    Fraction,
    /// A finite number >= 0.
    Rate,
    /// `true` or `false`.
    Bool,
    /// `"holds"`, or a table `{ violated = [names], not_judged = [names] }`.
    Expect,
    /// An array of thresholds: strings (`"latency_us.ingest.p99 < 20000"`)
    /// or tables `{ threshold, abort_on_fail, delay_abort_eval }`.
    Thresholds,
    /// A non-empty array of non-empty arrays of non-empty strings
    /// (`explore.queues`).
    Queues,
    /// A table of non-empty strings (`explore.fingerprints`).
    StrMap,
    /// A non-empty array of `{ duration, target }` tables
    /// (`[[load.stages]]`, `crate::scenario::stages`).
    Stages,
}

impl Kind {
    /// What a value of this kind looks like, as an error says it.
    pub fn expected(self) -> String {
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
            Kind::Thresholds => "an array of thresholds, strings such as \
                                 [\"latency_us.ingest.p99 < 20000\"] or tables such as \
                                 { threshold = \"latency_us.ingest.p99 < 20000\", \
                                 abort_on_fail = true }"
                .to_owned(),
            Kind::Queues => {
                "an array of event-id arrays such as [[\"e1\", \"e2\"], [\"e1\", \"e3\"]]"
                    .to_owned()
            }
            Kind::StrMap => "a table of strings such as { e1 = \"f1\", e3 = \"f2\" }".to_owned(),
            Kind::Stages => "an array of tables ([[load.stages]] entries) such as \
                             { duration = \"10s\", target = 2000 }"
                .to_owned(),
        }
    }

    /// Whether its values are strings (an override's bare word is one).
    pub fn is_string(self) -> bool {
        matches!(self, Kind::Str | Kind::OneOf(_) | Kind::Duration)
    }
}

/// One key of a table: its name, kind and default.
pub struct Field {
    /// The key's name.
    pub key: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// The default as TOML value text; None: the key may stay unset (or, for
    /// `name`, is filled by the loader).
    pub default: Option<&'static str>,
}

/// A key's expected shape below `[api]` and `[audit]`: a value of a kind,
/// or a table of keys.
#[derive(Clone, Copy)]
pub enum Shape {
    /// A value of this kind.
    Val(Kind),
    /// A table of these keys.
    Table(&'static [(&'static str, Shape)]),
}

/// A [`Field`], in a const table.
pub const fn field(key: &'static str, kind: Kind, default: Option<&'static str>) -> Field {
    Field { key, kind, default }
}

/// The greatest `u32`, as a [`Kind::Int`] bound.
pub const U32_MAX: i64 = u32::MAX as i64;

/// `"a", "b"`: options as a message lists them.
pub fn quoted_list(options: &[&str]) -> String {
    let mut out = String::new();
    for (i, option) in options.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "\"{option}\"");
    }
    out
}
