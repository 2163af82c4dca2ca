//! Groups' own requests of `[api]`: where group ids come from
//! (`group_ids`), `{release}`, and the ingest, resolve and lookup
//! requests (`[api.ingest]`, `[api.resolve]`, `[api.lookup]`), each with
//! the contract's defaults (`http-contract.md`) and the meanings its
//! status codes may have. The loader reads them through the registry
//! (`requests` of groups' sections, `super::config`); compiled in
//! [`super::api_compile`].
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use crate::scenario::api::{CodeTable, Meaning, CONTRACT_WRITE_CODES};
use crate::scenario::part::Section;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Groups' part of `[api]`, written after its common keys in this order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct GroupsApi {
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
}

impl Default for GroupsApi {
    fn default() -> Self {
        GroupsApi {
            group_ids: GroupIds::Answer,
            release: "specstorm@1".into(),
            ingest: IngestMap::default(),
            resolve: ResolveMap::default(),
            lookup: None,
        }
    }
}

impl Section for GroupsApi {
    /// Written inside `[api]`.
    const TABLE: &'static str = "api";
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

/// `[api.ingest]`'s meanings and the contract's codes.
pub const INGEST_CODES: CodeTable = CodeTable {
    meanings: &[
        ("ok", Meaning::Ok),
        ("accepted", Meaning::Accepted),
        ("duplicate", Meaning::Duplicate),
        ("fail", Meaning::Fail),
        ("info", Meaning::Info),
        ("retry", Meaning::Retry),
    ],
    defaults: CONTRACT_WRITE_CODES,
};

/// `[api.resolve]`'s meanings and the contract's codes.
pub const RESOLVE_CODES: CodeTable = CodeTable {
    meanings: &[
        ("ok", Meaning::Ok),
        ("refused", Meaning::Refused),
        ("missing", Meaning::Missing),
        ("fail", Meaning::Fail),
        ("info", Meaning::Info),
        ("retry", Meaning::Retry),
    ],
    defaults: &[
        (200, Meaning::Ok),
        (409, Meaning::Refused),
        (404, Meaning::Missing),
        (400, Meaning::Fail),
        (413, Meaning::Fail),
        (422, Meaning::Fail),
        (429, Meaning::Retry),
    ],
};

/// `[api.lookup]`'s meanings and the contract's codes.
pub const LOOKUP_CODES: CodeTable = CodeTable {
    meanings: &[
        ("ok", Meaning::Ok),
        ("missing", Meaning::Missing),
        ("info", Meaning::Info),
    ],
    defaults: &[(200, Meaning::Ok), (404, Meaning::Missing)],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::api::{parse_code, Codes};

    #[test]
    fn codes_layer_defaults_classes_and_exact_codes() {
        let given = BTreeMap::from([
            ("201".to_string(), "accepted".to_string()),
            ("4xx".to_string(), "fail".to_string()),
            ("409".to_string(), "duplicate".to_string()),
        ]);
        let c = Codes::new(&INGEST_CODES, &given).unwrap();
        assert_eq!(c.meaning(200), Some(Meaning::Ok));
        assert_eq!(c.meaning(201), Some(Meaning::Accepted));
        assert_eq!(c.meaning(409), Some(Meaning::Duplicate));
        // The class replaced the default 429 = retry.
        assert_eq!(c.meaning(429), Some(Meaning::Fail));
        assert_eq!(c.meaning(503), Some(Meaning::Info));
        assert_eq!(c.meaning(302), None);
        let d = Codes::new(&RESOLVE_CODES, &BTreeMap::new()).unwrap();
        assert_eq!(d.meaning(409), Some(Meaning::Refused));
        assert_eq!(d.meaning(404), Some(Meaning::Missing));
        assert!(Codes::new(
            &LOOKUP_CODES,
            &BTreeMap::from([("200".into(), "duplicate".into())])
        )
        .is_err());
        assert!(parse_code("6xx").is_err() && parse_code("99").is_err());
    }
}
