//! The HTTP client target: one request per op, against any service that
//! speaks the contract (`docs/http-contract.md`, version 1).
//! Answers become Jepsen completions exactly as the contract's "How the
//! bench reads answers" says; an answer that is not the contract's shape is
//! `info` and is reported as non-conforming, with an example.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::mapping::{Mapping, RequestTemplate};
use super::template::Vars;
use super::tls::{client_builder, Tls};
use crate::fault_hook::{FAULT_HEADER, F_HEADER, KEY_HEADER, OP_HEADER};
use crate::history::{CompletionType, HookStep, OpResult};
use crate::scenario::api::Meaning;
use crate::workload::attempt_end::AttemptEnd;
use crate::workload::groups::api_compile::GroupsRequests;
use crate::workload::outbox::api::HandleMapping;
use reqwest::{Client, StatusCode, Url};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// What one request produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// ok / fail / info, per the contract.
    pub kind: CompletionType,
    /// The op's result; for ingest, `group_id` is the group the service named.
    pub result: OpResult,
    /// The service named this group id for the ingested event.
    pub group_id: Option<String>,
    /// The answer was not the contract's shape: an example to report.
    pub nonconforming: Option<String>,
    /// 429: wait this long before sending again.
    pub retry_after: Option<Duration>,
    /// No answer came back at all (connect error, timeout, reset).
    pub transport: bool,
    /// How the attempt ended, as the reference server names it
    /// ([`AttemptEnd::HEADER`] of its 503); None from any other answer or
    /// service.
    pub attempt_end: Option<AttemptEnd>,
}

impl Answer {
    fn new(kind: CompletionType, result: OpResult) -> Self {
        Answer {
            kind,
            result,
            group_id: None,
            nonconforming: None,
            retry_after: None,
            transport: false,
            attempt_end: None,
        }
    }

    /// The answer of a request the user abandoned while it was in flight
    /// (a second Ctrl-C): nobody knows whether the service applied it.
    /// A request dropped while in flight (`why`: a second interrupt, or the
    /// end of the grace after the stop): it may or may not have applied.
    pub fn abandoned(why: String) -> Self {
        Answer {
            transport: true,
            ..Answer::error(CompletionType::Info, why)
        }
    }

    fn error(kind: CompletionType, error: String) -> Self {
        Answer::new(
            kind,
            OpResult {
                error: Some(error),
                ..Default::default()
            },
        )
    }

    fn nonconforming(what: &str, status: StatusCode, body: &str) -> Self {
        let example = format!("{what}: {status} {}", excerpt(body));
        Answer {
            nonconforming: Some(example.clone()),
            ..Answer::error(
                CompletionType::Info,
                format!("not the contract's shape: {example}"),
            )
        }
    }
}

/// At most 200 characters of a body, for messages.
pub fn excerpt(body: &str) -> String {
    let mut s: String = body.chars().take(200).collect();
    if body.chars().count() > 200 {
        s.push('…');
    }
    s
}

/// The reference server's answer to an op its fault hook crashed (500):
/// what the op did before it died, where that is exact.
#[derive(Deserialize)]
struct HookReport {
    crashed_after: String,
    steps: Vec<HookStep>,
    #[serde(default)]
    accepted: Option<bool>,
    #[serde(default)]
    resolved: Option<bool>,
    #[serde(default)]
    event_count: Option<i64>,
    #[serde(default)]
    effect_step: Option<u32>,
}

impl HookReport {
    /// The report in a 500 answer to a request that asked the hook for a
    /// crash (`tag`); None for any other answer (whatever its body says,
    /// only a crash the bench asked for is read as one).
    fn of(tag: Option<&Tag>, status: StatusCode, body: &str) -> Option<HookReport> {
        let asked = tag
            .and_then(|t| t.hook.as_deref())
            .is_some_and(|h| h.contains("crash-after="));
        if !asked || status != StatusCode::INTERNAL_SERVER_ERROR {
            return None;
        }
        serde_json::from_str(body).ok()
    }

