//! What every route of the reference server shares: its state
//! ([`AppState`]), the variant it serves ([`Served`]) and the answers any route may give (a JSON error, the
//! 404 of another workload's endpoints, a streamed export).
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::export;
use super::pool::Pool;
use crate::scenario::SqliteTarget;
use crate::statements::StatementFile;
use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_stream::wrappers::ReceiverStream;

/// A checked statement file as the generic server needs it; the
/// workload's routes downcast it ([`Served::get`]) to their own type.
pub trait Variant: Send + Sync + 'static {
    /// The `schema` block.
    fn schema(&self) -> &str;
    /// The statement file.
    fn file(&self) -> &StatementFile;
    /// Why the variant cannot run under `--journal-mode off` (the text of
    /// the error, exit 3), or None when it can.
    fn needs_journal(&self) -> Option<String>;
    /// The variant as `Any`, for its workload's routes.
    fn as_any(&self) -> &dyn Any;
}

/// The variant a server runs, and whose it is.
pub struct Served {
    workload: &'static str,
    variant: Arc<dyn Variant>,
}

impl Served {
    /// `variant`, a variant of `workload`.
    pub fn new(workload: &'static str, variant: Arc<dyn Variant>) -> Served {
        Served { workload, variant }
    }

    /// The checked variant.
    pub fn variant(&self) -> &dyn Variant {
        &*self.variant
    }

    /// The workload whose variant it is.
    pub fn workload(&self) -> &'static str {
        self.workload
    }

    /// The variant as workload `T`'s, or None on another workload's server.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.variant.as_any().downcast_ref::<T>()
    }
}

/// What every handler shares.
pub struct AppState {
    /// The checked statement file the workers run, and its workload.
    pub variant: Served,
    /// The worker pool (every op of the variant's workload).
    pub pool: Arc<Pool>,
    /// The database file (exports open a connection of their own).
    pub db: PathBuf,
    /// Pragmas of every connection.
    pub target: SqliteTarget,
    /// Obey the test-only `x-specstorm-fault` header.
    pub fault_hooks: bool,
}

/// The served variant as workload `asked`'s type `T`, or the 404 its
/// endpoints get from another workload's server (boxed: a response is
/// large next to a reference).
pub fn variant_of<'s, T: 'static>(st: &'s AppState, asked: &str) -> Result<&'s T, Box<Response>> {
    st.variant
        .get::<T>()
        .ok_or_else(|| Box::new(wrong_workload(asked, st.variant.workload())))
}

/// 404 for an endpoint of workload `asked` on a server of `serves`.
pub fn wrong_workload(asked: &str, serves: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "this server runs {} {serves} variant: the {asked} endpoints are not served \
             (start `specstorm serve` with {} {asked} statement file)",
            article(serves),
            article(asked)
        ),
    )
}

/// "a" or "an" before a workload's name, so that the 404 reads as English
/// whatever the name.
fn article(name: &str) -> &'static str {
    match name.chars().next() {
        Some(c) if "aeiouAEIOU".contains(c) => "an",
        _ => "a",
    }
}

/// A JSON error body, `{"error": msg}`.
pub fn error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(json!({ "error": msg.into() }))).into_response()
}

/// Streams a one-transaction export of `sections`: 503 when it cannot
/// begin.
pub async fn stream_export(st: &AppState, sections: Vec<export::Section>) -> Response {
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
