//! The built-in fault proxy for HTTP targets: Toxiproxy's toxics, applied
//! per HTTP request. The bench talks to the proxy instead of the target;
//! the proxy forwards every request to the target (the upstream) and, for
//! the requests of ops, does what [`FaultPlan::proxy_action_for`] decides:
//!
//! | toxic | forwarded | what the bench's client sees | recorded |
//! |---|---|---|---|
//! | latency | yes, after the delay | the upstream's answer, later | `forwarded: true`, `latency 5ms` |
//! | drop_response | yes, whole answer read | the connection closes, no answer (`info`) | `forwarded: true`, the upstream's status |
//! | reset | no | the connection closes, no answer (`info`) | `forwarded: false` |
//! | error | no | the fault's 5xx with a JSON error (`info`) | `forwarded: false` |
//!
//! An op's request carries three headers, `x-specstorm-op` (op id, u64),
//! `x-specstorm-key` (the op's [`op_key`](crate::draws::op_key), u64) and
//! `x-specstorm-f` (`ingest` or `resolve`, or the outbox's `handle`); they
//! ride through to the upstream like every end-to-end header. A request
//! without all three (healthz, either export, reset) is forwarded
//! untouched, its answer streamed back: the final read is never faulted.
//!
//! Every injection is written to the history (a fault entry, action
//! `inject`, with the op id and `forwarded`) before the client can see the
//! outcome, so the checkers can narrow when an indeterminate op may have
//! taken effect. A target that cannot be reached is answered 502 (504 on a
//! timeout) and nothing is recorded: the client reads a 5xx as `info`.
//!
//! "No answer" is made by answering with a body that fails on its first
//! poll: hyper then closes the connection before the status line, buffered
//! but not yet written, ever leaves the proxy.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::{FaultPlan, ProxyAction, Recorder};
use crate::control::Control;
use crate::fault_hook::{drop_detail, F_HEADER, KEY_HEADER, OP_HEADER};
use crate::history::{DroppedResponse, FaultAction, OpKind};
use crate::target::http::client::describe;
use crate::target::http::tls::{client_builder, Tls};
use crate::workload::attempt_end::AttemptEnd;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::watch;

/// Connect timeout to the upstream.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// An op's request: the whole upstream answer must arrive within this
/// (longer than the bench's own request timeout, which decides first).
const OP_TIMEOUT: Duration = Duration::from_secs(30);
/// An untagged request (export): the upstream's status line must arrive
/// within this; the body is streamed without a deadline (the client has its own).
const HEAD_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest request body read from the client.
const MAX_BODY: usize = 16 << 20;
/// After [`FaultProxy::stop`]: in-flight requests get this long to finish.
const GRACE: Duration = Duration::from_secs(1);
/// ... and the runtime this long to drop what is left.
const RUNTIME_GRACE: Duration = Duration::from_millis(500);

/// The body of an `error` toxic's answer.
const INJECTED: &str = "injected by the specstorm fault proxy";

/// A running fault proxy: a listener on `127.0.0.1` and a thread with its
/// own single-threaded tokio runtime. Stopped by [`FaultProxy::stop`] or on
/// drop.
pub struct FaultProxy {
    /// Where the bench sends its requests: `http://127.0.0.1:PORT` (the real port).
    pub url: String,
    stop_tx: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

/// What every request handler shares.
struct Shared {
    client: reqwest::Client,
    /// The upstream's base URL without a trailing `/`.
    upstream: String,
    recorder: Recorder,
    load_start: u64,
    /// Record a dropped answer's body in the fault entry (the checkers
    /// read the contract's answers from it); false for a mapped service,
    /// whose bodies are not the contract's and may hold anything.
    keep_bodies: bool,
    /// The load's control: its stop cuts a latency toxic's wait short
    /// (the request is forwarded at once), as it cuts pauses.
    control: Arc<Control>,
}

/// The tag of an op's request.
#[derive(Debug, Clone, Copy)]
struct Tag {
    op: u64,
    key: u64,
    kind: OpKind,
}

impl FaultProxy {
    /// Listens on 127.0.0.1:0 (plain HTTP) and forwards to `upstream`
    /// (`http://host:port`, or `https://` trusting the system's roots).
    /// `load_start` is the clock ns at which the load started (fault windows are measured from it).
    ///
    /// Returns once the socket is bound: `url` is ready for requests.
    /// Errors (as a message): `upstream` is not an `http(s)://` URL, or the
    /// socket, the HTTP client, the runtime or the thread cannot be made.
    pub fn start(
        upstream: &str,
        recorder: Recorder,
        load_start: u64,
    ) -> Result<FaultProxy, String> {
        Self::start_with(
            upstream,
            recorder,
            load_start,
            true,
            Arc::new(Control::default()),
            &Tls::default(),
        )
    }

