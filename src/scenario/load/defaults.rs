//! Defaults: `name` (the file stem), `variant` (the workload's, or the
//! first `[[variants]]` entry's), the spec's explore fingerprints under
//! any given, every key of [`SCHEMA`] and of the workloads' sections left
//! out, each fault's kind's keys (`faults`), and the workload's `[audit]
//! request`.
//!
//! Layer: config. May import its sibling files, `scenario`'s types (and
//! its workload sections' registry, `crate::scenario::section`).

use super::schema::{Field, SCHEMA};
use super::values::table_entries;
use toml_edit::{DocumentMut, Item, Table, TableLike, Value};

/// Inserts every missing key that has a default, and `name`; into each
/// `[[faults]]` entry, the defaults of its kind.
pub(super) fn fill_defaults(doc: &mut DocumentMut, name: &str) {
    let root = doc.as_table_mut();
    if !root.contains_key("name") {
        root.insert("name", toml_edit::value(name));
    }
    let workload = root
        .get("workload")
        .and_then(Item::as_str)
        .map_or_else(super::schema::default_workload, str::to_owned);
    let own = crate::scenario::section::of(&workload);
    if let Some(variant) = own.and_then(|w| w.default_variant) {
        if !root.contains_key("variant") && !root.contains_key("variants") {
            root.insert("variant", toml_edit::value(variant));
        }
    }
    if let Some(request) = own.and_then(|w| w.audit_request) {
        fill_audit_request(root, request);
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
                .map_or_else(|| crate::scenario::short_name(&v), str::to_string);
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
        for (e, f) in crate::scenario::Explore::default().fingerprints {
            if !map.contains_key(&e) {
                map.insert(&e, Item::Value(Value::from(f)));
            }
        }
    }
    for section in SCHEMA.iter() {
        fill_table(root, section.name, section.fields);
    }
    // A workload's own sections in a scenario of that workload, and in
    // others' where their spec says so: each scenario resolves exactly as
    // before the sections moved to their workloads.
    for own in crate::scenario::section::workloads() {
        for spec in own.sections {
            if crate::scenario::section::filled_in(own.workload, spec, &workload) {
                fill_table(root, spec.table, spec.fields);
            }
        }
    }
    super::faults::fill_fault_defaults(root, own.and_then(|w| w.crash_ops));
}

/// A given `[audit]` without `request` gets the workload's (serde's
/// default is the contract's `GET /v1/export`).
fn fill_audit_request(root: &mut Table, request: &str) {
    if let Some(audit) = root.get_mut("audit").and_then(Item::as_table_like_mut) {
        if !audit.contains_key("request") {
            audit.insert("request", toml_edit::value(request));
        }
    }
}

/// Inserts into the table `name` (`""`: `root`) each of `fields`' defaults
/// it lacks, creating the table if need be.
fn fill_table(root: &mut Table, name: &str, fields: &[Field]) {
    let table = if name.is_empty() {
        root as &mut dyn TableLike
    } else {
        if !root.contains_key(name) {
            root.insert(name, Item::Table(Table::new()));
        }
        root[name]
            .as_table_like_mut()
            .expect("check_keys refused a section that is not a table")
    };
    for field in fields {
        if let Some(default) = field.default {
            if !table.contains_key(field.key) {
                let value: Value = default.parse().expect("SCHEMA defaults are valid TOML");
                table.insert(field.key, Item::Value(value));
            }
        }
    }
}
