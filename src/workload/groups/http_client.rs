//! The groups workload's requests to an HTTP target: ingest (one event or
//! a batch of them), resolve and lookup, each built from the scenario's
//! `[api]` mapping (the contract's by default) and sent through the
//! target's generic client ([`HttpClient::send`]), and the answer read
//! into the op's completion as the contract's "How the bench reads
//! answers" says (or as the mapping's `items`, `accepted`, `group_id`,
//! `resolved`, `event_count` and `status` say): accepted or duplicate,
//! the group id the service named, the resolve's count or its refusal
//! with a probe, the items of a batch matched to its events.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::history::{CompletionType, OpResult};
use crate::scenario::api::Meaning;
use crate::target::http::client::{
    by_meaning, excerpt, now_ms, Answer, HookReport, HttpClient, Tag,
};
use crate::target::http::template::Vars;
use crate::workload::groups::api_compile::{GroupsRequests, IngestMapping};

/// One event of an ingest request, as the workload describes it: what
/// `[api.ingest]`'s templates fill in, borrowed from the workload's op
/// (nothing is copied per request but the text sent).
#[derive(Debug, Clone, Copy)]
pub struct IngestEvent<'a> {
    /// `{event_id}`, which the answer's items name the event by
    /// (`api.ingest.item_id`).
    pub event_id: &'a str,
    /// `{project}`.
    pub project: &'a str,
    /// `{fingerprint}`.
    pub fingerprint: &'a str,
    /// `{message}`.
    pub message: &'a str,
}

/// One ingest attempt (`[api.ingest]`, default `POST /v1/events`).
/// `tag` (None outside a run) names the op to the fault proxy and
/// carries the fault hook.
pub async fn ingest(client: &HttpClient, op: IngestEvent<'_>, tag: Option<&Tag>) -> Answer {
    ingest_batch(client, &[op], tag)
        .await
        .pop()
        .expect("one answer per op")
}

