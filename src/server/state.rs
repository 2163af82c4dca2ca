//! What every route of the reference server shares: its state
//! ([`AppState`]) and the answers any route may give (a JSON error, the
//! 404 of the other workload's endpoints, a streamed export).
//!
//! Server layer: imports the server's pool, exports and served variant,
//! and the scenario's SQLite target.

use super::export;
use super::pool::Pool;
use super::Served;
use crate::scenario::SqliteTarget;
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_stream::wrappers::ReceiverStream;

/// What every handler shares.
pub struct AppState {
    /// The checked statement file the workers run, and its workload.
    pub variant: Served,
    /// The next outbox transaction id (one per `POST /v1/messages`).
    pub next_tx: std::sync::atomic::AtomicI64,
    /// The worker pool (ingest and resolve ops).
    pub pool: Arc<Pool>,
    /// The database file (exports open a connection of their own).
    pub db: PathBuf,
    /// Pragmas of every connection.
    pub target: SqliteTarget,
    /// Obey the test-only `x-specstorm-fault` header.
    pub fault_hooks: bool,
}

/// 404 for an endpoint of workload `asked` on a server of `serves`.
pub(crate) fn wrong_workload(asked: &str, serves: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "this server runs a {serves} variant: the {asked} endpoints are not served \
             (start `specstorm serve` with a {asked} statement file)"
        ),
    )
}

pub(crate) fn error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(json!({ "error": msg.into() }))).into_response()
}

/// Streams a one-transaction export of `sections`: 503 when it cannot
/// begin.
pub(crate) async fn stream_export(st: &AppState, sections: Vec<export::Section>) -> Response {
    let (ready, rx) = export::start(sections, st.db.clone(), st.target.clone());
    match ready.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return error(StatusCode::SERVICE_UNAVAILABLE, format!("export: {e}")),
        Err(_) => return error(StatusCode::SERVICE_UNAVAILABLE, "export thread ended early"),
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(ReceiverStream::new(rx)),
    )
        .into_response()
}
