//! SQL values as the step machines see them: bound to `:parameters` and read
//! from returned columns.
//!
//! Layer: core, the lowest. May import the modules of its own layer only.

use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};

/// One SQL value. Blobs are kept as lossy UTF-8 text: no workload of ours
/// reads them, and the audit treats them as text that is no valid count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// INTEGER.
    Int(i64),
    /// REAL.
    Real(f64),
    /// TEXT (and BLOB, as lossy UTF-8).
    Text(String),
}

impl Value {
    /// The value as an integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as text, if it is text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

impl From<ValueRef<'_>> for Value {
    fn from(v: ValueRef<'_>) -> Self {
        match v {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Int(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(t) | ValueRef::Blob(t) => {
                Value::Text(String::from_utf8_lossy(t).into_owned())
            }
        }
    }
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::Real(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}
