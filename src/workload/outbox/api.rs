//! The outbox's own request of `[api]`: `[api.handle]`, its delivery
//! request (one message id, one duplicate number), the meanings its
//! status codes may have, and its compiled form ([`HandleMapping`]: how
//! its `ok` answer is read, `acked` and what was published). The
//! contract's `POST /v1/messages` when `[api.handle]` is not given. The
//! loader and the mapping compiler reach it through the registry
//! (`requests` of the outbox's sections, `super::config`); read by the
//! HTTP client's `handle`.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use crate::scenario::api::{CodeTable, Codes, Meaning, Test, CONTRACT_WRITE_CODES};
use crate::scenario::mapping::request_template::{compile_request, pointer, test};
use crate::scenario::mapping::requests::{at, CompileContext, Headers, MappingError, Requests};
use crate::scenario::mapping::template::{Escape, Template};
use crate::scenario::mapping::{Mapping, RequestTemplate};
use crate::scenario::part::{Part, Section};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The outbox's part of `[api]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct OutboxApi {
    /// `[api.handle]`: the outbox workload's delivery request (None: the
    /// contract's `POST /v1/messages`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handle: Option<HandleMap>,
}

impl Section for OutboxApi {
    /// Written inside `[api]`.
    const TABLE: &'static str = "api";
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

/// `[api.handle]`'s meanings and the contract's codes.
pub const HANDLE_CODES: CodeTable = CodeTable {
    meanings: &[
        ("ok", Meaning::Ok),
        ("fail", Meaning::Fail),
        ("info", Meaning::Info),
        ("retry", Meaning::Retry),
    ],
    defaults: CONTRACT_WRITE_CODES,
};

/// The placeholders of the delivery request: the delivery, and the clock.
pub const HANDLE_VARS: &[&str] = &["msg_id", "dup_id", "now_ms"];

/// `[api.handle]` compiled.
#[derive(Debug, Clone)]
pub struct HandleMapping {
    /// Method, path, headers, body.
    pub request: RequestTemplate,
    /// The test an `ok` answer passes (None: the status alone says).
    pub acked: Option<Test>,
    /// Pointers to the published message id and version (None: the
    /// answer does not say what was published).
    pub sent: Option<(String, String)>,
    /// Status meanings.
    pub codes: Codes,
}

/// Compiles `handle` (None: the contract's) with the common headers.
/// Errors: a template, pointer, test or code that cannot be used, or only
/// one of `sent_msg_id` and `sent_ver`, with its key path.
pub fn compile(
    handle: Option<&HandleMap>,
    common: &Headers,
) -> Result<HandleMapping, MappingError> {
    let h = handle.cloned().unwrap_or_default();
    let mut request = compile_request(
        &["api", "handle", "request"],
        &h.request,
        HANDLE_VARS,
        common,
        &["api", "handle", "headers"],
        &h.headers,
    )?;
    if !h.body.is_empty() {
        request.body = Some(
            Template::parse(&h.body, HANDLE_VARS, Escape::Json)
                .map_err(|e| at(&["api", "handle", "body"], e))?,
        );
    }
    let sent = match (
        pointer(&["api", "handle", "sent_msg_id"], &h.sent_msg_id)?,
        pointer(&["api", "handle", "sent_ver"], &h.sent_ver)?,
    ) {
        (Some(m), Some(v)) => Some((m, v)),
        (None, None) => None,
        (m, _) => {
            let (given, missing) = if m.is_some() {
                ("sent_msg_id", "sent_ver")
            } else {
                ("sent_ver", "sent_msg_id")
            };
            return Err(at(
                &["api", "handle", missing],
                format!(
                    "`{given}` needs `{missing}` too: what was published is a (message id, \
                     version) pair, or leave both \"\" (the answer does not say)"
                ),
            ));
        }
    };
    Ok(HandleMapping {
        request,
        acked: test(&["api", "handle", "acked"], &h.acked)?,
        sent,
        codes: Codes::new(&HANDLE_CODES, &h.codes)
            .map_err(|e| at(&["api", "handle", "codes"], e))?,
    })
}

/// Compiles the outbox's part of `[api]`: what the registry's
/// `requests.compile` is.
pub fn compile_part(
    part: &dyn Part,
    ctx: &CompileContext<'_>,
) -> Result<Arc<dyn Requests>, MappingError> {
    let api = part
        .as_any()
        .downcast_ref::<OutboxApi>()
        .expect("the outbox's part of [api] is an OutboxApi");
    Ok(Arc::new(compile(api.handle.as_ref(), ctx.common)?))
}

/// The outbox's keys that may hold a `${NAME}`, with their texts.
pub fn secret_keys(part: &dyn Part) -> Vec<(&'static [&'static str], Vec<String>)> {
    let handle = part
        .as_any()
        .downcast_ref::<OutboxApi>()
        .and_then(|a| a.handle.clone())
        .unwrap_or_default();
    vec![
        (&["api", "handle", "request"], vec![handle.request.clone()]),
        (
            &["api", "handle", "headers"],
            handle.headers.values().cloned().collect(),
        ),
        (&["api", "handle", "body"], vec![handle.body.clone()]),
    ]
}

