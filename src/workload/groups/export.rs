//! Reads a saved `GET /v1/export` answer (contract v1, groups) into
//! [`Tables`](super::checker::Tables), one row at a time: the file may hold millions of events, and
//! only what the checkers keep (ids, counts per key, group rows) stays in
//! memory. Rows of other runs (another project namespace) are skipped.
//!
//! The HTTP target streams the answer to the run folder; this reads it.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::checker::{tables::RowSink, GroupRow};
use crate::target::http::client::excerpt;
use crate::workload::Value;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::io::BufReader;
use std::path::Path;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventRow {
    id: Value,
    project: Value,
    fingerprint: Value,
    #[allow(dead_code)]
    group_id: Value,
    #[allow(dead_code)]
    received_at: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupRowJson {
    id: Value,
    project: Value,
    fingerprint: Value,
    status: Value,
    event_count: Value,
}

struct Export<'a> {
    tables: &'a mut dyn RowSink,
    namespace: &'a str,
}

impl Export<'_> {
    fn mine(&self, project: &Value) -> bool {
        self.namespace.is_empty()
            || project
                .as_str()
                .is_some_and(|p| p.starts_with(self.namespace))
    }
}

impl<'de> DeserializeSeed<'de> for Export<'_> {
    type Value = (bool, bool);

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(bool, bool), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Export<'_> {
    type Value = (bool, bool);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(r#"an object {"events": [...], "groups": [...]}"#)
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(bool, bool), A::Error> {
        let (mut events, mut groups) = (false, false);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "events" => {
                    map.next_value_seed(Rows {
                        export: &mut self,
                        groups: false,
                    })?;
                    events = true;
                }
                "groups" => {
                    map.next_value_seed(Rows {
                        export: &mut self,
                        groups: true,
                    })?;
                    groups = true;
                }
                // Extra keys are the service's own business.
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((events, groups))
    }
}

struct Rows<'a, 'b> {
    export: &'a mut Export<'b>,
    groups: bool,
}

impl<'de> DeserializeSeed<'de> for Rows<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Rows<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if self.groups {
            while let Some(r) = seq.next_element::<GroupRowJson>()? {
                if self.export.mine(&r.project) {
                    self.export.tables.group(GroupRow {
                        id: r.id,
                        project: r.project,
                        fingerprint: r.fingerprint,
                        status: r.status,
                        event_count: r.event_count,
                    });
                }
            }
        } else {
            while let Some(r) = seq.next_element::<EventRow>()? {
                if self.export.mine(&r.project) {
                    self.export.tables.event(&r.id, &r.project, &r.fingerprint);
                }
            }
        }
        Ok(())
    }
}

/// Reads a saved export into `tables` (keeping only projects that start
/// with `namespace`, if any). Errors: the file is not the contract's shape
/// (the reason names the line and column, and the first bytes are shown).
pub fn read_export(path: &Path, namespace: &str, tables: &mut dyn RowSink) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file));
    let shape = |e: serde_json::Error| {
        let head = crate::input::head(path, 200)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        format!(
            "the export is not the contract's shape ({e}); it begins: {}",
            excerpt(&head)
        )
    };
    let (events, groups) = Export { tables, namespace }
        .deserialize(&mut de)
        .map_err(shape)?;
    de.end().map_err(shape)?;
    if !events || !groups {
        return Err(shape(de::Error::custom(
            "it needs both \"events\" and \"groups\" arrays",
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::groups::checker::Tables;

    fn read(text: &str, ns: &str) -> Result<Tables, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("export.json");
        std::fs::write(&p, text).unwrap();
        let mut t = Tables::default();
        read_export(&p, ns, &mut t).map(|_| t)
    }

    #[test]
    fn reads_rows_and_keeps_only_the_namespace() {
        let t = read(
            r#"{"events":[{"id":"e1","project":"r1.p","fingerprint":"f","group_id":"g","received_at":1},
                          {"id":"e2","project":"other","fingerprint":"f","group_id":"g","received_at":null}],
                "groups":[{"id":"g:r1.p:f","project":"r1.p","fingerprint":"f","status":"open","event_count":1}]}"#,
            "r1.",
        )
        .unwrap();
        assert_eq!(t.event_rows, 1);
        assert!(t.event_ids.contains("e1"));
        assert_eq!(t.groups.len(), 1);
        assert_eq!(t.groups[0].event_count, Value::Int(1));
    }

    #[test]
    fn refuses_what_is_not_the_contract() {
        for bad in [
            "hello",
            r#"{"events": []}"#,
            r#"{"events": [{"id": "e1"}], "groups": []}"#,
            r#"{"events": [], "groups": [{"id":"g","project":"p","fingerprint":"f","status":"open","event_count":1,"extra":2}]}"#,
        ] {
            let e = read(bad, "").unwrap_err();
            assert!(e.contains("not the contract's shape"), "{e}");
        }
    }
}
