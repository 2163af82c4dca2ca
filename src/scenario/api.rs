//! `[api]` and `[audit]`: how the bench speaks to a service with an API of
//! its own (the health request and the headers of every request here;
//! each workload's own requests in its folder, held here type-erased as
//! [`ApiParts`]; what their answers' statuses may mean and how pointers
//! and tests are read), and where the audit reads the final tables from
//! (the contract's export, or the service's own SQLite database through
//! `export.*` queries).
//!
//! Every key defaults to the HTTP contract (`http-contract.md`, version 1):
//! a scenario without `[api]` speaks the contract, and `[api]` changes only
//! what it names. An empty pointer (`accepted = ""`) says "the answer does
//! not tell", which the history then records as an `ok` whose value is
//! unknown.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use super::part::{Named, Part, Section};
use super::section;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// The `[api]` keys every workload's scenario takes; the others are its
/// workload's requests ([`ApiParts`]).
pub const COMMON_KEYS: &[&str] = &["health", "headers"];

/// `[api]`: how requests are made and answers read. Default: the contract.
///
/// Serde refuses unknown keys through [`ApiParts`] (which reads every key
/// the fields here leave): `deny_unknown_fields` cannot be had with
/// `flatten`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Api {
    /// `METHOD PATH` whose 2xx answer means ready (default `GET /healthz`).
    pub health: String,
    /// Headers of every request; `${NAME}` reads environment variable NAME.
    pub headers: BTreeMap<String, String>,
    /// The workloads' own requests (each workload's part, with its
    /// defaults when not given): read them with [`Api::part`].
    #[serde(flatten)]
    pub requests: ApiParts,
}

impl Default for Api {
    fn default() -> Self {
        Api {
            health: "GET /healthz".into(),
            headers: BTreeMap::new(),
            requests: ApiParts::default(),
        }
    }
}

impl Api {
    /// The part of type `T` (a workload's requests).
    pub fn part<T: Section>(&self) -> Option<&T> {
        self.requests.get::<T>()
    }

    /// The part of type `T`, mutably.
    pub fn part_mut<T: Section>(&mut self) -> Option<&mut T> {
        self.requests.get_mut::<T>()
    }
}

/// The workloads' own `[api]` requests, each as its workload's type (its
/// `requests` in [`crate::scenario::section`]), one per built-in workload
/// in the registry's order, filled with its defaults when none of its keys
/// is given: the resolved `[api]` always held every workload's request
/// tables (the loader refuses another workload's keys when given, and the
/// saved `scenario.toml` leaves them out).
#[derive(Clone, PartialEq)]
pub struct ApiParts(Named);

impl ApiParts {
    /// The part of type `T`, if a workload's requests are of it.
    pub fn get<T: Section>(&self) -> Option<&T> {
        self.0
            .iter()
            .find_map(|(_, p)| p.as_any().downcast_ref::<T>())
    }

    /// The part of type `T`, mutably.
    pub fn get_mut<T: Section>(&mut self) -> Option<&mut T> {
        self.0
            .iter_mut()
            .find_map(|(_, p)| p.as_any_mut().downcast_mut::<T>())
    }

    /// The part of the workload `workload`, if it has one.
    pub fn of(&self, workload: &str) -> Option<&dyn Part> {
        self.0
            .iter()
            .find(|(w, _)| *w == workload)
            .map(|(_, p)| p.as_ref())
    }

    /// Reads every workload's part from the keys given to it (each read
    /// from no keys is its defaults).
    fn read(
        mut given: BTreeMap<&'static str, serde_json::Map<String, serde_json::Value>>,
    ) -> Result<ApiParts, erased_serde::Error> {
        let mut parts = Vec::new();
        for w in section::workloads() {
            let keys = given.remove(w.workload).unwrap_or_default();
            let mut d = <dyn erased_serde::Deserializer>::erase(serde_json::Value::Object(keys));
            parts.push((w.workload, (w.requests.read)(&mut d)?));
        }
        Ok(ApiParts(Named(parts)))
    }
}

/// The workload whose requests take the `[api]` key `key`.
fn owner_of_key(key: &str) -> Option<&'static str> {
    if COMMON_KEYS.contains(&key) {
        return None;
    }
    section::workloads()
        .into_iter()
        .find(|w| w.api.iter().any(|(k, _)| *k == key))
        .map(|w| w.workload)
}

impl Default for ApiParts {
    fn default() -> Self {
        ApiParts::read(BTreeMap::new())
            .expect("every part reads from no keys: each has its default")
    }
}

