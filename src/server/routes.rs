//! The router of the HTTP contract, version 1
//! (`docs/http-contract.md`): `GET /healthz`, and every workload's
//! routes ([`super::part::ServerPart::routes`]), each answering 404 with a
//! body that says so on another workload's server. `POST /v1/reset` is
//! optional and not offered (404).
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::part::parts;
use super::state::AppState;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// The router of contract v1, with request logging.
pub fn router(state: Arc<AppState>) -> Router {
    parts()
        .into_iter()
        .fold(Router::new().route("/healthz", get(healthz)), |r, p| {
            r.merge((p.routes)())
        })
        .with_state(state)
        .layer(middleware::from_fn(log_request))
}

async fn log_request(req: Request, next: Next) -> Response {
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let t = Instant::now();
    let resp = next.run(req).await;
    tracing::info!(
        %method,
        %uri,
        status = resp.status().as_u16(),
        micros = t.elapsed().as_micros() as u64,
        "request"
    );
    resp
}

async fn healthz() -> Response {
    (StatusCode::OK, Json(json!({ "status": "ok" }))).into_response()
}
