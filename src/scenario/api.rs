//! `[api]` and `[audit]`: how the bench speaks to a service with an API of
//! its own (request templates, answer pointers, status meanings; groups'
//! ingest, resolve and lookup, the outbox's handle), and where the audit
//! reads the final tables from (the contract's export, or the service's
//! own SQLite database through `export.*` queries).
//!
//! Every key defaults to the HTTP contract (`http-contract.md`, version 1):
//! a scenario without `[api]` speaks the contract, and `[api]` changes only
//! what it names. An empty pointer (`accepted = ""`) says "the answer does
//! not tell", which the history then records as an `ok` whose value is
//! unknown.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[api]`: how requests are made and answers read. Default: the contract.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct Api {
    /// `METHOD PATH` whose 2xx answer means ready (default `GET /healthz`).
    pub health: String,
    /// Headers of every request; `${NAME}` reads environment variable NAME.
    pub headers: BTreeMap<String, String>,
    /// Where the service's group ids come from (default: its answers).
    pub group_ids: GroupIds,
    /// The value of `{release}` (default `specstorm@1`).
    pub release: String,
    /// `[api.ingest]`.
    pub ingest: IngestMap,
    /// `[api.resolve]`.
    pub resolve: ResolveMap,
    /// `[api.lookup]`: a request that names the group id of (project,
    /// fingerprint); needed by `group_ids = "lookup"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lookup: Option<LookupMap>,
    /// `[api.handle]`: the outbox workload's delivery request (None: the
    /// contract's `POST /v1/messages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<HandleMap>,
}

impl Default for Api {
    fn default() -> Self {
        Api {
            health: "GET /healthz".into(),
            headers: BTreeMap::new(),
            group_ids: GroupIds::Answer,
            release: "specstorm@1".into(),
            ingest: IngestMap::default(),
            resolve: ResolveMap::default(),
            lookup: None,
            handle: None,
        }
    }
}

/// `api.group_ids`: how a resolver learns the id of a group the service
/// computed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum GroupIds {
    /// From the ingest answers (`api.ingest.group_id`).
    #[default]
    Answer,
    /// From `[api.lookup]`, asked when a resolver needs a group id it lacks.
    Lookup,
    /// From the audit database (`[audit] sqlite`, its `export.groups`
    /// query), read every 200 ms while the load runs.
    Audit,
}

/// `[api.ingest]`: one ingest attempt (or a batch of them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct IngestMap {
    /// `METHOD PATH` (default `POST /v1/events`).
    pub request: String,
    /// Headers of this request, added to `api.headers`.
    pub headers: BTreeMap<String, String>,
    /// The body of one event (JSON template; default the contract's).
    pub body: String,
    /// Events per request (default 1); above 1 needs `envelope` and `items`.
    pub batch: u32,
    /// The body of a request holding several events: `{items}` is their
    /// bodies joined by ",". Empty: the event's body alone.
    pub envelope: String,
    /// Pointer to the array of per-event answers; empty: the answer is the
    /// event's own.
    pub items: String,
    /// Pointer, in each item, to the event id it answers: items are then
    /// matched by id; empty: by position (the service answers in request
    /// order).
    pub item_id: String,
    /// Pointer to accepted (a bool), or `POINTER == VALUE`; empty: the
    /// answer does not say accepted or duplicate.
    pub accepted: String,
    /// With `accepted = "POINTER == VALUE"`, the test a duplicate's answer
    /// passes (`"/status == duplicate"`): an answer that passes neither
    /// (or both) is not the mapping's. Empty: not named (required with an
    /// `==` accepted before a run sends anything).
    pub duplicate: String,
    /// Pointer to the group id the service named; empty: not in the answer.
    pub group_id: String,
    /// Status code (`"201"`) or class (`"2xx"`) to meaning, over the defaults.
    pub codes: BTreeMap<String, String>,
    /// The service may answer ok and yet drop the event (caps, sampling):
    /// an ok that says accepted is then no proof the event is stored.
    pub may_drop: bool,
}

impl Default for IngestMap {
    fn default() -> Self {
        IngestMap {
            request: "POST /v1/events".into(),
            headers: BTreeMap::new(),
            body: r#"{"id": "{event_id}", "project": "{project}", "fingerprint": "{fingerprint}", "message": "{message}"}"#.into(),
            batch: 1,
            envelope: String::new(),
            items: String::new(),
            item_id: String::new(),
            accepted: "/accepted".into(),
            duplicate: String::new(),
            group_id: "/group_id".into(),
            codes: BTreeMap::new(),
            may_drop: false,
        }
    }
}

