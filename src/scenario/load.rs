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

use super::{LoadModel, Scenario, Skew, Source, Target, TargetKind};
use std::fmt::Write as _;
use std::path::Path;
use toml_edit::{Document, DocumentMut, InlineTable, Item, Key, Table, TableLike, Value};

/// The scenario run when none is given: `scenarios/default.toml`, built in.
pub const DEFAULT_SCENARIO: &str = include_str!("../../scenarios/default.toml");

/// How errors name the embedded default, which has no path.
const EMBEDDED: &str = "<embedded default>";

/// Variants built into the bench; any other variant must be a statement file
/// (a path ending in `.sql`).
const BUILTIN_VARIANTS: &[&str] = &["groups-atomic", "groups-naive"];

const JOURNAL_MODES: &[&str] = &["wal", "delete", "truncate", "persist", "memory", "off"];
const SYNCHRONOUS: &[&str] = &["off", "normal", "full", "extra"];

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
        /// The I/O error.
        #[source]
        source: std::io::Error,
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
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        file: path.display().to_string(),
        source,
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
    let ctx = Context {
        file,
        text,
        spans: &spans,
        overrides: &overrides,
    };

    let mut doc = spans.clone().into_mut();
    for (index, ov) in overrides.iter().enumerate() {
        set_path(doc.as_item_mut(), &ov.path, ov.value.clone()).map_err(|reason| {
            ScenarioError::Set {
                set: overrides[index].raw.clone(),
                reason,
            }
        })?;
    }
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
    /// value is "not set" appears as a comment). Loading this text gives the
    /// same scenario back.
    pub fn to_toml(&self) -> String {
        let text = toml::to_string(self).expect("a Scenario always serializes to TOML");
        // Serde leaves out None values; say what they mean instead.
        let sqlite = &self.target;
        let mut out = String::new();
        for line in text.lines() {
            out.push_str(line);
            out.push('\n');
            if line == "[target]" && sqlite.path.is_none() {
                out.push_str("# path: not set (target.db inside the run folder)\n");
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
            field("workload", Kind::OneOf(&["groups"]), Some("\"groups\"")),
            field("variant", Kind::Str, Some("\"groups-atomic\"")),
            field(
                "seed",
                Kind::Int {
                    min: 0,
                    max: i64::MAX,
                },
                Some("1"),
            ),
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
                    max: U32_MAX,
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
];

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

/// Inserts every missing key that has a default, and `name`.
fn fill_defaults(doc: &mut DocumentMut, name: &str) {
    let root = doc.as_table_mut();
    if !root.contains_key("name") {
        root.insert("name", toml_edit::value(name));
    }
    for section in SCHEMA {
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
}

/// Refuses unknown keys, values of the wrong type and per-key impossible
/// values, in the order they appear.
fn check_keys(ctx: &Context, doc: &DocumentMut) -> Result<(), ScenarioError> {
    let top = &SCHEMA[0];
    for (key, item) in doc.iter() {
        if let Some(field) = top.fields.iter().find(|f| f.key == key) {
            check_value(ctx, &[key], field.kind, item)?;
        } else if let Some(section) = SCHEMA[1..].iter().find(|s| s.name == key) {
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
        } else {
            return Err(ctx.error(
                &[key],
                format!(
                    "unknown key `{key}`; valid top-level keys: {}, and the tables {}",
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

fn check_value(ctx: &Context, path: &[&str], kind: Kind, item: &Item) -> Result<(), ScenarioError> {
    let key = path.join(".");
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
                return Err(ctx.error(path, format!("`{key}` must be {range}, found {n}")));
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
    }
    Ok(())
}

/// The checks that span several keys, on the typed scenario.
fn check_values(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
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
    let sqlite = &s.target;
    check_target(ctx, sqlite)?;
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
        let mut item = self.spans.as_item();
        let mut line = 0;
        for segment in path {
            let Some(table) = item.as_table_like() else {
                break;
            };
            let Some((key, child)) = table.get_key_value(segment) else {
                // Not in the file: an override may have created it on its
                // way to a deeper key (`--set seed.x=1` creates `seed`).
                let below = self.overrides.iter().rev().find(|ov| {
                    ov.path.len() > path.len() && ov.path.iter().zip(path).all(|(a, b)| a == b)
                });
                return below.map_or(Origin::Default(line), Origin::Set);
            };
            if let Some(span) = key.span() {
                line = line_of(self.text, span.start);
            }
            item = child;
        }
        Origin::Line(line)
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
                    path.join(".")
                ),
            },
        }
    }
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