/// One request carrying `ops` (all of one project; at most
/// `api.ingest.batch` of them): one answer per op, in order. A whole
/// request that failed, timed out or was not understood gives every op
/// the same answer.
pub async fn ingest_batch(
    client: &HttpClient,
    ops: &[IngestEvent<'_>],
    tag: Option<&Tag>,
) -> Vec<Answer> {
    ingest_answers(client, ops, tag)
        .await
        .into_iter()
        .map(|a| client.redacted(a))
        .collect()
}

async fn ingest_answers(
    client: &HttpClient,
    ops: &[IngestEvent<'_>],
    tag: Option<&Tag>,
) -> Vec<Answer> {
    let m = client.mapping();
    let g = GroupsRequests::of(m);
    let i = &g.ingest;
    let mut now = itoa::Buffer::new();
    let now = now.format(now_ms());
    // Borrowed from the ops: nothing is copied per request but the text sent.
    fn vars<'a>(
        op: &IngestEvent<'a>,
        release: &'a str,
        now: &'a str,
    ) -> [(&'static str, &'a str); 6] {
        [
            ("event_id", op.event_id),
            ("project", op.project),
            ("fingerprint", op.fingerprint),
            ("message", op.message),
            ("release", release),
            ("now_ms", now),
        ]
    }
    let vars_of = |op| vars(op, &g.release, now);
    let first = vars_of(&ops[0]);
    let body = match &i.request.body {
        // An envelope: the events' bodies joined, in the request's body.
        Some(envelope) => {
            let items: Vec<String> = ops
                .iter()
                .map(|op| i.event.render(&vars_of(op), &m.secrets))
                .collect();
            let items = items.join(",");
            let mut vars = first.to_vec();
            vars.push(("items", &items));
            envelope.render(&vars, &m.secrets)
        }
        None => i.event.render(&first, &m.secrets),
    };
    let what = i.request.what.as_str();
    let n = ops.len();
    let (status, retry_after, text) = match client
        .send(&i.request, &first, Some(body), tag, "ingest")
        .await
    {
        Ok(reply) => (reply.status, reply.retry_after, reply.body),
        // Redacted now and, like every answer, again by ingest_batch.
        Err(a) => return vec![client.redacted(a); n],
    };
    if n == 1 {
        if let Some(r) = HookReport::of(tag, status, &text) {
            return vec![r.answer(status, &text)];
        }
    }
    let meaning = i.codes.meaning(status.as_u16());
    let (accepted_by_status, ok) = match meaning {
        Some(Meaning::Accepted) => (Some(true), true),
        Some(Meaning::Duplicate) => (Some(false), true),
        Some(Meaning::Ok) => (None, true),
        _ => (None, false),
    };
    if !ok {
        return vec![by_meaning(meaning, status, &text, retry_after, what); n];
    }
    // The group id is read where the answer has it; only `items` and
    // `accepted` (when the status does not say) require a JSON body.
    let needs_body = i.items.is_some() || (accepted_by_status.is_none() && i.accepted.is_some());
    if let Some(shape) = TopLevel::of(i) {
        let members = match serde_json::from_str::<TopLevel>(&text) {
            Ok(m) => m,
            Err(_) if needs_body => return vec![Answer::nonconforming(what, status, &text); n],
            Err(_) => TopLevel::default(),
        };
        let read = shape.then(|| members.accepted());
        let group_id = members.group_id.and_then(id_owned);
        return (0..n)
            .map(|_| {
                item_answer(
                    i,
                    accepted_by_status,
                    read.clone(),
                    group_id.clone(),
                    what,
                    status,
                    &text,
                )
            })
            .collect();
    }
    let answer: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) if needs_body => return vec![Answer::nonconforming(what, status, &text); n],
        Err(_) => serde_json::Value::Null,
    };
    let items: Vec<&serde_json::Value> = match &i.items {
        None => vec![&answer; n],
        Some(p) => match answer.pointer(p).and_then(|v| v.as_array()) {
            // Matched by event id where the items carry it (a service
            // may answer in another order), else by position.
            Some(a) if a.len() == n && i.item_id.is_some() => {
                match match_items(ops, a, i.item_id.as_deref().unwrap_or_default()) {
                    Some(m) => m,
                    None => {
                        return vec![
                            Answer::nonconforming(
                                &format!(
                                    "{what} (the answers at {p} do not name the events \
                                     sent, at {})",
                                    i.item_id.as_deref().unwrap_or_default()
                                ),
                                status,
                                &text
                            );
                            n
                        ]
                    }
                }
            }
            Some(a) if a.len() == n => a.iter().collect(),
            _ => {
                return vec![
                    Answer::nonconforming(
                        &format!("{what} (expected {n} answers at {p})"),
                        status,
                        &text
                    );
                    n
                ]
            }
        },
    };
    items
        .into_iter()
        .map(|item| {
            let group_id = i
                .group_id
                .as_ref()
                .and_then(|p| item.pointer(p))
                .and_then(id_text);
            item_answer(
                i,
                accepted_by_status,
                i.read_accepted(item),
                group_id,
                what,
                status,
                &text,
            )
        })
        .collect()
}

/// The answer of one ingested event whose status was ok: `read` is what
/// its answer says through `accepted` ([`IngestMapping::read_accepted`]),
/// `group_id` the group id it names.
fn item_answer(
    i: &IngestMapping,
    accepted_by_status: Option<bool>,
    read: Option<Result<bool, String>>,
    group_id: Option<String>,
    what: &str,
    status: reqwest::StatusCode,
    text: &str,
) -> Answer {
    let (accepted, mut ambiguous) = match (accepted_by_status, read) {
        (Some(a), _) => (Some(a), None),
        (None, Some(Ok(a))) => (Some(a), None),
        (None, Some(Err(why))) => {
            return Answer::nonconforming(&format!("{what} ({why})"), status, text)
        }
        (None, None) => (
            None,
            Some("the answer does not say accepted or duplicate".to_string()),
        ),
    };
    let accepted = match accepted {
        Some(true) if i.may_drop => {
            ambiguous = Some(
                "accepted, but the service may drop an event it answers ok for \
                 (api.ingest.may_drop)"
                    .to_string(),
            );
            None
        }
        a => a,
    };
    Answer {
        group_id,
        ..Answer::new(
            CompletionType::Ok,
            OpResult {
                accepted,
                ambiguous,
                ..Default::default()
            },
        )
    }
}

/// The members `accepted` and `group_id` of an answer's top-level object
/// (the last of each name, as a parse into a `Value` keeps them): all the
/// contract's ingest answer is read for, without building a `Value` of
/// the whole answer per request. Every other member is parsed all the
/// same (into a `Value`, dropped), so an answer is refused exactly when a
/// whole parse refuses it; an answer that is no object has neither.
#[derive(Default)]
struct TopLevel {
    accepted: Option<serde_json::Value>,
    group_id: Option<serde_json::Value>,
}