    /// The op's `info` completion: the crash, the steps, and (where the
    /// report gives them) whether the event was counted, or the resolve's
    /// count and the step that returned it.
    fn answer(self, status: StatusCode, body: &str) -> Answer {
        let resolved =
            self.resolved == Some(true) && self.event_count.is_some() && self.effect_step.is_some();
        Answer::new(
            CompletionType::Info,
            OpResult {
                error: Some(format!("{status} {}", excerpt(body))),
                crashed_after: Some(self.crashed_after),
                hook_steps: self.steps,
                accepted: self.accepted,
                resolved: resolved.then_some(true),
                event_count: self.event_count.filter(|_| resolved),
                effect_step: self.effect_step.filter(|_| resolved),
                ..Default::default()
            },
        )
    }
}

/// What the bench tells a request about itself: the op id and key (read
/// by the fault proxy, to draw and record its faults per op), and the
/// test-only fault hook header for the reference server.
#[derive(Debug, Clone, Default)]
pub struct Tag {
    /// Op id in the history.
    pub op: u64,
    /// The op's deterministic key ([`crate::draws::op_key`]).
    pub key: u64,
    /// `x-specstorm-fault` value, if the nemesis chose crash or pause.
    pub hook: Option<String>,
}

impl Tag {
    fn apply(&self, req: reqwest::RequestBuilder, f: &str) -> reqwest::RequestBuilder {
        let req = req
            .header(OP_HEADER, self.op)
            .header(KEY_HEADER, self.key)
            .header(F_HEADER, f);
        match &self.hook {
            Some(h) => req.header(FAULT_HEADER, h),
            None => req,
        }
    }
}

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

/// A client of one service: connection reuse (keep-alive pool), connect and
/// request timeouts.
#[derive(Clone)]
pub struct HttpClient {
    client: Client,
    base: Url,
    request_timeout: Duration,
    /// How requests are made and answers read (the contract by default).
    mapping: Arc<Mapping>,
}

impl HttpClient {
    /// A client of `base` (`http://host:port`, or `https://` trusting the
    /// system's roots). Errors: a URL that does not parse, or a client
    /// that cannot be built.
    pub fn new(base: &str, connect: Duration, request: Duration) -> anyhow::Result<Self> {
        Self::with_tls(base, connect, request, &Tls::default())
    }

    /// [`HttpClient::new`] trusting what `tls` says. Errors: also a CA
    /// bundle that cannot be read.
    pub fn with_tls(
        base: &str,
        connect: Duration,
        request: Duration,
        tls: &Tls,
    ) -> anyhow::Result<Self> {
        let base = Url::parse(base).map_err(|e| anyhow::anyhow!("bad URL {base:?}: {e}"))?;
        let client = tls
            .apply(client_builder())?
            .connect_timeout(connect)
            .timeout(request)
            .pool_max_idle_per_host(1024)
            .tcp_nodelay(true)
            // The target is named exactly: no system proxy in between.
            .no_proxy()
            .build()?;
        Ok(HttpClient {
            client,
            base,
            request_timeout: request,
            mapping: Arc::new(Mapping::contract()),
        })
    }

    /// This client speaking `mapping` (a scenario's `[api]`) instead of
    /// the contract.
    pub fn with_mapping(mut self, mapping: Arc<Mapping>) -> Self {
        self.mapping = mapping;
        self
    }

    /// The mapping this client speaks.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }

    /// A request of `t` with `vars` filled in; `body` replaces the
    /// template's body when given.
    fn request(
        &self,
        t: &RequestTemplate,
        vars: &Vars<'_>,
        body: Option<String>,
    ) -> reqwest::RequestBuilder {
        let secrets = &self.mapping.secrets;
        let path = t.path.render(vars, secrets);
        let url = format!("{}{}", self.base.as_str().trim_end_matches('/'), path);
        let mut req = match Url::parse(&url) {
            Ok(u) => self.client.request(t.method.clone(), u),
            // Unreachable for a base that parsed and a path that starts
            // with '/': send it as text, and let reqwest say what is wrong.
            Err(_) => self.client.request(t.method.clone(), url.as_str()),
        };
        for (name, value) in &t.headers {
            req = req.header(name.clone(), value.render(vars, secrets));
        }
        let body = body.or_else(|| t.body.as_ref().map(|b| b.render(vars, secrets)));
        if let Some(body) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        req
    }

    /// `text` with the mapping's secrets replaced by `${NAME}`.
    pub fn redact(&self, text: &str) -> String {
        if self.mapping.secrets.is_empty() {
            text.to_string()
        } else {
            self.mapping.secrets.redact(text)
        }
    }

    /// Sends and reads the whole answer, as the service sent it: the body
    /// is data, read before anything is written, and only what the bench
    /// writes of it is redacted ([`HttpClient::redacted`]).
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<(StatusCode, Option<Duration>, String), Answer> {
        exchange(req).await.map_err(|a| self.redacted(a))
    }

    /// `a` with the secrets taken out of the texts the history records
    /// (its error and non-conforming example), and, for a mapped service,
    /// its non-conforming error worded for the mapping; values read from
    /// the answer (counts, ids) are left as they are.
    fn redacted(&self, mut a: Answer) -> Answer {
        if !self.mapping.contract {
            // A mapped service is held to its mapping, not to the contract.
            a.result.error = a.result.error.map(|e| {
                e.replacen(
                    "not the contract's shape",
                    "not an answer the [api] mapping reads",
                    1,
                )
            });
        }
        if !self.mapping.secrets.is_empty() {
            a.result.error = a.result.error.map(|e| self.redact(&e));
            a.nonconforming = a.nonconforming.map(|e| self.redact(&e));
        }
        a
    }

