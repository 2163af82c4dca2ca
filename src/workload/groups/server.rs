//! The groups workload's part of the reference server (`specstorm
//! serve`, [`crate::server`]), contract v1 (`docs/http-contract.md`):
//! `POST /v1/events` (ingest), `POST /v1/groups/{group_id}/resolve` and
//! `GET /v1/export` (the variant's `export.events` and `export.groups`, one
//! snapshot, streamed). Each op runs on a pool worker
//! ([`super::server_ops`]); its answer maps to the contract's status
//! codes. An outbox server answers these endpoints with 404.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::server_ops::{run_op, Op, OpAnswer};
use super::statements::{load_groups, GroupsVariant, EVENTS_COLUMNS, GROUPS_COLUMNS};
use super::{group_id, IngestOp, ResolveOp};
use crate::fault_hook::{parse_fault_header, FAULT_HEADER};
use crate::history::CompletionType;
use crate::nemesis::OpFaults;
use crate::server::export::Section;
use crate::server::part::{ServerPart, PARTS};
use crate::server::state::{error, stream_export, variant_of, AppState, Variant};
use crate::statements::{OpProgram, StatementFile};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// The workload these endpoints are (the 404 on another's server says it).
const WORKLOAD: &str = "groups";

/// The log's target stays the one the routes had before they moved here:
/// whoever reads the server's log sees no change.
const LOG_TARGET: &str = "specstorm::server::routes";

#[linkme::distributed_slice(PARTS)]
static GROUPS_SERVER: ServerPart = ServerPart {
    workload: WORKLOAD,
    // Groups is the default workload: it checks the files no other
    // workload claims, and its errors say what a groups file lacks.
    claims: |_| false,
    load: |variant| {
        Ok(Arc::new(ServedGroups(Arc::new(load_groups(
            variant, None,
        )?))))
    },
    routes,
};

/// A groups variant as the server runs it.
struct ServedGroups(Arc<GroupsVariant>);

impl Variant for ServedGroups {
    fn schema(&self) -> &str {
        &self.0.schema
    }

    fn file(&self) -> &StatementFile {
        &self.0.file
    }