impl TopLevel {
    /// Whether `i` reads only these members as a whole parse would read
    /// them (no items, `accepted` a bool at `/accepted` alone or not read,
    /// `group_id` at `/group_id` or not read): Some(whether `accepted`
    /// is read), else None.
    fn of(i: &IngestMapping) -> Option<bool> {
        let accepted = match &i.accepted {
            None => false,
            Some(t) if t.pointer == "/accepted" && t.equals.is_none() => true,
            Some(_) => return None,
        };
        let plain = i.items.is_none()
            && i.duplicate.is_none()
            && matches!(i.group_id.as_deref(), None | Some("/group_id"));
        plain.then_some(accepted)
    }

    /// [`IngestMapping::read_accepted`] of the answer, `accepted` being a
    /// bool at `/accepted`.
    fn accepted(&self) -> Result<bool, String> {
        self.accepted
            .as_ref()
            .and_then(serde_json::Value::as_bool)
            .ok_or_else(|| format!("no bool at accepted = {:?}", "/accepted"))
    }
}

impl<'de> serde::Deserialize<'de> for TopLevel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TopLevelVisitor)
    }
}

struct TopLevelVisitor;

/// A member's name, as far as [`TopLevel`] cares.
enum Member {
    Accepted,
    GroupId,
    Other,
}

impl<'de> serde::Deserialize<'de> for Member {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, v: &str) -> Result<Member, E> {
                Ok(match v {
                    "accepted" => Member::Accepted,
                    "group_id" => Member::GroupId,
                    _ => Member::Other,
                })
            }
        }
        d.deserialize_str(Name)
    }
}

