//! The key schema against the serde types it mirrors, so that the two
//! cannot drift: `schemars` derives a JSON schema of [`Scenario`] from the
//! types themselves (in test builds only; `humantime_serde_compat::
//! Humantime` marks the duration fields), and these tests hold
//! [`SCHEMA`], [`FAULT_FIELDS`], [`VARIANT_FIELDS`] and every workload's
//! `[api]` and `[audit]` keys against it, and each workload's own sections
//! (`crate::scenario::section`) against their types:
//!
//! - every serde field has an entry, and every entry is a serde field;
//! - their kinds match: an enum's names are exactly the entry's options,
//!   a duration is a duration, a whole number's range fits its type, a
//!   structured value (`expect`, thresholds, queues, string maps) has the
//!   shape of the type the loader reads it as;
//! - every default the loader fills passes its own entry's kind and
//!   deserializes, and where the type itself says a default (a serde
//!   default, or `Default` of a section's type) it is that value.
//!
//! A test of the config layer (compiled for tests only, so the
//! architecture test places no module here). May import: its sibling
//! files, `scenario`'s types, `schemars` and `serde_json`.

use super::api_keys::Shape;
use super::context::Context;
use super::defaults::fill_defaults;
use super::expectations::VARIANT_FIELDS;
use super::faults::{fault_keys, FAULT_FIELDS, FAULT_KINDS, TOXICS};
use super::schema::{Field, Kind, SCHEMA};
use super::values::check_value;
use crate::scenario::{Expect, Explore, Scenario, Threshold};
use schemars::JsonSchema;
use serde_json::{json, Map, Value as Json};
use std::collections::BTreeMap;
use toml_edit::{Document, DocumentMut, Item, Value};

/// A JSON schema as `schemars` writes it, with its definitions.
struct Schema {
    root: Json,
    defs: Map<String, Json>,
}

impl Schema {
    fn of<T: JsonSchema>() -> Schema {
        Schema::from(schemars::schema_for!(T))
    }

    fn from(schema: schemars::Schema) -> Schema {
        let root = serde_json::to_value(schema).expect("a schema is JSON");
        let defs = root
            .get("$defs")
            .and_then(Json::as_object)
            .cloned()
            .unwrap_or_default();
        Schema { root, defs }
    }

    /// `s` with its `$ref`s followed and `null` taken out (an `Option` is
    /// its inner type here: which keys may stay unset is the defaults'
    /// test), and what only documents it (descriptions) left out, all the
    /// way down.
    fn inline(&self, s: &Json) -> Json {
        let mut s = s.clone();
        while let Some(name) = s.get("$ref").and_then(Json::as_str) {
            let name = name.trim_start_matches("#/$defs/").to_string();
            s = self.defs[&name].clone();
        }
        if let Some(any) = s.get("anyOf").and_then(Json::as_array) {
            let not_null: Vec<&Json> = any
                .iter()
                .filter(|a| a.get("type") != Some(&json!("null")))
                .collect();
            if not_null.len() == 1 && any.len() == 2 {
                return self.inline(not_null[0]);
            }
        }
        let Some(map) = s.as_object_mut() else {
            return s;
        };
        if let Some(Json::Array(types)) = map.get("type") {
            let not_null: Vec<Json> = types.iter().filter(|t| *t != "null").cloned().collect();
            if let [one] = not_null.as_slice() {
                map.insert("type".into(), one.clone());
            }
        }
        for key in ["description", "title", "$schema", "$defs", "default"] {
            map.remove(key);
        }
        for value in map.values_mut() {
            match value {
                Json::Object(_) => *value = self.inline(value),
                Json::Array(items) => {
                    for item in items.iter_mut() {
                        *item = self.inline(item);
                    }
                }
                _ => {}
            }
        }
        s
    }

