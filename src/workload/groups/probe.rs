//! `specstorm check-target URL`: a contract probe of a running service.
//!
//! It sends a short, harmless sequence of requests of the HTTP target
//! contract, version 1, groups workload (`docs/http-contract.md`)
//! and judges every answer: the status, and the shape and values of the
//! body. Harmless means that it works in a fresh project namespace
//! (`specstorm-probe-<unix ms>`, with a random fingerprint), so the only
//! group it ingests into or resolves is its own; real data's groups are never
//! touched. `POST /v1/reset` is optional and destructive: it is never called.
//!
//! The sequence: `GET /healthz` (200); `POST /v1/events` with a new id (200,
//! accepted) and the same id again (200, not accepted, same group);
//! `POST /v1/groups/{group_id}/resolve` (200, resolved, one event) and again
//! (409, refused, status `resolved`, one event); a resolve of a group that
//! cannot exist (404); `POST /v1/events` with a malformed body (400, 413 or
//! 422); `GET /v1/export` (200, canonical keys on every row, the probe's event
//! and resolved group present, nothing else in its namespace).
//!
//! Plain `http://` only: the crate is built without TLS. Every request has
//! a connect and a total timeout, so a dead or silent target never hangs the
//! probe; a target that does not answer `GET /healthz` at all is reported as
//! unreachable and nothing more is sent.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::statements::{EVENTS_COLUMNS, GROUPS_COLUMNS};
use crate::target::http::probe::{excerpt, judge, Answer, Probe};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::probe_report::{Check, Outcome, ProbeError, ProbeOptions, Report};

/// Runs the probe on a current-thread tokio runtime, writing each check's
/// line to `out` as soon as it is judged, then the verdict line. Fails
/// only when the probe cannot start (an unusable URL, no HTTP client).
pub fn check_target(opts: &ProbeOptions, out: &mut dyn Write) -> Result<Report, ProbeError> {
    let (probe, rt) = Probe::start(opts, out)?;
    let project = format!("specstorm-probe-{}", unix_ms());
    Ok(rt.block_on(run(probe, project)))
}

