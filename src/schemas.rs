//! The JSON Schemas of the files a run or compare folder holds for other
//! tools: `summary.json`, `compare.json`, `checks.json`, `audit.json` and
//! `series.json` (a series of seeds' folder),
//! one file each under `schemas/` ([`FILES`]), each naming the version of
//! the file it describes (in its `$id`, and as a `const` on the file's
//! `schema_version` where it has one).
//!
//! They are generated from the serde types themselves by `schemars`, a
//! dev-dependency: the types derive `JsonSchema` under `cfg(test)` only,
//! so the normal build neither compiles schemars nor carries the schemas'
//! code. The test below regenerates every schema and fails when one
//! differs from its committed file (`SPECSTORM_BLESS=1` writes them);
//! `tests/report/schemas.rs` validates real outputs against the committed
//! files.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server); it imports them in its tests only.

/// The schema files under `schemas/`, each named as the file it describes.
pub const FILES: [&str; 5] = [
    "summary.json",
    "compare.json",
    "checks.json",
    "audit.json",
    "series.json",
];

#[cfg(test)]
mod tests {
    use super::FILES;
    use crate::audit_record::{Audit, AUDIT_SCHEMA_VERSION};
    use crate::compare::{Comparison, COMPARE_SCHEMA_VERSION};
    use crate::report::checks_json::CHECKS_SCHEMA_VERSION;
    use crate::series_rates::{Series, SERIES_SCHEMA_VERSION};
    use crate::summary::{FailedSummary, Summary, SUMMARY_SCHEMA_VERSION};
    use crate::verdict::CheckResult;
    use crate::workload::registry::summary_part_schemas;
    use schemars::generate::{SchemaGenerator, SchemaSettings};
    use schemars::JsonSchema;
    use serde_json::{json, Map, Value};
    use std::path::{Path, PathBuf};

    /// Draft 2020-12, the deserialize contract: a key the reader defaults
    /// (`#[serde(default)]`) is optional, so that a file of the same
    /// version written before the key was added still validates; a key
    /// written only when it has something (`skip_serializing_if`) is
    /// optional either way.
    fn generator() -> SchemaGenerator {
        SchemaSettings::draft2020_12().into_generator()
    }

    /// The root of schema `file` (version `version`): `$schema`, `$id`,
    /// `title` and `description` before the rest of `body`.
    fn root(file: &str, version: u32, description: &str, body: Value) -> Value {
        let mut m = Map::new();
        m.insert(
            "$schema".into(),
            "https://json-schema.org/draft/2020-12/schema".into(),
        );
        m.insert(
            "$id".into(),
            format!("urn:specstorm:schema:{file}:{version}").into(),
        );
        m.insert(
            "title".into(),
            format!("specstorm {file}, schema_version {version}").into(),
        );
        m.insert("description".into(), description.into());
        let Value::Object(body) = body else {
            panic!("a schema is an object")
        };
        for (k, v) in body {
            if !matches!(k.as_str(), "$schema" | "title" | "description") {
                m.insert(k, v);
            }
        }
        Value::Object(m)
    }

    /// `schema_version` of the object schema `def` can only be `version`.
    fn pin_version(def: &mut Value, version: u32) {
        let p = def
            .pointer_mut("/properties/schema_version")
            .expect("the type has a schema_version");
        p["const"] = json!(version);
    }

    fn root_of<T: JsonSchema>() -> Value {
        generator().into_root_schema_for::<T>().to_value()
    }

    const SUMMARY_PARTS: &str = "A workload's own figures sit at the top level, among the \
        common ones (Rust: Summary::put). The built-in workloads' parts are listed here as \
        optional properties, so that their types are checked wherever they appear: groups' \
        events, events_per_s, duplicates, resolves, stranded_events and evidence; the \
        outbox's outbox object. They are optional because each belongs to one workload only \
        (a summary has its own workload's part, named by `workload`). Any other key is \
        allowed (additionalProperties): a workload registered at run time puts its own \
        figures there, whose types this build cannot know.";

    /// `summary.json`: a finished run's [`Summary`] with the built-in
    /// workloads' parts, or a failed run's [`FailedSummary`] (it has an
    /// `error`).
    fn summary() -> Value {
        let mut g = generator();
        g.subschema_for::<Summary>();
        g.subschema_for::<FailedSummary>();
        let names = summary_part_schemas(&mut g);
        let mut defs = g.take_definitions(true);
        let mut parts = Map::new();
        for name in &names {
            let part = defs.remove(name).expect("a part's schema");
            let props = part["properties"].as_object().expect("a part is a struct");
            parts.extend(props.clone());
        }
        let s = defs.get_mut("Summary").expect("the summary's schema");
        let props = s["properties"].as_object_mut().expect("properties");
        for (k, v) in parts {
            assert!(
                props.insert(k.clone(), v).is_none(),
                "a built-in workload's figure {k} has the name of a common one"
            );
        }
        s["additionalProperties"] = json!(true);
        let text = s["description"].as_str().unwrap_or_default();
        s["description"] = format!("{text}\n\n{SUMMARY_PARTS}").into();
        pin_version(s, SUMMARY_SCHEMA_VERSION);
        pin_version(
            defs.get_mut("FailedSummary")
                .expect("the failed summary's schema"),
            SUMMARY_SCHEMA_VERSION,
        );
        root(
            "summary.json",
            SUMMARY_SCHEMA_VERSION,
            "A run folder's summary.json (README, \"Reading the summary\"; docs/cli.md, \"Run \
             folders\"): the figures, verdicts, provenance and exit of a finished run \
             (Summary), or, with an `error`, what a run that failed before its verdicts can \
             say (FailedSummary). `specstorm run --format json` prints the same object.",
            json!({
                "if": { "required": ["error"] },
                "then": { "$ref": "#/$defs/FailedSummary" },
                "else": { "$ref": "#/$defs/Summary" },
                "$defs": defs,
            }),
        )
    }

