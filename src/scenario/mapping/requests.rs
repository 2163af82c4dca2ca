//! What a workload plugs into the mapping compiler for its own `[api]`
//! requests: [`Requests`], its compiled requests with their type erased
//! (the [`super::Mapping`] holds them and hands them back by type), and
//! [`CompileRequests`], how its part of `[api]` is compiled, with what the
//! compiler gives every workload ([`CompileContext`]) and how it says what
//! cannot be used ([`MappingError`]). It names no type of `scenario::api`,
//! which reaches the workloads' requests through `scenario::section`.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::template::Template;
use crate::scenario::part::Part;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// Why a mapping cannot be used: the key path (`["api", "health"]`) and
/// what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct MappingError {
    /// The scenario key at fault.
    pub path: Vec<String>,
    /// What is wrong.
    pub reason: String,
}

/// A [`MappingError`] at `path`.
pub fn at(path: &[&str], reason: impl Into<String>) -> MappingError {
    MappingError {
        path: path.iter().map(|s| s.to_string()).collect(),
        reason: reason.into(),
    }
}

/// Compiled headers, in order.
pub type Headers = Vec<(reqwest::header::HeaderName, Template)>;

/// A workload's compiled requests, held by [`super::Mapping`] with their
/// type erased.
pub trait Requests: Any + fmt::Debug + Send + Sync {
    /// As `Any`, to be handed back as its type.
    fn as_any(&self) -> &dyn Any;
    /// The names of the secrets (`${NAME}`) its templates read.
    fn secrets(&self) -> Vec<&str>;
}

/// What the compiler gives a workload's requests to compile with.
pub struct CompileContext<'a> {
    /// `[api] headers` compiled: every request's, before its own.
    pub common: &'a Headers,
    /// Whether `[audit] sqlite` names the service's own database.
    pub audit_sqlite: bool,
    /// For a run that sends requests: every answer must be readable.
    pub sending: bool,
}

/// Compiles a workload's part of `[api]` (of its type; its defaults when
/// none of its keys is given). Errors: what cannot be used, with its key
/// path.
pub type CompileRequests =
    fn(&dyn Part, &CompileContext<'_>) -> Result<Arc<dyn Requests>, MappingError>;
