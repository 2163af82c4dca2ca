//! The HTTP client target: one request per op, against any service that
//! speaks the contract (`shared/reference/http-contract.md`, version 1).
//! Answers become Jepsen completions exactly as the contract's "How the
//! bench reads answers" says; an answer that is not the contract's shape is
//! `info` and is reported as non-conforming, with an example.

use crate::history::{CompletionType, OpResult};
use crate::nemesis::proxy;
use crate::workload::groups::IngestOp;
use reqwest::{Client, StatusCode, Url};
use serde::Deserialize;
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

/// The body of `POST /v1/events`, borrowed from the op (no copies).
#[derive(serde::Serialize)]
struct EventBody<'a> {
    id: &'a str,
    project: &'a str,
    fingerprint: &'a str,
    message: &'a str,
}

#[derive(Deserialize)]
struct IngestAnswer {
    accepted: bool,
    group_id: String,
}

/// The answer of `POST /v1/messages` (outbox): `sent` may be null for a
/// delivery that published nothing (a variant may skip its publish).
#[derive(Deserialize)]
struct MessageAnswer {
    acked: bool,
    sent: Option<SentAnswer>,
}

#[derive(Deserialize)]
struct SentAnswer {
    msg_id: i64,
    ver: i64,
}

#[derive(Deserialize)]
struct ResolvedAnswer {
    resolved: bool,
    event_count: i64,
}

#[derive(Deserialize)]
struct RefusedAnswer {
    resolved: bool,
    status: String,
    event_count: i64,
}

/// What the bench tells a request about itself: the op id and key (read
/// by the fault proxy, to draw and record its faults per op), and the
/// test-only fault hook header for the reference server.
#[derive(Debug, Clone, Default)]
pub struct Tag {
    /// Op id in the history.
    pub op: u64,
    /// The op's deterministic key ([`crate::nemesis::op_key`]).
    pub key: u64,
    /// `x-specstorm-fault` value, if the nemesis chose crash or pause.
    pub hook: Option<String>,
}

impl Tag {
    fn apply(&self, req: reqwest::RequestBuilder, f: &str) -> reqwest::RequestBuilder {
        let req = req
            .header(proxy::OP_HEADER, self.op)
            .header(proxy::KEY_HEADER, self.key)
            .header(proxy::F_HEADER, f);
        match &self.hook {
            Some(h) => req.header(crate::server::routes::FAULT_HEADER, h),
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
}

impl HttpClient {
    /// A client of `base` (`http://host:port`). Errors: a URL that does not
    /// parse, or a client that cannot be built.
    pub fn new(base: &str, connect: Duration, request: Duration) -> anyhow::Result<Self> {
        let base = Url::parse(base).map_err(|e| anyhow::anyhow!("bad URL {base:?}: {e}"))?;
        let client = Client::builder()
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
        })
    }

    /// The base URL.
    pub fn base(&self) -> &Url {
        &self.base
    }

    fn url(&self, segments: &[&str]) -> Url {
        let mut u = self.base.clone();
        u.path_segments_mut()
            .expect("http URLs have paths")
            .pop_if_empty()
            .extend(segments);
        u
    }

    /// `GET /healthz`. Errors: unreachable, or not 200 (with what came back).
    pub async fn healthz(&self) -> Result<(), String> {
        let url = self.url(&["healthz"]);
        match self.client.get(url.clone()).send().await {
            Ok(r) if r.status() == StatusCode::OK => Ok(()),
            Ok(r) => Err(format!("GET {url} answered {}", r.status())),
            Err(e) => Err(format!("GET {url}: {}", describe(&e))),
        }
    }

    /// `POST /v1/events`: one ingest attempt.
    /// `tag` (None outside a run) names the op to the fault proxy and
    /// carries the fault hook.
    pub async fn ingest(&self, op: &IngestOp, tag: Option<&Tag>) -> Answer {
        let body = EventBody {
            id: &op.event_id,
            project: &op.project,
            fingerprint: &op.fingerprint,
            message: &op.message,
        };
        let mut req = self.client.post(self.url(&["v1", "events"])).json(&body);
        if let Some(t) = tag {
            req = t.apply(req, "ingest");
        }
        let (status, retry_after, text) = match exchange(req).await {
            Ok(x) => x,
            Err(a) => return a,
        };
        match status.as_u16() {
            200 => match serde_json::from_str::<IngestAnswer>(&text) {
                Ok(a) => Answer {
                    group_id: Some(a.group_id),
                    ..Answer::new(
                        CompletionType::Ok,
                        OpResult {
                            accepted: Some(a.accepted),
                            ..Default::default()
                        },
                    )
                },
                Err(_) => Answer::nonconforming("POST /v1/events", status, &text),
            },
            _ => by_status(status, &text, retry_after, "POST /v1/events"),
        }
    }

