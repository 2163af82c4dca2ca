//! A scenario's `[api]` compiled once: request templates, headers, status
//! meanings and answer pointers, per request kind, plus the secrets they
//! read. The HTTP client builds every request and reads every answer
//! through this; without `[api]` it is the contract (`http-contract.md`).
//!
//! The loader compiles it too, before anything runs, so that a bad
//! template, pointer, code or missing environment variable is reported
//! with the scenario's line ([`MappingError::path`]).
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

pub mod handle_mapping;
pub mod request_template;
pub mod template;

use crate::scenario::api::{Api, AuditConfig, Codes, GroupIds, RequestKind, Test};
use crate::scenario::{section, Workload};
use handle_mapping::HandleMapping;
use request_template::{at, compile_headers, compile_request, pointer, test};
pub use request_template::{MappingError, RequestTemplate};
use template::{Escape, Secrets, Template};

/// `[api.ingest]` compiled.
#[derive(Debug, Clone)]
pub struct IngestMapping {
    /// Method, path, headers; `body` is the envelope (None: the event's body).
    pub request: RequestTemplate,
    /// One event's body.
    pub event: Template,
    /// Events per request.
    pub batch: u32,
    /// Pointer to the per-event answers (None: the answer is the event's).
    pub items: Option<String>,
    /// Pointer, in each item, to its event id (None: items in request order).
    pub item_id: Option<String>,
    /// accepted (None: the answer does not say).
    pub accepted: Option<Test>,
    /// The test a duplicate's answer passes (with an `==` accepted).
    pub duplicate: Option<Test>,
    /// Pointer to the group id (None: not in the answer).
    pub group_id: Option<String>,
    /// Status meanings.
    pub codes: Codes,
    /// An ok is no proof the event was stored.
    pub may_drop: bool,
}

impl IngestMapping {
    /// What an `ok` answer (or item) says through `accepted` (and
    /// `duplicate`): Some(Ok(true)) a new event, Some(Ok(false)) a
    /// duplicate, Some(Err(why)) neither (non-conforming), None when
    /// `accepted` is not set (the answer does not say).
    /// - a pointer to a bool: true new, false duplicate;
    /// - with `duplicate`: exactly one of the two tests must pass;
    /// - an `==` test alone (only loaded offline): its value is new, and
    ///   no value reads as a duplicate.
    pub fn read_accepted(&self, answer: &serde_json::Value) -> Option<Result<bool, String>> {
        let a = self.accepted.as_ref()?;
        let is = |t: &Test| t.eval(answer) == Some(true);
        Some(match &self.duplicate {
            Some(d) => match (is(a), is(d)) {
                (true, false) => Ok(true),
                (false, true) => Ok(false),
                (false, false) => Err(format!(
                    "neither accepted `{}` nor duplicate `{}` holds",
                    a.text(),
                    d.text()
                )),
                (true, true) => Err(format!(
                    "both accepted `{}` and duplicate `{}` hold",
                    a.text(),
                    d.text()
                )),
            },
            None if a.equals.is_none() => a
                .eval(answer)
                .ok_or_else(|| format!("no bool at accepted = {:?}", a.pointer)),
            None if is(a) => Ok(true),
            None => Err(format!(
                "accepted `{}` does not hold, and no duplicate value is named",
                a.text()
            )),
        })
    }
}

/// `[api.resolve]` compiled.
#[derive(Debug, Clone)]
pub struct ResolveMapping {
    /// Method, path, headers, body.
    pub request: RequestTemplate,
    /// resolved (None: the status code alone says).
    pub resolved: Option<Test>,
    /// Pointer to the count (None: not in the answer).
    pub event_count: Option<String>,
    /// Pointer to a refusal's probe status (None: not in the answer).
    pub status: Option<String>,
    /// Status meanings.
    pub codes: Codes,
}

/// `[api.lookup]` compiled.
#[derive(Debug, Clone)]
pub struct LookupMapping {
    /// Method, path, headers.
    pub request: RequestTemplate,
    /// Pointer to the group id.
    pub group_id: String,
    /// Status meanings.
    pub codes: Codes,
}

/// The whole mapping of one scenario.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// The health request.
    pub health: RequestTemplate,
    /// Ingest.
    pub ingest: IngestMapping,
    /// Resolve.
    pub resolve: ResolveMapping,
    /// Lookup, if configured.
    pub lookup: Option<LookupMapping>,
    /// Where resolvers learn group ids.
    pub group_ids: GroupIds,
    /// The export request of the scenario's workload: `[audit] request`
    /// (which the loader fills with the workload's own default), else the
    /// workload's default (its `audit_request` in
    /// [`crate::scenario::section`], else the contract's `GET /v1/export`).
    pub export: RequestTemplate,
    /// The outbox's delivery request (`[api.handle]`, else the contract's).
    pub handle: HandleMapping,
    /// `{release}`.
    pub release: String,
    /// The secrets the templates read.
    pub secrets: Secrets,
    /// No `[api]` was given: the contract.
    pub contract: bool,
}

