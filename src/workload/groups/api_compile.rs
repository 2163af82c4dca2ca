//! Groups' `[api]` requests compiled ([`GroupsRequests`]): ingest (one
//! event or a batch, with its envelope and per-event answers), resolve and
//! lookup, and the rules that span their keys (a batch needs its envelope
//! and items, `group_ids` its lookup or audit database, an `==` accepted
//! the duplicate's value too). The mapping compiler reaches [`compile`]
//! through the registry (`requests` of groups' sections).
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::api::{GroupIds, GroupsApi, ResolveMap, INGEST_CODES, LOOKUP_CODES, RESOLVE_CODES};
use crate::scenario::api::{Codes, Test};
use crate::scenario::mapping::request_template::{compile_request, pointer, test};
use crate::scenario::mapping::requests::{at, CompileContext, MappingError, Requests};
use crate::scenario::mapping::template::{Escape, Template};
use crate::scenario::mapping::{Mapping, RequestTemplate};
use crate::scenario::part::Part;
use std::any::Any;
use std::sync::Arc;

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

/// Groups' requests compiled: what the HTTP client sends for its ops.
#[derive(Debug, Clone)]
pub struct GroupsRequests {
    /// Ingest.
    pub ingest: IngestMapping,
    /// Resolve.
    pub resolve: ResolveMapping,
    /// Lookup, if configured.
    pub lookup: Option<LookupMapping>,
    /// Where resolvers learn group ids.
    pub group_ids: GroupIds,
    /// `{release}`.
    pub release: String,
}

impl GroupsRequests {
    /// Groups' requests of `mapping` (every mapping compiles them).
    pub fn of(mapping: &Mapping) -> &GroupsRequests {
        mapping
            .requests::<GroupsRequests>()
            .expect("every mapping compiles groups' requests")
    }
}

impl Requests for GroupsRequests {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn secrets(&self) -> Vec<&str> {
        let templates = [&self.ingest.request, &self.resolve.request]
            .into_iter()
            .chain(self.lookup.as_ref().map(|l| &l.request));
        templates
            .flat_map(RequestTemplate::secrets)
            .chain(self.ingest.event.secrets())
            .collect()
    }
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

/// Compiles groups' part of `[api]` (its defaults when not given).
/// Errors: a template, pointer, code or method that cannot be used, an
/// answer test that cannot tell a new event from a duplicate, a
/// `group_ids` without its lookup or audit database, with its key path.
pub fn compile(
    part: &dyn Part,
    ctx: &CompileContext<'_>,
) -> Result<Arc<dyn Requests>, MappingError> {
    let mut api = part
        .as_any()
        .downcast_ref::<GroupsApi>()
        .expect("groups' part of [api] is a GroupsApi")
        .clone();
    // The contract's resolve (an `[api.resolve]` left as it is) sends
    // the group's project and fingerprint in its body; a mapped
    // resolve sends the body it names, and no other.
    if api.resolve == ResolveMap::default() {
        api.resolve.body = CONTRACT_RESOLVE_BODY.to_string();
    }
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
        ctx.common,
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
        codes: Codes::new(&INGEST_CODES, &i.codes)
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
        (Some(a), None) if ctx.sending && a.equals.is_some() => {
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
        ctx.common,
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
        codes: Codes::new(&RESOLVE_CODES, &r.codes)
            .map_err(|e| at(&["api", "resolve", "codes"], e))?,
    };
    let lookup = match &api.lookup {
        None if api.group_ids == GroupIds::Lookup => {
            return Err(at(
                &["api", "group_ids"],
                "group_ids = \"lookup\" needs an [api.lookup] table with `request` and `group_id`",
            ))
        }
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
                    ctx.common,
                    &["api", "lookup", "headers"],
                    &l.headers,
                )?,
                group_id: pointer(&["api", "lookup", "group_id"], &l.group_id)?
                    .ok_or_else(|| at(&["api", "lookup", "group_id"], "must name the group id"))?,
                codes: Codes::new(&LOOKUP_CODES, &l.codes)
                    .map_err(|e| at(&["api", "lookup", "codes"], e))?,
            })
        }
    };
    if api.group_ids == GroupIds::Audit && !ctx.audit_sqlite {
        return Err(at(
            &["api", "group_ids"],
            "group_ids = \"audit\" needs `[audit] sqlite` (the database the ids are read from)",
        ));
    }
    Ok(Arc::new(GroupsRequests {
        ingest,
        resolve,
        lookup,
        group_ids: api.group_ids,
        release: api.release.clone(),
    }))
}

