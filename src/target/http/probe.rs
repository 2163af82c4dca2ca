//! The HTTP probe's machinery that every workload's `check-target` shares:
//! the base URL's rules ([`parse_base_url`]), the probe's client and
//! runtime ([`Probe`]: a connect and a total timeout on every request, no
//! redirects, no proxy), an answer read whole ([`Answer`]), and the
//! judgement of one answer as a check's line ([`judge`]). Which requests a
//! probe sends and what it accepts are the workload's own (its `probe`
//! module).
//!
//! `http://` or `https://` (trusting the system's roots, a CA bundle, or
//! with `--insecure-skip-verify` any certificate: see `tls`). A dead or
//! silent target never hangs a probe: every request times out.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::tls::{client_builder, Tls};
use crate::probe_report::{Check, Outcome, ProbeError, ProbeOptions, Report};
use reqwest::{Client, RequestBuilder, Url};
use serde_json::{Map, Value};
use std::io::Write;
use std::time::Duration;

/// The longest body excerpt shown in a line (in characters).
const EXCERPT: usize = 80;

/// Parses and checks the base URL: `http://` or `https://`, a host, no
/// query or fragment. A trailing `/` is dropped.
pub fn parse_base_url(url: &str) -> Result<Url, ProbeError> {
    let usage = |why: String| ProbeError::Usage(format!("invalid target URL {url:?}: {why}"));
    if !url.contains("://") {
        return Err(usage(
            "it must start with http:// or https://, e.g. http://127.0.0.1:8080".into(),
        ));
    }
    let mut u = Url::parse(url).map_err(|e| usage(e.to_string()))?;
    match u.scheme() {
        "http" | "https" => {}
        s => {
            return Err(usage(format!(
                "scheme {s}:// is not supported; use http:// or https://"
            )))
        }
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err(usage("no host".into()));
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(usage("a base URL takes no query or fragment".into()));
    }
    let path = u.path().trim_end_matches('/').to_string();
    u.set_path(&path);
    Ok(u)
}

/// An answer: the status and the body as (lossy) UTF-8 text.
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body, as (lossy) UTF-8 text.
    pub body: String,
}

impl Answer {
    /// `STATUS EXCERPT`, e.g. `200 {"accepted":true,...}`.
    pub fn got(&self) -> String {
        format!("{} {}", self.status, excerpt(&self.body))
    }

    /// The body as a JSON object.
    pub fn object(&self) -> Result<Map<String, Value>, String> {
        match serde_json::from_str::<Value>(&self.body) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err("the body is JSON but not an object".into()),
            Err(_) => Err("the body is not JSON".into()),
        }
    }

    /// Err unless the status is `want`.
    pub fn status_is(&self, want: u16) -> Result<(), String> {
        if self.status == want {
            Ok(())
        } else {
            Err(format!("status {} instead of {want}", self.status))
        }
    }
}

/// The probe's state while it runs.
pub struct Probe<'a> {
    /// The client every request goes through.
    pub client: Client,
    /// The base URL, without a trailing slash.
    pub base: String,
    /// The connect and total timeout of every request.
    pub timeout: Duration,
    /// Where each check's line is written as it is judged.
    pub out: &'a mut dyn Write,
}