/// Placeholders of one event.
const EVENT_VARS: &[&str] = &[
    "event_id",
    "project",
    "fingerprint",
    "message",
    "release",
    "now_ms",
];
/// Placeholders of a batch's request and envelope: the events of one
/// request share their project.
const BATCH_VARS: &[&str] = &["project", "release", "now_ms"];
const RESOLVE_VARS: &[&str] = &["group_id", "project", "fingerprint", "release", "now_ms"];
/// The body of the contract's resolve: optional to the service (a service
/// that computes its own group ids finds its row by them), always sent by
/// the bench.
pub const CONTRACT_RESOLVE_BODY: &str =
    r#"{"project": "{project}", "fingerprint": "{fingerprint}"}"#;
const LOOKUP_VARS: &[&str] = &["project", "fingerprint", "release", "now_ms"];

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

    /// Compiles `[api]` (None: the contract) and `[audit]`'s export
    /// request. `sending`: for a run that sends requests, so the secrets
    /// are read from the environment and every answer must be readable
    /// (an `==` accepted names the duplicate's value too); else the
    /// secrets stay empty (for checks that send nothing, and offline
    /// audits of saved scenarios). Errors: a template, pointer, code or
    /// method that cannot be used, an answer test that cannot tell a new
    /// event from a duplicate, or an environment variable that is not
    /// set, with its key path.
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
    /// without `[audit]` (`audit_request`). Every request kind is compiled
    /// from what `[api]` holds either way (a workload's loader refuses
    /// another's request tables, so they are the contract's). A workload
    /// without sections (registered at run time, which takes no `[api]`)
    /// is compiled with the default workload's.
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
        let mut api = api.cloned().unwrap_or_default();
        // The contract's resolve (an `[api.resolve]` left as it is) sends
        // the group's project and fingerprint in its body; a mapped
        // resolve sends the body it names, and no other.
        if api.resolve == crate::scenario::api::ResolveMap::default() {
            api.resolve.body = CONTRACT_RESOLVE_BODY.to_string();
        }
        let audit = audit.cloned().unwrap_or_default();
        let common = compile_headers(&["api", "headers"], &api.headers, own.api_header_vars)?;
        let i = &api.ingest;
        if i.batch == 0 || i.batch > 1000 {
            return Err(at(&["api", "ingest", "batch"], "must be from 1 to 1000"));
        }
        let batched = i.batch > 1;
        if batched && i.envelope.is_empty() {
            return Err(at(
                &["api", "ingest", "batch"],
                "`batch` above 1 needs an `envelope`, e.g. '{\"events\": [{items}]}'",
            ));
        }
        if !i.envelope.is_empty() && !i.envelope.contains("{items}") {
            return Err(at(
                &["api", "ingest", "envelope"],
                "the envelope must hold `{items}` (the events' bodies, joined by \",\")",
            ));
        }
        if batched && i.items.is_empty() {
            return Err(at(
                &["api", "ingest", "batch"],
                "`batch` above 1 needs `items`: the pointer to the per-event answers, in order",
            ));
        }
        let request_vars = if i.envelope.is_empty() {
            EVENT_VARS
        } else {
            BATCH_VARS
        };
        let mut request = compile_request(
            &["api", "ingest", "request"],
            &i.request,
            request_vars,
            &common,
            &["api", "ingest", "headers"],
            &i.headers,
        )?;
        if !i.envelope.is_empty() {
            let vars: Vec<&str> = BATCH_VARS.iter().copied().chain(["items"]).collect();
            request.body = Some(
                Template::parse(&i.envelope, &vars, Escape::Json)
                    .map_err(|e| at(&["api", "ingest", "envelope"], e))?,
            );
        }
        let event = Template::parse(&i.body, EVENT_VARS, Escape::Json)
            .map_err(|e| at(&["api", "ingest", "body"], e))?;
        let ingest = IngestMapping {
            request,
            event,
            batch: i.batch,
            items: pointer(&["api", "ingest", "items"], &i.items)?,
            item_id: pointer(&["api", "ingest", "item_id"], &i.item_id)?,
            accepted: test(&["api", "ingest", "accepted"], &i.accepted)?,
            duplicate: test(&["api", "ingest", "duplicate"], &i.duplicate)?,
            group_id: pointer(&["api", "ingest", "group_id"], &i.group_id)?,
            codes: Codes::new(RequestKind::Ingest, &i.codes)
                .map_err(|e| at(&["api", "ingest", "codes"], e))?,
            may_drop: i.may_drop,
        };
        match (&ingest.accepted, &ingest.duplicate) {
            (None, Some(_)) => {
                return Err(at(
                    &["api", "ingest", "duplicate"],
                    "`duplicate` needs `accepted` (the test a new event's answer passes)",
                ))
            }
            // Offline (an audit of a saved run) nothing is read: an older
            // scenario that named only the accepted value still loads.
            (Some(a), None) if sending && a.equals.is_some() => {
                return Err(at(
                    &["api", "ingest", "accepted"],
                    format!(
                        "accepted `{}` names only a new event's value: name the duplicate's \
                         too, e.g. `duplicate = \"{} == duplicate\"` (an answer with neither \
                         value is then non-conforming, not a duplicate)",
                        a.text(),
                        a.pointer
                    ),
                ))
            }
            _ => {}
        }
        let r = &api.resolve;
        let mut request = compile_request(
            &["api", "resolve", "request"],
            &r.request,
            RESOLVE_VARS,
            &common,
            &["api", "resolve", "headers"],
            &r.headers,
        )?;
        if !r.body.is_empty() {
            request.body = Some(
                Template::parse(&r.body, RESOLVE_VARS, Escape::Json)
                    .map_err(|e| at(&["api", "resolve", "body"], e))?,
            );
        }
        let resolve = ResolveMapping {
            request,
            resolved: test(&["api", "resolve", "resolved"], &r.resolved)?,
            event_count: pointer(&["api", "resolve", "event_count"], &r.event_count)?,
            status: pointer(&["api", "resolve", "status"], &r.status)?,
            codes: Codes::new(RequestKind::Resolve, &r.codes)
                .map_err(|e| at(&["api", "resolve", "codes"], e))?,
        };
        let lookup = match &api.lookup {
            None if api.group_ids == GroupIds::Lookup => return Err(at(
                &["api", "group_ids"],
                "group_ids = \"lookup\" needs an [api.lookup] table with `request` and `group_id`",
            )),
            None => None,
            Some(l) => {
                if l.request.is_empty() {
                    return Err(at(
                        &["api", "lookup", "request"],
                        "[api.lookup] needs `request`, e.g. \"GET /groups?project={project}&fingerprint={fingerprint}\"",
                    ));
                }
                Some(LookupMapping {
                    request: compile_request(
                        &["api", "lookup", "request"],
                        &l.request,
                        LOOKUP_VARS,
                        &common,
                        &["api", "lookup", "headers"],
                        &l.headers,
                    )?,
                    group_id: pointer(&["api", "lookup", "group_id"], &l.group_id)?.ok_or_else(
                        || at(&["api", "lookup", "group_id"], "must name the group id"),
                    )?,
                    codes: Codes::new(RequestKind::Lookup, &l.codes)
                        .map_err(|e| at(&["api", "lookup", "codes"], e))?,
                })
            }
        };
        if api.group_ids == GroupIds::Audit && audit.sqlite.is_none() {
            return Err(at(
                &["api", "group_ids"],
                "group_ids = \"audit\" needs `[audit] sqlite` (the database the ids are read from)",
            ));
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
        let handle = handle_mapping::compile(api.handle.as_ref(), &common)?;
        let mut names: Vec<&str> = Vec::new();
        let templates = [
            &health,
            &ingest.request,
            &resolve.request,
            &export,
            &handle.request,
        ]
        .into_iter()
        .chain(lookup.as_ref().map(|l| &l.request));
        for t in templates {
            names.extend(t.path.secrets());
            names.extend(t.body.iter().flat_map(|b| b.secrets()));
            names.extend(t.headers.iter().flat_map(|(_, h)| h.secrets()));
        }
        names.extend(ingest.event.secrets());
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
            ingest,
            resolve,
            lookup,
            group_ids: api.group_ids,
            export,
            handle,
            release: api.release.clone(),
            secrets,
            contract,
        })
    }
}

