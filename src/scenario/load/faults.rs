//! `[[faults]]`: the keys an entry may hold (they depend on its `kind`,
//! and for the proxy on its `toxic`), their defaults, the checks of each
//! entry, and whether the target can suffer the fault; and the comments
//! the saved scenario carries for a fault's unset keys.
//!
//! May import: its sibling files and `scenario`'s types.

use super::context::Context;
use super::error::ScenarioError;
use super::schema::quoted_list;
use super::schema::{field, Field, Kind};
use super::values::{check_value, describe};
use crate::fault_kind::FaultKind;
use crate::scenario::{Fault, Scenario, TargetKind};
use std::time::Duration;
use toml_edit::{Item, Table, TableLike, Value};

/// `faults[].kind`: the names of [`FaultKind`].
pub(super) const FAULT_KINDS: &[&str] = &["crash", "pause", "proxy", "kill", "lock"];
/// `faults[].ops`: the names of `FaultOps`.
pub(super) const FAULT_OPS: &[&str] = &["ingest", "resolve", "all", "handle"];
/// `faults[].per`: the names of `CrashPer`.
pub(super) const CRASH_PER: &[&str] = &["op", "step"];
/// `faults[].toxic`: the names of `Toxic`.
pub(super) const TOXICS: &[&str] = &["latency", "drop_response", "reset", "error"];

/// Every key a `[[faults]]` entry may hold, and its type: mirrors [`Fault`].
/// Which of them apply to an entry, and their defaults, depend on its kind:
/// see [`fault_keys`].
pub(super) const FAULT_FIELDS: &[Field] = &[
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
pub(super) fn fault_keys(
    kind: &str,
    toxic: Option<&str>,
) -> Vec<(&'static str, Option<&'static str>)> {
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

/// Each fault needs a target it can act on ([`crate::scenario::Caps`]): the
/// proxy an HTTP target; kill the spawned reference server; crash and
/// pause, on an HTTP target, the spawned server's test-only fault hook;
/// lock a database the bench can open (the `sqlite` target's, or the
/// spawned server's). Errors name the line of the fault's `kind`.
pub(super) fn check_fault_targets(ctx: &Context, s: &Scenario) -> Result<(), ScenarioError> {
    let t = &s.target;
    let caps = t.caps();
    let http = t.kind == TargetKind::Http;
    for (index, f) in s.faults.iter().enumerate() {
        if caps.supports(f.kind) {
            continue;
        }
        let needs = match f.kind {
            FaultKind::Proxy => {
                "target.kind = \"http\" (the fault proxy sits between the bench and an HTTP \
                 service)"
            }
            FaultKind::Kill if !http => {
                "target.kind = \"http\" with `spawn = true` (it kills and restarts the spawned \
                 reference server)"
            }
            FaultKind::Kill => {
                "`target.spawn = true` (it kills and restarts the spawned reference server; an \
                 external service is out of reach)"
            }
            FaultKind::Crash | FaultKind::Pause => {
                "`target.spawn = true` on kind = \"http\" (it is driven through the reference \
                 server's test-only fault hook, which an external service does not have)"
            }
            FaultKind::Lock => {
                "a local database: target.kind = \"sqlite\", or \"http\" with `spawn = true` \
                 (an external service's database is out of reach)"
            }
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

/// Refuses a `faults` that is not an array of tables, and checks each entry
/// ([`check_fault`]).
pub(super) fn check_faults(ctx: &Context, item: &Item) -> Result<(), ScenarioError> {
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

/// Into each `[[faults]]` entry, the defaults of its kind (a crash's
/// `ops`: the workload's `crash_ops`, when it has one).
pub(super) fn fill_fault_defaults(root: &mut Table, crash_ops: Option<&'static str>) {
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
            let default = match (key, kind) {
                ("ops", "crash") => crash_ops.or(default),
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

/// Comments for the keys of a resolved fault that are not set (serde leaves
/// them out), saying what that means.
pub(super) fn unset_fault_keys(fault: &Fault) -> String {
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