    /// The properties of the object `s` (its `$ref` followed), each with
    /// its schema as written (its `default` kept).
    fn properties(&self, s: &Json) -> Vec<(String, Json)> {
        let mut s = s.clone();
        while let Some(name) = s.get("$ref").and_then(Json::as_str) {
            s = self.defs[name.trim_start_matches("#/$defs/")].clone();
        }
        if let Some(any) = s.get("anyOf").and_then(Json::as_array) {
            if let Some(object) = any.iter().find(|a| a.get("type") != Some(&json!("null"))) {
                return self.properties(object);
            }
        }
        s.get("properties")
            .and_then(Json::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    }
}

/// The names of a unit enum's variants, when `s` (inlined) is one.
fn enum_names(s: &Json) -> Option<Vec<String>> {
    let names: Vec<&Json> = match (s.get("enum"), s.get("oneOf")) {
        (Some(Json::Array(names)), _) => names.iter().collect(),
        (_, Some(Json::Array(variants))) => variants
            .iter()
            .map(|v| v.get("const"))
            .collect::<Option<Vec<_>>>()?,
        _ => return None,
    };
    names
        .into_iter()
        .map(|n| n.as_str().map(str::to_string))
        .collect()
}

/// The range of an integer type, from the format `schemars` gives it.
fn int_range(s: &Json) -> Option<(i128, i128)> {
    let bound = |key: &str| s.get(key).and_then(Json::as_i64).map(i128::from);
    let (lo, hi) = match s.get("format")?.as_str()? {
        "uint32" => (0, i128::from(u32::MAX)),
        "uint64" => (0, i128::from(u64::MAX)),
        "int32" => (i128::from(i32::MIN), i128::from(i32::MAX)),
        "int64" => (i128::from(i64::MIN), i128::from(i64::MAX)),
        _ => (bound("minimum")?, bound("maximum")?),
    };
    Some((lo, hi))
}

/// Whether `kind` (the key schema's) is the kind of the serde field whose
/// schema is `field`; Err says what the field is instead.
fn kind_matches(schema: &Schema, kind: Kind, field: &Json) -> Result<(), String> {
    let s = schema.inline(field);
    let ty = s.get("type").and_then(Json::as_str);
    let format = s.get("format").and_then(Json::as_str);
    let names = enum_names(&s);
    let plain_string = ty == Some("string") && format.is_none() && names.is_none();
    let like = |of: Schema| {
        let want = of.inline(&of.root);
        if s == want {
            Ok(())
        } else {
            Err(format!("{s}, not {want}"))
        }
    };
    match kind {
        Kind::Str if plain_string => Ok(()),
        Kind::OneOf(options) => match names {
            Some(mut names) => {
                let mut options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
                names.sort();
                options.sort();
                if names == options {
                    Ok(())
                } else {
                    Err(format!("an enum of {names:?}"))
                }
            }
            // A string the loader restricts (a SQLite pragma's values).
            None if plain_string => Ok(()),
            None => Err(s.to_string()),
        },
        Kind::Duration if ty == Some("string") && format == Some("duration") => Ok(()),
        Kind::Int { min, max } if ty == Some("integer") => match int_range(&s) {
            Some((lo, hi)) if lo <= i128::from(min) && i128::from(max) <= hi => Ok(()),
            range => Err(format!("an integer of range {range:?}")),
        },
        Kind::Fraction | Kind::Rate if ty == Some("number") => Ok(()),
        Kind::Bool if ty == Some("boolean") => Ok(()),
        Kind::Expect => like(Schema::of::<Expect>()),
        Kind::Thresholds => like(Schema::of::<Vec<Threshold>>()),
        Kind::Queues => like(Schema::of::<Vec<Vec<String>>>()),
        Kind::StrMap => like(Schema::of::<BTreeMap<String, String>>()),
        Kind::Stages => like(Schema::of::<Vec<crate::scenario::stages::Stage>>()),
        _ => Err(s.to_string()),
    }
}

/// Compares the entries `fields` of the table `name` with the serde
/// fields of `of`, writing each difference to `problems`.
fn compare_fields(
    schema: &Schema,
    name: &str,
    fields: &[Field],
    of: &Json,
    problems: &mut Vec<String>,
) {
    let props = schema.properties(of);
    for (key, prop) in &props {
        match fields.iter().find(|f| f.key == key) {
            None => problems.push(format!(
                "serde field `{key}` of {name} has no entry in the key schema"
            )),
            Some(f) => {
                if let Err(is) = kind_matches(schema, f.kind, prop) {
                    problems.push(format!(
                        "`{key}` of {name}: the key schema says {:?}, serde reads {is}",
                        f.kind
                    ));
                }
            }
        }
    }
    for f in fields {
        if !props.iter().any(|(key, _)| key == f.key) {
            problems.push(format!(
                "the key schema's `{}` of {name} is no serde field",
                f.key
            ));
        }
    }
}

/// The keys of every workload's shape of one table (serde has one type
/// for all): the first workload's keys, then each next one's that the
/// ones before lack.
fn union(
    shape: fn(&crate::scenario::section::WorkloadSections) -> &'static [(&'static str, Shape)],
) -> Vec<(&'static str, Shape)> {
    let mut all: Vec<(&'static str, Shape)> = Vec::new();
    for w in crate::scenario::section::workloads() {
        for (k, s) in shape(w) {
            if !all.iter().any(|(a, _)| a == k) {
                all.push((k, *s));
            }
        }
    }
    all
}

/// `[api]` as serde reads it: its own fields (`prop` of `schema`), then
/// each workload's requests' (serde reads them as their own types, from
/// the registry), as one object with every definition.
fn api_schema(schema: &Schema, prop: &Json) -> (Schema, Json) {
    let mut defs = schema.defs.clone();
    let mut props: Map<String, Json> = schema.properties(prop).into_iter().collect();
    for w in crate::scenario::section::workloads() {
        let part = Schema::from((w.requests.schema)());
        defs.extend(part.defs.clone());
        props.extend(part.properties(&part.root));
    }
    let of = json!({ "type": "object", "properties": props });
    (
        Schema {
            root: of.clone(),
            defs,
        },
        of,
    )
}

/// As [`compare_fields`], for the nested shapes of `[api]` and `[audit]`.
fn compare_shape(
    schema: &Schema,
    name: &str,
    shape: &[(&str, Shape)],
    of: &Json,
    problems: &mut Vec<String>,
) {
    let props = schema.properties(of);
    if props.is_empty() {
        // A map the loader gives fixed keys (`audit.export`).
        let values = schema.inline(of)["additionalProperties"].clone();
        for (key, s) in shape {
            match s {
                Shape::Val(kind) => {
                    if let Err(is) = kind_matches(schema, *kind, &values) {
                        problems.push(format!("`{key}` of {name}: serde reads {is}"));
                    }
                }
                Shape::Table(_) => problems.push(format!("`{key}` of {name} is no table")),
            }
        }
        return;
    }
    for (key, prop) in &props {
        match shape.iter().find(|(k, _)| k == key) {
            None => problems.push(format!(
                "serde field `{key}` of {name} has no entry in the key schema"
            )),
            Some((_, Shape::Val(kind))) => {
                if let Err(is) = kind_matches(schema, *kind, prop) {
                    problems.push(format!(
                        "`{key}` of {name}: the key schema says {kind:?}, serde reads {is}"
                    ));
                }
            }
            Some((_, Shape::Table(sub))) => {
                compare_shape(schema, &format!("{name}.{key}"), sub, prop, problems)
            }
        }
    }
    for (key, _) in shape {
        if !props.iter().any(|(k, _)| k == key) {
            problems.push(format!(
                "the key schema's `{key}` of {name} is no serde field"
            ));
        }
    }
}

#[test]
fn every_serde_field_has_a_schema_entry_and_every_entry_a_field() {
    let schema = Schema::of::<Scenario>();
    let mut problems = Vec::new();
    let top = &SCHEMA[0];
    let props = schema.properties(&schema.root);
    for (key, prop) in &props {
        let items = || prop["items"].clone();
        if let Some(f) = top.fields.iter().find(|f| f.key == key) {
            if let Err(is) = kind_matches(&schema, f.kind, prop) {
                problems.push(format!(
                    "`{key}`: the key schema says {:?}, serde reads {is}",
                    f.kind
                ));
            }
        } else if let Some(section) = SCHEMA[1..].iter().find(|s| s.name == key) {
            compare_fields(
                &schema,
                &format!("[{key}]"),
                section.fields,
                prop,
                &mut problems,
            );
        } else if key == "api" {
            let both = union(|w| w.api);
            let (api, of) = api_schema(&schema, prop);
            compare_shape(&api, "[api]", &both, &of, &mut problems);
        } else if key == "audit" {
            let both = union(|w| w.audit);
            compare_shape(&schema, "[audit]", &both, prop, &mut problems);
        } else if key == "faults" {
            compare_fields(&schema, "[[faults]]", FAULT_FIELDS, &items(), &mut problems);
        } else if key == "variants" {
            compare_fields(
                &schema,
                "[[variants]]",
                VARIANT_FIELDS,
                &items(),
                &mut problems,
            );
        } else {
            problems.push(format!(
                "serde field `{key}` of Scenario has no entry in the key schema"
            ));
        }
    }
    // A workload's own sections: serde reads each as its own type.
    for (owner, spec) in own_sections() {
        let of = Schema::from((spec.schema)());
        let name = format!("[{}] of {owner}", spec.table);
        compare_fields(&of, &name, spec.fields, &of.root, &mut problems);
    }
    let written = top.fields.iter().map(|f| f.key);
    let tables = SCHEMA[1..].iter().map(|s| s.name);
    for key in written.chain(tables) {
        if !props.iter().any(|(k, _)| k == key) {
            problems.push(format!(
                "the key schema's `{key}` is no serde field of Scenario"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the key schema and the serde types differ:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_default_passes_its_kind_and_is_the_types_own() {
    let spans = Document::parse("").unwrap();
    let ctx = Context {
        file: "defaults".into(),
        text: "",
        spans: &spans,
        overrides: &[],
        workload: super::schema::default_workload(),
        registered: None,
    };
    let schema = Schema::of::<Scenario>();
    let props = schema.properties(&schema.root);
    // What serde reads from the filled defaults, as it writes it back.
    let read = |text: &str| serde_json::to_value(filled(text).unwrap()).unwrap();
    let groups = read("");
    let mut problems = Vec::new();
    for section in SCHEMA.iter() {
        // The serde defaults of this table's fields: the field's own, or
        // its entry in the table's (`#[serde(default)]` on the table).
        let (table_default, fields_of): (Json, Vec<(String, Json)>) = if section.name.is_empty() {
            (Json::Null, props.clone())
        } else {
            let prop = &props.iter().find(|(k, _)| k == section.name).unwrap().1;
            (
                prop.get("default").cloned().unwrap_or(Json::Null),
                schema.properties(prop),
            )
        };
        for f in section.fields {
            let at = [section.name, f.key];
            let at = if section.name.is_empty() {
                &at[1..]
            } else {
                &at[..]
            };
            let Some(default) = f.default else { continue };
            let value = Item::Value(default.parse::<Value>().unwrap());
            if let Err(e) = check_value(&ctx, at, f.kind, &value) {
                problems.push(format!("default of `{}`: {e}", at.join(".")));
            }
            let own = fields_of
                .iter()
                .find(|(k, _)| k == f.key)
                .and_then(|(_, p)| p.get("default").cloned())
                .or_else(|| table_default.get(f.key).cloned());
            let read = at.iter().fold(&groups, |v, k| &v[k]);
            if let Some(own) = own {
                if own != *read {
                    problems.push(format!(
                        "default of `{}`: the key schema fills {default}, which serde reads as \
                         {read}; serde's own is {own}",
                        at.join(".")
                    ));
                }
            }
        }
    }
    // A workload's own sections, filled in a scenario of that workload.
    for (owner, spec) in own_sections() {
        let of = Schema::from((spec.schema)());
        let filled = read(&format!("workload = \"{owner}\"\n"));
        for f in spec.fields {
            let at = [spec.table, f.key];
            let Some(default) = f.default else { continue };
            let value = Item::Value(default.parse::<Value>().unwrap());
            if let Err(e) = check_value(&ctx, &at, f.kind, &value) {
                problems.push(format!("default of `{}`: {e}", at.join(".")));
            }
            let own = of
                .properties(&of.root)
                .into_iter()
                .find(|(k, _)| k == f.key)
                .and_then(|(_, p)| p.get("default").cloned());
            let read = &filled[spec.table][f.key];
            if let Some(own) = own {
                if own != *read {
                    problems.push(format!(
                        "default of `{}`: the key schema fills {default}, which serde reads as \
                         {read}; serde's own is {own}",
                        at.join(".")
                    ));
                }
            }
        }
    }
    for kind in FAULT_KINDS {
        for toxic in [None].into_iter().chain(TOXICS.iter().map(Some)) {
            for (key, default) in fault_keys(kind, toxic.copied()) {
                let Some(f) = FAULT_FIELDS.iter().find(|f| f.key == key) else {
                    problems.push(format!("fault key `{key}` of {kind} is no fault field"));
                    continue;
                };
                let Some(default) = default else { continue };
                let value = Item::Value(default.parse::<Value>().unwrap());
                if let Err(e) = check_value(&ctx, &["faults", "0", key], f.kind, &value) {
                    problems.push(format!("default of {kind}'s `{key}`: {e}"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "defaults that are not their types':\n  {}",
        problems.join("\n  ")
    );
}

/// Every workload's own sections, with their owner's name.
fn own_sections() -> Vec<(&'static str, &'static crate::scenario::section::SectionSpec)> {
    crate::scenario::section::workloads()
        .into_iter()
        .flat_map(|w| w.sections.iter().map(move |s| (w.workload, s)))
        .collect()
}

/// The scenario serde reads from `text` with the loader's defaults filled
/// in (and no check beyond serde's).
fn filled(text: &str) -> Result<Scenario, String> {
    let mut doc: DocumentMut = text.parse().unwrap();
    fill_defaults(&mut doc, "t");
    toml::from_str(&doc.to_string()).map_err(|e| format!("{e}\n{doc}"))
}

#[test]
fn the_filled_defaults_deserialize_to_the_types_own() {
    let groups = filled("").unwrap();
    assert_eq!(groups.explore, Explore::default());
    for w in crate::scenario::section::workloads() {
        let s = filled(&format!("workload = \"{}\"\n", w.workload)).unwrap();
        let mut tables: Vec<&str> = s.parts.tables().collect();
        // Its own tables, and the others' that its scenarios are filled
        // with.
        let mut own: Vec<&str> = own_sections()
            .into_iter()
            .filter(|(owner, spec)| crate::scenario::section::filled_in(owner, spec, w.workload))
            .map(|(_, spec)| spec.table)
            .collect();
        tables.sort_unstable();
        own.sort_unstable();
        assert_eq!(tables, own, "{}", w.workload);
    }
    for kind in FAULT_KINDS {
        for toxic in [None].into_iter().chain(TOXICS.iter().map(Some)) {
            let toxic = toxic.map_or(String::new(), |t| format!("toxic = \"{t}\"\n"));
            let text = format!("[[faults]]\nkind = \"{kind}\"\n{toxic}");
            let text = if *kind == "proxy" || toxic.is_empty() {
                text
            } else {
                continue;
            };
            // The default workload (named or not), and every other one.
            let others = crate::scenario::section::workloads()
                .into_iter()
                .filter(|w| !w.default)
                .map(|w| format!("workload = {:?}\n", w.workload));
            for workload in std::iter::once(String::new()).chain(others) {
                let s = filled(&format!("{workload}{text}")).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(s.faults.len(), 1);
            }
        }
    }
    // A built-in variant of the default workload other than its default.
    let own = crate::scenario::section::default_workload();
    let other = own
        .variants
        .iter()
        .map(|v| v.name)
        .find(|v| Some(*v) != own.default_variant)
        .expect("the default workload has two built-in variants");
    let entry = filled(&format!("[[variants]]\nvariant = {other:?}\n")).unwrap();
    assert_eq!(entry.variant, other);
}

/// The fields `Scenario`'s `Serialize` writes parts after.
const WRITTEN_FIELDS: &[&str] = &[
    "target", "stop", "explore", "api", "audit", "faults", "fuzz",
];

/// A workload's section must be a table of its own (no table of the
/// common schema, no other workload's) placed after a common table, with
/// each key once: else the loader would check a key against two entries,
/// or the unknown-key error and the saved scenario would list it nowhere.
/// The link-time list must not be empty either (a section the linker left
/// out would make every scenario of its workload refuse its own table).
#[test]
fn every_workload_section_is_a_table_of_its_own_after_a_common_one() {
    let sections = own_sections();
    assert!(
        !sections.is_empty(),
        "the link-time list of sections is empty"
    );
    let common: Vec<&str> = SCHEMA[1..].iter().map(|s| s.name).collect();
    let mut problems = Vec::new();
    for (i, (owner, spec)) in sections.iter().enumerate() {
        if common.contains(&spec.table) {
            problems.push(format!("{owner}'s [{}] is a common table", spec.table));
        }
        if sections[..i].iter().any(|(_, s)| s.table == spec.table) {
            problems.push(format!("[{}] is owned twice", spec.table));
        }
        if !common.contains(&spec.listed_after) {
            problems.push(format!(
                "{owner}'s [{}] is listed after {:?}, no common table",
                spec.table, spec.listed_after
            ));
        }
        if !WRITTEN_FIELDS.contains(&spec.follows) {
            problems.push(format!(
                "{owner}'s [{}] follows {:?}, no field `Scenario` writes parts after",
                spec.table, spec.follows
            ));
        }
        for (j, f) in spec.fields.iter().enumerate() {
            if spec.fields[..j].iter().any(|g| g.key == f.key) {
                problems.push(format!("[{}] lists `{}` twice", spec.table, f.key));
            }
        }
    }
    let listed = super::schema::table_names();
    for (_, spec) in &sections {
        if !listed.contains(&spec.table) {
            problems.push(format!("[{}] is not in the list of tables", spec.table));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
