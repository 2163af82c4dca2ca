//! The outbox routes of contract v1 (`docs/http-contract.md`):
//! `POST /v1/messages` runs one delivery's `handle` on a pool worker
//! ([`super::handle`]) and answers `200 {"acked": true, "sent": {"msg_id",
//! "ver"}}` once it ran through `handle.ack` (a duplicate too: the
//! protocol resends its recorded output), `503` when the attempt failed (a
//! lost compare-and-swap, an error, a hook crash: the bench redelivers),
//! naming which in its [`AttemptEnd::HEADER`];
//! `GET /v1/outbox/export` is one read transaction over the file's
//! `export.*` statements. A groups server answers both with 404.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::export;
use super::handle::{HandleAnswer, HandleOp};
use super::state::{error, stream_export, wrong_workload, AppState};
use super::Served;
use crate::fault_hook::HandleHook;
use crate::fault_hook::FAULT_HEADER;
use crate::workload::outbox::AttemptEnd;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The body of `POST /v1/messages`: the message id and its duplicate
/// number (the delivery), both integers.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageBody {
    id: i64,
    dup: i64,
}

/// The first transaction id of a server process: unix ms x 10^6, so that
/// a server restarted on the same database (the kill nemesis) never hands
/// out a tx_id of an earlier process (whose staged records are still
/// there): a process would need 10^6 requests per millisecond to catch up
/// with the next one's start.
pub fn first_tx_id() -> AtomicI64 {
    AtomicI64::new(crate::clock::wall_ms().max(1) * 1_000_000)
}

/// `POST /v1/messages`.
pub async fn message(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let variant = match &st.variant {
        Served::Outbox(v) => v.clone(),
        Served::Groups(_) => return wrong_workload("outbox", "groups"),
    };
    let m = match serde_json::from_slice::<MessageBody>(&body) {
        Ok(m) => m,
        Err(e) => {
            let status = match e.classify() {
                serde_json::error::Category::Data => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::BAD_REQUEST,
            };
            return error(status, format!("invalid message: {e}"));
        }
    };
    let hook = if st.fault_hooks {
        headers
            .get(FAULT_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|v| HandleHook::parse(v, &variant.handle))
            .unwrap_or_default()
    } else {
        HandleHook::default()
    };
    let op = HandleOp {
        msg_id: m.id,
        dup_id: m.dup,
        tx_id: st.next_tx.fetch_add(1, Ordering::Relaxed),
    };
    match st.pool.handle(op, hook).await {
        Ok(a) => answer(&a),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

/// The contract's answer for a handled (or failed) delivery.
fn answer(a: &HandleAnswer) -> Response {
    if a.end == AttemptEnd::Acked {
        let sent = a.sent.map(|(m, v)| json!({ "msg_id": m, "ver": v }));
        return (StatusCode::OK, Json(json!({ "acked": true, "sent": sent }))).into_response();
    }
    let why = a
        .result
        .error
        .clone()
        .unwrap_or_else(|| "handler failed".into());
    tracing::debug!(kind = ?a.kind, error = %why, "delivery not acked");
    let mut body = json!({ "error": why });
    // What the hook did, so the bench can tell its crash from other 503s.
    if let Some(step) = &a.result.crashed_after {
        body["crashed_after"] = json!(step);
    }
    // How it ended, by name: the bench counts a lost compare-and-swap
    // from it, never from the error's words.
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(AttemptEnd::HEADER, a.end.name())],
        Json(body),
    )
        .into_response()
}

/// `GET /v1/outbox/export`: `{"state_log": [{"ver","msg_id","tx_id",
/// "kind"}], "outbox": [{"msg_id","ver"}], "out_queue": [{"seq","msg_id",
/// "ver"}], "processed": [{"msg_id","dup_id"}]}`, one snapshot, streamed.
pub async fn export(State(st): State<Arc<AppState>>) -> Response {
    let sections = match &st.variant {
        Served::Outbox(v) => export::outbox_sections(v),
        Served::Groups(_) => return wrong_workload("outbox", "groups"),
    };
    stream_export(&st, sections).await
}