impl Requests for HandleMapping {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn secrets(&self) -> Vec<&str> {
        self.request.secrets().collect()
    }
}

impl HandleMapping {
    /// The outbox's delivery request of `mapping` (every mapping compiles
    /// it).
    pub fn of(mapping: &Mapping) -> &HandleMapping {
        mapping
            .requests::<HandleMapping>()
            .expect("every mapping compiles the outbox's request")
    }

    /// What an answer whose status means `ok` says: the (message id,
    /// version) the attempt published, if the answer names one. Errors
    /// (the answer is not the mapping's): `acked` does not hold, or what
    /// was published is not two integers (both absent or null: nothing
    /// published, or not said).
    pub fn read_ok(&self, body: &str) -> Result<Option<[i64; 2]>, String> {
        let json: Option<Value> = serde_json::from_str(body).ok();
        if let Some(t) = &self.acked {
            match json.as_ref().map(|v| t.eval(v)) {
                Some(Some(true)) => {}
                _ => return Err(format!("acked `{}` does not hold", t.text())),
            }
        }
        let (Some((m, v)), Some(json)) = (&self.sent, &json) else {
            return Ok(None);
        };
        match (int_at(json, m)?, int_at(json, v)?) {
            (Some(m), Some(v)) => Ok(Some([m, v])),
            (None, None) => Ok(None),
            _ => Err(format!("only one of {m} and {v} is given")),
        }
    }
}