/// The sequence, in the fresh namespace `project`.
async fn run(mut p: Probe<'_>, project: String) -> Report {
    let tag = random_hex(&project, 4);
    let fingerprint = format!("probe-{tag}");
    let event_id = uuid_like(&project, 1);
    let _ = writeln!(
        p.out,
        "# check-target {} (contract v1, groups workload; namespace: project {}, \
         fingerprint {fingerprint}; timeout {})",
        p.base,
        project,
        humantime::format_duration(p.timeout)
    );
    let mut report = Report {
        workload: "groups",
        base: p.base.clone(),
        project: project.clone(),
        checks: Vec::new(),
        unreachable: None,
    };

    // GET /healthz: no answer at all means the target is unusable.
    let answer = p.send(p.client.get(p.url("/healthz"))).await;
    if let Err(why) = &answer {
        report.unreachable = Some(why.clone());
    }
    p.record(
        &mut report,
        judge("GET /healthz", "200", answer, |a| a.status_is(200)),
    );
    if report.unreachable.is_some() {
        return p.finish(report);
    }

    // POST /v1/events, a new id.
    let event = json!({
        "id": event_id,
        "project": project,
        "fingerprint": fingerprint,
        "message": "specstorm check-target probe (harmless: a fresh namespace)",
    });
    let answer = ingest(&p, &event).await;
    let mut group_id: Option<String> = None;
    let check = judge(
        "POST /v1/events (new id)",
        "200 {accepted: true, group_id: string}",
        answer,
        |a| {
            a.status_is(200)?;
            let m = a.object()?;
            let g = string_field(&m, "group_id")?;
            group_id = Some(g.to_string());
            field_eq(&m, "accepted", &json!(true))
        },
    );
    p.record(&mut report, check);

    // The same id again: a duplicate, same group.
    let answer = ingest(&p, &event).await;
    let want_group = group_id.clone();
    let expected = match &want_group {
        Some(g) => format!("200 {{accepted: false, group_id: {g:?}}}"),
        None => "200 {accepted: false, group_id: string}".into(),
    };
    let check = judge("POST /v1/events (same id again)", &expected, answer, |a| {
        a.status_is(200)?;
        let m = a.object()?;
        field_eq(&m, "accepted", &json!(false))?;
        let g = string_field(&m, "group_id")?;
        match &want_group {
            Some(w) if w != g => Err(format!(
                "group_id {g:?} differs from the first answer's {w:?}"
            )),
            _ => Ok(()),
        }
    });
    p.record(&mut report, check);

    // Resolve the probe's group, then again.
    match &group_id {
        Some(g) => {
            let path = format!("/v1/groups/{}/resolve", encode_segment(g));
            let answer = p.send(p.client.post(p.url(&path))).await;
            let check = judge(
                &format!("POST {path} (first)"),
                "200 {resolved: true, event_count: 1}",
                answer,
                |a| {
                    a.status_is(200)?;
                    let m = a.object()?;
                    field_eq(&m, "resolved", &json!(true))?;
                    count_is(&m, 1)
                },
            );
            p.record(&mut report, check);
            let answer = p.send(p.client.post(p.url(&path))).await;
            let check = judge(
                &format!("POST {path} (again)"),
                "409 {resolved: false, status: \"resolved\", event_count: 1}",
                answer,
                |a| {
                    a.status_is(409)?;
                    let m = a.object()?;
                    field_eq(&m, "resolved", &json!(false))?;
                    field_eq(&m, "status", &json!("resolved"))?;
                    count_is(&m, 1)
                },
            );
            p.record(&mut report, check);
        }
        None => {
            for case in ["first", "again"] {
                let check = Check {
                    endpoint: format!("POST /v1/groups/{{group_id}}/resolve ({case})"),
                    outcome: Outcome::Skip,
                    detail: "not sent: POST /v1/events gave no group_id".into(),
                };
                p.record(&mut report, check);
            }
        }
    }

    // A group id that cannot exist.
    let missing = format!("specstorm-probe-missing-{}", uuid_like(&project, 2));
    let path = format!("/v1/groups/{missing}/resolve");
    let answer = p.send(p.client.post(p.url(&path))).await;
    let check = judge(
        &format!("POST {path} (unknown group)"),
        "404",
        answer,
        |a| a.status_is(404),
    );
    p.record(&mut report, check);

    // A malformed body (truncated JSON), in the probe's namespace.
    let bad = format!(
        "{{\"id\": \"{}\", \"project\": \"{}\", \"fingerprint\": ",
        uuid_like(&project, 3),
        project
    );
    let answer = p
        .send(
            p.client
                .post(p.url("/v1/events"))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(bad),
        )
        .await;
    let check = judge(
        "POST /v1/events (malformed body)",
        "400, 413 or 422 (rejected)",
        answer,
        |a| match a.status {
            400 | 413 | 422 => Ok(()),
            s => Err(format!("status {s}: a malformed event was not rejected")),
        },
    );
    p.record(&mut report, check);

    // The export: shape, and the probe's rows.
    let answer = p.send(p.client.get(p.url("/v1/export"))).await;
    let probe_rows = ProbeRows {
        project: &project,
        fingerprint: &fingerprint,
        event_id: &event_id,
        group_id: group_id.as_deref(),
    };
    let check = match answer {
        Err(e) => Check {
            endpoint: "GET /v1/export".into(),
            outcome: Outcome::Fail,
            detail: format!(
                "expected 200 {{events: [...], groups: [...]}}, got no answer: {e} \
                 (a large export may need a longer --timeout)"
            ),
        },
        Ok(a) => match check_export(&a, &probe_rows) {
            Ok(summary) => Check {
                endpoint: "GET /v1/export".into(),
                outcome: Outcome::Ok,
                detail: format!("200 {summary}"),
            },
            Err(problems) => Check {
                endpoint: "GET /v1/export".into(),
                outcome: Outcome::Fail,
                detail: format!(
                    "expected 200 {{events: [...], groups: [...]}} with canonical keys and \
                     the probe's rows, got {} ({})",
                    a.got(),
                    problems
                ),
            },
        },
    };
    p.record(&mut report, check);

    let _ = writeln!(
        p.out,
        "# POST /v1/reset: not probed (optional in the contract, and destructive: it \
         empties every table)"
    );
    p.finish(report)
}

async fn ingest(p: &Probe<'_>, event: &Value) -> Result<Answer, String> {
    p.send(p.client.post(p.url("/v1/events")).json(event)).await
}

fn field_eq(m: &Map<String, Value>, key: &str, want: &Value) -> Result<(), String> {
    match m.get(key) {
        Some(v) if v == want => Ok(()),
        Some(v) => Err(format!("{key} is {v}, not {want}")),
        None => Err(format!("no {key} field")),
    }
}

fn string_field<'m>(m: &'m Map<String, Value>, key: &str) -> Result<&'m str, String> {
    match m.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(format!("{key} is {v}, not a string")),
        None => Err(format!("no {key} field")),
    }
}

/// `event_count` is the number `n` (an integer, or a float equal to it).
fn count_is(m: &Map<String, Value>, n: u64) -> Result<(), String> {
    match m.get("event_count") {
        Some(v) if v.as_u64() == Some(n) || v.as_f64() == Some(n as f64) => Ok(()),
        Some(v) => Err(format!("event_count is {v}, not {n}")),
        None => Err("no event_count field".into()),
    }
}

/// What the probe wrote, to be found in the export.
struct ProbeRows<'a> {
    project: &'a str,
    fingerprint: &'a str,
    event_id: &'a str,
    group_id: Option<&'a str>,
}

