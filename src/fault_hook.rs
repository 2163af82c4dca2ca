//! The fault hook's wire format, shared by the bench, its fault proxy and
//! the reference server: the headers that name an op to the proxy
//! ([`OP_HEADER`], [`KEY_HEADER`], [`F_HEADER`]), the test-only fault hook
//! header ([`FAULT_HEADER`], the schedule fuzzer's points included) with
//! its codec for groups ops ([`fault_header`], [`parse_fault_header`])
//! and for outbox deliveries ([`HandleHook`]), and the words the proxy
//! records of a dropped answer ([`drop_detail`]; the checkers read the
//! entry's `dropped` field, and the words only in a history written before
//! it, `checker::legacy`).
//!
//! Engine layer: imports the fault plan's decisions (`nemesis::OpFaults`),
//! the schedule fuzzer's delays (`fuzz::Delay`, bounded by
//! `scenario::fuzz::MAX_SLEEP`), the statement files' programs and the
//! history's entries, nothing above.

use crate::draws::ns as ns_of;
use crate::fuzz::Delay;
use crate::history::DroppedResponse;
use crate::nemesis::OpFaults;
use crate::scenario::fuzz::MAX_SLEEP;
use crate::statements::OpProgram;
use std::time::Duration;

/// Header carrying the op id (u64, decimal).
pub const OP_HEADER: &str = "x-specstorm-op";
/// Header carrying the op key (u64, decimal; see [`crate::draws::op_key`]).
pub const KEY_HEADER: &str = "x-specstorm-key";
/// Header carrying the op kind: `ingest` or `resolve`.
pub const F_HEADER: &str = "x-specstorm-f";

/// The test-only fault hook header: `crash-after=STEP` and/or
/// `pause=STEP:NANOS`, and the schedule fuzzer's points `fuzz=N:NANOS`
/// (before executed step N, 1-based from the op's second step; 0 ns a
/// yield), separated by `;` (the bench's decisions for this op, made by
/// its fault plan and its fuzzer). Unknown step names and parts are
/// ignored, so a server that predates a part reads the others.
pub const FAULT_HEADER: &str = "x-specstorm-fault";

/// The header value for `faults` on `program` (step names by index).
pub fn fault_header(faults: &OpFaults, program: &OpProgram) -> Option<String> {
    let mut parts = Vec::new();
    if let Some((i, _)) = faults.crash_after {
        parts.push(format!("crash-after={}", program.steps[i].name));
    }
    for (i, d, _) in &faults.pauses {
        parts.push(format!("pause={}:{}", program.steps[*i].name, d.as_nanos()));
    }
    parts.extend(fuzz_parts(&faults.fuzz));
    (!parts.is_empty()).then(|| parts.join(";"))
}

/// The header's parts of the fuzzer's points.
fn fuzz_parts(points: &[(usize, Delay)]) -> impl Iterator<Item = String> + '_ {
    points.iter().map(|(n, d)| format!("fuzz={n}:{}", d.ns()))
}

/// One `fuzz=N:NANOS` part's point (after its `fuzz=`), if well formed.
fn parse_fuzz(rest: &str) -> Option<(usize, Delay)> {
    let (n, ns) = rest.split_once(':')?;
    let n = n.parse::<usize>().ok().filter(|n| *n > 0)?;
    let ns = ns
        .parse::<u64>()
        .ok()
        .filter(|ns| *ns <= ns_of(MAX_SLEEP))?;
    Some((n, Delay::from_ns(ns)))
}

/// Reads a [`FAULT_HEADER`] value into decisions on `program`'s steps (the
/// inverse of [`fault_header`]). Unknown step names and malformed parts
/// are ignored.
pub fn parse_fault_header(value: &str, program: &OpProgram) -> OpFaults {
    let mut out = OpFaults::default();
    let index = |name: &str| program.steps.iter().position(|s| s.name == name);
    for part in value.split(';').map(str::trim) {
        if let Some(step) = part.strip_prefix("crash-after=") {
            out.crash_after = index(step).map(|i| (i, 0));
        } else if let Some(rest) = part.strip_prefix("pause=") {
            if let Some((step, ns)) = rest.rsplit_once(':') {
                if let (Some(i), Ok(ns)) = (index(step), ns.parse::<u64>()) {
                    out.pauses.push((i, Duration::from_nanos(ns), 0));
                }
            }
        } else if let Some(point) = part.strip_prefix("fuzz=").and_then(parse_fuzz) {
            out.fuzz.push(point);
        }
    }
    out
}