    fn needs_journal(&self) -> Option<String> {
        let v = &self.0;
        let t = v.ingest.txns.first().or(v.resolve.txns.first())?;
        let program = if v.ingest.txns.is_empty() {
            &v.resolve
        } else {
            &v.ingest
        };
        Some(format!(
            "--journal-mode off has no rollback journal, and transaction blocks need \
             one: {}:{} opens one (`-- begin: {}`)",
            v.file.path.display(),
            program.steps[t.first].line,
            t.mode.name()
        ))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/events", post(ingest))
        .route("/v1/groups/{group_id}/resolve", post(resolve))
        .route("/v1/export", get(export_all))
}

/// The sections of the groups export.
fn sections(v: &GroupsVariant) -> Vec<Section> {
    vec![
        Section {
            key: "events",
            sql: Some(v.export_events.clone()),
            columns: &EVENTS_COLUMNS,
        },
        Section {
            key: "groups",
            sql: Some(v.export_groups.clone()),
            columns: &GROUPS_COLUMNS,
        },
    ]
}

/// The body of `POST /v1/events`.
#[derive(Debug, Deserialize)]
struct EventBody {
    id: String,
    project: String,
    fingerprint: String,
    #[serde(default)]
    message: String,
}

/// Parses a JSON body: 400 when it is no JSON, 422 when it is JSON of the
/// wrong shape. Any content type is accepted.
fn parse_body(body: &Bytes) -> Result<EventBody, (StatusCode, String)> {
    serde_json::from_slice::<EventBody>(body).map_err(|e| {
        let status = match e.classify() {
            serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
            _ => StatusCode::BAD_REQUEST,
        };
        (status, format!("invalid event: {e}"))
    })
}

/// An op that is neither `ok` nor a refusal, answered as its completion
/// says (the completion the in-process target would record): `fail`
/// (certainly nothing of it applied) is 429 when a step could not get its
/// lock (send again later: the bench reads it as a `fail` and retries),
/// else 422 (not applied, not retried); `info` (it may have applied in
/// part) is 503. Decided from the completion type and the step's typed
/// error, never from an error's text.
fn not_ok(a: &OpAnswer) -> Response {
    let why = a.result.error.clone().unwrap_or_else(|| "op failed".into());
    tracing::debug!(target: LOG_TARGET, kind = ?a.kind, busy = a.busy, error = %why, "op not ok");
    match a.kind {
        CompletionType::Fail if a.busy => error(
            StatusCode::TOO_MANY_REQUESTS,
            format!("busy, nothing applied: {why}"),
        ),
        CompletionType::Fail => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("not applied: {why}"),
        ),
        _ => error(StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

/// Reads the fault hook header (only when the server was started with
/// `--fault-hooks`) into decisions on `program`'s steps.
fn hook_faults(st: &AppState, headers: &HeaderMap, program: &OpProgram) -> OpFaults {
    if !st.fault_hooks {
        return OpFaults::default();
    }
    let Some(v) = headers.get(FAULT_HEADER).and_then(|v| v.to_str().ok()) else {
        return OpFaults::default();
    };
    parse_fault_header(v, program)
}

/// A crashed op: 500, and what the op did before the hook crashed it
/// (nothing of it ran after): the step it crashed after, every step it
/// ran with the rows each changed, and what the op had come to where
/// that is exact: `accepted` (true: `counting` changed a row; false: it
/// stopped as a duplicate at that step), or `resolved` with the
/// `event_count` its resolving statement returned and that step's index
/// (`effect_step`), or a refusal's probe (`status`, `event_count`). The
/// bench reads it as the `info` it is, knowing what the in-process step
/// log would know. `counting`: the ingest's counting step.
fn crashed(a: &OpAnswer, counting: Option<&str>) -> Option<Response> {
    let step = a.result.crashed_after.as_ref()?;
    let r = &a.result;
    let mut body = json!({
        "error": format!("crashed by the fault hook after step {step}"),
        "crashed_after": step,
        "steps": a.steps,
    });
    let counted = counting.is_some_and(|c| a.steps.iter().any(|s| s.step == c && s.changes > 0));
    let fields = [
        (
            "accepted",
            r.accepted.or(counted.then_some(true)).map(|v| json!(v)),
        ),
        ("resolved", r.resolved.map(|v| json!(v))),
        ("event_count", r.event_count.map(|v| json!(v))),
        ("status", r.status.as_ref().map(|v| json!(v))),
        ("effect_step", r.effect_step.map(|v| json!(v))),
    ];
    for (k, v) in fields {
        if let Some(v) = v {
            body[k] = v;
        }
    }
    Some((StatusCode::INTERNAL_SERVER_ERROR, Json(body)).into_response())
}

async fn ingest(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    // Another workload's server says so before it reads the body: a
    // malformed event there is no 400 of this contract.
    let variant = match variant_of::<ServedGroups>(&st, WORKLOAD) {
        Ok(v) => v.0.clone(),
        Err(r) => return *r,
    };
    let ev = match parse_body(&body) {
        Ok(ev) => ev,
        Err((status, why)) => return error(status, why),
    };
    // `group_id` is injective only for projects without ':'.
    if ev.project.contains(':') {
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "project must not contain ':' (group ids are g:PROJECT:FINGERPRINT)",
        );
    }
    let g = group_id(&ev.project, &ev.fingerprint);
    let op = IngestOp {
        event_id: ev.id,
        project: ev.project,
        fingerprint: ev.fingerprint,
        group_id: g.clone(),
        message: ev.message,
        attempt: 0,
        intended_ns: None,
        group: 0,
        key: 0,
    };
    let faults = hook_faults(&st, &headers, &variant.ingest);
    let v = variant.clone();
    let a = match st
        .pool
        .run(move |w| run_op(w, &v, &Op::Ingest(op), &faults))
        .await
    {
        Ok(a) => a,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    };
    let counting = &variant.ingest.steps[variant.counting_step].name;
    if let Some(r) = crashed(&a, Some(counting)) {
        return r;
    }
    match (a.kind, a.result.accepted) {
        // Accepted, or stopped as a duplicate: whatever earlier steps (or
        // their triggers) changed, the op's completion is `ok`.
        (CompletionType::Ok, Some(accepted)) => (
            StatusCode::OK,
            Json(json!({ "accepted": accepted, "group_id": g })),
        )
            .into_response(),
        _ => not_ok(&a),
    }
}

/// The optional body of `POST /v1/groups/{group_id}/resolve`: the group's
/// project and fingerprint, which the bench always sends (a design that
/// computes its own group ids addresses its row by them).
#[derive(Debug, Default, Deserialize)]
struct ResolveBody {
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    fingerprint: Option<String>,
}

/// (project, fingerprint) of a resolve: from the body when it gives them;
/// else from the group id, which this server gives out as
/// `g:PROJECT:FINGERPRINT` with no ':' in PROJECT, so it inverts exactly.
/// Errors (nothing runs): a body that is no JSON (400) or gives one of the
/// two (422); a body that contradicts an id of this server's form (422); no
/// body and an id this server never gave (404).
fn resolve_key(g: &str, body: &Bytes) -> Result<(String, String), Response> {
    let given = if body.iter().all(u8::is_ascii_whitespace) {
        ResolveBody::default()
    } else {
        serde_json::from_slice::<ResolveBody>(body).map_err(|e| {
            let status = match e.classify() {
                serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::BAD_REQUEST,
            };
            error(status, format!("invalid resolve body: {e}"))
        })?
    };
    let ours = g
        .strip_prefix("g:")
        .and_then(|rest| rest.split_once(':'))
        .map(|(p, f)| (p.to_string(), f.to_string()));
    match (given.project, given.fingerprint, ours) {
        (Some(p), Some(f), Some(o)) if (p.as_str(), f.as_str()) != (o.0.as_str(), o.1.as_str()) => {
            Err(error(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "project {p:?} and fingerprint {f:?} are not those of group {g:?} \
                     (project {:?}, fingerprint {:?})",
                    o.0, o.1
                ),
            ))
        }
        (Some(p), Some(f), _) => Ok((p, f)),
        (None, None, Some(o)) => Ok(o),
        (None, None, None) => Err(error(StatusCode::NOT_FOUND, "no such group")),
        _ => Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "a resolve body gives both `project` and `fingerprint`, or neither",
        )),
    }
}