/// The key where `${name}` is first written, for the error's line.
fn secret_path(api: &Api, audit: &AuditConfig, name: &str) -> Vec<&'static str> {
    let needle = format!("${{{name}}}");
    let map = |m: &std::collections::BTreeMap<String, String>| m.values().cloned().collect();
    let lookup = api.lookup.clone().unwrap_or_default();
    let handle = api.handle.clone().unwrap_or_default();
    let keys: [(&[&'static str], Vec<String>); 15] = [
        (&["api", "headers"], map(&api.headers)),
        (&["api", "health"], vec![api.health.clone()]),
        (
            &["api", "ingest", "request"],
            vec![api.ingest.request.clone()],
        ),
        (&["api", "ingest", "headers"], map(&api.ingest.headers)),
        (&["api", "ingest", "body"], vec![api.ingest.body.clone()]),
        (
            &["api", "ingest", "envelope"],
            vec![api.ingest.envelope.clone()],
        ),
        (
            &["api", "resolve", "request"],
            vec![api.resolve.request.clone()],
        ),
        (&["api", "resolve", "headers"], map(&api.resolve.headers)),
        (&["api", "resolve", "body"], vec![api.resolve.body.clone()]),
        (&["api", "lookup", "request"], vec![lookup.request.clone()]),
        (&["api", "lookup", "headers"], map(&lookup.headers)),
        (&["audit", "request"], vec![audit.request.clone()]),
        (&["api", "handle", "request"], vec![handle.request.clone()]),
        (&["api", "handle", "headers"], map(&handle.headers)),
        (&["api", "handle", "body"], vec![handle.body.clone()]),
    ];
    keys.iter()
        .find(|(_, texts)| texts.iter().any(|t| t.contains(&needle)))
        .map_or_else(|| vec!["api"], |(path, _)| path.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_equals_accepted_reads_only_the_values_it_names() {
        let mut api = Api::default();
        api.ingest.accepted = "/outcome == new".into();
        // Sending needs the duplicate's value; offline it loads.
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert_eq!(e.path, ["api", "ingest", "accepted"]);
        assert!(e.reason.contains("name the duplicate's too"), "{e:?}");
        let offline = Mapping::compile(Some(&api), None, false).unwrap();
        let read = |m: &Mapping, v: serde_json::Value| m.ingest.read_accepted(&v);
        assert_eq!(
            read(&offline, serde_json::json!({"outcome": "new"})),
            Some(Ok(true))
        );
        assert!(read(&offline, serde_json::json!({"outcome": "dup"}))
            .unwrap()
            .is_err());
        api.ingest.duplicate = "/outcome == dup".into();
        let m = Mapping::compile(Some(&api), None, true).unwrap();
        assert_eq!(
            read(&m, serde_json::json!({"outcome": "new"})),
            Some(Ok(true))
        );
        assert_eq!(
            read(&m, serde_json::json!({"outcome": "dup"})),
            Some(Ok(false))
        );
        for other in [
            serde_json::json!({"outcome": "queued"}),
            serde_json::json!({"outcome": null}),
            serde_json::json!({}),
        ] {
            let why = read(&m, other).unwrap().unwrap_err();
            assert!(why.starts_with("neither accepted"), "{why}");
        }
        // A pointer to a bool needs no duplicate value; one given is read too.
        api.ingest.accepted = "/accepted".into();
        api.ingest.duplicate = String::new();
        let m = Mapping::compile(Some(&api), None, true).unwrap();
        assert_eq!(
            read(&m, serde_json::json!({"accepted": false})),
            Some(Ok(false))
        );
        assert!(read(&m, serde_json::json!({"accepted": "no"}))
            .unwrap()
            .is_err());
        api.ingest.duplicate = "/dup".into();
        let m = Mapping::compile(Some(&api), None, true).unwrap();
        assert!(read(&m, serde_json::json!({"accepted": true, "dup": true}))
            .unwrap()
            .is_err());
        assert_eq!(
            read(&m, serde_json::json!({"accepted": false, "dup": true})),
            Some(Ok(false))
        );
        // `duplicate` alone cannot be read.
        api.ingest.accepted = String::new();
        let e = Mapping::compile(Some(&api), None, false).unwrap_err();
        assert_eq!(e.path, ["api", "ingest", "duplicate"]);
        assert_eq!(
            read(&Mapping::contract(), serde_json::json!({"accepted": true})),
            Some(Ok(true))
        );
    }

    #[test]
    fn the_contract_compiles_and_checks_batches_and_secrets() {
        let m = Mapping::contract();
        assert!(m.contract && m.ingest.batch == 1 && m.ingest.items.is_none());
        assert_eq!(m.ingest.request.what, "POST /v1/events");
        let mut api = Api::default();
        api.ingest.batch = 5;
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert_eq!(e.path, ["api", "ingest", "batch"]);
        api.ingest.envelope = r#"{"events": [{items}]}"#.into();
        assert!(Mapping::compile(Some(&api), None, true)
            .unwrap_err()
            .reason
            .contains("needs `items`"));
        api.ingest.items = "/items".into();
        api.ingest.request = "POST /e/{event_id}".into();
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert!(e.reason.contains("cannot be used here"), "{e:?}");
        api.ingest.request = "POST /api/{project}/envelope".into();
        api.headers.insert(
            "authorization".into(),
            "Bearer ${SPECSTORM_TEST_UNSET_VAR}".into(),
        );
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert_eq!(e.path, ["api", "headers"]);
        assert!(e.reason.contains("SPECSTORM_TEST_UNSET_VAR"), "{e:?}");
        api.headers.clear();
        api.group_ids = GroupIds::Lookup;
        assert_eq!(
            Mapping::compile(Some(&api), None, true).unwrap_err().path,
            ["api", "group_ids"]
        );
    }
}
