//! The building blocks of a compiled `[api]` request, shared by every
//! request ([`super`] and each workload's requests): a request's template
//! (method, path, headers, body), and the compilers of pointers, tests,
//! headers and requests (the error with its key path is
//! [`super::requests`]').
//!
//! May import: `client::template` and `scenario::api`'s parsers.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

pub use super::requests::{at, Headers, MappingError};
use super::template::{Escape, Template};
use crate::scenario::api::{check_pointer, parse_request, Test};

/// One request's method, path, headers and body.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    /// Upper-case method.
    pub method: reqwest::Method,
    /// Path and query, relative to the target's URL.
    pub path: Template,
    /// Headers: `api.headers`, then the request's own.
    pub headers: Vec<(reqwest::header::HeaderName, Template)>,
    /// The body; None: no body.
    pub body: Option<Template>,
    /// What the request is, for messages: `POST /v1/events` (templates
    /// as written, so no secret appears in it).
    pub what: String,
}

impl RequestTemplate {
    /// The names of the secrets (`${NAME}`) its path, body and headers read.
    pub fn secrets(&self) -> impl Iterator<Item = &str> {
        self.path
            .secrets()
            .chain(self.body.iter().flat_map(|b| b.secrets()))
            .chain(self.headers.iter().flat_map(|(_, h)| h.secrets()))
    }
}

/// A pointer key's value (None: `""`, not in the answer). Errors: no
/// JSON pointer.
pub fn pointer(path: &[&str], p: &str) -> Result<Option<String>, MappingError> {
    if p.is_empty() {
        return Ok(None);
    }
    check_pointer(p).map_err(|e| at(path, e))?;
    Ok(Some(p.to_string()))
}

/// A test key's value (None: `""`). Errors: no pointer or test.
pub fn test(path: &[&str], p: &str) -> Result<Option<Test>, MappingError> {
    if p.is_empty() {
        return Ok(None);
    }
    Test::parse(p).map(Some).map_err(|e| at(path, e))
}

/// Compiles a table of headers whose values may use `vars`. Errors: a
/// name that is no header name, a line break, a template that cannot be
/// used, with its key.
pub fn compile_headers(
    path: &[&str],
    given: &std::collections::BTreeMap<String, String>,
    vars: &[&str],
) -> Result<Headers, MappingError> {
    let mut out = Vec::new();
    for (name, value) in given {
        let mut p: Vec<&str> = path.to_vec();
        p.push(name);
        let h = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| at(&p, format!("`{name}` is no header name")))?;
        if value.contains(['\r', '\n']) {
            return Err(at(&p, "a header value cannot hold a line break"));
        }
        out.push((
            h,
            Template::parse(value, vars, Escape::Raw).map_err(|e| at(&p, e))?,
        ));
    }
    Ok(out)
}

/// Compiles `METHOD PATH` with `vars`, the `common` headers and the
/// request's own (the same name replaces a common one); no body.
/// Errors: as the parts', with their keys.
pub fn compile_request(
    path: &[&str],
    text: &str,
    vars: &[&str],
    common: &Headers,
    headers_path: &[&str],
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<RequestTemplate, MappingError> {
    let (method, p) = parse_request(text).map_err(|e| at(path, e))?;
    let mut all = common.clone();
    for (name, t) in compile_headers(headers_path, headers, vars)? {
        all.retain(|(n, _)| *n != name);
        all.push((name, t));
    }
    Ok(RequestTemplate {
        method: method.parse().expect("parse_request checked the method"),
        path: Template::parse(&p, vars, Escape::Url).map_err(|e| at(path, e))?,
        headers: all,
        body: None,
        what: format!("{method} {p}"),
    })
}