impl<'a> Probe<'a> {
    /// The probe's client (the options' timeouts and TLS trust, no
    /// redirects, no proxy) and runtime. Errors: an unusable URL, timeout
    /// or CA bundle (exit 2), no HTTP client or runtime (exit 3).
    pub fn start(
        opts: &ProbeOptions,
        out: &'a mut dyn Write,
    ) -> Result<(Self, tokio::runtime::Runtime), ProbeError> {
        let base = parse_base_url(&opts.url)?;
        if opts.timeout.is_zero() {
            return Err(ProbeError::Usage("--timeout must be positive".into()));
        }
        let tls = Tls {
            ca_file: opts.ca_file.clone(),
            insecure_skip_verify: opts.insecure_skip_verify,
        };
        let client = tls
            .apply(client_builder())
            .map_err(|e| ProbeError::Usage(e.to_string()))?
            .connect_timeout(opts.timeout)
            .timeout(opts.timeout)
            // A conforming target answers directly: show a 3xx as it is.
            .redirect(reqwest::redirect::Policy::none())
            // The probe talks to the target itself, never through a proxy.
            .no_proxy()
            .user_agent(concat!(
                "specstorm/",
                env!("CARGO_PKG_VERSION"),
                " check-target"
            ))
            .build()
            .map_err(|e| ProbeError::Setup(format!("cannot build the HTTP client: {e}")))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ProbeError::Setup(format!("cannot start the runtime: {e}")))?;
        if tls.insecure_skip_verify {
            let _ = writeln!(out, "# WARNING: {}", super::tls::INSECURE_NOTE);
        }
        let probe = Probe {
            client,
            base: base.as_str().trim_end_matches('/').to_string(),
            timeout: opts.timeout,
            out,
        };
        Ok((probe, rt))
    }

    /// Prints the verdict and returns the report.
    pub fn finish(self, report: Report) -> Report {
        let _ = writeln!(self.out, "{}", report.verdict());
        let _ = self.out.flush();
        report
    }

    /// Prints the check's line at once, and keeps the check.
    pub fn record(&mut self, report: &mut Report, check: Check) {
        let _ = writeln!(self.out, "{}", check.line());
        let _ = self.out.flush();
        report.checks.push(check);
    }

    /// The URL of the contract path `path` under the base.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends the request and reads the whole body; Err describes why there
    /// was no (complete) answer.
    pub async fn send(&self, req: RequestBuilder) -> Result<Answer, String> {
        let resp = req.send().await.map_err(|e| self.describe(&e))?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(|e| self.describe(&e))?;
        Ok(Answer {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// A short, clear reason for a failed request.
    fn describe(&self, e: &reqwest::Error) -> String {
        let root = root_cause(e);
        if e.is_timeout() {
            format!(
                "no answer within {} (timeout{})",
                humantime::format_duration(self.timeout),
                if e.is_connect() {
                    " while connecting"
                } else {
                    ""
                }
            )
        } else if e.is_connect() {
            format!("cannot connect: {root}")
        } else {
            format!("request failed: {root}")
        }
    }
}

/// The innermost error's message (e.g. `Connection refused (os error 111)`).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Judges an answer: `ok` when `accept` says so, else `FAIL` with what was
/// expected, what came back and why it does not conform.
pub fn judge(
    endpoint: &str,
    expected: &str,
    answer: Result<Answer, String>,
    accept: impl FnOnce(&Answer) -> Result<(), String>,
) -> Check {
    let (outcome, detail) = match answer {
        Err(why) => (
            Outcome::Fail,
            format!("expected {expected}, got no answer: {why}"),
        ),
        Ok(a) => match accept(&a) {
            Ok(()) => (Outcome::Ok, a.got()),
            Err(why) => (
                Outcome::Fail,
                format!("expected {expected}, got {} ({why})", a.got()),
            ),
        },
    };
    Check {
        endpoint: endpoint.to_string(),
        outcome,
        detail,
    }
}

/// At most [`EXCERPT`] characters of `body`, whitespace runs folded to one
/// space, `...` when cut; `(empty body)` for an empty one.
pub fn excerpt(body: &str) -> String {
    let folded = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.is_empty() {
        return "(empty body)".into();
    }
    match folded.char_indices().nth(EXCERPT) {
        Some((cut, _)) => format!("{}...", &folded[..cut]),
        None => folded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_base_url("http://127.0.0.1:8080/").unwrap().as_str(),
            "http://127.0.0.1:8080/"
        );
        assert_eq!(
            parse_base_url("http://h:1/api/").unwrap().as_str(),
            "http://h:1/api"
        );
        assert_eq!(
            parse_base_url("https://h:8443/").unwrap().as_str(),
            "https://h:8443/"
        );
        assert!(parse_base_url("localhost:8080").is_err());
        assert!(parse_base_url("ftp://h").is_err());
        assert!(parse_base_url("http://h/?x=1").is_err());
    }

    #[test]
    fn excerpts() {
        assert_eq!(excerpt(""), "(empty body)");
        assert_eq!(excerpt("a\n  b"), "a b");
        let long = "x".repeat(200);
        assert_eq!(excerpt(&long).len(), EXCERPT + 3);
    }
}