    fn compare() -> Value {
        let mut s = root_of::<Comparison>();
        pin_version(&mut s, COMPARE_SCHEMA_VERSION);
        root(
            "compare.json",
            COMPARE_SCHEMA_VERSION,
            "A compare folder's compare.json (`specstorm compare`): per variant its \
             expectation, exit and key figures (`summary`: the common figures of its \
             summary.json and its workload's compare figures), and the overall exit.",
            s,
        )
    }

    fn checks() -> Value {
        root(
            "checks.json",
            CHECKS_SCHEMA_VERSION,
            "A run folder's checks.json: each checker's full result (verdict, violations \
             with their evidence, unknowns, notes), in the run's order. A bare array, so its \
             version is in this schema's $id only.",
            root_of::<Vec<CheckResult>>(),
        )
    }

    fn audit() -> Value {
        let mut s = root_of::<Audit>();
        pin_version(&mut s, AUDIT_SCHEMA_VERSION);
        root(
            "audit.json",
            AUDIT_SCHEMA_VERSION,
            "A run folder's audit.json, written by `specstorm audit` (docs/cli.md, \"Auditing \
             a run folder\"); `specstorm audit --format json` prints the same object.",
            s,
        )
    }

    fn series() -> Value {
        let mut s = root_of::<Series>();
        pin_version(&mut s, SERIES_SCHEMA_VERSION);
        root(
            "series.json",
            SERIES_SCHEMA_VERSION,
            "A series folder's series.json (`specstorm run --seeds`, and each variant's \
             folder of `specstorm compare --seeds`): per seed its run folder, exit and \
             verdicts; per invariant the seeds that found it violated, the catch rate and the \
             time to first violation; the catch-rate thresholds judged and the series' exit \
             (docs/cli.md, \"Catch rates over many seeds\").",
            s,
        )
    }

    /// Every schema, by its file name ([`FILES`]), as committed.
    fn all() -> Vec<(&'static str, String)> {
        let made = [summary(), compare(), checks(), audit(), series()];
        FILES
            .into_iter()
            .zip(made)
            .map(|(f, s)| (f, serde_json::to_string_pretty(&s).expect("JSON") + "\n"))
            .collect()
    }

    fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas")
    }

    /// The committed schemas are the types' own: a change to a type of
    /// these files (a field added, renamed, retyped, documented anew)
    /// changes its schema, and this fails until it is regenerated and
    /// committed with it.
    #[test]
    fn the_committed_schemas_are_the_types() {
        let bless = std::env::var("SPECSTORM_BLESS").is_ok_and(|v| v == "1");
        let mut stale = Vec::new();
        for (file, text) in all() {
            let path = dir().join(file);
            if bless {
                std::fs::create_dir_all(dir()).unwrap();
                std::fs::write(&path, &text).unwrap();
                continue;
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            if committed != text {
                let line = committed
                    .lines()
                    .zip(text.lines())
                    .position(|(a, b)| a != b)
                    .map_or(committed.lines().count().min(text.lines().count()), |i| i);
                stale.push(format!(
                    "schemas/{file} (first difference at line {}: committed {:?}, types {:?})",
                    line + 1,
                    committed.lines().nth(line).unwrap_or("<end>"),
                    text.lines().nth(line).unwrap_or("<end>"),
                ));
            }
        }
        assert!(
            stale.is_empty(),
            "the committed schemas differ from the serde types:\n  {}\nregenerate them with \
             `SPECSTORM_BLESS=1 cargo test --release --lib schemas::` and commit them (and \
             bump the file's schema_version if the change is incompatible)",
            stale.join("\n  ")
        );
    }

    /// Each schema names its file's version, in `$id` and, where the file
    /// has one, on `schema_version`.
    #[test]
    fn each_schema_names_its_file_s_version() {
        let versions = [
            SUMMARY_SCHEMA_VERSION,
            COMPARE_SCHEMA_VERSION,
            CHECKS_SCHEMA_VERSION,
            AUDIT_SCHEMA_VERSION,
        ];
        let made = [summary(), compare(), checks(), audit()];
        for ((file, v), s) in FILES.iter().zip(versions).zip(&made) {
            assert_eq!(s["$id"], json!(format!("urn:specstorm:schema:{file}:{v}")));
        }
        let s = &made[0];
        for def in ["Summary", "FailedSummary"] {
            assert_eq!(
                s["$defs"][def]["properties"]["schema_version"]["const"],
                json!(SUMMARY_SCHEMA_VERSION)
            );
        }
        assert_eq!(
            made[1]["properties"]["schema_version"]["const"],
            json!(COMPARE_SCHEMA_VERSION)
        );
        assert_eq!(
            made[3]["properties"]["schema_version"]["const"],
            json!(AUDIT_SCHEMA_VERSION)
        );
        // The built-in workloads' figures are typed; others are allowed.
        let props = &s["$defs"]["Summary"]["properties"];
        let mut g = generator();
        let names = summary_part_schemas(&mut g);
        let defs = g.take_definitions(true);
        assert!(!names.is_empty());
        for name in &names {
            let keys = defs[name]["properties"]
                .as_object()
                .expect("a part is a struct");
            assert!(!keys.is_empty());
            for key in keys.keys() {
                assert!(props.get(key).is_some(), "summary.json's {key}");
            }
        }
        assert_eq!(s["$defs"]["Summary"]["additionalProperties"], json!(true));
    }
}
