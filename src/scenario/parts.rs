//! A workload's own sections of a resolved scenario, typed: [`Parts`]
//! holds each as its workload's type (the one its `config` module
//! defines), and [`crate::scenario::Scenario::part`] hands it back by that
//! type. The scenario itself names no workload's section: serde
//! reads a table that none of its own fields takes through the
//! [`SectionSpec`] that owns it (`crate::scenario::section`), and writes
//! each part back under its table's name.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::part::{Named, Part, Section};
use super::section::{self, SectionSpec};
use serde::de::{DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The workload sections of a scenario, by table name (in that order).
#[derive(Default, Clone, PartialEq)]
pub struct Parts(Named);

impl Parts {
    /// The section of type `T`, if the scenario has it.
    pub fn get<T: Section>(&self) -> Option<&T> {
        self.0
            .iter()
            .find(|(table, _)| *table == T::TABLE)
            .and_then(|(_, p)| p.as_any().downcast_ref::<T>())
    }

    /// The section of type `T`, mutably.
    pub fn get_mut<T: Section>(&mut self) -> Option<&mut T> {
        self.0
            .iter_mut()
            .find(|(table, _)| *table == T::TABLE)
            .and_then(|(_, p)| p.as_any_mut().downcast_mut::<T>())
    }

    /// Sets the section `T::TABLE` (None: takes it out).
    pub fn set<T: Section>(&mut self, part: Option<T>) {
        self.0.retain(|(table, _)| *table != T::TABLE);
        if let Some(part) = part {
            self.insert(T::TABLE, Box::new(part));
        }
    }

    /// The part of the table `table`, as serde writes it, if present.
    pub fn serialize_of(&self, table: &str) -> Option<&dyn erased_serde::Serialize> {
        self.0
            .iter()
            .find(|(t, _)| *t == table)
            .map(|(_, p)| p.as_serialize())
    }

    /// Takes out the part of the table `table`, if present.
    pub fn remove(&mut self, table: &str) {
        self.0.retain(|(t, _)| *t != table);
    }

    /// The tables present.
    pub fn tables(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|(table, _)| *table)
    }

    fn insert(&mut self, table: &'static str, part: Box<dyn Part>) {
        let at = self.0.partition_point(|(t, _)| *t < table);
        self.0.insert(at, (table, part));
    }
}

impl Serialize for Parts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (table, part) in self.0.iter() {
            map.serialize_entry(table, part.as_serialize())?;
        }
        map.end()
    }
}

/// Reads one table through the spec that owns it.
struct Read(&'static SectionSpec);

impl<'de> DeserializeSeed<'de> for Read {
    type Value = Box<dyn Part>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let mut d = <dyn erased_serde::Deserializer>::erase(d);
        (self.0.read)(&mut d).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for Parts {
    /// Every key the scenario's own fields leave: each must be a table a
    /// workload's [`SectionSpec`] owns (serde's `deny_unknown_fields`
    /// cannot be had with `flatten`, so this is where a scenario refuses
    /// an unknown key).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Parts;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the tables of a workload's sections")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
                let mut parts = Parts::default();
                while let Some(key) = map.next_key::<String>()? {
                    let Some(spec) = section::spec_of(&key) else {
                        return Err(serde::de::Error::custom(format!("unknown field `{key}`")));
                    };
                    let part = map.next_value_seed(Read(spec))?;
                    parts.insert(spec.table, part);
                }
                Ok(parts)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
impl schemars::JsonSchema for Parts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Parts".into()
    }

    /// No properties of its own: each section's schema is its type's,
    /// which the key schema's drift test reads from the section's spec.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

impl fmt::Debug for Parts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
