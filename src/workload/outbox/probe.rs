//! `specstorm check-target URL --workload outbox`: a probe of a running
//! outbox service's contract endpoints that writes nothing.
//!
//! Every `POST /v1/messages` that is well formed hands a delivery to the
//! service's handler, which changes its state for good (a version, an
//! outbox entry, an ack), and an outbox run refuses a target that holds
//! rows: a probe that handled a message would make the next run refuse
//! the service. So this probe sends only what cannot write: `GET /healthz`
//! (200); `GET /v1/outbox/export` (200, read by the very reader a run uses,
//! so a service the probe passes is one whose final tables a run can
//! read; no value of a wrong type; the head row, version 0, present); and a
//! `POST /v1/messages` whose body is not a delivery (400, 413 or 422: a
//! service that accepted it would handle garbage). Whether the service
//! handles deliveries correctly is what a run judges, not the probe.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::probe_report::{ProbeError, ProbeOptions, Report};
use crate::target::http::probe::{judge, Answer, Probe};
use crate::workload::outbox::export::read_outbox_export;
use std::io::Write;

/// Runs the probe on a current-thread tokio runtime, writing each check's
/// line to `out` as soon as it is judged, then the verdict line. Fails
/// only when the probe cannot start (an unusable URL, no HTTP client).
pub fn check_target(opts: &ProbeOptions, out: &mut dyn Write) -> Result<Report, ProbeError> {
    let (probe, rt) = Probe::start(opts, out)?;
    Ok(rt.block_on(run(probe)))
}

async fn run(mut p: Probe<'_>) -> Report {
    let _ = writeln!(
        p.out,
        "# check-target {} (contract v1, outbox workload; read-only: no delivery is sent; \
         timeout {})",
        p.base,
        humantime::format_duration(p.timeout)
    );
    let mut report = Report {
        workload: "outbox",
        base: p.base.clone(),
        project: String::new(),
        checks: Vec::new(),
        unreachable: None,
    };

    let answer = p.send(p.client.get(p.url("/healthz"))).await;
    if let Err(why) = &answer {
        report.unreachable = Some(why.clone());
    }
    p.record(
        &mut report,
        judge("GET /healthz", "200", answer, |a| a.status_is(200)),
    );
    if report.unreachable.is_some() {
        return p.finish(report);
    }

    let answer = p.send(p.client.get(p.url("/v1/outbox/export"))).await;
    p.record(
        &mut report,
        judge(
            "GET /v1/outbox/export",
            "200 {state_log, outbox, out_queue, processed} with the contract's rows and \
             the head row (ver 0)",
            answer,
            check_export,
        ),
    );

    // Not a delivery: an id that is not an integer, and no dup.
    let answer = p
        .send(
            p.client
                .post(p.url("/v1/messages"))
                .header("content-type", "application/json")
                .body(r#"{"id": "specstorm-probe", "note": "not a delivery"}"#),
        )
        .await;
    p.record(
        &mut report,
        judge(
            "POST /v1/messages (not a delivery)",
            "400, 413 or 422",
            answer,
            |a| match a.status {
                400 | 413 | 422 => Ok(()),
                s => Err(format!("status {s}: a malformed delivery must be refused")),
            },
        ),
    );
    let _ = writeln!(
        p.out,
        "# POST /v1/messages with a delivery: not probed (it would change the service's \
         state, and a run refuses a target that holds rows)"
    );
    p.finish(report)
}

/// The export, read as a run reads it: 200, the contract's shape, every
/// value of its type, and the state store's head row (ver 0) present.
fn check_export(a: &Answer) -> Result<(), String> {
    a.status_is(200)?;
    let file = tempfile::NamedTempFile::new().map_err(|e| format!("a temporary file: {e}"))?;
    std::fs::write(file.path(), &a.body).map_err(|e| format!("a temporary file: {e}"))?;
    let tables = read_outbox_export(file.path())?;
    if !tables.bad_values.is_empty() {
        return Err(format!(
            "values of the wrong type: {}",
            tables.bad_values.join(", ")
        ));
    }
    if !tables.state_log.iter().any(|r| r.ver == Some(0)) {
        return Err("no state_log row with ver 0 (the state store's head row)".into());
    }
    Ok(())
}