/// Checks the export's shape (an object with `events` and `groups` arrays
/// whose rows have exactly the canonical keys) and the probe's rows (its
/// event once, its group resolved with one event, nothing else in its
/// namespace). Ok: a one-line summary; Err: the first problems found.
fn check_export(a: &Answer, probe: &ProbeRows<'_>) -> Result<String, String> {
    a.status_is(200)?;
    let m = a.object()?;
    let mut problems: Vec<String> = Vec::new();
    let mut tables = Vec::new();
    for (name, columns) in [("events", &EVENTS_COLUMNS), ("groups", &GROUPS_COLUMNS)] {
        match m.get(name) {
            Some(Value::Array(rows)) => {
                let want: BTreeSet<&str> = columns.iter().copied().collect();
                let bad = rows.iter().enumerate().find_map(|(i, r)| match r {
                    Value::Object(o) => {
                        let keys: BTreeSet<&str> = o.keys().map(String::as_str).collect();
                        (keys != want).then(|| format!("{name}[{i}] has keys {keys:?}"))
                    }
                    v => Some(format!("{name}[{i}] is {v}, not an object")),
                });
                if let Some(b) = bad {
                    problems.push(format!("{b}; the canonical keys are {want:?}"));
                }
                tables.push(rows.as_slice());
            }
            Some(v) => {
                problems.push(format!(
                    "{name} is {}, not an array",
                    excerpt(&v.to_string())
                ));
                tables.push(&[]);
            }
            None => {
                problems.push(format!("no {name} array"));
                tables.push(&[]);
            }
        }
    }
    let (events, groups) = (tables[0], tables[1]);
    let in_namespace = |r: &&Value| r.get("project").and_then(Value::as_str) == Some(probe.project);
    let ours: Vec<&Value> = events.iter().filter(in_namespace).collect();
    let mine: Vec<&&Value> = ours
        .iter()
        .filter(|r| r.get("id").and_then(Value::as_str) == Some(probe.event_id))
        .collect();
    match mine.as_slice() {
        [] => problems.push(format!("the probe's event {} is missing", probe.event_id)),
        [e] => {
            let mut want = vec![("fingerprint", json!(probe.fingerprint))];
            if let Some(g) = probe.group_id {
                want.push(("group_id", json!(g)));
            }
            for (k, v) in want {
                if e.get(k) != Some(&v) {
                    problems.push(format!(
                        "the probe's event has {k} {}, not {v}",
                        e.get(k).unwrap_or(&Value::Null)
                    ));
                }
            }
        }
        more => problems.push(format!(
            "the probe's event {} appears {} times",
            probe.event_id,
            more.len()
        )),
    }
    if ours.len() > mine.len() {
        problems.push(format!(
            "{} other event(s) in the probe's project {} (a rejected body was applied?)",
            ours.len() - mine.len(),
            probe.project
        ));
    }
    if let Some(g) = probe.group_id {
        let found: Vec<&Value> = groups
            .iter()
            .filter(|r| r.get("id").and_then(Value::as_str) == Some(g))
            .collect();
        match found.as_slice() {
            [] => problems.push(format!("the probe's group {g} is missing")),
            [r] => {
                for (k, v) in [
                    ("project", json!(probe.project)),
                    ("fingerprint", json!(probe.fingerprint)),
                    ("status", json!("resolved")),
                ] {
                    if r.get(k) != Some(&v) {
                        problems.push(format!(
                            "the probe's group has {k} {}, not {v}",
                            r.get(k).unwrap_or(&Value::Null)
                        ));
                    }
                }
                if let Some(o) = r.as_object() {
                    if let Err(e) = count_is(o, 1) {
                        problems.push(format!("the probe's group: {e}"));
                    }
                }
            }
            more => problems.push(format!(
                "the probe's group {g} appears {} times",
                more.len()
            )),
        }
    }
    if problems.is_empty() {
        Ok(format!(
            "{{events: {} rows, groups: {} rows}}: canonical keys; the probe's event once, \
             its group resolved with event_count 1",
            events.len(),
            groups.len()
        ))
    } else {
        let n = problems.len();
        problems.truncate(3);
        let more = if n > 3 {
            format!("; and {} more", n - 3)
        } else {
            String::new()
        };
        Err(format!("{}{more}", problems.join("; ")))
    }
}

/// Percent-encodes a path segment (everything but unreserved characters,
/// `:` and `@`, which a path segment may hold as they are).
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// `n` bytes of a hash of the seed, the case, the time and the process id,
/// in hex: unique enough for a probe's names.
fn random_bytes(seed: &str, case: u64) -> [u8; 32] {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut h = Sha256::new();
    h.update(format!("{seed}/{case}/{nanos}/{}", std::process::id()).as_bytes());
    h.finalize().into()
}

fn random_hex(seed: &str, n: usize) -> String {
    random_bytes(seed, 0)[..n]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fresh UUID-shaped id (version 4 and variant bits set).
fn uuid_like(seed: &str, case: u64) -> String {
    let mut b = random_bytes(seed, case);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b[..16].iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(encode_segment("g:p:f"), "g:p:f");
        assert_eq!(encode_segment("a/b c"), "a%2Fb%20c");
        let u = uuid_like("s", 1);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(uuid_like("s", 1), uuid_like("s", 2));
    }
}