    /// [`FaultProxy::start`]; `keep_bodies` = false records a dropped
    /// answer by its status alone (a service with its own API: its bodies
    /// are not the contract's, and the checkers must not read them as such).
    /// The load's `control`: once it stops, latency toxics wait no more.
    /// An `https://` upstream is trusted as `tls` says (the target's).
    pub fn start_with(
        upstream: &str,
        recorder: Recorder,
        load_start: u64,
        keep_bodies: bool,
        control: Arc<Control>,
        tls: &Tls,
    ) -> Result<FaultProxy, String> {
        let base = upstream.trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base)
            .map_err(|e| format!("fault proxy: bad upstream URL {upstream:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            return Err(format!(
                "fault proxy: the upstream must be http(s)://host:port, not {upstream:?}"
            ));
        }
        let client = tls
            .apply(client_builder())
            .map_err(|e| format!("fault proxy: {e}"))?
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_max_idle_per_host(1024)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("fault proxy: cannot build the HTTP client: {e}"))?;
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|_| l))
            .map_err(|e| format!("fault proxy: cannot listen on 127.0.0.1:0: {e}"))?;
        let local = std_listener
            .local_addr()
            .map_err(|e| format!("fault proxy: no local address: {e}"))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("fault proxy: cannot start the runtime: {e}"))?;
        let listener = {
            let _guard = rt.enter();
            tokio::net::TcpListener::from_std(std_listener)
                .map_err(|e| format!("fault proxy: cannot listen on {local}: {e}"))?
        };
        let shared = Arc::new(Shared {
            client,
            upstream: base,
            recorder,
            load_start,
            keep_bodies,
            control,
        });
        let app = Router::new().fallback(handle).with_state(shared);
        let (stop_tx, stop_rx) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                rt.block_on(serve(listener, app, stop_rx));
                rt.shutdown_timeout(RUNTIME_GRACE);
            })
            .map_err(|e| format!("fault proxy: cannot spawn its thread: {e}"))?;
        Ok(FaultProxy {
            url: format!("http://{local}"),
            stop_tx: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// Stops accepting and shuts down (also on Drop). Never hangs (bounded grace).
    ///
    /// In-flight requests get about a second to finish, then their
    /// connections are dropped. Calling it again does nothing.
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop_tx.take() {
            let _ = tx.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Resolves once a stop is asked for (or the handle is gone).
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stop| *stop).await;
}

/// Serves until a stop, then lets in-flight requests finish for at most [`GRACE`].
async fn serve(listener: tokio::net::TcpListener, app: Router, stop: watch::Receiver<bool>) {
    let server = axum::serve(listener, app).with_graceful_shutdown(stopped(stop.clone()));
    let bounded = async {
        stopped(stop).await;
        tokio::time::sleep(GRACE).await;
    };
    tokio::select! {
        r = server => if let Err(e) = r {
            tracing::warn!(error = %e, "fault proxy failed");
        },
        _ = bounded => tracing::debug!("fault proxy: grace over, dropping connections"),
    }
}

/// The tag of an op's request, if it carries all three headers, well formed.
fn tag(headers: &HeaderMap) -> Option<Tag> {
    let get = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let op = get(OP_HEADER)?.parse().ok()?;
    let key = get(KEY_HEADER)?.parse().ok()?;
    // `ingest`, `resolve`, `handle`, or a registered workload's kind.
    let kind = OpKind::named(get(F_HEADER)?)?;
    Some(Tag { op, key, kind })
}

/// A JSON error answer, `{"error": msg}`.
fn json_error(status: StatusCode, msg: impl Into<String>) -> Response {
    let body = serde_json::json!({ "error": msg.into() }).to_string();
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// No answer at all: a body that fails on its first poll, so hyper closes
/// the connection without writing the buffered status line.
fn abort() -> Response {
    let broken = futures_util::stream::iter([Err::<Bytes, std::io::Error>(std::io::Error::other(
        "connection dropped by the specstorm fault proxy",
    ))]);
    Response::new(Body::from_stream(broken))
}

/// The status and the relayed headers of an upstream answer:
/// content-type, retry-after, and how an outbox delivery's attempt ended
/// ([`AttemptEnd::HEADER`]: the bench counts a lost compare-and-swap by
/// it, so an outbox run through the proxy counts as one without).
fn head_of(up: &reqwest::Response) -> (StatusCode, HeaderMap) {
    let mut headers = HeaderMap::new();
    let end = HeaderName::from_static(AttemptEnd::HEADER);
    for name in [CONTENT_TYPE, RETRY_AFTER, end] {
        if let Some(v) = up.headers().get(&name) {
            headers.insert(name, v.clone());
        }
    }
    (up.status(), headers)
}

/// An answer from a status, the relayed headers and a body.
fn answer(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    resp
}

/// 502 or 504 for an upstream that did not answer.
fn upstream_failed(upstream: &str, e: &reqwest::Error) -> Response {
    if e.is_timeout() {
        json_error(
            StatusCode::GATEWAY_TIMEOUT,
            format!(
                "fault proxy: upstream {upstream} timed out: {}",
                describe(e)
            ),
        )
    } else {
        json_error(
            StatusCode::BAD_GATEWAY,
            format!(
                "fault proxy: upstream {upstream} unreachable: {}",
                describe(e)
            ),
        )
    }
}

/// Sends the request upstream (method, path and query, headers but the
/// hop-by-hop ones, body). Errors: the 502/504 answer for the client.
async fn send(
    sh: &Shared,
    parts: &axum::http::request::Parts,
    body: Bytes,
    timeout: Option<Duration>,
) -> Result<reqwest::Response, Response> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut req = sh
        .client
        .request(parts.method.clone(), format!("{}{path}", sh.upstream))
        .body(body);
    // Every end-to-end header rides through: a mapped service's own
    // (authorization, ...), and the reference server's fault hook (crash
    // and pause faults together with proxy faults).
    for (name, value) in &parts.headers {
        let hop = matches!(
            name.as_str(),
            "host"
                | "connection"
                | "content-length"
                | "transfer-encoding"
                | "keep-alive"
                | "upgrade"
                | "te"
                | "trailer"
                | "proxy-authorization"
                | "proxy-connection"
        );
        if !hop {
            req = req.header(name.clone(), value.clone());
        }
    }
    if let Some(t) = timeout {
        req = req.timeout(t);
    }
    req.send()
        .await
        .map_err(|e| upstream_failed(&sh.upstream, &e))
}

/// An op's request, forwarded: the upstream's whole answer (status,
/// relayed headers, body). Errors: the 502/504 answer for the client.
async fn exchange(
    sh: &Shared,
    parts: &axum::http::request::Parts,
    body: Bytes,
) -> Result<(StatusCode, HeaderMap, Bytes), Response> {
    let up = send(sh, parts, body, Some(OP_TIMEOUT)).await?;
    let (status, headers) = head_of(&up);
    let bytes = up
        .bytes()
        .await
        .map_err(|e| upstream_failed(&sh.upstream, &e))?;
    Ok((status, headers, bytes))
}

/// A request that is not an op's (or untouched): forwarded, the answer's
/// body streamed back (an export may be large). An upstream body that
/// breaks off breaks the client's answer off too.
async fn pass(sh: &Shared, parts: &axum::http::request::Parts, body: Bytes) -> Response {
    let up = match tokio::time::timeout(HEAD_TIMEOUT, send(sh, parts, body, None)).await {
        Ok(Ok(up)) => up,
        Ok(Err(resp)) => return resp,
        Err(_) => {
            return json_error(
                StatusCode::GATEWAY_TIMEOUT,
                format!(
                    "fault proxy: upstream {} did not answer within {HEAD_TIMEOUT:?}",
                    sh.upstream
                ),
            )
        }
    };
    let (status, headers) = head_of(&up);
    let chunks = futures_util::stream::unfold(Some(up), |state| async move {
        let mut up = state?;
        match up.chunk().await {
            Ok(Some(c)) => Some((Ok(c), Some(up))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    answer(status, headers, Body::from_stream(chunks))
}

/// Every request: forwarded untouched, or a toxic applied (see the module doc).
async fn handle(State(sh): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                format!(
                    "fault proxy: cannot read the request body (at most {MAX_BODY} bytes): {e}"
                ),
            )
        }
    };
    let Some(tag) = tag(&parts.headers) else {
        return pass(&sh, &parts, body).await;
    };
    let rec = &sh.recorder;
    let since_load = Duration::from_nanos(rec.clock.now().saturating_sub(sh.load_start));
    let plan: &FaultPlan = &rec.plan;
    let (action, fault) = plan.proxy_action_for(tag.key, tag.kind, since_load);
    let Some(fault) = fault else {
        return pass(&sh, &parts, body).await;
    };
    let inject = |forwarded: bool, detail: String| {
        rec.record(
            fault,
            FaultAction::Inject,
            Some(tag.op),
            None,
            Some(forwarded),
            Some(detail),
        )
    };
    match action {
        ProxyAction::Forward => pass(&sh, &parts, body).await,
        ProxyAction::Delay(d) => {
            // Recorded before the wait: a client that gives up during it
            // was hit all the same. Not yet forwarded, so it says nothing
            // about the server (forwarded stays unknown).
            rec.record(
                fault,
                FaultAction::Inject,
                Some(tag.op),
                None,
                None,
                Some(format!("latency {d:?}")),
            );
            sh.control.sleep_async(d).await;
            match exchange(&sh, &parts, body).await {
                Ok((status, headers, bytes)) => answer(status, headers, Body::from(bytes)),
                Err(resp) => resp,
            }
        }
        ProxyAction::DropResponse => {
            let up = match send(&sh, &parts, body, Some(OP_TIMEOUT)).await {
                Ok(up) => up,
                Err(resp) => return resp,
            };
            let status = up.status();
            // The server decided once it sent its status; read the rest so
            // the whole answer was given before it is dropped.
            // The answer for the checkers, and in words for the reader.
            let (body, detail) = match up.bytes().await {
                Ok(_) if !sh.keep_bodies => (
                    None,
                    format!("drop_response: upstream answered {}", status.as_u16()),
                ),
                Ok(bytes) => {
                    let body = String::from_utf8_lossy(&bytes).into_owned();
                    let detail = drop_detail(status.as_u16(), &body);
                    (
                        (body.len() <= DroppedResponse::MAX_BODY).then_some(body),
                        detail,
                    )
                }
                Err(e) => (
                    None,
                    format!(
                        "drop_response: upstream answered {}, its body broke off: {}",
                        status.as_u16(),
                        describe(&e)
                    ),
                ),
            };
            let dropped = DroppedResponse {
                status: status.as_u16(),
                body,
            };
            rec.record_drop(fault, tag.op, dropped, detail);
            abort()
        }
        ProxyAction::Reset => {
            inject(false, "reset".into());
            abort()
        }
        ProxyAction::Error(code) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            inject(false, format!("error {}", status.as_u16()));
            json_error(status, INJECTED)
        }
    }
}
