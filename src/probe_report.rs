//! What `specstorm check-target` is asked ([`ProbeOptions`]) and what it
//! finds ([`Report`]: each check's outcome and line, the verdict), or why
//! it could not start ([`ProbeError`]): the types every workload's probe
//! hands back through the `Workload` trait, kept below the workloads
//! (the HTTP machinery every probe shares is `crate::target::http::probe`;
//! each workload's probe is its own `probe` module).
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use crate::exit_code::ExitCode;
use std::path::PathBuf;
use std::time::Duration;

/// What `specstorm check-target` needs.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The base URL of the service (`http(s)://HOST:PORT`, optionally with a
    /// path prefix that every contract path is appended to).
    pub url: String,
    /// The connect timeout and the total timeout of every request.
    pub timeout: Duration,
    /// An `https://` service: a PEM bundle of CA certificates trusted
    /// besides the system's roots.
    pub ca_file: Option<PathBuf>,
    /// An `https://` service: trust any certificate (said on the probe's
    /// first line).
    pub insecure_skip_verify: bool,
}

/// Why the probe could not even start; maps to the CLI's exit codes.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The URL is unusable (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The HTTP client or the runtime could not be set up (exit 3).
    #[error("{0}")]
    Setup(String),
}

impl ProbeError {
    /// The exit code (`docs/cli.md`).
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ProbeError::Usage(_) => ExitCode::Usage,
            ProbeError::Setup(_) => ExitCode::Target,
        }
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The answer conforms to the contract.
    Ok,
    /// The answer does not conform, or there was none.
    Fail,
    /// Not sent: it needs what an earlier, failed check should have given.
    Skip,
}

impl Outcome {
    /// The word that starts the check's line.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "FAIL",
            Outcome::Skip => "skip",
        }
    }
}

/// One request of the sequence and its judgement.
#[derive(Debug, Clone)]
pub struct Check {
    /// Method, path and, where needed, which case (`POST /v1/events (new id)`).
    pub endpoint: String,
    /// Whether it conforms.
    pub outcome: Outcome,
    /// `ok`: what came back (status and a body excerpt); `FAIL`: what was
    /// expected and what came back; `skip`: why it was not sent.
    pub detail: String,
}

impl Check {
    /// The line printed for the check, e.g.
    /// `ok    POST /v1/events (new id): 200 {"accepted":true,...}`.
    pub fn line(&self) -> String {
        format!(
            "{:<6}{}: {}",
            self.outcome.label(),
            self.endpoint,
            self.detail
        )
    }
}

/// Everything the probe found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The workload whose endpoints were probed.
    pub workload: &'static str,
    /// The base URL probed (normalized, without a trailing slash).
    pub base: String,
    /// The fresh project namespace the probe used.
    pub project: String,
    /// The checks in the order they ran.
    pub checks: Vec<Check>,
    /// Set when the target did not answer `GET /healthz` at all (nothing
    /// else was sent).
    pub unreachable: Option<String>,
}

impl Report {
    /// True when the target answered and every check is `ok`.
    pub fn conforms(&self) -> bool {
        self.unreachable.is_none() && self.checks.iter().all(|c| c.outcome == Outcome::Ok)
    }

    /// 0 when the target conforms, else 3 (`docs/cli.md`).
    pub fn exit_code(&self) -> ExitCode {
        if self.conforms() {
            ExitCode::Met
        } else {
            ExitCode::Target
        }
    }

    /// The last line: the verdict, which rule decided, and the exit code.
    pub fn verdict(&self) -> String {
        if let Some(why) = &self.unreachable {
            return format!(
                "verdict: UNREACHABLE: {}: {why}; nothing else was sent (exit 3)",
                self.base
            );
        }
        let failed: Vec<&str> = self
            .checks
            .iter()
            .filter(|c| c.outcome != Outcome::Ok)
            .map(|c| c.endpoint.as_str())
            .collect();
        if failed.is_empty() {
            format!(
                "verdict: conforms to contract v1 ({} workload): all {} checks ok (exit 0)",
                self.workload,
                self.checks.len()
            )
        } else {
            format!(
                "verdict: does NOT conform to contract v1 ({} workload): {} of {} checks \
                 failed or could not run: {} (exit 3)",
                self.workload,
                failed.len(),
                self.checks.len(),
                failed.join("; ")
            )
        }
    }
}