/// The integer at `pointer`: None when it is null or absent (its nearest
/// present parent an object, an array or null). Errors: a value there
/// that is no integer, or a parent that is a plain value (`"sent": 5`),
/// whose fields cannot be absent, only malformed.
fn int_at(json: &Value, pointer: &str) -> Result<Option<i64>, String> {
    let bad = |v: &Value| Err(format!("{pointer} is no integer: {v}"));
    match json.pointer(pointer) {
        Some(Value::Null) => return Ok(None),
        Some(v) => return v.as_i64().map(Some).map_or_else(|| bad(v), Ok),
        None => {}
    }
    let mut p = pointer;
    while let Some(i) = p.rfind('/') {
        p = &p[..i];
        let parent = if p.is_empty() {
            Some(json)
        } else {
            json.pointer(p)
        };
        match parent {
            None => continue,
            Some(Value::Object(_) | Value::Array(_) | Value::Null) => return Ok(None),
            Some(v) => return bad(v),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn contract() -> HandleMapping {
        compile(None, &Vec::new()).unwrap()
    }

    #[test]
    fn the_contract_reads_as_the_contract_says() {
        let h = contract();
        assert_eq!(h.request.what, "POST /v1/messages");
        let body = h
            .request
            .body
            .as_ref()
            .unwrap()
            .render(&[("msg_id", "7"), ("dup_id", "2")], &Default::default());
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            json!({"id": 7, "dup": 2})
        );
        let read = |v: Value| h.read_ok(&v.to_string());
        assert_eq!(
            read(json!({"acked": true, "sent": {"msg_id": 7, "ver": 41}})),
            Ok(Some([7, 41]))
        );
        assert_eq!(read(json!({"acked": true, "sent": null})), Ok(None));
        assert_eq!(read(json!({"acked": true})), Ok(None));
        // Not the contract's: every shape its reader refused before.
        for bad in [
            json!({"acked": false}),
            json!({"acked": "yes"}),
            json!({"ok": 1}),
            json!({"acked": true, "sent": {"msg_id": 7}}),
            json!({"acked": true, "sent": {"msg_id": "7", "ver": 1}}),
            json!({"acked": true, "sent": {"msg_id": 7, "ver": 0.5}}),
            json!({"acked": true, "sent": 5}),
            json!({"acked": true, "sent": "x"}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
        assert!(h.read_ok("not json").is_err());
        assert_eq!(h.codes.meaning(200), Some(Meaning::Ok));
        assert_eq!(h.codes.meaning(422), Some(Meaning::Fail));
        assert_eq!(h.codes.meaning(429), Some(Meaning::Retry));
        assert_eq!(h.codes.meaning(503), Some(Meaning::Info));
        assert_eq!(h.codes.meaning(409), None);
    }

    #[test]
    fn a_mapping_renames_and_refuses_what_it_cannot_read() {
        let mut m = HandleMap {
            request: "PUT /inbox/{msg_id}/deliveries/{dup_id}".into(),
            body: r#"{"at": {now_ms}}"#.into(),
            acked: "/result/state == handled".into(),
            sent_msg_id: "/result/published/message".into(),
            sent_ver: "/result/published/version".into(),
            codes: [("201".into(), "ok".into()), ("409".into(), "fail".into())].into(),
            ..Default::default()
        };
        let h = compile(Some(&m), &Vec::new()).unwrap();
        assert_eq!(
            h.request
                .path
                .render(&[("msg_id", "7"), ("dup_id", "2")], &Default::default()),
            "/inbox/7/deliveries/2"
        );
        assert_eq!(h.codes.meaning(409), Some(Meaning::Fail));
        let ok = json!({"result": {"state": "handled", "published": {"message": 7, "version": 3}}});
        assert_eq!(h.read_ok(&ok.to_string()), Ok(Some([7, 3])));
        let quiet = json!({"result": {"state": "handled", "published": null}});
        assert_eq!(h.read_ok(&quiet.to_string()), Ok(None));
        let other = json!({"result": {"state": "queued"}});
        assert!(h.read_ok(&other.to_string()).is_err());
        // The status alone may say: no body needed.
        m.acked = String::new();
        m.sent_msg_id = String::new();
        m.sent_ver = String::new();
        let h = compile(Some(&m), &Vec::new()).unwrap();
        assert_eq!(h.read_ok(""), Ok(None));
        // One pointer of the pair alone, a placeholder of groups, a
        // meaning of groups: refused with their keys.
        m.sent_ver = "/v".into();
        assert_eq!(
            compile(Some(&m), &Vec::new()).unwrap_err().path,
            ["api", "handle", "sent_msg_id"]
        );
        m.sent_ver = String::new();
        m.request = "POST /m/{event_id}".into();
        assert_eq!(
            compile(Some(&m), &Vec::new()).unwrap_err().path,
            ["api", "handle", "request"]
        );
        m.request = "POST /m".into();
        m.codes = [("201".into(), "accepted".into())].into();
        assert_eq!(
            compile(Some(&m), &Vec::new()).unwrap_err().path,
            ["api", "handle", "codes"]
        );
    }
}