/// `[api.resolve]`: one resolve.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct ResolveMap {
    /// `METHOD PATH` (default `POST /v1/groups/{group_id}/resolve`).
    pub request: String,
    /// Headers of this request, added to `api.headers`.
    pub headers: BTreeMap<String, String>,
    /// The body (JSON template); empty: no body.
    pub body: String,
    /// Pointer to a bool: true on a resolve, false on a refusal; empty:
    /// the status code alone says.
    pub resolved: String,
    /// Pointer to the count the resolve returned (or a refusal's probe
    /// read); empty: not in the answer (NoMissedRegression then cannot
    /// judge the service).
    pub event_count: String,
    /// Pointer to the status a refusal's probe read; empty: not in the answer.
    pub status: String,
    /// Status code or class to meaning, over the defaults.
    pub codes: BTreeMap<String, String>,
}

impl Default for ResolveMap {
    fn default() -> Self {
        ResolveMap {
            request: "POST /v1/groups/{group_id}/resolve".into(),
            headers: BTreeMap::new(),
            body: String::new(),
            resolved: "/resolved".into(),
            event_count: "/event_count".into(),
            status: "/status".into(),
            codes: BTreeMap::new(),
        }
    }
}

/// `[api.lookup]`: asks the service for the group id of (project, fingerprint).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct LookupMap {
    /// `METHOD PATH`, e.g. `GET /groups?project={project}&fingerprint={fingerprint}`.
    pub request: String,
    /// Headers of this request, added to `api.headers`.
    pub headers: BTreeMap<String, String>,
    /// Pointer to the group id in the answer.
    pub group_id: String,
    /// Status code or class to meaning (`ok`, `missing`), over the defaults
    /// (200 ok, 404 missing).
    pub codes: BTreeMap<String, String>,
}

impl Default for LookupMap {
    fn default() -> Self {
        LookupMap {
            request: String::new(),
            headers: BTreeMap::new(),
            group_id: "/id".into(),
            codes: BTreeMap::new(),
        }
    }
}

/// `[api.handle]`: one delivery attempt of the outbox workload (one
/// message id, one duplicate number).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct HandleMap {
    /// `METHOD PATH` (default `POST /v1/messages`).
    pub request: String,
    /// Headers of this request, added to `api.headers`.
    pub headers: BTreeMap<String, String>,
    /// The body (JSON template; default the contract's); empty: no body.
    pub body: String,
    /// A test an `ok` answer must pass (the delivery was handled through
    /// its ack); empty: the status code alone says.
    pub acked: String,
    /// Pointer to the message id the attempt published; empty: not in
    /// the answer (with `sent_ver`: both or neither).
    pub sent_msg_id: String,
    /// Pointer to the version the attempt published.
    pub sent_ver: String,
    /// Status code or class to meaning, over the defaults.
    pub codes: BTreeMap<String, String>,
}

/// The contract's delivery body.
pub const CONTRACT_HANDLE_BODY: &str = r#"{"id": {msg_id}, "dup": {dup_id}}"#;

impl Default for HandleMap {
    fn default() -> Self {
        HandleMap {
            request: "POST /v1/messages".into(),
            headers: BTreeMap::new(),
            body: CONTRACT_HANDLE_BODY.into(),
            acked: "/acked".into(),
            sent_msg_id: "/sent/msg_id".into(),
            sent_ver: "/sent/ver".into(),
            codes: BTreeMap::new(),
        }
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
    /// `export.events` and `export.groups` (outbox: `export.state_log`,
    /// `export.outbox`, `export.out_queue`, `export.processed`): queries
    /// that map the service's schema onto the canonical tables
    /// (statement-file convention).
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
    /// It happened; ingest: accepted as the `accepted` pointer says.
    Ok,
    /// Ingest: accepted and counted, whatever the body says.
    Accepted,
    /// Ingest: a repeated event id, not counted.
    Duplicate,
    /// Resolve: refused (the group was not open or regressed); a probe.
    Refused,
    /// Resolve or lookup: no such group.
    Missing,
    /// Certainly not applied.
    Fail,
    /// Indeterminate.
    Info,
    /// Not applied; send again after `Retry-After` (429).
    Retry,
}

/// The request kinds and the meanings each may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// `[api.ingest]`.
    Ingest,
    /// `[api.resolve]`.
    Resolve,
    /// `[api.lookup]`.
    Lookup,
    /// `[api.handle]` (outbox).
    Handle,
}