/// The fault hook's decisions for one delivery (`x-specstorm-fault`):
/// `crash-after=STEP`, `crash-p=P:SALT[:STEP]` (after every executed step,
/// or every execution of STEP, the handler dies with probability P, drawn
/// from SALT and the step's position: the bench's per-step crash),
/// `pause=STEP:NANOS`, the fuzzer's `fuzz=N:NANOS` (as for groups); parts
/// separated by `;`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HandleHook {
    /// Crash after the first execution of this step.
    pub crash_after: Option<String>,
    /// Crash after an executed step with this probability: (p, salt,
    /// only this step).
    pub crash_p: Option<(f64, u64, Option<String>)>,
    /// Pause before the first execution of each named step.
    pub pauses: Vec<(String, Duration)>,
    /// The schedule fuzzer's points: (executed step, delay).
    pub fuzz: Vec<(usize, Delay)>,
}

impl HandleHook {
    /// Parses the header's value against `program` (unknown step names and
    /// malformed parts are ignored, as for groups).
    pub fn parse(value: &str, program: &OpProgram) -> Self {
        let known = |name: &str| program.steps.iter().any(|s| s.name == name);
        let mut h = HandleHook::default();
        for part in value.split(';').map(str::trim) {
            if let Some(step) = part.strip_prefix("crash-after=") {
                if known(step) {
                    h.crash_after = Some(step.to_string());
                }
            } else if let Some(rest) = part.strip_prefix("crash-p=") {
                let mut it = rest.splitn(3, ':');
                let p = it.next().and_then(|p| p.parse::<f64>().ok());
                let salt = it.next().and_then(|s| s.parse::<u64>().ok());
                let step = it.next().map(str::to_string);
                if let (Some(p), Some(salt)) = (p, salt) {
                    if (0.0..=1.0).contains(&p) && step.as_deref().is_none_or(known) {
                        h.crash_p = Some((p, salt, step));
                    }
                }
            } else if let Some(rest) = part.strip_prefix("pause=") {
                if let Some((step, ns)) = rest.rsplit_once(':') {
                    if let (true, Ok(ns)) = (known(step), ns.parse::<u64>()) {
                        h.pauses.push((step.to_string(), Duration::from_nanos(ns)));
                    }
                }
            } else if let Some(point) = part.strip_prefix("fuzz=").and_then(parse_fuzz) {
                h.fuzz.push(point);
            }
        }
        h
    }

    /// The header value of these decisions (the inverse of `parse`).
    pub fn header(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(s) = &self.crash_after {
            parts.push(format!("crash-after={s}"));
        }
        if let Some((p, salt, step)) = &self.crash_p {
            parts.push(match step {
                Some(s) => format!("crash-p={p}:{salt}:{s}"),
                None => format!("crash-p={p}:{salt}"),
            });
        }
        for (s, d) in &self.pauses {
            parts.push(format!("pause={s}:{}", d.as_nanos()));
        }
        parts.extend(fuzz_parts(&self.fuzz));
        (!parts.is_empty()).then(|| parts.join(";"))
    }
}

/// The detail of a dropped answer, in words: `drop_response: upstream
/// answered STATUS: BODY` (bodies of more than
/// [`DroppedResponse::MAX_BODY`] bytes are left out). The entry's
/// `dropped` field holds the same for the checkers: the server's answer
/// is what the server did, even though the client never heard it.
pub fn drop_detail(status: u16, body: &str) -> String {
    if body.len() <= DroppedResponse::MAX_BODY {
        format!("drop_response: upstream answered {status}: {body}")
    } else {
        format!("drop_response: upstream answered {status}")
    }
}
