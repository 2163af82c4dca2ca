//! Loading a scenario: TOML text, then `--set` overrides, then defaults, then
//! a typed [`Scenario`], then the checks that span several keys.
//!
//! A scenario is refused before anything runs, so every error must let the
//! user fix it without guessing: it names the file and the line of the
//! offending key, or the `--set` that caused it. Serde alone cannot do that
//! (it loses positions inside `Target`'s internally tagged enum, and its
//! positions would refer to the text after overrides and defaults), so the
//! keys are checked here against [`SCHEMA`], which mirrors the types in
//! `mod.rs`, while the file is still a span-keeping `toml_edit` document.
//! Serde then only converts an already valid document.
//!
//! `[[faults]]` entries are checked the same way against [`FAULT_FIELDS`]
//! and [`fault_keys`]: which keys an entry may hold, and their defaults,
//! depend on its `kind` (and, for the proxy, its `toxic`).

mod api_keys;
mod limits;

use super::{Fault, LoadModel, Scenario, Skew, Source, Target, TargetKind, Threshold};
use crate::checker::{GROUPS_INVARIANTS, OUTBOX_INVARIANTS};
use crate::fault_kind::FaultKind;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;
use toml_edit::{Document, DocumentMut, InlineTable, Item, Key, Table, TableLike, Value};

/// The scenario run when none is given: `scenarios/default.toml`, built in.
pub const DEFAULT_SCENARIO: &str = include_str!("../../scenarios/default.toml");

/// How errors name the embedded default, which has no path.
const EMBEDDED: &str = "<embedded default>";

/// Variants built into the bench; any other variant must be a statement file
/// (a path ending in `.sql`).
const BUILTIN_VARIANTS: &[&str] = &[
    "groups-atomic",
    "groups-naive",
    "outbox-protocol",
    "outbox-naive-no-outbox",
    "outbox-naive-no-redo",
];

const JOURNAL_MODES: &[&str] = &["wal", "delete", "truncate", "persist", "memory", "off"];
const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];
/// `faults[].kind`: the names of [`FaultKind`].
const FAULT_KINDS: &[&str] = &["crash", "pause", "proxy", "kill", "lock"];
/// `faults[].ops`: the names of `FaultOps`.
const FAULT_OPS: &[&str] = &["ingest", "resolve", "all", "handle"];
/// `faults[].per`: the names of `CrashPer`.
const CRASH_PER: &[&str] = &["op", "step"];
/// Tables and keys of the groups workload that mean nothing to outbox
/// (refused when given, so that nobody believes they took effect).
const GROUPS_ONLY: &[&str] = &["load", "keys", "retry", "resolve"];
/// `faults[].toxic`: the names of `Toxic`.
const TOXICS: &[&str] = &["latency", "drop_response", "reset", "error"];

/// Most concurrent workers of one kind: far beyond what SQLite serves, and a
/// typo such as `ingesters = 80000` should not open 80000 connections.
const MAX_WORKERS: i64 = 1024;

/// Why a scenario was refused.
///
/// Display is `FILE:LINE: reason` (FILE is the scenario's path or
/// `<embedded default>`; LINE is 1-based, 0 when no line applies), or
/// `--set KEY=VALUE: reason` when an override caused the error.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The scenario file could not be read.
    #[error("{file}: cannot read the scenario: {source}")]
    Read {
        /// The file as named to the user (`<embedded default>` for the default).
        file: String,
        /// The I/O error, or the file is over its size cap.
        #[source]
        source: crate::input::ReadError,
    },
    /// The file is not valid TOML, holds an unknown key, a value of the
    /// wrong type, or an impossible value.
    #[error("{file}:{line}: {reason}")]
    File {
        /// The file as named to the user (`<embedded default>` for the default).
        file: String,
        /// 1-based line of the offending key; 0 when no line applies.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A `--set KEY=VALUE` override is malformed, names an unknown key, or
    /// sets a value of the wrong type or an impossible one.
    #[error("--set {set}: {reason}")]
    Set {
        /// The override as given (`KEY=VALUE`).
        set: String,
        /// What is wrong.
        reason: String,
    },
}