async fn resolve(
    State(st): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(g): Path<String>,
    body: Bytes,
) -> Response {
    let variant = match variant_of::<ServedGroups>(&st, WORKLOAD) {
        Ok(v) => v.0.clone(),
        Err(r) => return *r,
    };
    let (project, fingerprint) = match resolve_key(&g, &body) {
        Ok(k) => k,
        Err(r) => return r,
    };
    let op = ResolveOp {
        project,
        fingerprint,
        group_id: g,
        group: 0,
        key: 0,
    };
    let faults = hook_faults(&st, &headers, &variant.resolve);
    let a = match st
        .pool
        .run(move |w| run_op(w, &variant, &Op::Resolve(op), &faults))
        .await
    {
        Ok(a) => a,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    };
    if let Some(r) = crashed(&a, None) {
        return r;
    }
    let r = &a.result;
    match (a.kind, r.resolved) {
        (CompletionType::Ok, Some(true)) => (
            StatusCode::OK,
            Json(json!({ "resolved": true, "event_count": r.event_count })),
        )
            .into_response(),
        // Refused, and no step changed a row (`fail`): the contract's
        // refusal, whatever else the file's steps did not tell.
        (CompletionType::Fail, Some(false)) => match (r.effect_step, &r.status) {
            // A probe (status and count read by one statement) that saw
            // the group.
            (Some(_), Some(s)) => (
                StatusCode::CONFLICT,
                Json(json!({ "resolved": false, "status": s, "event_count": r.event_count })),
            )
                .into_response(),
            // A probe that found no row.
            (Some(_), None) => error(StatusCode::NOT_FOUND, "no such group"),
            // The file's steps took no probe (no statement read both
            // status and count): refused, and nothing to tell why.
            (None, _) => (StatusCode::CONFLICT, Json(json!({ "resolved": false }))).into_response(),
        },
        _ => not_ok(&a),
    }
}

async fn export_all(State(st): State<Arc<AppState>>) -> Response {
    let sections = match variant_of::<ServedGroups>(&st, WORKLOAD) {
        Ok(v) => sections(&v.0),
        Err(r) => return *r,
    };
    stream_export(&st, sections).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server finds this part for a variant of the workload, through
    /// the link-time list: its endpoints are served, not answered 404.
    #[test]
    fn a_groups_variant_is_served_by_this_part() {
        let served = crate::server::part::load("groups-atomic").unwrap();
        assert_eq!(served.workload(), WORKLOAD);
        assert!(served.get::<ServedGroups>().is_some());
    }
}
