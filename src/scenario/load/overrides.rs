//! `--set KEY=VALUE`: parsing an override (a malformed one is a usage
//! error whatever the file holds) and applying it to the document before
//! any key is checked, so that its value is checked like the file's.
//!
//! May import: its sibling files.

use super::context::Override;
use super::error::ScenarioError;
use super::schema::schema_field;
use toml_edit::{InlineTable, Item, Key, Table, Value};

impl Override {
    pub(super) fn parse(raw: &str) -> Result<Override, ScenarioError> {
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
        if path[0] == "faults" {
            return Err(fail(
                "faults cannot be set with --set; edit the scenario file".to_owned(),
            ));
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
pub(super) fn set_path(item: &mut Item, path: &[String], value: Value) -> Result<(), String> {
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