impl Serialize for ApiParts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Flat(&self.0).serialize(s)
    }
}

/// Parts written one after another into the map `[api]` is written as,
/// each by its own serde (its fields' order, what it skips when unset),
/// which one map entry per key could not give. Each step is erased
/// (`erased_serde`) so that the nesting does not grow the serializer's
/// type without end.
struct Flat<'a>(&'a [(&'static str, Box<dyn Part>)]);

impl Serialize for Flat<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Pair<'b> {
            #[serde(flatten)]
            first: &'b dyn erased_serde::Serialize,
            #[serde(flatten)]
            rest: &'b dyn erased_serde::Serialize,
        }
        match self.0.split_first() {
            None => s.serialize_map(Some(0))?.end(),
            Some(((_, first), rest)) => Pair {
                first: first.as_serialize(),
                rest: &Flat(rest),
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ApiParts {
    /// Every key `[api]`'s own fields leave: each must be a key of a
    /// workload's requests, which its part reads (a key of no workload is
    /// refused here; the loader refused another workload's key before,
    /// with its line).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ApiParts;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the keys of a workload's requests")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ApiParts, A::Error> {
                let mut given: BTreeMap<&str, serde_json::Map<String, serde_json::Value>> =
                    BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    let Some(owner) = owner_of_key(&key) else {
                        return Err(serde::de::Error::custom(format!("unknown field `{key}`")));
                    };
                    let value: serde_json::Value = map.next_value()?;
                    given.entry(owner).or_default().insert(key, value);
                }
                ApiParts::read(given).map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
impl schemars::JsonSchema for ApiParts {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ApiParts".into()
    }

    /// No properties of its own: each workload's requests' schema is its
    /// type's, which the key schema's drift test reads from the registry.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object" })
    }
}

/// `[audit]`: where the final tables come from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// The export request of an HTTP target without `sqlite` (default the
    /// contract's `GET /v1/export`; the loader fills in the workload's own,
    /// its `audit_request` in `crate::scenario::section`).
    pub request: String,
    /// The service's SQLite database file (a glob that must match exactly
    /// one file; `{run_dir}` is the run folder; relative to the scenario
    /// file's folder). Set: the audit reads it instead of the export.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sqlite: Option<String>,
    /// `export.<table>`: queries that map the service's schema onto the
    /// workload's canonical tables (statement-file convention; the keys
    /// its `export_queries` in `crate::scenario::section` name).
    pub export: BTreeMap<String, String>,
    /// Whether the service keeps every event row (`complete`) or deletes
    /// some (`pruned`: retention, sampling).
    pub events: EventRows,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            request: "GET /v1/export".into(),
            sqlite: None,
            export: BTreeMap::new(),
            events: EventRows::Complete,
        }
    }
}

/// `audit.events`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum EventRows {
    /// Every event row the service stored is still there.
    #[default]
    Complete,
    /// The service deletes event rows (retention, sample pruning): a
    /// missing row proves nothing, and the checks that count rows rest on
    /// the history alone.
    Pruned,
}

/// What a status code means for one kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// It happened (as the request's own pointers say, if it has any).
    Ok,
    /// Applied and counted, whatever the body says.
    Accepted,
    /// A repeat of one already applied (the same id), not counted.
    Duplicate,
    /// Refused: what the request needs did not hold; its answer is a
    /// probe of what the service read.
    Refused,
    /// No such object.
    Missing,
    /// Certainly not applied.
    Fail,
    /// Indeterminate.
    Info,
    /// Not applied; send again after `Retry-After` (429).
    Retry,
}

/// One request's status meanings, as its workload declares them: the
/// meanings its `codes` may name, and the contract's codes
/// (http-contract.md, "How the bench reads answers"); 5xx is `info` for
/// every request.
#[derive(Debug, Clone, Copy)]
pub struct CodeTable {
    /// The meanings a code of this request may have, by name.
    pub meanings: &'static [(&'static str, Meaning)],
    /// The contract's codes and their meanings.
    pub defaults: &'static [(u16, Meaning)],
}

/// The contract's codes of a request that writes (http-contract.md, "How
/// the bench reads answers"): 200 ok; 400, 413 and 422 refused as sent,
/// so certainly not applied; 429 not applied, send again. A workload's
/// write requests take these as their defaults unless the contract gives
/// them more.
pub const CONTRACT_WRITE_CODES: &[(u16, Meaning)] = &[
    (200, Meaning::Ok),
    (400, Meaning::Fail),
    (413, Meaning::Fail),
    (422, Meaning::Fail),
    (429, Meaning::Retry),
];

