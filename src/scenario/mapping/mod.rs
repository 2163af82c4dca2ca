//! A scenario's `[api]` compiled once: the health and export requests,
//! the headers and secrets every request shares, and each workload's own
//! requests (compiled by the workload, `requests` in
//! [`crate::scenario::section`], held here with their type erased and
//! handed back by type, [`Mapping::requests`]). The HTTP client builds
//! every request and reads every answer through this; without `[api]` it
//! is the contract (`http-contract.md`).
//!
//! The loader compiles it too, before anything runs, so that a bad
//! template, pointer, code or missing environment variable is reported
//! with the scenario's line ([`MappingError::path`]).
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

pub mod request_template;
pub mod requests;
pub mod template;

use crate::scenario::api::{Api, AuditConfig};
use crate::scenario::{section, Workload};
use request_template::{at, compile_headers, compile_request};
pub use request_template::{MappingError, RequestTemplate};
use requests::{CompileContext, Requests};
use std::sync::Arc;
use template::Secrets;

/// The whole mapping of one scenario.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// The health request.
    pub health: RequestTemplate,
    /// The export request of the scenario's workload: `[audit] request`
    /// (which the loader fills with the workload's own default), else the
    /// workload's default (its `audit_request` in
    /// [`crate::scenario::section`], else the contract's `GET /v1/export`).
    pub export: RequestTemplate,
    /// Every built-in workload's requests compiled, in the registry's
    /// order (another workload's are its contract's: the loader refuses
    /// its keys).
    requests: Vec<Arc<dyn Requests>>,
    /// The secrets the templates read.
    pub secrets: Secrets,
    /// No `[api]` was given: the contract.
    pub contract: bool,
}

impl Mapping {
    /// The contract's mapping (no secrets, nothing to fail), for a
    /// scenario of the default workload.
    pub fn contract() -> Mapping {
        Mapping::compile(None, None, true).expect("the contract's mapping compiles")
    }

    /// The contract's mapping for a scenario of `workload` (its export
    /// request is its own).
    pub fn contract_for(workload: Workload) -> Mapping {
        Mapping::compile_for(workload, None, None, true).expect("the contract's mapping compiles")
    }

    /// The compiled requests of type `T` (a workload's), if a built-in
    /// workload's are of it.
    pub fn requests<T: Requests>(&self) -> Option<&T> {
        self.requests
            .iter()
            .find_map(|r| r.as_any().downcast_ref::<T>())
    }

    /// Compiles `[api]` (None: the contract) and `[audit]`'s export
    /// request. `sending`: for a run that sends requests, so the secrets
    /// are read from the environment and every answer must be readable
    /// (a workload's request may refuse a test that cannot tell its
    /// answers apart); else the secrets stay empty (for checks that send
    /// nothing, and offline audits of saved scenarios). Errors: a
    /// template, pointer, code or method that cannot be used, or an
    /// environment variable that is not set, with its key path.
    pub fn compile(
        api: Option<&Api>,
        audit: Option<&AuditConfig>,
        sending: bool,
    ) -> Result<Mapping, MappingError> {
        Mapping::compile_for(Workload::default_workload(), api, audit, sending)
    }

    /// [`Mapping::compile`] for a scenario of `workload`, as its sections
    /// ([`crate::scenario::section`]) declare: the placeholders its `[api]
    /// headers` may use (`api_header_vars`), and its export request
    /// without `[audit]` (`audit_request`). Every workload's requests are
    /// compiled from what `[api]` holds either way (a workload's loader
    /// refuses another's request keys, so they are the contract's), each
    /// by its `requests.compile`. A workload without sections (registered
    /// at run time, which takes no `[api]`) is compiled with the default
    /// workload's.
    pub fn compile_for(
        workload: Workload,
        api: Option<&Api>,
        audit: Option<&AuditConfig>,
        sending: bool,
    ) -> Result<Mapping, MappingError> {
        let own = section::of(workload.name()).unwrap_or_else(section::default_workload);
        let export_text = match (audit, own.audit_request) {
            (Some(a), _) => a.request.clone(),
            (None, Some(request)) => request.to_string(),
            (None, None) => AuditConfig::default().request,
        };
        let contract = api.is_none();
        let api = api.cloned().unwrap_or_default();
        let audit = audit.cloned().unwrap_or_default();
        let common = compile_headers(&["api", "headers"], &api.headers, own.api_header_vars)?;
        let ctx = CompileContext {
            common: &common,
            audit_sqlite: audit.sqlite.is_some(),
            sending,
        };
        let mut requests = Vec::new();
        for w in section::workloads() {
            let part = api
                .requests
                .of(w.workload)
                .expect("`[api]` holds every built-in workload's part");
            requests.push((w.requests.compile)(part, &ctx)?);
        }
        let health = compile_request(
            &["api", "health"],
            &api.health,
            &[],
            &common,
            &["api", "headers"],
            &Default::default(),
        )?;
        let export = compile_request(
            &["audit", "request"],
            &export_text,
            &[],
            &common,
            &["api", "headers"],
            &Default::default(),
        )?;
        let mut names: Vec<&str> = health.secrets().chain(export.secrets()).collect();
        names.extend(requests.iter().flat_map(|r| r.secrets()));
        names.sort_unstable();
        names.dedup();
        if !sending {
            names.clear();
        }
        let secrets = Secrets::from_env(names.iter().copied()).map_err(|e| {
            let n = names
                .iter()
                .find(|n| std::env::var(n).is_err())
                .copied()
                .unwrap_or_default();
            at(&secret_path(&api, &audit, n), e)
        })?;
        Ok(Mapping {
            health,
            export,
            requests,
            secrets,
            contract,
        })
    }
}

/// The key where `${name}` is first written, for the error's line: the
/// common keys, each workload's requests' (the registry's order), then
/// `[audit] request`.
fn secret_path(api: &Api, audit: &AuditConfig, name: &str) -> Vec<&'static str> {
    let needle = format!("${{{name}}}");
    let mut keys: Vec<(&[&'static str], Vec<String>)> = vec![
        (&["api", "headers"], api.headers.values().cloned().collect()),
        (&["api", "health"], vec![api.health.clone()]),
    ];
    for w in section::workloads() {
        if let Some(part) = api.requests.of(w.workload) {
            keys.extend((w.requests.secret_keys)(part));
        }
    }
    keys.push((&["audit", "request"], vec![audit.request.clone()]));
    keys.iter()
        .find(|(_, texts)| texts.iter().any(|t| t.contains(&needle)))
        .map_or_else(|| vec!["api"], |(path, _)| path.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_compiles_and_a_common_secret_is_named_by_its_key() {
        let m = Mapping::contract();
        assert!(m.contract && m.secrets.is_empty());
        assert_eq!(m.health.what, "GET /healthz");
        assert_eq!(m.export.what, "GET /v1/export");
        let mut api = Api::default();
        api.headers.insert(
            "authorization".into(),
            "Bearer ${SPECSTORM_TEST_UNSET_VAR}".into(),
        );
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert_eq!(e.path, ["api", "headers"]);
        assert!(e.reason.contains("SPECSTORM_TEST_UNSET_VAR"), "{e:?}");
        // Offline, no secret is read.
        assert!(Mapping::compile(Some(&api), None, false).is_ok());
    }
}