impl RequestKind {
    /// The meanings a code of this request may have, by name.
    pub fn meanings(self) -> &'static [(&'static str, Meaning)] {
        match self {
            RequestKind::Ingest => &[
                ("ok", Meaning::Ok),
                ("accepted", Meaning::Accepted),
                ("duplicate", Meaning::Duplicate),
                ("fail", Meaning::Fail),
                ("info", Meaning::Info),
                ("retry", Meaning::Retry),
            ],
            RequestKind::Resolve => &[
                ("ok", Meaning::Ok),
                ("refused", Meaning::Refused),
                ("missing", Meaning::Missing),
                ("fail", Meaning::Fail),
                ("info", Meaning::Info),
                ("retry", Meaning::Retry),
            ],
            RequestKind::Lookup => &[
                ("ok", Meaning::Ok),
                ("missing", Meaning::Missing),
                ("info", Meaning::Info),
            ],
            RequestKind::Handle => &[
                ("ok", Meaning::Ok),
                ("fail", Meaning::Fail),
                ("info", Meaning::Info),
                ("retry", Meaning::Retry),
            ],
        }
    }

    /// The contract's meanings (http-contract.md, "How the bench reads
    /// answers"); 5xx is `info` for every kind.
    fn defaults(self) -> &'static [(u16, Meaning)] {
        match self {
            RequestKind::Ingest => &[
                (200, Meaning::Ok),
                (400, Meaning::Fail),
                (413, Meaning::Fail),
                (422, Meaning::Fail),
                (429, Meaning::Retry),
            ],
            RequestKind::Resolve => &[
                (200, Meaning::Ok),
                (409, Meaning::Refused),
                (404, Meaning::Missing),
                (400, Meaning::Fail),
                (413, Meaning::Fail),
                (422, Meaning::Fail),
                (429, Meaning::Retry),
            ],
            RequestKind::Lookup => &[(200, Meaning::Ok), (404, Meaning::Missing)],
            RequestKind::Handle => &[
                (200, Meaning::Ok),
                (400, Meaning::Fail),
                (413, Meaning::Fail),
                (422, Meaning::Fail),
                (429, Meaning::Retry),
            ],
        }
    }
}

/// Status code to meaning for one request kind: the defaults, then the
/// scenario's classes (`"2xx"`), then its exact codes. None: not a
/// meaning the service's answers were mapped to (non-conforming).
#[derive(Debug, Clone)]
pub struct Codes {
    exact: BTreeMap<u16, Meaning>,
    classes: BTreeMap<u16, Meaning>,
}

impl Codes {
    /// Builds the table. Errors: a key that is no status code or class, or
    /// a meaning this request kind does not have (checked by the loader
    /// first, with the line).
    pub fn new(kind: RequestKind, given: &BTreeMap<String, String>) -> Result<Codes, String> {
        let mut exact: BTreeMap<u16, Meaning> = kind.defaults().iter().copied().collect();
        let mut classes = BTreeMap::from([(5, Meaning::Info)]);
        for (code, meaning) in given {
            let m = parse_meaning(kind, meaning)?;
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

/// Parses a meaning name for `kind`.
pub fn parse_meaning(kind: RequestKind, name: &str) -> Result<Meaning, String> {
    kind.meanings()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            format!(
                "`{name}` is no meaning of this request; one of {}",
                kind.meanings()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_layer_defaults_classes_and_exact_codes() {
        let given = BTreeMap::from([
            ("201".to_string(), "accepted".to_string()),
            ("4xx".to_string(), "fail".to_string()),
            ("409".to_string(), "duplicate".to_string()),
        ]);
        let c = Codes::new(RequestKind::Ingest, &given).unwrap();
        assert_eq!(c.meaning(200), Some(Meaning::Ok));
        assert_eq!(c.meaning(201), Some(Meaning::Accepted));
        assert_eq!(c.meaning(409), Some(Meaning::Duplicate));
        // The class replaced the default 429 = retry.
        assert_eq!(c.meaning(429), Some(Meaning::Fail));
        assert_eq!(c.meaning(503), Some(Meaning::Info));
        assert_eq!(c.meaning(302), None);
        let d = Codes::new(RequestKind::Resolve, &BTreeMap::new()).unwrap();
        assert_eq!(d.meaning(409), Some(Meaning::Refused));
        assert_eq!(d.meaning(404), Some(Meaning::Missing));
        assert!(Codes::new(
            RequestKind::Lookup,
            &BTreeMap::from([("200".into(), "duplicate".into())])
        )
        .is_err());
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