impl ScenarioError {
    /// The 1-based line of the offending key in the file (0: no line
    /// applies), or None when the error is not about a line of the file.
    pub fn line(&self) -> Option<usize> {
        match self {
            ScenarioError::File { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// What is wrong, without the location.
    pub fn reason(&self) -> String {
        match self {
            ScenarioError::Read { source, .. } => source.to_string(),
            ScenarioError::File { reason, .. } | ScenarioError::Set { reason, .. } => {
                reason.clone()
            }
        }
    }
}

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
    let outbox = doc.get("workload").and_then(Item::as_str) == Some("outbox");
    let ctx = Context {
        file,
        text,
        spans: &spans,
        overrides: &overrides,
        outbox,
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

impl Scenario {
    /// The resolved configuration as TOML, every key present (a key whose
    /// value is "not set" appears as a comment; an outbox scenario leaves
    /// out groups' `[load]`, `[keys]`, `[retry]`, `[resolve]` and
    /// `stop.events`). Loading this text gives the same scenario back.
    pub fn to_toml(&self) -> String {
        let mut text = toml::to_string(self).expect("a Scenario always serializes to TOML");
        if self.workload == super::Workload::Outbox {
            // Groups' keys mean nothing to outbox and are refused when
            // given: the saved scenario leaves them out, so it loads again.
            let mut doc: DocumentMut = text.parse().expect("toml output parses");
            for table in GROUPS_ONLY {
                doc.remove(table);
            }
            if let Some(stop) = doc.get_mut("stop").and_then(Item::as_table_like_mut) {
                stop.remove("events");
            }
            text = doc.to_string();
        }
        // Serde leaves out None values; say what they mean instead.
        let sqlite = &self.target;
        let mut faults = self.faults.iter();
        let mut out = String::new();
        for line in text.lines() {
            out.push_str(line);
            out.push('\n');
            if line == "[[faults]]" {
                if let Some(fault) = faults.next() {
                    out.push_str(&unset_fault_keys(fault));
                }
            }
            if line == "[target]" && sqlite.path.is_none() {
                out.push_str("# path: not set (target.db inside the run folder)\n");
            }
            if line == "[outbox]" && self.outbox.as_ref().is_some_and(|o| o.lease.is_none()) {
                out.push_str("# lease: not set (an attempt holds its delivery until it ends)\n");
            }
            if line == "[stop]" && self.stop.duration.is_none() {
                out.push_str("# duration: not set (no time limit)\n");
            }
        }
        out
    }

    /// The number of error groups the keys span: projects * fingerprints.
    pub fn groups(&self) -> u64 {
        u64::from(self.keys.projects) * u64::from(self.keys.fingerprints)
    }
}

/// Comments for the keys of a resolved fault that are not set (serde leaves
/// them out), saying what that means.
fn unset_fault_keys(fault: &Fault) -> String {
    let mut out = String::new();
    if fault.stop.is_none() {
        out.push_str("# stop: not set (active until the end)\n");
    }
    if fault.step.is_none() {
        match fault.kind {
            FaultKind::Crash => out.push_str("# step: not set (a random step)\n"),
            FaultKind::Pause => out.push_str("# step: not set (every step)\n"),
            _ => {}
        }
    }
    out
}

/// What a key holds; checked before serde sees the document.
#[derive(Clone, Copy)]
enum Kind {
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
    fn expected(self) -> String {
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

    fn is_string(self) -> bool {
        matches!(self, Kind::Str | Kind::OneOf(_) | Kind::Duration)
    }
}

struct Field {
    key: &'static str,
    kind: Kind,
    /// The default as TOML value text; None: the key may stay unset (or, for
    /// `name`, is filled by the loader).
    default: Option<&'static str>,
}

struct Section {
    /// The table's name; "" for the top level.
    name: &'static str,
    fields: &'static [Field],
}

const fn field(key: &'static str, kind: Kind, default: Option<&'static str>) -> Field {
    Field { key, kind, default }
}

const U32_MAX: i64 = u32::MAX as i64;

/// Every key of a scenario, its type and default: mirrors `mod.rs` and
/// `scenarios/README.md`.
const SCHEMA: &[Section] = &[
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
                    max: crate::generator::MAX_RETRIES as i64,
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

/// Every key a `[[faults]]` entry may hold, and its type: mirrors [`Fault`].
/// Which of them apply to an entry, and their defaults, depend on its kind:
/// see [`fault_keys`].
const FAULT_FIELDS: &[Field] = &[
    field("kind", Kind::OneOf(FAULT_KINDS), None),
    field("start", Kind::Duration, None),
    field("stop", Kind::Duration, None),
    field("probability", Kind::Fraction, None),
    field("ops", Kind::OneOf(FAULT_OPS), None),
    field("per", Kind::OneOf(CRASH_PER), None),
    field("step", Kind::Str, None),
    field("delay", Kind::Duration, None),
    field("jitter", Kind::Duration, None),
    field("toxic", Kind::OneOf(TOXICS), None),
    field("status", Kind::Int { min: 500, max: 599 }, None),
    field("every", Kind::Duration, None),
    field("hold", Kind::Duration, None),
];

/// The keys of a fault of `kind` (a name of [`FAULT_KINDS`]) and, for the
/// proxy, `toxic`, with their defaults as TOML value text (None: the key
/// may stay unset). Mirrors the table in [`Fault`]'s documentation and
/// `scenarios/README.md`.
fn fault_keys(kind: &str, toxic: Option<&str>) -> Vec<(&'static str, Option<&'static str>)> {
    let mut keys = vec![("kind", None), ("start", Some("\"0s\"")), ("stop", None)];
    match kind {
        "crash" => keys.extend([
            ("probability", Some("0.01")),
            ("ops", Some("\"ingest\"")),
            ("per", None),
            ("step", None),
        ]),
        "pause" => keys.extend([
            ("probability", Some("0.1")),
            ("ops", Some("\"all\"")),
            ("step", None),
            ("delay", Some("\"2ms\"")),
            ("jitter", Some("\"1ms\"")),
        ]),
        "proxy" => {
            let latency = toxic == Some("latency");
            keys.extend([
                ("toxic", None),
                ("probability", Some(if latency { "1.0" } else { "0.01" })),
                ("ops", Some("\"all\"")),
            ]);
            match toxic {
                Some("latency") => {
                    keys.extend([("delay", Some("\"5ms\"")), ("jitter", Some("\"0s\""))])
                }
                Some("error") => keys.push(("status", Some("503"))),
                _ => {}
            }
        }
        "kill" => keys.extend([("every", Some("\"5s\"")), ("delay", Some("\"500ms\""))]),
        "lock" => keys.extend([("every", Some("\"2s\"")), ("hold", Some("\"200ms\""))]),
        _ => {}
    }
    keys
}

/// The field at `path` (`["load", "ingesters"]`, or `["seed"]`), if any.
fn schema_field(path: &[String]) -> Option<&'static Field> {
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

/// One `--set KEY=VALUE`.
struct Override {
    /// As given, for error messages.
    raw: String,
    path: Vec<String>,
    value: Value,
}

impl Override {
    fn parse(raw: &str) -> Result<Override, ScenarioError> {
        let fail = |reason: String| ScenarioError::Set {
            set: raw.to_owned(),
            reason,
        };
        let Some((key, value)) = raw.split_once('=') else {
            return Err(fail(
                "expected KEY=VALUE, e.g. load.ingesters=4 or stop.duration=30s".to_owned(),
            ));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(fail("empty key before `=`".to_owned()));
        }
        let path: Vec<String> = Key::parse(key)
            .map_err(|_| {
                fail(format!(
                    "invalid key `{key}`: write a dotted key such as load.ingesters"
                ))
            })?
            .iter()
            .map(|k| k.get().to_owned())
            .collect();
        if path.iter().any(|segment| segment.is_empty()) {
            return Err(fail(format!("invalid key `{key}`: empty key segment")));
        }
        if path[0] == "faults" {
            return Err(fail(
                "faults cannot be set with --set; edit the scenario file".to_owned(),
            ));
        }
        let text = value.trim();
        let value = match text.parse::<Value>() {
            // `--set name=true` means the name "true", not a type error: a
            // key that holds a string takes the text as written.
            Ok(parsed)
                if parsed.is_str() || !schema_field(&path).is_some_and(|f| f.kind.is_string()) =>
            {
                parsed
            }
            _ => Value::from(text),
        };
        Ok(Override {
            raw: raw.to_owned(),
            path,
            value,
        })
    }
}

/// Sets `path` below `item` to `value`, creating missing tables.
/// Errs with a reason when a step of the path is not a table.
fn set_path(item: &mut Item, path: &[String], value: Value) -> Result<(), String> {
    let (first, rest) = path.split_first().expect("a parsed key is never empty");
    // A table created inside an inline table must be inline as well.
    let inline = item.is_inline_table();
    let Some(table) = item.as_table_like_mut() else {
        return Err("cannot set a key below a value that is not a table".to_owned());
    };
    if rest.is_empty() {
        table.insert(first, Item::Value(value));
        return Ok(());
    }
    if !table.contains_key(first) {
        let child = if inline {
            Item::Value(Value::InlineTable(InlineTable::new()))
        } else {
            Item::Table(Table::new())
        };
        table.insert(first, child);
    }
    let child = table.get_mut(first).expect("inserted above");
    if child.as_table_like().is_none() {
        return Err(format!("`{first}` is not a table"));
    }
    set_path(child, rest, value)
}

/// The keys of one target kind must not be set on the other, and an HTTP
/// target needs exactly one of `url` and `spawn = true`.
fn check_target(ctx: &Context, t: &Target) -> Result<(), ScenarioError> {
    match t.kind {
        TargetKind::Sqlite => {
            for (key, set) in [("url", t.url.is_some()), ("spawn", t.spawn)] {
                if set {
                    return Err(ctx.error(
                        &["target", key],
                        format!("`target.{key}` only applies to kind = \"http\""),
                    ));
                }
            }
        }
        TargetKind::Http if t.request_timeout.is_zero() || t.connect_timeout.is_zero() => {
            let key = if t.request_timeout.is_zero() {
                "request_timeout"
            } else {
                "connect_timeout"
            };
            return Err(ctx.error(
                &["target", key],
                format!("`target.{key}` must be more than 0s"),
            ));
        }
        TargetKind::Http => {
            match (&t.url, t.spawn) {
                (Some(_), true) => {
                    return Err(ctx.error(
                        &["target", "url"],
                        "give either `target.url` (an external service) or `spawn = true` \
                     (the reference server), not both",
                    ))
                }
                (None, false) => {
                    return Err(ctx.error(
                        &["target", "kind"],
                        "kind = \"http\" needs `target.url` (e.g. \"http://127.0.0.1:8080\") \
                     or `spawn = true`",
                    ))
                }
                (Some(url), false) if !url.starts_with("http://") => {
                    return Err(ctx.error(
                        &["target", "url"],
                        format!(
                    "`target.url` must start with http:// (https is not supported), found {url:?}"
                ),
                    ))
                }
                (Some(_), false) if ctx.is_given(&["target", "path"]) => return Err(ctx.error(
                    &["target", "path"],
                    "`target.path` does not apply to an external service (its database is its own)",
                )),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Each fault needs a target it can act on: the proxy an HTTP target; kill
/// the spawned reference server; crash and pause, on an HTTP target, the
/// spawned server's test-only fault hook; lock a database the bench can
/// open (the `sqlite` target's, or the spawned server's). Errors name the
/// line of the fault's `kind`.
fn check_fault_targets(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let t = &s.target;
    let http = t.kind == TargetKind::Http;
    for (index, f) in s.faults.iter().enumerate() {
        let needs = match f.kind {
            FaultKind::Proxy if s.workload == super::Workload::Outbox => {
                "workload = \"groups\" (the fault proxy does not draw faults for the outbox's \
                 `POST /v1/messages` yet: use crash, pause, kill or lock)"
            }
            FaultKind::Proxy if !http => {
                "target.kind = \"http\" (the fault proxy sits between the bench and an HTTP \
                 service)"
            }
            FaultKind::Kill if !http => {
                "target.kind = \"http\" with `spawn = true` (it kills and restarts the spawned \
                 reference server)"
            }
            FaultKind::Kill if !t.spawn => {
                "`target.spawn = true` (it kills and restarts the spawned reference server; an \
                 external service is out of reach)"
            }
            FaultKind::Crash | FaultKind::Pause if http && !t.spawn => {
                "`target.spawn = true` on kind = \"http\" (it is driven through the reference \
                 server's test-only fault hook, which an external service does not have)"
            }
            FaultKind::Lock if http && !t.spawn => {
                "a local database: target.kind = \"sqlite\", or \"http\" with `spawn = true` \
                 (an external service's database is out of reach)"
            }
            _ => continue,
        };
        return Err(ctx.error(
            &["faults", &index.to_string(), "kind"],
            format!(
                "`faults[{index}]` (kind = \"{}\") needs {needs}",
                f.kind.name()
            ),
        ));
    }
    Ok(())
}

/// Inserts every missing key that has a default, and `name`; into each
/// `[[faults]]` entry, the defaults of its kind.
fn fill_defaults(doc: &mut DocumentMut, name: &str) {
    let root = doc.as_table_mut();
    if !root.contains_key("name") {
        root.insert("name", toml_edit::value(name));
    }
    let outbox = root.get("workload").and_then(Item::as_str) == Some("outbox");
    if outbox && !root.contains_key("variant") && !root.contains_key("variants") {
        root.insert("variant", toml_edit::value("outbox-protocol"));
    }
    // With `[[variants]]`, `variant` defaults to the first entry's, and a
    // `variant` that names an entry means that entry's file.
    let listed: Vec<(String, String)> = root
        .get("variants")
        .and_then(table_entries)
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let v = t.get("variant")?.as_str()?.to_string();
            let name = t
                .get("name")
                .and_then(Item::as_str)
                .map_or_else(|| crate::variant::short_name(&v), str::to_string);
            Some((v, name))
        })
        .collect();
    match root
        .get("variant")
        .and_then(Item::as_str)
        .map(str::to_string)
    {
        None => {
            if let Some((first, _)) = listed.first() {
                root.insert("variant", toml_edit::value(first.clone()));
            }
        }
        Some(given) => {
            if let Some((v, _)) = listed.iter().find(|(v, n)| *n == given && *v != given) {
                root.insert("variant", toml_edit::value(v.clone()));
            }
        }
    }
    // A given `explore.fingerprints` adds to the spec's map (entries of
    // events no queue runs are ignored), so `--set
    // explore.fingerprints.e4=f2` extends the world instead of emptying it.
    if let Some(map) = root
        .get_mut("explore")
        .and_then(Item::as_table_like_mut)
        .and_then(|x| x.get_mut("fingerprints"))
        .and_then(Item::as_table_like_mut)
    {
        for (e, f) in super::Explore::default().fingerprints {
            if !map.contains_key(&e) {
                map.insert(&e, Item::Value(Value::from(f)));
            }
        }
    }
    for section in SCHEMA {
        // A groups scenario resolves exactly as before: no [outbox] table;
        // an outbox one has no [min_evidence] (its invariants are others).
        if (section.name == "outbox" && !outbox) || (section.name == "min_evidence" && outbox) {
            continue;
        }
        let table = if section.name.is_empty() {
            root as &mut dyn TableLike
        } else {
            if !root.contains_key(section.name) {
                root.insert(section.name, Item::Table(Table::new()));
            }
            root[section.name]
                .as_table_like_mut()
                .expect("check_keys refused a section that is not a table")
        };
        for field in section.fields {
            if let Some(default) = field.default {
                if !table.contains_key(field.key) {
                    let value: Value = default.parse().expect("SCHEMA defaults are valid TOML");
                    table.insert(field.key, Item::Value(value));
                }
            }
        }
    }
    // check_keys made sure `faults` is an array of tables, each with a
    // valid kind (and toxic for the proxy).
    let entries: Vec<&mut dyn TableLike> = match root.get_mut("faults") {
        Some(Item::ArrayOfTables(array)) => {
            array.iter_mut().map(|t| t as &mut dyn TableLike).collect()
        }
        Some(Item::Value(Value::Array(array))) => array
            .iter_mut()
            .filter_map(|v| v.as_inline_table_mut())
            .map(|t| t as &mut dyn TableLike)
            .collect(),
        _ => Vec::new(),
    };
    for entry in entries {
        let kind = entry
            .get("kind")
            .and_then(Item::as_str)
            .unwrap_or_default()
            .to_string();
        let toxic = entry
            .get("toxic")
            .and_then(Item::as_str)
            .map(str::to_string);
        let kind = kind.as_str();
        let keys = fault_keys(kind, toxic.as_deref());
        for (key, default) in keys {
            // An outbox crash hits the only op there is.
            let default = match (key, kind) {
                ("ops", "crash") if outbox => Some("\"handle\""),
                _ => default,
            };
            if let Some(default) = default {
                if !entry.contains_key(key) {
                    let value: Value = default.parse().expect("fault defaults are valid TOML");
                    entry.insert(key, Item::Value(value));
                }
            }
        }
    }
}

/// Refuses unknown keys, values of the wrong type and per-key impossible
/// values, in the order they appear.
fn check_keys(ctx: &Context, doc: &DocumentMut) -> Result<(), ScenarioError> {
    let top = &SCHEMA[0];
    for (key, item) in doc.iter() {
        if let Some(field) = top.fields.iter().find(|f| f.key == key) {
            check_value(ctx, &[key], field.kind, item)?;
        } else if let Some(section) = SCHEMA[1..].iter().find(|s| s.name == key) {
            if key == "outbox" && !ctx.outbox {
                return Err(ctx.error(&[key], "[outbox] only applies to workload = \"outbox\""));
            }
            if key == "min_evidence" && ctx.outbox {
                return Err(ctx.error(
                    &[key],
                    "[min_evidence] applies to the groups workload's invariants; the outbox \
                     workload's evidence is its queue (every message delivered)",
                ));
            }
            let Some(table) = item.as_table_like() else {
                return Err(ctx.error(
                    &[key],
                    format!(
                        "`{key}` must be a table ([{key}]), found {}",
                        describe(item)
                    ),
                ));
            };
            for (sub, item) in table.iter() {
                let Some(field) = section.fields.iter().find(|f| f.key == sub) else {
                    return Err(ctx.error(
                        &[key, sub],
                        format!(
                            "unknown key `{sub}` in [{key}]; valid keys: {}",
                            section
                                .fields
                                .iter()
                                .map(|f| f.key)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                };
                check_value(ctx, &[key, sub], field.kind, item)?;
            }
        } else if key == "api" {
            api_keys::check_table(ctx, &[key], item, api_keys::API)?;
        } else if key == "audit" {
            api_keys::check_table(ctx, &[key], item, api_keys::AUDIT)?;
        } else if key == "faults" {
            check_faults(ctx, item)?;
        } else if key == "variants" {
            check_variants(ctx, item)?;
        } else {
            return Err(ctx.error(
                &[key],
                format!(
                    "unknown key `{key}`; valid top-level keys: {}, and the tables {}, [api], [audit], [[faults]], [[variants]]",
                    top.fields
                        .iter()
                        .map(|f| f.key)
                        .collect::<Vec<_>>()
                        .join(", "),
                    SCHEMA[1..]
                        .iter()
                        .map(|s| format!("[{}]", s.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The entries of an array of tables (`[[x]]`, or `x = [{ ... }]`); an
/// element that is not a table is Err(what it is). None: not an array.
fn table_entries(item: &Item) -> Option<Vec<Result<&dyn TableLike, String>>> {
    match item {
        Item::ArrayOfTables(array) => Some(array.iter().map(|t| Ok(t as &dyn TableLike)).collect()),
        Item::Value(Value::Array(array)) => Some(
            array
                .iter()
                .map(|v| match v.as_inline_table() {
                    Some(t) => Ok(t as &dyn TableLike),
                    None => Err(describe(&Item::Value(v.clone()))),
                })
                .collect(),
        ),
        _ => None,
    }
}

/// The keys of a `[[variants]]` entry and their kinds.
const VARIANT_FIELDS: &[Field] = &[
    field("variant", Kind::Str, None),
    field("name", Kind::Str, None),
    field("expect", Kind::Expect, None),
    field("thresholds", Kind::Thresholds, None),
];

/// Refuses a `variants` that is not an array of tables, an entry without
/// a `variant`, an unknown key, a bad `expect` or threshold, and two
/// entries with the same name (their run folders would collide).
fn check_variants(ctx: &Context, item: &Item) -> Result<(), ScenarioError> {
    let entries = table_entries(item).ok_or_else(|| {
        ctx.error(
            &["variants"],
            format!(
                "`variants` must be an array of tables ([[variants]] entries, or \
                 variants = [{{ variant = ... }}]), found {}",
                describe(item)
            ),
        )
    })?;
    let mut names: Vec<String> = Vec::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let i = index.to_string();
        let entry = entry.map_err(|found| {
            ctx.error(
                &["variants", &i],
                format!("`variants[{index}]` must be a table such as {{ variant = \"groups-naive\" }}, found {found}"),
            )
        })?;
        for (key, value) in entry.iter() {
            let Some(f) = VARIANT_FIELDS.iter().find(|f| f.key == key) else {
                return Err(ctx.error(
                    &["variants", &i, key],
                    format!(
                        "unknown key `{key}` in `variants[{index}]`; valid keys: {}",
                        VARIANT_FIELDS
                            .iter()
                            .map(|f| f.key)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            check_value(ctx, &["variants", &i, key], f.kind, value)?;
        }
        let Some(variant) = entry.get("variant").and_then(Item::as_str) else {
            return Err(ctx.error(
                &["variants", &i],
                format!("`variants[{index}]` has no `variant`: give a statement file (.sql) or a built-in variant's name"),
            ));
        };
        let name = entry
            .get("name")
            .and_then(Item::as_str)
            .map_or_else(|| crate::variant::short_name(variant), str::to_string);
        if names.contains(&name) {
            return Err(ctx.error(
                &["variants", &i],
                format!("two variants are named {name:?}: give one a distinct `name`, so their results do not mix"),
            ));
        }
        names.push(name);
    }
    Ok(())
}

/// Refuses a `faults` that is not an array of tables, and checks each entry
/// ([`check_fault`]).
fn check_faults(ctx: &Context, item: &Item) -> Result<(), ScenarioError> {
    // Each entry, or what it is when it is not a table.
    let entries: Vec<Result<&dyn TableLike, String>> = match item {
        Item::ArrayOfTables(array) => array.iter().map(|t| Ok(t as &dyn TableLike)).collect(),
        Item::Value(Value::Array(array)) => array
            .iter()
            .map(|v| match v.as_inline_table() {
                Some(t) => Ok(t as &dyn TableLike),
                None => Err(describe(&Item::Value(v.clone()))),
            })
            .collect(),
        _ => {
            return Err(ctx.error(
                &["faults"],
                format!(
                    "`faults` must be an array of tables ([[faults]] entries, or \
                     faults = [{{ kind = ... }}]), found {}",
                    describe(item)
                ),
            ))
        }
    };
    for (index, entry) in entries.into_iter().enumerate() {
        let entry = entry.map_err(|found| {
            ctx.error(
                &["faults", &index.to_string()],
                format!("`faults[{index}]` must be a table such as {{ kind = \"crash\" }}, found {found}"),
            )
        })?;
        check_fault(ctx, index, entry)?;
    }
    Ok(())
}

/// Checks one `[[faults]]` entry: a valid `kind` (and `toxic` for the
/// proxy), only the keys of that kind, each of the right type, and possible
/// values (`every` and `hold` more than 0s, a non-empty `step`, `stop`
/// later than `start`).
fn check_fault(ctx: &Context, index: usize, entry: &dyn TableLike) -> Result<(), ScenarioError> {
    let i = index.to_string();
    let name = format!("faults[{index}]");
    let Some(kind_item) = entry.get("kind") else {
        return Err(ctx.error(
            &["faults", &i],
            format!(
                "`{name}` has no `kind`: give one of {}",
                quoted_list(FAULT_KINDS)
            ),
        ));
    };
    check_value(
        ctx,
        &["faults", &i, "kind"],
        Kind::OneOf(FAULT_KINDS),
        kind_item,
    )?;
    let kind = kind_item.as_str().expect("check_value accepted a string");
    let toxic = if kind == "proxy" {
        let Some(item) = entry.get("toxic") else {
            return Err(ctx.error(
                &["faults", &i],
                format!(
                    "`{name}` has kind = \"proxy\" but no `toxic`: give one of {}",
                    quoted_list(TOXICS)
                ),
            ));
        };
        check_value(ctx, &["faults", &i, "toxic"], Kind::OneOf(TOXICS), item)?;
        item.as_str()
    } else {
        None
    };
    let keys = fault_keys(kind, toxic);
    let names = keys.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ");
    let of_kind = match toxic {
        Some(toxic) => format!("kind = \"{kind}\" with toxic = \"{toxic}\""),
        None => format!("kind = \"{kind}\""),
    };
    let duration = |item: &Item| {
        item.as_str()
            .and_then(|text| humantime::parse_duration(text).ok())
            .expect("check_value accepted a duration")
    };
    for (key, item) in entry.iter() {
        let path = ["faults", i.as_str(), key];
        let Some(field) = FAULT_FIELDS.iter().find(|f| f.key == key) else {
            return Err(ctx.error(
                &path,
                format!("unknown key `{key}` in {name} ({of_kind}); valid keys: {names}"),
            ));
        };
        if !keys.iter().any(|(k, _)| *k == key) {
            return Err(ctx.error(
                &path,
                format!("`{name}.{key}` does not apply to {of_kind} (its keys: {names})"),
            ));
        }
        check_value(ctx, &path, field.kind, item)?;
        match key {
            "every" | "hold" if duration(item).is_zero() => {
                return Err(ctx.error(&path, format!("`{name}.{key}` must be more than 0s")));
            }
            "step" if item.as_str().is_some_and(|step| step.trim().is_empty()) => {
                let unset = if kind == "crash" {
                    "a random step"
                } else {
                    "every step"
                };
                return Err(ctx.error(
                    &path,
                    format!("`{name}.step` must not be empty (leave it out for {unset})"),
                ));
            }
            _ => {}
        }
    }
    // A lock held for a whole period or more is taken again the moment it
    // is released: the database would be locked all the time.
    if kind == "lock" {
        // The kind's defaults (every 2s, hold 200ms) where a key is left out.
        let hold = entry
            .get("hold")
            .map_or(Duration::from_millis(200), duration);
        let every = entry.get("every").map_or(Duration::from_secs(2), duration);
        if hold >= every {
            return Err(ctx.error(
                &["faults", &i, "hold"],
                format!(
                    "`{name}.hold` ({}) must be shorter than `every` ({}): the lock would never be free",
                    humantime::format_duration(hold),
                    humantime::format_duration(every)
                ),
            ));
        }
    }
    if let Some(stop) = entry.get("stop") {
        let start = entry.get("start").map_or(Duration::ZERO, duration);
        let stop = duration(stop);
        if stop <= start {
            return Err(ctx.error(
                &["faults", &i, "stop"],
                format!(
                    "`{name}.stop` ({}) must be later than `start` ({}); leave `stop` \
                     out to keep the fault active until the end",
                    humantime::format_duration(stop),
                    humantime::format_duration(start)
                ),
            ));
        }
    }
    Ok(())
}

fn check_value(ctx: &Context, path: &[&str], kind: Kind, item: &Item) -> Result<(), ScenarioError> {
    let key = display_path(path);
    let wrong_type = || {
        ctx.error(
            path,
            format!(
                "`{key}` must be {}, found {}",
                kind.expected(),
                describe(item)
            ),
        )
    };
    if let Kind::Expect = kind {
        return check_expect(ctx, path, item).map_err(|reason| match reason {
            Some(reason) => ctx.error(path, reason),
            None => wrong_type(),
        });
    }
    if let Kind::StrMap = kind {
        let table = item.as_table_like().ok_or_else(wrong_type)?;
        for (k, v) in table.iter() {
            let at = [path, &[k]].concat();
            match v.as_str() {
                Some(text) if !text.trim().is_empty() => {}
                _ => {
                    return Err(ctx.error(
                        &at,
                        format!(
                            "`{}` must be a non-empty string, found {}",
                            display_path(&at),
                            describe(v)
                        ),
                    ))
                }
            }
        }
        return Ok(());
    }
    let Some(value) = item.as_value() else {
        return Err(wrong_type());
    };
    match kind {
        Kind::Str => {
            value.as_str().ok_or_else(wrong_type)?;
        }
        Kind::OneOf(options) => {
            let text = value.as_str().ok_or_else(wrong_type)?;
            if !options.contains(&text) {
                return Err(ctx.error(
                    path,
                    format!(
                        "invalid `{key}` {text:?}: expected one of {}",
                        quoted_list(options)
                    ),
                ));
            }
        }
        Kind::Duration => {
            let text = value.as_str().ok_or_else(wrong_type)?;
            if let Err(e) = humantime::parse_duration(text) {
                return Err(ctx.error(
                    path,
                    format!(
                        "invalid duration {text:?} for `{key}`: {e} (write e.g. \"30s\", \"250ms\", \"2m\")"
                    ),
                ));
            }
        }
        Kind::Int { min, max } => {
            let n = value.as_integer().ok_or_else(wrong_type)?;
            if n < min || n > max {
                let range = if max == i64::MAX || max == U32_MAX {
                    format!("at least {min}")
                } else {
                    format!("from {min} to {max}")
                };
                let mut reason = format!("`{key}` must be {range}, found {n}");
                if let Some(why) = (n > max).then(|| limits::why_at_most(path)).flatten() {
                    let _ = write!(reason, ": {why}");
                }
                return Err(ctx.error(path, reason));
            }
        }
        Kind::Fraction | Kind::Rate => {
            let x = match value {
                Value::Float(f) => *f.value(),
                // Integers are fine where a number is expected (`rate = 100`).
                Value::Integer(i) => *i.value() as f64,
                _ => return Err(wrong_type()),
            };
            let ok = match kind {
                Kind::Fraction => (0.0..=1.0).contains(&x),
                _ => x.is_finite() && x >= 0.0,
            };
            if !ok {
                let range = match kind {
                    Kind::Fraction => "from 0 to 1",
                    _ => "a finite number >= 0",
                };
                return Err(ctx.error(path, format!("`{key}` must be {range}, found {x}")));
            }
        }
        Kind::Bool => {
            value.as_bool().ok_or_else(wrong_type)?;
        }
        Kind::Expect | Kind::StrMap => unreachable!("checked above"),
        Kind::Queues => {
            let array = value.as_array().ok_or_else(wrong_type)?;
            if array.is_empty() {
                return Err(ctx.error(path, format!("`{key}` needs at least one worker's queue")));
            }
            for (w, queue) in array.iter().enumerate() {
                let index = w.to_string();
                let at = [path, &[index.as_str()]].concat();
                let ids = queue.as_array().filter(|q| !q.is_empty()).ok_or_else(|| {
                    ctx.error(
                        &at,
                        format!(
                            "`{}` must be a non-empty array of event ids such as [\"e1\", \"e2\"], found {}",
                            display_path(&at),
                            describe(&Item::Value(queue.clone()))
                        ),
                    )
                })?;
                for (i, id) in ids.iter().enumerate() {
                    if id.as_str().is_none_or(|t| t.trim().is_empty()) {
                        let index = i.to_string();
                        let at = [&at[..], &[index.as_str()]].concat();
                        return Err(ctx.error(
                            &at,
                            format!(
                                "`{}` must be a non-empty event id string, found {}",
                                display_path(&at),
                                describe(&Item::Value(id.clone()))
                            ),
                        ));
                    }
                }
            }
        }
        Kind::Thresholds => {
            let array = value.as_array().ok_or_else(wrong_type)?;
            for (i, v) in array.iter().enumerate() {
                let index = i.to_string();
                let mut at = path.to_vec();
                at.push(&index);
                let text = v.as_str().ok_or_else(|| {
                    ctx.error(
                        &at,
                        format!(
                            "`{}` must be a string such as \"latency_us.ingest.p99 < 20000\", found {}",
                            display_path(&at),
                            describe(&Item::Value(v.clone()))
                        ),
                    )
                })?;
                Threshold::parse(text).map_err(|reason| {
                    ctx.error(&at, format!("`{}`: {reason}", display_path(&at)))
                })?;
            }
        }
    }
    Ok(())
}

/// Checks an `expect`: `"holds"`, or a table with `violated = [names]`
/// and/or `not_judged = [names]`, each naming known invariants once, no
/// invariant in both. Err(None): the wrong type; Err(Some): why.
fn check_expect(ctx: &Context, path: &[&str], item: &Item) -> Result<(), Option<String>> {
    let key = display_path(path);
    let known: &[&str] = if ctx.outbox {
        &OUTBOX_INVARIANTS
    } else {
        &GROUPS_INVARIANTS
    };
    let workload = if ctx.outbox { "outbox" } else { "groups" };
    if let Some(text) = item.as_str() {
        return if text == "holds" {
            Ok(())
        } else {
            Err(Some(format!(
                "invalid `{key}` {text:?}: write \"holds\" or {{ violated = [\"NoMissedRegression\"] }}"
            )))
        };
    }
    let table = item.as_table_like().ok_or(None)?;
    for (k, _) in table.iter() {
        if k != "violated" && k != "not_judged" {
            return Err(Some(format!(
                "unknown key `{k}` in `{key}`: the keys are `violated` and `not_judged`"
            )));
        }
    }
    if table.get("violated").is_none() && table.get("not_judged").is_none() {
        return Err(Some(format!(
            "`{key}` needs `violated = [...]` (or `not_judged = [...]`)"
        )));
    }
    let list = |list: &str| -> Result<Vec<String>, Option<String>> {
        let Some(item) = table.get(list) else {
            return Ok(Vec::new());
        };
        let names = item.as_array().ok_or_else(|| {
            Some(format!(
                "`{key}.{list}` must be an array of invariant names"
            ))
        })?;
        if names.is_empty() {
            return Err(Some(match list {
                "violated" => format!(
                    "`{key}.violated` is empty: write expect = \"holds\" when no invariant should be violated"
                ),
                _ => format!("`{key}.{list}` is empty: leave it out when every invariant is judged"),
            }));
        }
        let mut seen: Vec<String> = Vec::new();
        for n in names.iter() {
            let Some(name) = n.as_str() else {
                return Err(Some(format!(
                    "`{key}.{list}` must hold invariant names (strings), found {}",
                    describe(&Item::Value(n.clone()))
                )));
            };
            if !known.contains(&name) {
                return Err(Some(format!(
                    "unknown invariant {name:?} in `{key}.{list}`: the {workload} workload's \
                     invariants are {}",
                    quoted_list(known)
                )));
            }
            if seen.iter().any(|s| s == name) {
                return Err(Some(format!("{name:?} is named twice in `{key}.{list}`")));
            }
            seen.push(name.to_string());
        }
        Ok(seen)
    };
    let violated = list("violated")?;
    let not_judged = list("not_judged")?;
    if let Some(both) = violated.iter().find(|v| not_judged.contains(v)) {
        return Err(Some(format!(
            "{both:?} is in both `{key}.violated` and `{key}.not_judged`: an invariant that \
             is not judged cannot be expected violated; keep it in one list"
        )));
    }
    Ok(())
}

/// The checks that span several keys, on the typed scenario.
fn check_values(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    api_keys::check_mapping(ctx, s)?;
    if s.name.trim().is_empty() {
        return Err(ctx.error(&["name"], "`name` must not be empty"));
    }
    if s.variant.trim().is_empty() {
        return Err(ctx.error(
            &["variant"],
            format!(
                "`variant` must not be empty: give a statement file (.sql) or one of {}",
                quoted_list(BUILTIN_VARIANTS)
            ),
        ));
    }
    if !s.variant.ends_with(".sql") && !BUILTIN_VARIANTS.contains(&s.variant.as_str()) {
        return Err(ctx.error(
            &["variant"],
            format!(
                "unknown built-in variant {:?}: expected one of {}, or a statement file path ending in .sql",
                s.variant,
                quoted_list(BUILTIN_VARIANTS)
            ),
        ));
    }
    check_workload(ctx, s)?;
    let sqlite = &s.target;
    check_target(ctx, sqlite)?;
    check_fault_targets(ctx, s)?;
    if sqlite
        .path
        .as_ref()
        .is_some_and(|p| p.as_os_str().is_empty())
    {
        return Err(ctx.error(
            &["target", "path"],
            "`target.path` must not be empty (leave it out to use target.db in the run folder)",
        ));
    }

    match s.load.model {
        LoadModel::Open if s.load.rate <= 0.0 => {
            // Point at the rate when one was written, else at the model.
            let at: &[&str] = if ctx.is_given(&["load", "rate"]) {
                &["load", "rate"]
            } else {
                &["load", "model"]
            };
            return Err(ctx.error(
                at,
                format!(
                    "model = \"open\" needs `load.rate` > 0 (target ingest ops/s), found {}",
                    s.load.rate
                ),
            ));
        }
        LoadModel::Closed if s.load.rate != 0.0 => {
            return Err(ctx.error(
                &["load", "rate"],
                "rate only applies to model = open (set load.model = \"open\", or remove the rate)",
            ));
        }
        _ => {}
    }

    if s.stop.events == 0 && s.stop.duration.is_none() {
        // Blame an override if one caused it, else the [stop] table.
        let at = [&["stop", "events"][..], &["stop", "duration"][..]]
            .into_iter()
            .find(|path| ctx.override_of(path).is_some())
            .unwrap_or(&["stop"]);
        return Err(ctx.error(
            at,
            "the run would never stop: set `stop.events` > 0 or a `stop.duration`",
        ));
    }

    if s.retry.probability > 0.0 && s.retry.max_retries == 0 {
        return Err(ctx.error(
            &["retry", "max_retries"],
            format!(
                "`retry.max_retries` must be at least 1 when `retry.probability` > 0 (it is {})",
                s.retry.probability
            ),
        ));
    }

    if s.keys.skew == Skew::Hot {
        let groups = s.groups();
        let hot = u64::from(s.keys.hot_groups);
        if hot == 0 || hot > groups {
            return Err(ctx.error(
                &["keys", "hot_groups"],
                format!(
                    "`keys.hot_groups` must be from 1 to the number of groups \
                     (projects * fingerprints = {groups}) when skew = \"hot\", found {hot}"
                ),
            ));
        }
    }
    check_explore(ctx, s)?;
    limits::check(ctx, s)?;
    check_threshold_figures(ctx, s)
}

/// The keys of the other workload's world are refused when given with a
/// value other than their default. Groups:
/// every queued event id needs a fingerprint (the spec's `FpOf` is total
/// on `Events`); the project must not be empty. (The outbox world's keys
/// are checked by their ranges.)
fn check_explore(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let x = &s.explore;
    let outbox = s.workload == super::Workload::Outbox;
    let (theirs, ours, who) = if outbox {
        (EXPLORE_GROUPS_KEYS, EXPLORE_OUTBOX_KEYS, "outbox")
    } else {
        (EXPLORE_OUTBOX_KEYS, EXPLORE_GROUPS_KEYS, "groups")
    };
    // A saved scenario (a run folder's scenario.toml) lists every key with
    // its value: the other world's keys at their defaults are no mistake.
    let d = super::Explore::default();
    let at_default = |key: &str| match key {
        "queues" => x.queues == d.queues,
        "fingerprints" => x.fingerprints == d.fingerprints,
        "resolves" => x.resolves == d.resolves,
        "project" => x.project == d.project,
        "messages" => x.messages == d.messages,
        "deliveries" => x.deliveries == d.deliveries,
        "handlers" => x.handlers == d.handlers,
        "fails" => x.fails == d.fails,
        "redeliveries" => x.redeliveries == d.redeliveries,
        _ => false,
    };
    for key in theirs {
        if ctx.is_given(&["explore", key]) && !at_default(key) {
            return Err(ctx.error(
                &["explore", key],
                format!(
                    "`explore.{key}` belongs to the {} world; the {who} world of \
                     workload = \"{who}\" has {}",
                    if outbox { "groups" } else { "outbox" },
                    ours.iter()
                        .map(|k| format!("`explore.{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    if outbox {
        return Ok(());
    }
    if x.project.trim().is_empty() {
        return Err(ctx.error(
            &["explore", "project"],
            "`explore.project` must not be empty",
        ));
    }
    for (w, queue) in x.queues.iter().enumerate() {
        for (i, id) in queue.iter().enumerate() {
            if !x.fingerprints.contains_key(id) {
                let (w, i) = (w.to_string(), i.to_string());
                return Err(ctx.error(
                    &["explore", "queues", &w, &i],
                    format!(
                        "event {id:?} of `explore.queues[{w}]` has no fingerprint: add `{id} = \"f1\"` (say) to `explore.fingerprints`"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// `[explore]` keys of the groups world (besides the shared bounds).
const EXPLORE_GROUPS_KEYS: &[&str] = &["queues", "fingerprints", "resolves", "project"];
/// `[explore]` keys of the outbox world (besides the shared bounds).
const EXPLORE_OUTBOX_KEYS: &[&str] = &[
    "messages",
    "deliveries",
    "handlers",
    "fails",
    "redeliveries",
];

/// The keys of one workload must not be set on the other: `[outbox]` is
/// outbox's; `[load]`, `[keys]`, `[retry]`, `[resolve]` and `stop.events`
/// are groups'. An outbox scenario runs on the in-process SQLite target or
/// over HTTP (`/v1/messages`); its variant must be an outbox one, its
/// faults hit `handle`; `per = "step"` is outbox-only.
fn check_workload(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let outbox = s.workload == super::Workload::Outbox;
    if !outbox {
        if ctx.is_given(&["outbox"]) {
            return Err(ctx.error(
                &["outbox"],
                "[outbox] only applies to workload = \"outbox\"",
            ));
        }
        for (i, f) in s.faults.iter().enumerate() {
            let i = i.to_string();
            if f.ops == Some(super::FaultOps::Handle) {
                return Err(ctx.error(
                    &["faults", &i, "ops"],
                    format!("`faults[{i}].ops` = \"handle\" is the outbox workload's op; groups has ingest and resolve"),
                ));
            }
            if f.per == Some(super::CrashPer::Step) {
                return Err(ctx.error(
                    &["faults", &i, "per"],
                    format!("`faults[{i}].per` = \"step\" is supported by the outbox workload only (for now)"),
                ));
            }
        }
        return Ok(());
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
            Some(super::FaultOps::Ingest | super::FaultOps::Resolve)
        ) {
            return Err(ctx.error(
                &["faults", &i, "ops"],
                format!(
                    "`faults[{i}].ops`: the outbox workload's only op is \"handle\" (or \"all\")"
                ),
            ));
        }
    }
    check_lease(ctx, s)
}

/// `outbox.lease`: at least 1ms when set. A shorter lease would expire
/// during nearly every attempt's first statement, so every delivery would
/// run as a crowd of overlapping attempts: no longer the protocol's
/// occasional slow handler but a different, pathological load.
fn check_lease(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let lease = s.outbox.as_ref().and_then(|o| o.lease);
    if lease.is_some_and(|l| l < std::time::Duration::from_millis(1)) {
        return Err(ctx.error(
            &["outbox", "lease"],
            "`outbox.lease` must be at least 1ms (or \"0s\": no lease, an attempt holds its \
             delivery until it ends)",
        ));
    }
    Ok(())
}

/// Refuses a threshold on a figure `summary.json` does not have for this
/// scenario (a misspelled name must never pass silently), naming the
/// figures next to it.
fn check_threshold_figures(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let skeleton = crate::report::summary::skeleton(s);
    let top = s
        .thresholds
        .iter()
        .enumerate()
        .map(|(i, t)| (vec!["thresholds".to_string(), i.to_string()], t));
    let per_variant = s.variants.iter().enumerate().flat_map(|(v, e)| {
        e.thresholds.iter().enumerate().map(move |(i, t)| {
            (
                vec![
                    "variants".to_string(),
                    v.to_string(),
                    "thresholds".into(),
                    i.to_string(),
                ],
                t,
            )
        })
    });
    for (at, t) in top.chain(per_variant) {
        if t.actual(&skeleton).is_some() {
            continue;
        }
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        if let Some(v) = crate::scenario::lookup(&skeleton, &t.path) {
            return Err(ctx.error(
                &at,
                format!(
                    "`{}`: `{}` is not a number (it is {}): a threshold compares a number",
                    display_path(&at),
                    t.figure(),
                    if v.is_object() {
                        "a table of figures"
                    } else {
                        "text"
                    }
                ),
            ));
        }
        // The deepest prefix that exists, to show what is there instead.
        let mut depth = t.path.len();
        while depth > 0 && crate::scenario::lookup(&skeleton, &t.path[..depth]).is_none() {
            depth -= 1;
        }
        let here = crate::scenario::lookup(&skeleton, &t.path[..depth]).expect("the root exists");
        let options = match here.as_object() {
            Some(o) if depth == 0 => format!(
                "top-level figures: {}",
                o.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            Some(o) => format!(
                "figures under `{}`: {}",
                t.path[..depth].join("."),
                o.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            None => format!("`{}` is a figure itself", t.path[..depth].join(".")),
        };
        return Err(ctx.error(
            &at,
            format!(
                "`{}`: summary.json has no figure `{}` for this scenario ({options}); \
                 see \"Reading the summary\" in the README",
                display_path(&at),
                t.figure()
            ),
        ));
    }
    Ok(())
}

/// Where a key's value came from.
enum Origin<'a> {
    /// The key is on this line of the file.
    Line(usize),
    /// This override set it (or a table above it).
    Set(&'a Override),
    /// The key is not in the file: its default applies. The line is that of
    /// its nearest table in the file (0: none).
    Default(usize),
}

/// What an error needs to point at the right place.
struct Context<'a> {
    file: String,
    text: &'a str,
    /// The file as parsed, before overrides: it keeps the spans.
    spans: &'a Document<&'a str>,
    overrides: &'a [Override],
    /// `workload = "outbox"` (after overrides).
    outbox: bool,
}

impl Context<'_> {
    /// The last override that set `path` or a table above it.
    fn override_of(&self, path: &[&str]) -> Option<&Override> {
        self.overrides
            .iter()
            .rev()
            .find(|ov| ov.path.len() <= path.len() && ov.path.iter().zip(path).all(|(a, b)| a == b))
    }

    fn origin(&self, path: &[&str]) -> Origin<'_> {
        if let Some(ov) = self.override_of(path) {
            return Origin::Set(ov);
        }
        match locate(self.text, self.spans.as_item(), path, 0) {
            Located::Found(line) | Located::Blocked(line) => Origin::Line(line),
            Located::Missing(line) => {
                // Not in the file: an override may have created it on its
                // way to a deeper key (`--set seed.x=1` creates `seed`).
                let below = self.overrides.iter().rev().find(|ov| {
                    ov.path.len() > path.len() && ov.path.iter().zip(path).all(|(a, b)| a == b)
                });
                below.map_or(Origin::Default(line), Origin::Set)
            }
        }
    }

    /// Whether `path` was written in the file or set by an override.
    fn is_given(&self, path: &[&str]) -> bool {
        !matches!(self.origin(path), Origin::Default(_))
    }

    fn error(&self, path: &[&str], reason: impl Into<String>) -> ScenarioError {
        let reason = reason.into();
        match self.origin(path) {
            Origin::Line(line) => ScenarioError::File {
                file: self.file.clone(),
                line,
                reason,
            },
            Origin::Set(ov) => ScenarioError::Set {
                set: ov.raw.clone(),
                reason,
            },
            Origin::Default(line) => ScenarioError::File {
                file: self.file.clone(),
                line,
                reason: format!(
                    "{reason} (`{}` is not set: its default applies)",
                    display_path(path)
                ),
            },
        }
    }
}

/// Where a path is in the file.
enum Located {
    /// On this line.
    Found(usize),
    /// Not in the file; the line is that of its nearest ancestor (0: none).
    Missing(usize),
    /// A value that is not a table (or array) stands in the way: its line.
    Blocked(usize),
}

/// Finds `path` below `item`, whose own line is `line`. A segment below an
/// array (`[[faults]]`, or an array value) is an index; the line of an
/// array element is that of its `[[...]]` header or its value.
fn locate(text: &str, item: &Item, path: &[&str], line: usize) -> Located {
    let Some((segment, rest)) = path.split_first() else {
        return Located::Found(line);
    };
    let index = segment.parse::<usize>().ok();
    let line_at =
        |span: Option<std::ops::Range<usize>>| span.map_or(line, |s| line_of(text, s.start));
    match item {
        // A name below an array: the array stands in the way, as a value does.
        Item::ArrayOfTables(_) | Item::Value(Value::Array(_)) if index.is_none() => {
            Located::Blocked(line)
        }
        Item::ArrayOfTables(array) => match index.and_then(|i| array.get(i)) {
            Some(table) => locate_in(text, table, rest, line_at(table.span())),
            None => Located::Missing(line),
        },
        Item::Value(Value::Array(array)) => match index.and_then(|i| array.get(i)) {
            Some(value) => {
                let line = line_at(value.span());
                match value.as_inline_table() {
                    Some(table) => locate_in(text, table, rest, line),
                    None if rest.is_empty() => Located::Found(line),
                    None => Located::Blocked(line),
                }
            }
            None => Located::Missing(line),
        },
        _ => match item.as_table_like() {
            Some(table) => locate_in(text, table, path, line),
            None => Located::Blocked(line),
        },
    }
}

/// Finds `path` below `table`, whose own line is `line`.
fn locate_in(text: &str, table: &dyn TableLike, path: &[&str], line: usize) -> Located {
    let Some((segment, rest)) = path.split_first() else {
        return Located::Found(line);
    };
    let Some((key, child)) = table.get_key_value(segment) else {
        return Located::Missing(line);
    };
    let line = key.span().map_or(line, |span| line_of(text, span.start));
    locate(text, child, rest, line)
}

/// The 1-based line of `faults[index].key` in a scenario's text, or of the
/// entry itself (its `[[faults]]` header, or its inline table) when `key`
/// is None. None when the text is not valid TOML or holds no such entry or
/// key.
///
/// The loader names these lines itself; this is for the checks made after
/// loading (a fault's `step` against the variant's step names).
pub fn fault_line(text: &str, index: usize, key: Option<&str>) -> Option<usize> {
    let doc = Document::parse(text).ok()?;
    let index = index.to_string();
    let mut path = vec!["faults", index.as_str()];
    path.extend(key);
    match locate(text, doc.as_item(), &path, 0) {
        Located::Found(line) => Some(line),
        Located::Missing(_) | Located::Blocked(_) => None,
    }
}

/// The 1-based line of the key at `path` (`["api", "headers"]`) in a
/// scenario's text, or of its nearest table when the key is not written
/// there. None when the text is not valid TOML. For checks made after
/// loading, such as the environment variables a mapping reads.
pub fn key_line(text: &str, path: &[&str]) -> Option<usize> {
    let doc = Document::parse(text).ok()?;
    match locate(text, doc.as_item(), path, 0) {
        Located::Found(line) | Located::Missing(line) | Located::Blocked(line) => {
            Some(line).filter(|&l| l > 0)
        }
    }
}

/// A key path as the user writes it: `load.ingesters`, `faults[1].hold`.
fn display_path(path: &[&str]) -> String {
    let mut out = String::new();
    for segment in path {
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            let _ = write!(out, "[{segment}]");
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
    }
    out
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// An item's type and value, for "found ..." in messages.
fn describe(item: &Item) -> String {
    match item {
        Item::Value(value) => {
            let kind = match value {
                Value::String(_) => "string",
                Value::Integer(_) => "integer",
                Value::Float(_) => "float",
                Value::Boolean(_) => "boolean",
                Value::Datetime(_) => "datetime",
                Value::Array(_) => "array",
                Value::InlineTable(_) => "table",
            };
            let mut bare = value.clone();
            bare.decor_mut().clear();
            format!("{kind} {bare}")
        }
        Item::Table(_) => "a table".to_owned(),
        Item::ArrayOfTables(_) => "an array of tables".to_owned(),
        Item::None => "nothing".to_owned(),
    }
}

fn quoted_list(options: &[&str]) -> String {
    let mut out = String::new();
    for (i, option) in options.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "\"{option}\"");
    }
    out
}
