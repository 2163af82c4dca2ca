//! A workload's own fields of the history's header
//! ([`super::Header::workload_part`]), kept as JSON in the order they
//! were written: a history read and written again (a merge) keeps its
//! header's text, key order included, which `serde_json::Value` (whose
//! objects sort their keys) would not.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A JSON value whose objects keep their keys' order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// Any other number.
    F64(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, its keys in their order.
    Object(Vec<(String, Json)>),
}

/// The workload's fields of a header: top-level keys, in their order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadPart(pub Vec<(String, Json)>);

impl WorkloadPart {
    /// The fields of `part` (a struct whose fields are top-level keys of
    /// the header), in its fields' order.
    pub fn of<T: Serialize>(part: &T) -> WorkloadPart {
        let text = serde_json::to_string(part).expect("a header part always serializes");
        match serde_json::from_str::<Json>(&text) {
            Ok(Json::Object(fields)) => WorkloadPart(fields),
            _ => panic!("a header part is a struct, not {text}"),
        }
    }

    /// Adds `other`'s fields (a field of the same key is replaced).
    pub fn extend(&mut self, other: WorkloadPart) {
        for (k, v) in other.0 {
            match self.0.iter_mut().find(|(x, _)| *x == k) {
                Some(slot) => slot.1 = v,
                None => self.0.push((k, v)),
            }
        }
    }

    /// The fields as `T` (each absent key `T`'s default); None when they
    /// are no `T`.
    pub fn read<T: DeserializeOwned>(&self) -> Option<T> {
        let text = serde_json::to_string(&Json::Object(self.0.clone())).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// No fields.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::U64(n) => s.serialize_u64(*n),
            Json::I64(n) => s.serialize_i64(*n),
            Json::F64(n) => s.serialize_f64(*n),
            Json::Str(t) => s.serialize_str(t),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Json::Object(fields) => serialize_fields(fields, s),
        }
    }
}

fn serialize_fields<S: Serializer>(fields: &[(String, Json)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(fields.len()))?;
    for (k, v) in fields {
        map.serialize_entry(k, v)?;
    }
    map.end()
}

impl Serialize for WorkloadPart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_fields(&self.0, s)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::U64(n))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(if n >= 0 {
            Json::U64(n as u64)
        } else {
            Json::I64(n)
        })
    }
    fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
        Ok(Json::F64(n))
    }
    fn visit_str<E>(self, t: &str) -> Result<Json, E> {
        Ok(Json::Str(t.to_string()))
    }
    fn visit_string<E>(self, t: String) -> Result<Json, E> {
        Ok(Json::Str(t))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(i) = a.next_element()? {
            items.push(i);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
        let mut fields = Vec::new();
        while let Some((k, v)) = a.next_entry::<String, Json>()? {
            fields.push((k, v));
        }
        Ok(Json::Object(fields))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

impl<'de> Deserialize<'de> for WorkloadPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WorkloadPart, D::Error> {
        match d.deserialize_map(JsonVisitor)? {
            Json::Object(fields) => Ok(WorkloadPart(fields)),
            _ => Err(de::Error::custom("a header's workload part is an object")),
        }
    }
}