    /// `POST /v1/groups/{group_id}/resolve`: 200 resolved (ok, with the
    /// count), 409 refused (fail, and a probe: status and count), 404 no
    /// such group (fail).
    pub async fn resolve(&self, group_id: &str, tag: Option<&Tag>) -> Answer {
        let mut req = self
            .client
            .post(self.url(&["v1", "groups", group_id, "resolve"]));
        if let Some(t) = tag {
            req = t.apply(req, "resolve");
        }
        let (status, retry_after, text) = match exchange(req).await {
            Ok(x) => x,
            Err(a) => return a,
        };
        let what = "POST /v1/groups/{id}/resolve";
        match status.as_u16() {
            200 => match serde_json::from_str::<ResolvedAnswer>(&text) {
                Ok(a) if a.resolved => Answer::new(
                    CompletionType::Ok,
                    OpResult {
                        resolved: Some(true),
                        event_count: Some(a.event_count),
                        ..Default::default()
                    },
                ),
                _ => Answer::nonconforming(what, status, &text),
            },
            409 => match serde_json::from_str::<RefusedAnswer>(&text) {
                Ok(a) if !a.resolved => Answer::new(
                    CompletionType::Fail,
                    OpResult {
                        resolved: Some(false),
                        status: Some(a.status),
                        event_count: Some(a.event_count),
                        ..Default::default()
                    },
                ),
                // Refused all the same, but no probe can be taken from it.
                _ => Answer {
                    kind: CompletionType::Fail,
                    ..Answer::nonconforming(what, status, &text)
                },
            },
            404 => Answer::new(
                CompletionType::Fail,
                OpResult {
                    resolved: Some(false),
                    ..Default::default()
                },
            ),
            _ => by_status(status, &text, retry_after, what),
        }
    }

    /// `POST /v1/messages` (outbox): one delivery attempt of message
    /// `msg_id`, duplicate `dup`. 200 `{"acked": true, "sent": ..}`: ok,
    /// with `sent` as `[msg_id, ver]`; 5xx, timeout, reset: info (the
    /// server may have run any prefix of its steps); 400/413/422: fail;
    /// anything else: info, non-conforming.
    pub async fn handle(&self, msg_id: i64, dup: u32, tag: Option<&Tag>) -> Answer {
        let body = serde_json::json!({ "id": msg_id, "dup": dup });
        let mut req = self.client.post(self.url(&["v1", "messages"])).json(&body);
        if let Some(t) = tag {
            req = t.apply(req, "handle");
        }
        let (status, retry_after, text) = match exchange(req).await {
            Ok(x) => x,
            Err(a) => return a,
        };
        let what = "POST /v1/messages";
        match status.as_u16() {
            200 => match serde_json::from_str::<MessageAnswer>(&text) {
                Ok(a) if a.acked => Answer::new(
                    CompletionType::Ok,
                    OpResult {
                        sent: a.sent.map(|s| [s.msg_id, s.ver]),
                        ..Default::default()
                    },
                ),
                _ => Answer::nonconforming(what, status, &text),
            },
            _ => by_status(status, &text, retry_after, what),
        }
    }

    /// `GET /v1/export`, streamed to `out` chunk by chunk (memory stays
    /// flat). Returns the bytes written. Errors: unreachable, not 200 (with
    /// an excerpt of the answer), or the body broke off.
    pub async fn export_to(&self, out: &std::path::Path) -> Result<u64, String> {
        self.export_path_to(&["v1", "export"], out).await
    }

    /// `GET /v1/outbox/export`, streamed to `out` as [`Self::export_to`].
    pub async fn outbox_export_to(&self, out: &std::path::Path) -> Result<u64, String> {
        self.export_path_to(&["v1", "outbox", "export"], out).await
    }

    async fn export_path_to(&self, path: &[&str], out: &std::path::Path) -> Result<u64, String> {
        use std::io::Write;
        let url = self.url(path);
        // The export may be large: no whole-request timeout, but the answer
        // must begin, and each chunk arrive, within a few request timeouts
        // (a hung service must not hang the audit).
        let wait = 3 * self.request_timeout;
        let silent = |what: &str| format!("GET {url}: no {what} within {wait:?}");
        let mut resp = tokio::time::timeout(
            wait,
            self.client
                .get(url.clone())
                .timeout(Duration::from_secs(24 * 3600))
                .send(),
        )
        .await
        .map_err(|_| silent("answer"))?
        .map_err(|e| format!("GET {url}: {}", describe(&e)))?;
        if resp.status() != StatusCode::OK {
            let status = resp.status();
            let text = resp.text().await.unwrap_or_default();
            return Err(format!("GET {url} answered {status} {}", excerpt(&text)));
        }
        // Plain file writes: the load is over, nothing else waits on this runtime.
        let file = std::fs::File::create(out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
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
        file.flush().map_err(|e| e.to_string())?;
        Ok(bytes)
    }
}

/// Sends a request and reads the whole answer: (status, Retry-After, body),
/// or the transport error's answer.
async fn exchange(
    req: reqwest::RequestBuilder,
) -> Result<(StatusCode, Option<Duration>, String), Answer> {
    let resp = req.send().await.map_err(|e| transport_error(&e))?;
    let status = resp.status();
    let wait = retry_after(&resp);
    let text = resp.text().await.map_err(|e| transport_error(&e))?;
    Ok((status, wait, text))
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

fn retry_after(resp: &reqwest::Response) -> Option<Duration> {
    resp.headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// Statuses other than the endpoint's own answers, per the contract:
/// 400/413/422 rejected (`fail`), 429 `fail` with a wait, 5xx `info`,
/// anything else not the contract's (`info`, non-conforming).
fn by_status(status: StatusCode, body: &str, retry_after: Option<Duration>, what: &str) -> Answer {
    match status.as_u16() {
        400 | 413 | 422 => Answer::error(
            CompletionType::Fail,
            format!("rejected: {status} {}", excerpt(body)),
        ),
        429 => Answer {
            retry_after: Some(retry_after.unwrap_or(Duration::from_millis(100))),
            ..Answer::error(CompletionType::Fail, format!("{status}: too many requests"))
        },
        500..=599 => {
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