impl<'de> serde::de::Visitor<'de> for TopLevelVisitor {
    type Value = TopLevel;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
        let mut m = TopLevel::default();
        while let Some(name) = map.next_key::<Member>()? {
            let v: serde_json::Value = map.next_value()?;
            match name {
                Member::Accepted => m.accepted = Some(v),
                Member::GroupId => m.group_id = Some(v),
                Member::Other => {}
            }
        }
        Ok(m)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
        while seq.next_element::<serde_json::Value>()?.is_some() {}
        Ok(TopLevel::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<TopLevel, E> {
        Ok(TopLevel::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<TopLevel, E> {
        Ok(TopLevel::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<TopLevel, E> {
        Ok(TopLevel::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<TopLevel, E> {
        Ok(TopLevel::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<TopLevel, E> {
        Ok(TopLevel::default())
    }

    fn visit_unit<E>(self) -> Result<TopLevel, E> {
        Ok(TopLevel::default())
    }
}

/// One resolve of group `group_id` (`[api.resolve]`, default `POST
/// /v1/groups/{group_id}/resolve`): ok resolved (with the count where
/// the answer gives it), refused (fail, and a probe: status and count),
/// missing (fail).
pub async fn resolve(
    client: &HttpClient,
    group_id: &str,
    project: &str,
    fingerprint: &str,
    tag: Option<&Tag>,
) -> Answer {
    let g = GroupsRequests::of(client.mapping());
    let now = now_ms().to_string();
    let vars = [
        ("group_id", group_id),
        ("project", project),
        ("fingerprint", fingerprint),
        ("release", g.release.as_str()),
        ("now_ms", now.as_str()),
    ];
    let a = resolve_answer(client, &vars, tag).await;
    client.redacted(a)
}

/// [`resolve`]'s answer before it is redacted; `vars` fill its templates.
async fn resolve_answer(client: &HttpClient, vars: &Vars<'_>, tag: Option<&Tag>) -> Answer {
    let m = client.mapping();
    let r = &GroupsRequests::of(m).resolve;
    let (status, retry_after, text) =
        match client.send(&r.request, vars, None, tag, "resolve").await {
            Ok(reply) => (reply.status, reply.retry_after, reply.body),
            Err(a) => return client.redacted(a),
        };
    if let Some(r) = HookReport::of(tag, status, &text) {
        return r.answer(status, &text);
    }
    let what = r.request.what.as_str();
    let meaning = r.codes.meaning(status.as_u16());
    let json = || serde_json::from_str::<serde_json::Value>(&text).ok();
    match meaning {
        Some(Meaning::Ok) => {
            let needs = r.resolved.is_some() || r.event_count.is_some();
            let v = if needs {
                json()
            } else {
                Some(serde_json::Value::Null)
            };
            let Some(v) = v else {
                return Answer::nonconforming(what, status, &text);
            };
            if let Some(t) = &r.resolved {
                if t.eval(&v) != Some(true) {
                    return Answer::nonconforming(
                        &format!("{what} (resolved = {:?} is not true)", t.pointer),
                        status,
                        &text,
                    );
                }
            }
            let (event_count, ambiguous) = match &r.event_count {
                Some(p) => match v.pointer(p).and_then(serde_json::Value::as_i64) {
                    Some(c) => (Some(c), None),
                    None => {
                        return Answer::nonconforming(
                            &format!("{what} (no integer at event_count = {p:?})"),
                            status,
                            &text,
                        )
                    }
                },
                None => (
                    None,
                    Some("the answer does not give the count the resolve saw".to_string()),
                ),
            };
            Answer::new(
                CompletionType::Ok,
                OpResult {
                    resolved: Some(true),
                    event_count,
                    ambiguous,
                    ..Default::default()
                },
            )
        }
        Some(Meaning::Refused) => {
            let refused = |status_read: Option<String>, count: Option<i64>| {
                Answer::new(
                    CompletionType::Fail,
                    OpResult {
                        resolved: Some(false),
                        status: status_read,
                        event_count: count,
                        ..Default::default()
                    },
                )
            };
            // Refused all the same, but no probe can be taken from it.
            let unreadable = || Answer {
                kind: CompletionType::Fail,
                ..Answer::nonconforming(what, status, &text)
            };
            if r.resolved.is_none() && r.status.is_none() && r.event_count.is_none() {
                return refused(None, None);
            }
            let Some(v) = json() else {
                return unreadable();
            };
            if let Some(t) = &r.resolved {
                if t.eval(&v) != Some(false) {
                    return unreadable();
                }
            }
            // The contract's refusal without a probe (the service's
            // design read none): neither field is there.
            if m.contract && v.get("status").is_none() && v.get("event_count").is_none() {
                return refused(None, None);
            }
            let status_read = match &r.status {
                Some(p) => match v.pointer(p).and_then(|s| s.as_str()) {
                    Some(s) => Some(s.to_string()),
                    None => return unreadable(),
                },
                None => None,
            };
            let count = match &r.event_count {
                Some(p) => match v.pointer(p).and_then(serde_json::Value::as_i64) {
                    Some(c) => Some(c),
                    None => return unreadable(),
                },
                None => None,
            };
            refused(status_read, count)
        }
        Some(Meaning::Missing) => Answer::new(
            CompletionType::Fail,
            OpResult {
                resolved: Some(false),
                ..Default::default()
            },
        ),
        other => by_meaning(other, status, &text, retry_after, what),
    }
}

/// `[api.lookup]`: the group id the service gave (project,
/// fingerprint), None while it has none. Errors: no lookup configured,
/// no answer, or an answer that is not the mapping's.
pub async fn lookup(
    client: &HttpClient,
    project: &str,
    fingerprint: &str,
) -> Result<Option<String>, String> {
    let m = client.mapping();
    let g = GroupsRequests::of(m);
    let l = g.lookup.as_ref().ok_or("no [api.lookup] is configured")?;
    let now = now_ms().to_string();
    let vars = [
        ("project", project),
        ("fingerprint", fingerprint),
        ("release", g.release.as_str()),
        ("now_ms", now.as_str()),
    ];
    // A lookup that got no answer, or an indeterminate one, is asked
    // again later: only an answer that is not the mapping's is an error.
    // Untagged: a lookup is not an op of the history.
    let Ok(reply) = client.send(&l.request, &vars, None, None, "lookup").await else {
        return Ok(None);
    };
    let (status, text) = (reply.status, reply.body);
    match l.codes.meaning(status.as_u16()) {
        Some(Meaning::Info) => Ok(None),
        Some(Meaning::Ok) => serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.pointer(&l.group_id).and_then(id_text))
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "{}: {status} {} has no group id at {}",
                    l.request.what,
                    excerpt(&text),
                    l.group_id
                )
            }),
        Some(Meaning::Missing) => Ok(None),
        _ => Err(format!("{}: {status} {}", l.request.what, excerpt(&text))),
    }
    .map_err(|e| client.redact(&e))
}

/// The item of each op, matched by the event id at `pointer` in the items
/// (the k-th op of an id takes the k-th item of that id: a retry in the
/// same envelope). None when an op has no item of its id.
fn match_items<'a>(
    ops: &[IngestEvent<'_>],
    items: &'a [serde_json::Value],
    pointer: &str,
) -> Option<Vec<&'a serde_json::Value>> {
    let mut used = vec![false; items.len()];
    ops.iter()
        .map(|op| {
            let k = items.iter().enumerate().position(|(k, it)| {
                !used[k]
                    && it.pointer(pointer).and_then(serde_json::Value::as_str) == Some(op.event_id)
            })?;
            used[k] = true;
            Some(&items[k])
        })
        .collect()
}

/// [`id_text`] of a value owned: its string moved, not copied.
fn id_owned(v: serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if !s.is_empty() => Some(s),
        v => id_text(&v),
    }
}

/// A group id as text: a string as is, a number in decimal.
fn id_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(id: &str) -> IngestEvent<'_> {
        IngestEvent {
            event_id: id,
            project: "p",
            fingerprint: "f",
            message: "",
        }
    }

    /// What the whole-Value way reads of `body`: whether it parsed, the
    /// accepted read and the group id.
    type Read = (bool, Option<Result<bool, String>>, Option<String>);

    fn whole(i: &IngestMapping, body: &str) -> Read {
        match serde_json::from_str::<serde_json::Value>(body) {
            Ok(v) => (
                true,
                i.read_accepted(&v),
                i.group_id
                    .as_ref()
                    .and_then(|p| v.pointer(p))
                    .and_then(id_text),
            ),
            Err(_) => (false, None, None),
        }
    }

    fn typed(i: &IngestMapping, body: &str) -> Read {
        let shape = TopLevel::of(i).expect("the contract's ingest reads the top level");
        match serde_json::from_str::<TopLevel>(body) {
            Ok(m) => (
                true,
                shape.then(|| m.accepted()),
                m.group_id.and_then(id_owned),
            ),
            Err(_) => (false, None, None),
        }
    }

    #[test]
    fn the_contract_answer_reads_as_a_whole_parse_reads_it() {
        let m = crate::scenario::mapping::Mapping::contract();
        let i = &GroupsRequests::of(&m).ingest;
        let deep = format!("{{\"x\": {}1{}}}", "[".repeat(200), "]".repeat(200));
        let bodies = [
            r#"{"accepted": true, "group_id": "g:p0:fp1"}"#,
            r#"{"accepted": false, "group_id": "g"}"#,
            r#"{"group_id": 42, "accepted": true, "other": {"a": [1, 2.5, null]}}"#,
            r#"{"accepted": true, "accepted": false, "group_id": "a", "group_id": "b"}"#,
            r#"{"acc\u0065pted": true, "group_\u0069d": "esc"}"#,
            r#"{"accepted": "yes", "group_id": ""}"#,
            r#"{"accepted": 1, "group_id": [1]}"#,
            r#"{"group_id": -7.5}"#,
            r#"{"accepted": true, "x": 1e400}"#,
            r#"{}"#,
            r#"[{"accepted": true}]"#,
            r#""text""#,
            "true",
            "12",
            "-3.5",
            "null",
            "",
            "{",
            r#"{"accepted": true} trailing"#,
            r#"{"accepted": true, "group_id": "g"}   "#,
            deep.as_str(),
        ];
        for b in bodies {
            assert_eq!(typed(i, b), whole(i, b), "{b}");
        }
        // Both ways refuse a number out of range and a nesting too deep,
        // also in members they do not read.
        assert!(!whole(i, bodies[8]).0);
        assert!(!whole(i, &deep).0);
    }

    #[test]
    fn items_are_matched_by_event_id_whatever_their_order() {
        let (a, b) = (op("a"), op("b"));
        // b's retry in the same envelope: the k-th op of an id takes the
        // k-th item of that id.
        let ops = [a, b, b];
        let items = serde_json::json!([
            {"eid": "b", "s": "new"},
            {"eid": "a", "s": "dup"},
            {"eid": "b", "s": "dup"}
        ]);
        let items = items.as_array().unwrap();
        let m = match_items(&ops, items, "/eid").unwrap();
        let s: Vec<&str> = m.iter().map(|i| i["s"].as_str().unwrap()).collect();
        assert_eq!(s, ["dup", "new", "dup"]);
        // An op without an item of its id: the answer is not usable.
        let c = op("c");
        assert!(match_items(&[a, c, b], items, "/eid").is_none());
    }
}
