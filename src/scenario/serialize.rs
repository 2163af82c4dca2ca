//! How a [`Scenario`] is written (the saved `scenario.toml`, the
//! summary's `resolved_scenario`): its own fields in their order, each
//! workload section right after the field its spec `follows`
//! (`crate::scenario::section`), so that a section a workload owns is
//! written where the saved file always had it. Serde's derive cannot place
//! a flattened field's entries among the others, hence this by hand; the
//! keys and what each skips when unset are the derive's as they were.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::section;
use super::Scenario;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

impl Serialize for Scenario {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        let mut written: Vec<&str> = Vec::new();
        // The parts that follow `field`, in the registry's order.
        let mut parts_after = |map: &mut S::SerializeMap, field: &str| {
            for spec in section::following(field) {
                if let Some(part) = self.parts.serialize_of(spec.table) {
                    map.serialize_entry(spec.table, part)?;
                    written.push(spec.table);
                }
            }
            Ok::<(), S::Error>(())
        };
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("workload", &self.workload)?;
        map.serialize_entry("variant", &self.variant)?;
        map.serialize_entry("seed", &self.seed)?;
        map.serialize_entry("expect", &self.expect)?;
        if !self.thresholds.is_empty() {
            map.serialize_entry("thresholds", &self.thresholds)?;
        }
        map.serialize_entry("target", &self.target)?;
        parts_after(&mut map, "target")?;
        map.serialize_entry("stop", &self.stop)?;
        parts_after(&mut map, "stop")?;
        map.serialize_entry("explore", &self.explore)?;
        parts_after(&mut map, "explore")?;
        if let Some(api) = &self.api {
            map.serialize_entry("api", api)?;
        }
        parts_after(&mut map, "api")?;
        if let Some(audit) = &self.audit {
            map.serialize_entry("audit", audit)?;
        }
        parts_after(&mut map, "audit")?;
        if !self.faults.is_empty() {
            map.serialize_entry("faults", &self.faults)?;
        }
        parts_after(&mut map, "faults")?;
        if let Some(fuzz) = &self.fuzz {
            map.serialize_entry("fuzz", fuzz)?;
        }
        parts_after(&mut map, "fuzz")?;
        if !self.variants.is_empty() {
            map.serialize_entry("variants", &self.variants)?;
        }
        // A part whose `follows` names no field (a test holds every spec
        // to one) is still written, last.
        for table in self.parts.tables() {
            if !written.contains(&table) {
                if let Some(part) = self.parts.serialize_of(table) {
                    map.serialize_entry(table, part)?;
                }
            }
        }
        map.end()
    }
}