/// Status code to meaning for one request: the defaults, then the
/// scenario's classes (`"2xx"`), then its exact codes. None: not a
/// meaning the service's answers were mapped to (non-conforming).
#[derive(Debug, Clone)]
pub struct Codes {
    exact: BTreeMap<u16, Meaning>,
    classes: BTreeMap<u16, Meaning>,
}

impl Codes {
    /// Builds the table. Errors: a key that is no status code or class, or
    /// a meaning this request does not have (checked by the loader
    /// first, with the line).
    pub fn new(table: &CodeTable, given: &BTreeMap<String, String>) -> Result<Codes, String> {
        let mut exact: BTreeMap<u16, Meaning> = table.defaults.iter().copied().collect();
        let mut classes = BTreeMap::from([(5, Meaning::Info)]);
        for (code, meaning) in given {
            let m = parse_meaning(table, meaning)?;
            match parse_code(code)? {
                CodeKey::Exact(c) => {
                    exact.insert(c, m);
                }
                CodeKey::Class(c) => {
                    // A class given by the scenario wins over the defaults
                    // of that class, not over its own exact codes.
                    exact.retain(|k, _| k / 100 != c || given.contains_key(&k.to_string()));
                    classes.insert(c, m);
                }
            }
        }
        Ok(Codes { exact, classes })
    }

    /// The meaning of `status`, if mapped.
    pub fn meaning(&self, status: u16) -> Option<Meaning> {
        self.exact
            .get(&status)
            .or_else(|| self.classes.get(&(status / 100)))
            .copied()
    }
}

/// A key of a `codes` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeKey {
    /// `"201"`.
    Exact(u16),
    /// `"2xx"`: the hundreds digit.
    Class(u16),
}

/// Parses a `codes` key: `"100"`..`"599"` or `"1xx"`..`"5xx"`.
pub fn parse_code(key: &str) -> Result<CodeKey, String> {
    let bad = || format!("`{key}` is no status code: write \"201\" or a class such as \"4xx\"");
    let k = key.trim();
    if let Some(d) = k.strip_suffix("xx").filter(|d| d.len() == 1) {
        let d: u16 = d.parse().map_err(|_| bad())?;
        return if (1..=5).contains(&d) {
            Ok(CodeKey::Class(d))
        } else {
            Err(bad())
        };
    }
    match k.parse::<u16>() {
        Ok(c) if (100..=599).contains(&c) => Ok(CodeKey::Exact(c)),
        _ => Err(bad()),
    }
}

