//! The outbox workload's part of the reference server (`specstorm serve`,
//! [`crate::server`]), contract v1 (`docs/http-contract.md`):
//! `POST /v1/messages` runs one delivery's `handle` on a pool worker
//! ([`super::server_handle`]) and answers `200 {"acked": true, "sent": {"msg_id",
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

use super::server_handle::{run_handle, HandleAnswer, HandleOp};
use super::statements::{
    load_outbox, OutboxVariant, OUTBOX_COLUMNS, OUT_QUEUE_COLUMNS, PROCESSED_COLUMNS,
    STATE_LOG_COLUMNS,
};
use super::AttemptEnd;
use crate::fault_hook::HandleHook;
use crate::fault_hook::FAULT_HEADER;
use crate::server::export::Section;
use crate::server::part::{ServerPart, PARTS};
use crate::server::state::{error, stream_export, variant_of, AppState, Variant};
use crate::statements::StatementFile;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// The workload these endpoints are (the 404 on another's server says it).
const WORKLOAD: &str = "outbox";

/// The log's targets stay those the code had before it moved here:
/// whoever reads the server's log sees no change.
const LOG_TARGET: &str = "specstorm::server::outbox";
const POOL_LOG_TARGET: &str = "specstorm::server::pool";

#[linkme::distributed_slice(PARTS)]
static OUTBOX_SERVER: ServerPart = ServerPart {
    workload: WORKLOAD,
    // An outbox file is one with `handle.*` blocks.
    claims: |file| file.blocks.iter().any(|b| b.name.starts_with("handle.")),
    load: |variant| {
        Ok(Arc::new(ServedOutbox {
            variant: Arc::new(load_outbox(variant, None)?),
            next_tx: first_tx_id(),
        }))
    },
    routes,
};

/// An outbox variant as the server runs it.
struct ServedOutbox {
    variant: Arc<OutboxVariant>,
    /// The next transaction id (one per `POST /v1/messages`).
    next_tx: AtomicI64,
}

impl Variant for ServedOutbox {
    fn schema(&self) -> &str {
        &self.variant.schema
    }

    fn file(&self) -> &StatementFile {
        &self.variant.file
    }

    fn needs_journal(&self) -> Option<String> {
        None
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/v1/messages", post(message))
        .route("/v1/outbox/export", get(export))
}

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
fn first_tx_id() -> AtomicI64 {
    AtomicI64::new(crate::clock::wall_ms().max(1) * 1_000_000)
}

/// `POST /v1/messages`.
async fn message(State(st): State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    let served = match variant_of::<ServedOutbox>(&st, WORKLOAD) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    let variant = served.variant.clone();
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
        tx_id: served.next_tx.fetch_add(1, Ordering::Relaxed),
    };
    let handled = st.pool.run(move |w| {
        let answer = run_handle(
            w.conn,
            w.journal,
            &variant.handle,
            &op,
            &hook,
            (w.pauses, w.policy),
        );
        tracing::trace!(target: POOL_LOG_TARGET, ?op, ?answer, "delivery done");
        answer
    });
    match handled.await {
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
    tracing::debug!(target: LOG_TARGET, kind = ?a.kind, error = %why, "delivery not acked");
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
async fn export(State(st): State<Arc<AppState>>) -> Response {
    let sections = match variant_of::<ServedOutbox>(&st, WORKLOAD) {
        Ok(s) => sections(&s.variant),
        Err(r) => return *r,
    };
    stream_export(&st, sections).await
}

/// The sections of the outbox export (a variant without `export.outbox`
/// exports `"outbox": []`).
fn sections(v: &OutboxVariant) -> Vec<Section> {
    vec![
        Section {
            key: "state_log",
            sql: Some(v.export_state_log.clone()),
            columns: &STATE_LOG_COLUMNS,
        },
        Section {
            key: "outbox",
            sql: v.export_outbox.clone(),
            columns: &OUTBOX_COLUMNS,
        },
        Section {
            key: "out_queue",
            sql: Some(v.export_out_queue.clone()),
            columns: &OUT_QUEUE_COLUMNS,
        },
        Section {
            key: "processed",
            sql: Some(v.export_processed.clone()),
            columns: &PROCESSED_COLUMNS,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server finds this part for a variant of the workload, through
    /// the link-time list: its endpoints are served, not answered 404.
    #[test]
    fn an_outbox_variant_is_served_by_this_part() {
        let served = crate::server::part::load("outbox-protocol").unwrap();
        assert_eq!(served.workload(), WORKLOAD);
        assert!(served.get::<ServedOutbox>().is_some());
    }
}
