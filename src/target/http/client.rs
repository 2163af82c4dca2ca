//! The HTTP client target: one request per op, against any service that
//! speaks the contract (`docs/http-contract.md`, version 1) or the
//! scenario's `[api]` mapping of its own API.
//! Answers become Jepsen completions exactly as the contract's "How the
//! bench reads answers" says; an answer that is not the contract's shape is
//! `info` and is reported as non-conforming, with an example.
//!
//! What every request shares is here: the client (timeouts, TLS, the
//! mapping and its secrets), sending one compiled request
//! ([`HttpClient::send`]) with the op's tag, transport errors, `Retry-After`,
//! the fault hook's crash report, and the answers of statuses that carry no
//! op result ([`by_meaning`]). Each workload builds its own requests and
//! reads its own answers in its folder (`workload::<name>::http_client`),
//! so that a new workload adds no code here.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::mapping::{Mapping, RequestTemplate};
use super::plain::{Plain, PlainError, PlainReply};
use super::template::Vars;
use super::tls::{client_builder, Tls};
use crate::fault_hook::{FAULT_HEADER, F_HEADER, KEY_HEADER, OP_HEADER};
use crate::history::{CompletionType, HookStep, OpResult};
use crate::scenario::api::Meaning;
use crate::workload::attempt_end::AttemptEnd;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, LOCATION};
use reqwest::{Client, StatusCode, Url};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// What one request produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// ok / fail / info, per the contract.
    pub kind: CompletionType,
    /// The op's result.
    pub result: OpResult,
    /// The group id the service named for the op's event, where the
    /// workload's answer reader finds one.
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
    /// An answer of `kind` with `result`, nothing else said.
    pub fn new(kind: CompletionType, result: OpResult) -> Self {
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

    /// An answer of `kind` whose result is only the error `error`.
    pub fn error(kind: CompletionType, error: String) -> Self {
        Answer::new(
            kind,
            OpResult {
                error: Some(error),
                ..Default::default()
            },
        )
    }

    /// The `info` answer of a request `what` whose answer (`status`,
    /// `body`) is not the shape the mapping reads, with its example.
    pub fn nonconforming(what: &str, status: StatusCode, body: &str) -> Self {
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
pub struct HookReport {
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
    pub fn of(tag: Option<&Tag>, status: StatusCode, body: &str) -> Option<HookReport> {
        let asked = tag
            .and_then(|t| t.hook.as_deref())
            .is_some_and(|h| h.contains("crash-after="));
        if !asked || status != StatusCode::INTERNAL_SERVER_ERROR {
            return None;
        }
        serde_json::from_str(body).ok()
    }

    /// The op's `info` completion: the crash, the steps, and (where the
    /// report gives them) whether the event was counted, or the count the
    /// op resolved the group at and the step that returned it.
    pub fn answer(self, status: StatusCode, body: &str) -> Answer {
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

/// The tag's headers, named once.
const OP_NAME: HeaderName = HeaderName::from_static(OP_HEADER);
const KEY_NAME: HeaderName = HeaderName::from_static(KEY_HEADER);
const F_NAME: HeaderName = HeaderName::from_static(F_HEADER);
const FAULT_NAME: HeaderName = HeaderName::from_static(FAULT_HEADER);

impl Tag {
    /// [`Tag::apply`] on a header map: the same headers, in the same
    /// order. None: a value that is no header value.
    fn append_to(&self, h: &mut HeaderMap, f: &'static str) -> Option<()> {
        h.append(OP_NAME, HeaderValue::from(self.op));
        h.append(KEY_NAME, HeaderValue::from(self.key));
        h.append(F_NAME, HeaderValue::from_static(f));
        if let Some(hook) = &self.hook {
            h.append(FAULT_NAME, HeaderValue::from_str(hook).ok()?);
        }
        Some(())
    }

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

/// A client of one service: connection reuse (keep-alive pool), connect and
/// request timeouts.
#[derive(Clone)]
pub struct HttpClient {
    client: Client,
    base: Url,
    request_timeout: Duration,
    /// How requests are made and answers read (the contract by default).
    mapping: Arc<Mapping>,
    /// The cheaper way of the load's requests to an `http://` service.
    plain: Option<Plain>,
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
        let plain = Plain::new(&base, connect, request);
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
            plain,
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
        let path = t.path.render(vars, &self.mapping.secrets);
        self.request_to(t, &path, vars, body)
    }

    /// [`HttpClient::request`] of the path `path` (`t`'s, filled in).
    fn request_to(
        &self,
        t: &RequestTemplate,
        path: &str,
        vars: &Vars<'_>,
        body: Option<String>,
    ) -> reqwest::RequestBuilder {
        let secrets = &self.mapping.secrets;
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

    /// Sends `t` with `vars` filled in (`body`, when given, replaces the
    /// template's) and reads the whole answer, as the service sent it: the
    /// body is data, read before anything is written. `tag` (None outside
    /// a run) names the op to the fault proxy, as an op of kind `f`
    /// ([`F_HEADER`]), and carries the fault hook. Errors: the answer of a
    /// request that got no answer (refused, timed out, reset), not yet
    /// redacted: the caller redacts what it records
    /// ([`HttpClient::redacted`]).
    pub async fn send(
        &self,
        t: &RequestTemplate,
        vars: &Vars<'_>,
        body: Option<String>,
        tag: Option<&Tag>,
        f: &'static str,
    ) -> Result<Reply, Answer> {
        let secrets = &self.mapping.secrets;
        let path = t.path.render(vars, secrets);
        let body = body.or_else(|| t.body.as_ref().map(|b| b.render(vars, secrets)));
        let plain = self.plain.as_ref().and_then(|p| {
            let uri = p.uri(&path)?;
            Some((p, uri, self.headers(t, vars, body.is_some(), tag, f)?))
        });
        let body = match plain {
            Some((p, uri, headers)) => {
                let body = body.map(bytes::Bytes::from);
                match p
                    .exchange(t.method.clone(), uri, &path, headers, body.clone())
                    .await
                {
                    Ok(r) if !redirects(&r) => return Ok(Reply::of(r)),
                    Err(e) => return Err(plain_error(e)),
                    // reqwest follows redirects (its default policy):
                    // sent again its way, to be followed as it did.
                    Ok(_) => body.map(|b| String::from_utf8_lossy(&b).into_owned()),
                }
            }
            None => body,
        };
        let mut req = self.request_to(t, &path, vars, body);
        if let Some(tag) = tag {
            req = tag.apply(req, f);
        }
        exchange(req).await
    }

    /// The headers [`HttpClient::request_to`] and [`Tag::apply`] give a
    /// request of `t`, in their order. None: a value that is no header
    /// value (reqwest says why).
    fn headers(
        &self,
        t: &RequestTemplate,
        vars: &Vars<'_>,
        body: bool,
        tag: Option<&Tag>,
        f: &'static str,
    ) -> Option<HeaderMap> {
        // Room for the template's, the body's, the tag's and the two the
        // plain client adds: the map never grows while it is filled.
        let mut h = HeaderMap::with_capacity(t.headers.len() + 8);
        for (name, value) in &t.headers {
            let v = value.render(vars, &self.mapping.secrets);
            h.append(name.clone(), HeaderValue::try_from(v).ok()?);
        }
        if body {
            h.append(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(tag) = tag {
            tag.append_to(&mut h, f)?;
        }
        Some(h)
    }

    /// `a` with the secrets taken out of the texts the history records
    /// (its error and non-conforming example), and, for a mapped service,
    /// its non-conforming error worded for the mapping; values read from
    /// the answer (counts, ids) are left as they are.
    pub fn redacted(&self, mut a: Answer) -> Answer {
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

/// Whether reqwest would follow this answer (a redirect with a
/// `Location`).
fn redirects(r: &PlainReply) -> bool {
    matches!(r.status.as_u16(), 301 | 302 | 303 | 307 | 308) && r.headers.contains_key(LOCATION)
}

/// [`transport_error`] of a request sent the plain way.
fn plain_error(e: PlainError) -> Answer {
    let kind = if e.connect {
        CompletionType::Fail
    } else {
        CompletionType::Info
    };
    Answer {
        transport: true,
        ..Answer::error(kind, e.message)
    }
}

/// What came back for one request ([`HttpClient::send`]).
#[derive(Debug)]
pub struct Reply {
    /// The answer's status.
    pub status: StatusCode,
    /// `Retry-After` as a wait ([`parse_retry_after`]), where the answer
    /// has one the bench reads.
    pub retry_after: Option<Duration>,
    /// How the attempt ended, where the reference server names it
    /// ([`AttemptEnd::HEADER`]).
    pub attempt_end: Option<AttemptEnd>,
    /// The whole body.
    pub body: String,
}

impl Reply {
    /// The reply of a plain answer, read as [`exchange`] reads reqwest's.
    fn of(r: PlainReply) -> Reply {
        let body = match String::from_utf8(Vec::from(r.body)) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        Reply {
            status: r.status,
            retry_after: retry_after(&r.headers),
            attempt_end: attempt_end(&r.headers),
            body,
        }
    }
}

/// Sends a request and reads the whole answer, or the transport error's
/// answer.
async fn exchange(req: reqwest::RequestBuilder) -> Result<Reply, Answer> {
    let resp = req.send().await.map_err(|e| transport_error(&e))?;
    let status = resp.status();
    let retry_after = retry_after(resp.headers());
    let attempt_end = attempt_end(resp.headers());
    let body = resp.text().await.map_err(|e| transport_error(&e))?;
    Ok(Reply {
        status,
        retry_after,
        attempt_end,
        body,
    })
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

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, std::time::SystemTime::now())
}

fn attempt_end(headers: &HeaderMap) -> Option<AttemptEnd> {
    headers
        .get(AttemptEnd::HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(AttemptEnd::from_name)
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
pub fn by_meaning(
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
            // (500 or 503, as the workload's requests answer a crash).
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

/// Wall-clock ms since the Unix epoch (`{now_ms}`).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::http::template::{Escape, Template};

    /// The bytes of the one request a listener receives, answered 200.
    async fn one_request(listener: &tokio::net::TcpListener) -> Vec<u8> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = s.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text[..end]
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                if got.len() >= end + 4 + len {
                    break;
                }
            }
        }
        s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
            .await
            .unwrap();
        got
    }

    #[test]
    fn the_plain_way_sends_the_bytes_reqwest_sends() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/api/", listener.local_addr().unwrap());
            let t = Duration::from_secs(5);
            let plain = HttpClient::new(&url, t, t).unwrap();
            assert!(plain.plain.is_some());
            let reqwest_only = HttpClient {
                plain: None,
                ..plain.clone()
            };
            let vars = [("project", "p 1/é"), ("event_id", "e\"1")];
            let template = RequestTemplate {
                method: reqwest::Method::POST,
                path: Template::parse(
                    "/v1/{project}/x?e={event_id}",
                    &["project", "event_id"],
                    Escape::Url,
                )
                .unwrap(),
                headers: vec![
                    (
                        HeaderName::from_static("x-b"),
                        Template::parse("{event_id}", &["event_id"], Escape::Raw).unwrap(),
                    ),
                    (
                        HeaderName::from_static("accept"),
                        Template::parse("a/b", &[], Escape::Raw).unwrap(),
                    ),
                    (
                        HeaderName::from_static("x-b"),
                        Template::parse("2", &[], Escape::Raw).unwrap(),
                    ),
                ],
                body: None,
                what: "POST".into(),
            };
            let tag = Tag {
                op: 7,
                key: 1 << 41,
                hook: Some("crash-after=a".into()),
            };
            let mut sent = Vec::new();
            for client in [&plain, &reqwest_only] {
                for (t, body, tag) in [
                    (&template, Some("{\"a\": 1}".to_string()), Some(&tag)),
                    (&client.mapping.health, None, None),
                ] {
                    let send = client.send(t, &vars, body, tag, "ingest");
                    let (reply, got) = tokio::join!(send, one_request(&listener));
                    assert_eq!(reply.unwrap().body, "{}");
                    sent.push(String::from_utf8(got).unwrap());
                }
            }
            assert_eq!(sent[0], sent[2]);
            assert_eq!(sent[1], sent[3]);
            // The path that needs escaping went the plain way all the same
            // (escaped by the template), and a path the URL parser would
            // change does not.
            assert!(sent[0].starts_with("POST /api/v1/p%201%2F%C3%A9/x?e=e%221 HTTP/1.1\r\n"));
            assert!(plain.plain.as_ref().unwrap().uri("/a/../b").is_none());
        });
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