/// Parses a meaning name of the request whose codes are `table`.
pub fn parse_meaning(table: &CodeTable, name: &str) -> Result<Meaning, String> {
    table
        .meanings
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            format!(
                "`{name}` is no meaning of this request; one of {}",
                table
                    .meanings
                    .iter()
                    .map(|(n, _)| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// `METHOD PATH` split; the method upper-case. Errors: no space, an
/// unknown method, or a path that does not start with `/`.
pub fn parse_request(text: &str) -> Result<(String, String), String> {
    let t = text.trim();
    let Some((method, path)) = t.split_once(char::is_whitespace) else {
        return Err(format!(
            "`{t}` is not `METHOD PATH`, e.g. \"POST /api/{{project}}/events\""
        ));
    };
    let method = method.to_ascii_uppercase();
    if !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&method.as_str()) {
        return Err(format!(
            "`{method}` is no method this bench sends: GET, POST, PUT, PATCH or DELETE"
        ));
    }
    let path = path.trim();
    if !path.starts_with('/') {
        return Err(format!("the path `{path}` must start with /"));
    }
    Ok((method, path.to_string()))
}

/// A pointer with an optional expected value: `"/accepted"` (a bool) or
/// `"/status == created"` (true when equal, false otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    /// RFC 6901 JSON pointer.
    pub pointer: String,
    /// Compare with this value instead of reading a bool.
    pub equals: Option<serde_json::Value>,
}

impl Test {
    /// Parses `POINTER` or `POINTER == VALUE` (VALUE: a JSON literal, or a
    /// bare word read as a string). Errors: a pointer not starting with `/`.
    pub fn parse(text: &str) -> Result<Test, String> {
        let (pointer, equals) = match text.split_once("==") {
            Some((p, v)) => {
                let v = v.trim();
                let value = serde_json::from_str(v)
                    .unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
                (p.trim(), Some(value))
            }
            None => (text.trim(), None),
        };
        check_pointer(pointer)?;
        Ok(Test {
            pointer: pointer.to_string(),
            equals,
        })
    }

    /// The test as written in a scenario (`/status == "created"`).
    pub fn text(&self) -> String {
        match &self.equals {
            Some(v) => format!("{} == {v}", self.pointer),
            None => self.pointer.clone(),
        }
    }

    /// The test on `answer`: Some(bool), or None when the pointer names
    /// nothing, or (without `==`) no bool.
    pub fn eval(&self, answer: &serde_json::Value) -> Option<bool> {
        let v = answer.pointer(&self.pointer)?;
        match &self.equals {
            Some(e) => Some(v == e),
            None => v.as_bool(),
        }
    }
}

/// Errors unless `p` is a JSON pointer (`""` is refused: name a field).
pub fn check_pointer(p: &str) -> Result<(), String> {
    if p.contains(" = ") || p.contains(" =") && p.trim_end().ends_with('=') {
        Err(format!(
            "`{p}`: did you mean `==` (\"POINTER == VALUE\")? A pointer holds no ` = `"
        ))
    } else if p.starts_with('/') {
        // RFC 6901: `~` only as `~0` (a `~`) or `~1` (a `/`). Any other
        // escape makes every lookup miss, so each answer would be judged
        // non-conforming at run time instead of the key refused here.
        let bytes = p.as_bytes();
        match (0..bytes.len())
            .find(|&i| bytes[i] == b'~' && !matches!(bytes.get(i + 1), Some(b'0' | b'1')))
        {
            Some(_) => Err(format!(
                "`{p}`: a `~` in a JSON pointer must be `~0` (for `~`) or `~1` (for `/`) (RFC 6901)"
            )),
            None => Ok(()),
        }
    } else {
        Err(format!(
            "`{p}` is no JSON pointer: write it as \"/field\" or \"/items/0/id\" (RFC 6901)"
        ))
    }
}

impl fmt::Debug for ApiParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_layer_defaults_classes_and_exact_codes() {
        // A request's own table: what its workload passes in.
        const TABLE: CodeTable = CodeTable {
            meanings: &[("ok", Meaning::Ok), ("fail", Meaning::Fail)],
            defaults: &[(200, Meaning::Ok), (429, Meaning::Retry)],
        };
        let given = BTreeMap::from([
            ("201".to_string(), "ok".to_string()),
            ("4xx".to_string(), "fail".to_string()),
            ("409".to_string(), "ok".to_string()),
        ]);
        let c = Codes::new(&TABLE, &given).unwrap();
        assert_eq!(c.meaning(200), Some(Meaning::Ok));
        assert_eq!(c.meaning(201), Some(Meaning::Ok));
        assert_eq!(c.meaning(409), Some(Meaning::Ok));
        // The class replaced the default 429 = retry.
        assert_eq!(c.meaning(429), Some(Meaning::Fail));
        assert_eq!(c.meaning(503), Some(Meaning::Info));
        assert_eq!(c.meaning(302), None);
        let e = Codes::new(&TABLE, &BTreeMap::from([("200".into(), "retry".into())]));
        assert_eq!(
            e.unwrap_err(),
            "`retry` is no meaning of this request; one of \"ok\", \"fail\""
        );
        assert!(parse_code("6xx").is_err() && parse_code("99").is_err());
    }

    #[test]
    fn tests_read_bools_or_compare() {
        let a = serde_json::json!({"accepted": true, "s": "created", "n": 1});
        assert_eq!(Test::parse("/accepted").unwrap().eval(&a), Some(true));
        assert_eq!(Test::parse("/s == created").unwrap().eval(&a), Some(true));
        assert_eq!(Test::parse("/s == dup").unwrap().eval(&a), Some(false));
        assert_eq!(Test::parse("/n == 1").unwrap().eval(&a), Some(true));
        assert_eq!(Test::parse("/missing").unwrap().eval(&a), None);
        assert_eq!(Test::parse("/n").unwrap().eval(&a), None);
        assert!(Test::parse("accepted").is_err());
        assert!(Test::parse("/outcome = stored").unwrap_err().contains("=="));
        assert!(parse_request("POST /v1/events").is_ok());
        assert!(parse_request("FETCH /x").is_err());
        assert!(parse_request("POST v1").is_err());
    }
}
