//! The cleartext (`http://`) requests of the HTTP client: hyper's own
//! HTTP/1 connections (what reqwest's client is built on: the same
//! connector and TCP settings), driven without reqwest's per-request
//! layers (URL parse, redirect and retry layers, header copies) and
//! without its pool's per-request machinery (keyed checkout, waiters,
//! idle bookkeeping): the client keeps a stack of idle connections and
//! each request takes one, or opens one, and gives it back once its
//! answer is read. On a loaded 2-core machine every microsecond the
//! client spends per request is taken from the service it measures.
//!
//! A request goes this way only when it is exactly what reqwest would
//! send: the target's URL names no user, query or fragment, the path needs
//! no normalising (no dot segment, no character the URL parser would
//! escape), every header value is valid. The bytes on the wire are then
//! reqwest's: the request's headers in the same order, `accept: */*` and
//! `host` after them, `content-length` last. Anything else (and every
//! `https://` target) is left to reqwest ([`super::client`]).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use bytes::Bytes;
use http::header::{HeaderMap, HeaderValue, ACCEPT, HOST};
use http::uri::{Authority, PathAndQuery, Uri};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use reqwest::Url;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tower_service::Service as _;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Idle connections kept at most (reqwest's pool keeps as many).
const MAX_IDLE: usize = 1024;

/// A connection's sending half.
type Conn = SendRequest<Full<Bytes>>;

/// A client of one `http://` service.
#[derive(Clone)]
pub struct Plain {
    /// Idle connections, the last given back on top (shared by the
    /// client's clones, as reqwest's pool is).
    idle: Arc<Mutex<Vec<Conn>>>,
    connector: TimedConnector,
    /// The service's `scheme://authority`, which the connector dials.
    dst: Uri,
    /// `host` as hyper's client writes it (the port only when not 80).
    host: HeaderValue,
    /// The URL's path without its trailing `/`, which each request's path
    /// follows.
    base_path: String,
    /// The URL's text without its trailing `/`, for messages.
    base_text: String,
    request_timeout: Duration,
}

/// What came back, before the workload reads it.
pub struct PlainReply {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

/// Why a request got no answer.
#[derive(Debug)]
pub struct PlainError {
    /// Nothing was written: the connection could not be made.
    pub connect: bool,
    /// The message, worded as reqwest words the same failure (the
    /// history's error texts do not depend on which way a request went).
    pub message: String,
}

impl Plain {
    /// A client of `base`, with reqwest's settings for a client of
    /// `connect` and `request` timeouts, or None when `base` is not a
    /// URL this client serves exactly as reqwest would (see the module).
    pub fn new(base: &Url, connect: Duration, request: Duration) -> Option<Plain> {
        if base.scheme() != "http"
            || !base.username().is_empty()
            || base.password().is_some()
            || base.query().is_some()
            || base.fragment().is_some()
        {
            return None;
        }
        let host = base.host_str()?;
        let authority = match base.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        Authority::try_from(authority.as_str()).ok()?;
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(connect));
        http.set_nodelay(true);
        // reqwest's defaults, which the rest of the client keeps.
        http.set_keepalive(Some(Duration::from_secs(15)));
        http.set_keepalive_interval(Some(Duration::from_secs(15)));
        http.set_keepalive_retries(Some(3));
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        http.set_tcp_user_timeout(Some(Duration::from_secs(30)));
        Some(Plain {
            idle: Arc::default(),
            connector: TimedConnector {
                http,
                timeout: connect,
            },
            dst: Uri::try_from(format!("http://{authority}")).ok()?,
            host: HeaderValue::try_from(authority).ok()?,
            base_path: base.path().trim_end_matches('/').to_string(),
            base_text: base.as_str().trim_end_matches('/').to_string(),
            request_timeout: request,
        })
    }

    /// The URI of `path` (a template's, filled in) under the base, in the
    /// origin form HTTP/1 sends (the path alone, as reqwest's pool turns
    /// the URI into before it sends), when the URL parser would leave it
    /// as it is; None otherwise.
    pub fn uri(&self, path: &str) -> Option<Uri> {
        if !path.starts_with('/') || !unchanged_by_url_parser(path) {
            return None;
        }
        let mut full = String::with_capacity(self.base_path.len() + path.len());
        full.push_str(&self.base_path);
        full.push_str(path);
        if full == "/" {
            return Some(Uri::default());
        }
        Some(Uri::from(
            PathAndQuery::from_maybe_shared(Bytes::from(full)).ok()?,
        ))
    }

    /// Sends `method` to `uri` ([`Plain::uri`] of `path`) with `headers`
    /// (in order) and `body`, and reads the whole answer within the
    /// request timeout.
    pub async fn exchange(
        &self,
        method: Method,
        uri: Uri,
        path: &str,
        mut headers: HeaderMap,
        body: Option<Bytes>,
    ) -> Result<PlainReply, PlainError> {
        // As reqwest adds its default header and hyper's client the host.
        if !headers.contains_key(ACCEPT) {
            headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        }
        if !headers.contains_key(HOST) {
            headers.insert(HOST, self.host.clone());
        }
        let url = || format!("{}{path}", self.base_text);
        let mut req = Request::new(Full::new(body.unwrap_or_default()));
        *req.method_mut() = method;
        *req.uri_mut() = uri;
        *req.headers_mut() = headers;
        // One timer for the request and its answer (the time driver's
        // entries are shared by the runtime's threads: one per request,
        // not two), with a mark of how far the exchange got, which the
        // timeout's wording names.
        let reading = AtomicBool::new(false);
        let whole = async {
            let (resp, conn) = self
                .send(req)
                .await
                .map_err(|e| failed(e.is_connect(), sending(&url()), &e))?;
            reading.store(true, Ordering::Relaxed);
            let (parts, body) = resp.into_parts();
            match body.collect().await {
                Ok(b) => Ok((parts, b.to_bytes(), conn)),
                Err(e) => Err(failed(false, decoding(&url()), &BodyError(&e))),
            }
        };
        let deadline = tokio::time::Instant::now() + self.request_timeout;
        let (parts, body, conn) = match tokio::time::timeout_at(deadline, whole).await {
            Err(_) if reading.load(Ordering::Relaxed) => {
                return Err(failed(false, decoding(&url()), &BodyError(&TimedOut)))
            }
            Err(_) => return Err(failed(false, sending(&url()), &TimedOut)),
            Ok(r) => r?,
        };
        // Read whole: the connection is free for the next request.
        self.give_back(conn);
        Ok(PlainReply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}

impl Plain {
    /// Sends `req` on an idle connection, or a new one. A request the
    /// connection refused unsent (it was closing) goes again on another,
    /// as reqwest's pool sends it again; on a new connection that is an
    /// error. Returns the answer's head and the connection.
    async fn send(
        &self,
        mut req: Request<Full<Bytes>>,
    ) -> Result<(http::Response<hyper::body::Incoming>, Conn), ClientError> {
        loop {
            let (mut conn, reused) = match self.checkout().await {
                Some(c) => (c, true),
                None => (self.connect().await?, false),
            };
            match conn.try_send_request(req).await {
                Ok(resp) => return Ok((resp, conn)),
                Err(mut e) => match e.take_message() {
                    Some(r) if reused => req = r,
                    Some(_) => return Err(ClientError::new("Canceled", e.into_error())),
                    None => return Err(ClientError::new("SendRequest", e.into_error())),
                },
            }
        }
    }

    /// An idle connection ready for a request, the closed ones dropped.
    async fn checkout(&self) -> Option<Conn> {
        loop {
            let mut conn = self.idle.lock().expect("idle connections").pop()?;
            if conn.ready().await.is_ok() {
                return Some(conn);
            }
        }
    }

    /// A connection that has answered a request whole, kept for the next.
    fn give_back(&self, conn: Conn) {
        if conn.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().expect("idle connections");
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// A new connection, its driver spawned on the current runtime (where
    /// the requests that use it run).
    async fn connect(&self) -> Result<Conn, ClientError> {
        let io = self
            .connector
            .clone()
            .call(self.dst.clone())
            .await
            .map_err(|e| ClientError {
                kind: "Connect",
                source: e,
            })?;
        let (mut conn, driver) = http1::handshake(io)
            .await
            .map_err(|e| ClientError::new("SendRequest", e))?;
        tokio::spawn(driver);
        conn.ready()
            .await
            .map_err(|e| ClientError::new("SendRequest", e))?;
        Ok(conn)
    }
}

/// Why a request got no answer, worded as reqwest's pool words it
/// (`client error (Connect)` and the cause after it): the history's texts
/// do not depend on which client sent the request.
#[derive(Debug)]
struct ClientError {
    /// The pool's name of the stage that failed.
    kind: &'static str,
    source: BoxError,
}

impl ClientError {
    fn new(kind: &'static str, e: hyper::Error) -> Self {
        ClientError {
            kind,
            source: Box::new(e),
        }
    }

    /// Nothing was written: the connection could not be made.
    fn is_connect(&self) -> bool {
        self.kind == "Connect"
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "client error ({})", self.kind)
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// Whether the URL parser keeps `path` (a path and query) byte for byte:
/// only characters it never escapes, no `%` (an escaped dot may make a dot
/// segment) and no `.` or `..` segment in the path.
fn unchanged_by_url_parser(path: &str) -> bool {
    let plain = path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&()*+,;=:@/?".contains(&b));
    let path_part = path.split('?').next().unwrap_or_default();
    plain && !path_part.split('/').any(|s| s == "." || s == "..")
}

fn sending(url: &str) -> String {
    format!("error sending request for url ({url})")
}

fn decoding(url: &str) -> String {
    format!("error decoding response body for url ({url})")
}

/// `what` and the chain of `e`'s causes, one line, as
/// [`super::client::describe`] words a reqwest error.
fn failed(connect: bool, what: String, e: &dyn std::error::Error) -> PlainError {
    let mut message = what;
    let mut next = Some(e);
    while let Some(c) = next {
        message.push_str(": ");
        message.push_str(&c.to_string());
        next = c.source();
    }
    PlainError { connect, message }
}

/// reqwest's timeout error, by its words.
#[derive(Debug)]
struct TimedOut;

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("operation timed out")
    }
}

impl std::error::Error for TimedOut {}

/// reqwest's body error around its cause, by its words.
#[derive(Debug)]
struct BodyError<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for BodyError<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request or response body error")
    }
}

impl std::error::Error for BodyError<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0)
    }
}