/// Groups' keys that may hold a `${NAME}`, with their texts.
pub fn secret_keys(part: &dyn Part) -> Vec<(&'static [&'static str], Vec<String>)> {
    let Some(api) = part.as_any().downcast_ref::<GroupsApi>() else {
        return Vec::new();
    };
    let map = |m: &std::collections::BTreeMap<String, String>| m.values().cloned().collect();
    let lookup = api.lookup.clone().unwrap_or_default();
    vec![
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
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::api::Api;

    /// Groups' part of `api`.
    fn groups(api: &mut Api) -> &mut GroupsApi {
        api.part_mut::<GroupsApi>().expect("groups' part")
    }

    #[test]
    fn an_equals_accepted_reads_only_the_values_it_names() {
        let mut api = Api::default();
        groups(&mut api).ingest.accepted = "/outcome == new".into();
        // Sending needs the duplicate's value; offline it loads.
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert_eq!(e.path, ["api", "ingest", "accepted"]);
        assert!(e.reason.contains("name the duplicate's too"), "{e:?}");
        let offline = Mapping::compile(Some(&api), None, false).unwrap();
        let read =
            |m: &Mapping, v: serde_json::Value| GroupsRequests::of(m).ingest.read_accepted(&v);
        assert_eq!(
            read(&offline, serde_json::json!({"outcome": "new"})),
            Some(Ok(true))
        );
        assert!(read(&offline, serde_json::json!({"outcome": "dup"}))
            .unwrap()
            .is_err());
        groups(&mut api).ingest.duplicate = "/outcome == dup".into();
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
        groups(&mut api).ingest.accepted = "/accepted".into();
        groups(&mut api).ingest.duplicate = String::new();
        let m = Mapping::compile(Some(&api), None, true).unwrap();
        assert_eq!(
            read(&m, serde_json::json!({"accepted": false})),
            Some(Ok(false))
        );
        assert!(read(&m, serde_json::json!({"accepted": "no"}))
            .unwrap()
            .is_err());
        groups(&mut api).ingest.duplicate = "/dup".into();
        let m = Mapping::compile(Some(&api), None, true).unwrap();
        assert!(read(&m, serde_json::json!({"accepted": true, "dup": true}))
            .unwrap()
            .is_err());
        assert_eq!(
            read(&m, serde_json::json!({"accepted": false, "dup": true})),
            Some(Ok(false))
        );
        // `duplicate` alone cannot be read.
        groups(&mut api).ingest.accepted = String::new();
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
        let g = GroupsRequests::of(&m);
        assert!(m.contract && g.ingest.batch == 1 && g.ingest.items.is_none());
        assert_eq!(g.ingest.request.what, "POST /v1/events");
        let mut api = Api::default();
        groups(&mut api).ingest.batch = 5;
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert_eq!(e.path, ["api", "ingest", "batch"]);
        groups(&mut api).ingest.envelope = r#"{"events": [{items}]}"#.into();
        assert!(Mapping::compile(Some(&api), None, true)
            .unwrap_err()
            .reason
            .contains("needs `items`"));
        groups(&mut api).ingest.items = "/items".into();
        groups(&mut api).ingest.request = "POST /e/{event_id}".into();
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert!(e.reason.contains("cannot be used here"), "{e:?}");
        groups(&mut api).ingest.request = "POST /api/{project}/envelope".into();
        // A secret of groups' own keys is named by its key (the common
        // headers' is `scenario::mapping`'s test).
        groups(&mut api).resolve.body = "${SPECSTORM_TEST_UNSET_VAR}".into();
        let e = Mapping::compile(Some(&api), None, true).unwrap_err();
        assert_eq!(e.path, ["api", "resolve", "body"]);
        groups(&mut api).resolve = ResolveMap::default();
        groups(&mut api).group_ids = GroupIds::Lookup;
        assert_eq!(
            Mapping::compile(Some(&api), None, true).unwrap_err().path,
            ["api", "group_ids"]
        );
    }
}
