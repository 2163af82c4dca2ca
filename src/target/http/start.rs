//! The scenario's `target.command` service for a run's HTTP phase (both
//! workloads): started with the run's variant and folder, its output in
//! the run folder's `service.log` ([`start_service`]), and waited for until
//! its health request answers ([`wait_healthy`]).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::client::HttpClient;
use super::service::Service;
use crate::control::Control;
use crate::scenario::{self, Scenario};
use crate::target::TargetError;
use crate::variant;
use std::path::Path;
use std::time::Duration;

/// Starts the scenario's `target.command`, if it has one (both workloads'
/// HTTP phases): `{variant}` is the variant's short name, `{run_dir}` the
/// run folder (absolute, shell-quoted), run in `target.workdir` (relative
/// to the scenario's folder, `base`), its output into the run folder's
/// `service.log` with `secrets` redacted. Errors: it cannot be started
/// (exit 3).
pub(crate) fn start_service(
    s: &Scenario,
    run_dir: &Path,
    base: &Path,
    secrets: &super::template::Secrets,
) -> Result<Option<Service>, TargetError> {
    let Some(command) = &s.target.command else {
        return Ok(None);
    };
    let run_dir_abs = std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    let command = command
        .replace("{variant}", &variant::short_name(&s.variant))
        .replace("{run_dir}", &shell_word(&run_dir_abs.display().to_string()));
    let workdir = base.join(s.target.workdir.as_deref().unwrap_or("."));
    Service::start(&command, &workdir, &run_dir.join("service.log"), secrets)
        .map(Some)
        .map_err(TargetError::Target)
}

/// Waits until `probe`'s health request to `url` answers 2xx (both
/// workloads' HTTP phases). Unreachable before anything ran is exit 3 at once, with
/// the reason: a few tries within `target.startup_timeout` when the bench
/// started the service (`service`), else two request timeouts (at least
/// 5 s). A started service that exits, or a stop (q, Ctrl-C, SIGTERM),
/// ends the wait at once: a target that never answers must not hold the
/// user hostage. Errors: not usable (exit 3), interrupted (130).
pub(crate) fn wait_healthy(
    rt: &tokio::runtime::Runtime,
    probe: &HttpClient,
    url: &str,
    t: &scenario::Target,
    mut service: Option<&mut Service>,
    run_dir: &Path,
    control: &Control,
) -> Result<(), TargetError> {
    let patience = if service.is_some() {
        t.startup_timeout
    } else {
        t.request_timeout
            .saturating_mul(2)
            .max(Duration::from_secs(5))
    };
    let until = crate::control::deadline(patience);
    let mut last_answer: Option<Result<(), String>> = None;
    let ready = loop {
        // (whether this try ran out of time, its answer)
        let answer = rt.block_on(async {
            let left = until.map_or(patience, |u| {
                u.saturating_duration_since(std::time::Instant::now())
            });
            control
                .or_stop(tokio::time::timeout(left, probe.healthz()))
                .await
                .map(|a| match a {
                    Ok(answer) => (false, answer),
                    Err(_elapsed) => (
                        true,
                        Err(format!(
                            "no answer to {} within {patience:?}",
                            probe.mapping().health.what
                        )),
                    ),
                })
        });
        let Some((timed_out, answer)) = answer else {
            return Err(TargetError::Interrupted(format!(
                "interrupted while waiting for {url} to answer"
            )));
        };
        if answer.is_ok() {
            break answer;
        }
        if !timed_out {
            last_answer = Some(answer.clone());
        }
        if until.is_some_and(|u| std::time::Instant::now() >= u) {
            // What the service last said (a 503, say) tells more than the
            // final try's timeout.
            break last_answer.unwrap_or(answer);
        }
        // A started service that exited will never answer.
        if let Some(Err(e)) = service.as_deref_mut().map(Service::check) {
            break Err(format!(
                "{e}; see {}",
                run_dir.join("service.log").display()
            ));
        }
        // A stop here is seen by the next try, at once.
        control.sleep(Duration::from_millis(100));
    };
    ready.map_err(|e| TargetError::Target(format!("{url} is not usable: {e}")))
}

/// `s` as one word of a POSIX shell command (quoted unless it is plain).
pub(crate) fn shell_word(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