/// hyper's TCP connector bounded by the connect timeout as a whole (name
/// resolution included), as reqwest bounds it.
#[derive(Clone)]
struct TimedConnector {
    http: HttpConnector,
    timeout: Duration,
}

impl tower_service::Service<Uri> for TimedConnector {
    type Response = TokioIo<tokio::net::TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let connecting = self.http.call(dst);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, connecting).await {
                Ok(r) => r.map_err(Into::into),
                Err(_) => Err(Box::new(TimedOut) as BoxError),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_the_url_parser_keeps_go_this_way() {
        for p in [
            "/v1/events",
            "/v1/groups/g-1.x_y~z/resolve",
            "/a?b=c&d=e:f@g",
            "/a//b",
        ] {
            assert!(unchanged_by_url_parser(p), "{p}");
            let u = Url::parse(&format!("http://h{p}")).unwrap();
            let q = u.query().map(|q| format!("?{q}")).unwrap_or_default();
            assert_eq!(format!("{}{q}", u.path()), p);
        }
        for p in [
            "/a/../b", "/a/./b", "/a/..", "/a%2e", "/a b", "/a\"", "/a#f", "/é", "/a\\b", "/a?'",
        ] {
            assert!(!unchanged_by_url_parser(p), "{p}");
        }
        // `..` in a query is no segment.
        assert!(unchanged_by_url_parser("/a?x=.."));
    }

    #[test]
    fn only_plain_urls_without_user_query_or_fragment_go_this_way() {
        let t = Duration::from_secs(1);
        let ok = |u: &str| Plain::new(&Url::parse(u).unwrap(), t, t).is_some();
        assert!(ok("http://127.0.0.1:8080"));
        assert!(ok("http://example.com/api/"));
        assert!(!ok("https://example.com"));
        assert!(!ok("http://u:p@example.com"));
        assert!(!ok("http://example.com/?a=1"));
        assert!(!ok("http://example.com/#f"));
        let p = Plain::new(&Url::parse("http://Example.com:80/api/").unwrap(), t, t).unwrap();
        assert_eq!(p.host, "example.com");
        assert_eq!(p.uri("/v1/events").unwrap().to_string(), "/api/v1/events");
        assert!(p.uri("/a/../b").is_none());
    }
}