    /// The base URL.
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The health request (`api.health`, default `GET /healthz`).
    /// Errors: unreachable, or not 2xx (with what came back).
    pub async fn healthz(&self) -> Result<(), String> {
        let t = &self.mapping.health;
        let what = format!("{} {}", t.what, self.base);
        match self.request(t, &[], None).send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(format!("{what} answered {}", r.status())),
            Err(e) => Err(self.redact(&format!("{what}: {}", describe(&e)))),
        }
    }

    /// One ingest attempt (`[api.ingest]`, default `POST /v1/events`).
    /// `tag` (None outside a run) names the op to the fault proxy and
    /// carries the fault hook.
    pub async fn ingest(&self, op: IngestEvent<'_>, tag: Option<&Tag>) -> Answer {
        self.ingest_batch(&[op], tag)
            .await
            .pop()
            .expect("one answer per op")
    }

    /// One request carrying `ops` (all of one project; at most
    /// `api.ingest.batch` of them): one answer per op, in order. A whole
    /// request that failed, timed out or was not understood gives every op
    /// the same answer.
    pub async fn ingest_batch(&self, ops: &[IngestEvent<'_>], tag: Option<&Tag>) -> Vec<Answer> {
        self.ingest_answers(ops, tag)
            .await
            .into_iter()
            .map(|a| self.redacted(a))
            .collect()
    }

    async fn ingest_answers(&self, ops: &[IngestEvent<'_>], tag: Option<&Tag>) -> Vec<Answer> {
        let m = &self.mapping;
        let g = GroupsRequests::of(m);
        let i = &g.ingest;
        let now = now_ms().to_string();
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
        let vars_of = |op| vars(op, &g.release, &now);
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
        let req = self.request(&i.request, &first, Some(body));
        let req = match tag {
            Some(t) => t.apply(req, "ingest"),
            None => req,
        };
        let what = i.request.what.as_str();
        let n = ops.len();
        let (status, retry_after, text) = match self.send(req).await {
            Ok(x) => x,
            Err(a) => return vec![a; n],
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
        let needs_body =
            i.items.is_some() || (accepted_by_status.is_none() && i.accepted.is_some());
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
                let (accepted, mut ambiguous) = match (accepted_by_status, i.read_accepted(item)) {
                    (Some(a), _) => (Some(a), None),
                    (None, Some(Ok(a))) => (Some(a), None),
                    (None, Some(Err(why))) => {
                        return Answer::nonconforming(&format!("{what} ({why})"), status, &text)
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
                let group_id = i
                    .group_id
                    .as_ref()
                    .and_then(|p| item.pointer(p))
                    .and_then(id_text);
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
            })
            .collect()
    }

    /// One resolve of group `group_id` (`[api.resolve]`, default `POST
    /// /v1/groups/{group_id}/resolve`): ok resolved (with the count where
    /// the answer gives it), refused (fail, and a probe: status and count),
    /// missing (fail).
    pub async fn resolve(
        &self,
        group_id: &str,
        project: &str,
        fingerprint: &str,
        tag: Option<&Tag>,
    ) -> Answer {
        let a = self
            .resolve_answer(group_id, project, fingerprint, tag)
            .await;
        self.redacted(a)
    }

    async fn resolve_answer(
        &self,
        group_id: &str,
        project: &str,
        fingerprint: &str,
        tag: Option<&Tag>,
    ) -> Answer {
        let m = &self.mapping;
        let g = GroupsRequests::of(m);
        let r = &g.resolve;
        let now = now_ms().to_string();
        let vars = [
            ("group_id", group_id),
            ("project", project),
            ("fingerprint", fingerprint),
            ("release", g.release.as_str()),
            ("now_ms", now.as_str()),
        ];
        let mut req = self.request(&r.request, &vars, None);
        if let Some(t) = tag {
            req = t.apply(req, "resolve");
        }
        let (status, retry_after, text) = match self.send(req).await {
            Ok(x) => x,
            Err(a) => return a,
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
    pub async fn lookup(&self, project: &str, fingerprint: &str) -> Result<Option<String>, String> {
        let m = &self.mapping;
        let g = GroupsRequests::of(m);
        let l = g.lookup.as_ref().ok_or("no [api.lookup] is configured")?;
        let now = now_ms().to_string();
        let vars = [
            ("project", project),
            ("fingerprint", fingerprint),
            ("release", g.release.as_str()),
            ("now_ms", now.as_str()),
        ];
        let req = self.request(&l.request, &vars, None);
        // A lookup that got no answer, or an indeterminate one, is asked
        // again later: only an answer that is not the mapping's is an error.
        let Ok((status, _, text)) = self.send(req).await else {
            return Ok(None);
        };
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
        .map_err(|e| self.redact(&e))
    }

    /// One delivery attempt of message `msg_id`, duplicate `dup` (outbox:
    /// `[api.handle]`, default the contract's `POST /v1/messages`). An
    /// answer whose status means `ok` and that passes `acked` (contract:
    /// 200 `{"acked": true, "sent": ..}`) is ok, with `sent` as `[msg_id,
    /// ver]` where the answer names it; `info` (5xx, a timeout, a reset):
    /// info (the server may have run any prefix of its steps); `fail`
    /// (400/413/422, a refused connection): fail; `retry` (429): fail;
    /// anything else: info, non-conforming.
    pub async fn handle(&self, msg_id: i64, dup: u32, tag: Option<&Tag>) -> Answer {
        let h = HandleMapping::of(&self.mapping);
        let (m, d, now) = (msg_id.to_string(), dup.to_string(), now_ms().to_string());
        let vars = [
            ("msg_id", m.as_str()),
            ("dup_id", d.as_str()),
            ("now_ms", now.as_str()),
        ];
        let mut req = self.request(&h.request, &vars, None);
        if let Some(t) = tag {
            req = t.apply(req, "handle");
        }
        // The attempt's end, where the reference server names it.
        let (status, retry_after, end, text) = match exchange_ended(req).await {
            Ok(x) => x,
            Err(a) => return self.redacted(a),
        };
        let what = h.request.what.as_str();
        let answer = match h.codes.meaning(status.as_u16()) {
            Some(Meaning::Ok) => match h.read_ok(&text) {
                Ok(sent) => Answer::new(
                    CompletionType::Ok,
                    OpResult {
                        sent,
                        ..Default::default()
                    },
                ),
                Err(_) => Answer::nonconforming(what, status, &text),
            },
            other => by_meaning(other, status, &text, retry_after, what),
        };
        self.redacted(Answer {
            attempt_end: end,
            ..answer
        })
    }

    /// The export request `export` (one of the mapping's: the workload
    /// says which), its answer streamed to `out` chunk by chunk (memory
    /// stays flat). Returns the bytes written. Errors: unreachable, not
    /// 200 (with an excerpt of the answer), or the body broke off.
    pub async fn export_to(
        &self,
        export: &RequestTemplate,
        out: &std::path::Path,
    ) -> Result<u64, String> {
        let req = self.request(export, &[], None);
        self.stream_to(req, out).await
    }

    async fn stream_to(
        &self,
        req: reqwest::RequestBuilder,
        out: &std::path::Path,
    ) -> Result<u64, String> {
        use std::io::Write;
        let req = req.timeout(Duration::from_secs(24 * 3600));
        let url = req
            .try_clone()
            .and_then(|r| r.build().ok())
            .map(|r| self.redact(r.url().as_str()))
            .unwrap_or_default();
        // The export may be large: no whole-request timeout, but the answer
        // must begin, and each chunk arrive, within a few request timeouts
        // (a hung service must not hang the audit).
        let wait = 3 * self.request_timeout;
        let silent = |what: &str| format!("GET {url}: no {what} within {wait:?}");
        let mut resp = tokio::time::timeout(wait, req.send())
            .await
            .map_err(|_| silent("answer"))?
            .map_err(|e| self.redact(&format!("GET {url}: {}", describe(&e))))?;
        if resp.status() != StatusCode::OK {
            let status = resp.status();
            let text = resp.text().await.unwrap_or_default();
            return Err(self.redact(&format!("GET {url} answered {status} {}", excerpt(&text))));
        }
        // Plain file writes: the load is over, nothing else waits on this
        // runtime. Whole or absent: a body that broke off, or a full disk,
        // leaves no cut-off export.
        let mut file = crate::whole::WholeFile::create(out).map_err(|e| e.to_string())?;
        let mut bytes = 0u64;
        while let Some(chunk) = tokio::time::timeout(wait, resp.chunk())
            .await
            .map_err(|_| silent("data"))?
            .map_err(|e| format!("GET {url}: the body broke off: {}", describe(&e)))?
        {
            file.write_all(&chunk)
                .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
            bytes += chunk.len() as u64;
        }
        file.commit().map_err(|e| e.to_string())?;
        Ok(bytes)
    }
}

/// Sends a request and reads the whole answer: (status, Retry-After, body),
/// or the transport error's answer.
async fn exchange(
    req: reqwest::RequestBuilder,
) -> Result<(StatusCode, Option<Duration>, String), Answer> {
    let (status, wait, _, text) = exchange_ended(req).await?;
    Ok((status, wait, text))
}

/// [`exchange`], with the attempt's end the answer names
/// ([`AttemptEnd::HEADER`]): (status, Retry-After, end, body).
async fn exchange_ended(
    req: reqwest::RequestBuilder,
) -> Result<(StatusCode, Option<Duration>, Option<AttemptEnd>, String), Answer> {
    let resp = req.send().await.map_err(|e| transport_error(&e))?;
    let status = resp.status();
    let wait = retry_after(&resp);
    let end = resp
        .headers()
        .get(AttemptEnd::HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(AttemptEnd::from_name);
    let text = resp.text().await.map_err(|e| transport_error(&e))?;
    Ok((status, wait, end, text))
}

/// A request that got no answer: refused before it was written is `fail`
/// (nothing reached the service); a timeout or a reset after it was written
/// is `info` (it may have been applied).
fn transport_error(e: &reqwest::Error) -> Answer {
    let kind = if e.is_connect() {
        CompletionType::Fail
    } else {
        CompletionType::Info
    };
    Answer {
        transport: true,
        ..Answer::error(kind, describe(e))
    }
}

/// A reqwest error with its causes, one line.
pub fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// The longest wait a `Retry-After` may impose before an op is sent again.
/// A service (or a proxy in front of it) that answers "in an hour" would
/// otherwise hold a worker for the rest of the run; a stop ends any wait.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    let value = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?;
    parse_retry_after(value, std::time::SystemTime::now())
}

/// A `Retry-After` value (RFC 9110 10.2.3: delay-seconds or an HTTP-date,
/// in any of the three date forms a recipient must accept) as a wait from
/// `now`, at most [`RETRY_AFTER_CAP`]; a date in the past is no wait.
/// None for a value that is neither (the caller's own backoff applies).
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => httpdate::parse_http_date(value)
            .ok()?
            .duration_since(now)
            .unwrap_or(Duration::ZERO),
    };
    Some(wait.min(RETRY_AFTER_CAP))
}

/// The answer of a status that carries no op result: `fail` (rejected),
/// `retry` (`fail` with a wait), `info`; anything else (unmapped, or a
/// meaning the caller does not read here) is non-conforming.
fn by_meaning(
    meaning: Option<Meaning>,
    status: StatusCode,
    body: &str,
    retry_after: Option<Duration>,
    what: &str,
) -> Answer {
    match meaning {
        Some(Meaning::Fail) => Answer::error(
            CompletionType::Fail,
            format!("rejected: {status} {}", excerpt(body)),
        ),
        Some(Meaning::Retry) => Answer {
            retry_after: Some(retry_after.unwrap_or(Duration::from_millis(100))),
            ..Answer::error(CompletionType::Fail, format!("{status}: too many requests"))
        },
        Some(Meaning::Info) => {
            let mut a = Answer::error(CompletionType::Info, format!("{status} {}", excerpt(body)));
            // The reference server's fault hook says where it crashed
            // (500 for groups ops, 503 for outbox deliveries).
            if matches!(status.as_u16(), 500 | 503) {
                a.result.crashed_after = serde_json::from_str::<serde_json::Value>(body)
                    .ok()
                    .and_then(|v| v.get("crashed_after")?.as_str().map(str::to_owned));
            }
            a
        }
        _ => Answer::nonconforming(what, status, body),
    }
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

/// A group id as text: a string as is, a number in decimal.
fn id_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Wall-clock ms since the Unix epoch (`{now_ms}`).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
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

    #[test]
    fn retry_after_reads_seconds_and_every_http_date_form_and_is_capped() {
        use std::time::{SystemTime, UNIX_EPOCH};
        // Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's own example.
        let at = UNIX_EPOCH + Duration::from_secs(784_111_777);
        let now = at - Duration::from_secs(7);
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(
                parse_retry_after(form, now),
                Some(Duration::from_secs(7)),
                "{form}"
            );
        }
        assert_eq!(parse_retry_after(" 3 ", now), Some(Duration::from_secs(3)));
        // A date already past: send again at once.
        let later = at + Duration::from_secs(30);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", later),
            Some(Duration::ZERO)
        );
        // An hour, by seconds or by date, waits the cap.
        assert_eq!(parse_retry_after("3600", now), Some(RETRY_AFTER_CAP));
        let hour = httpdate::fmt_http_date(now + Duration::from_secs(3600));
        assert_eq!(parse_retry_after(&hour, now), Some(RETRY_AFTER_CAP));
        assert_eq!(parse_retry_after("soon", SystemTime::now()), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }
}
