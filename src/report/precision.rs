//! Which checks lost precision, and why: a mapped service whose answers do
//! not tell everything (an ingest `ok` that does not say accepted or
//! duplicate, a resolve without its count, a refusal without its probe),
//! or that deletes event rows itself. The verdicts stay sound (they use
//! bounds, or leave a clause unjudged); this says where they are weaker,
//! in the summary, so that nobody reads more into a `holds` than it claims.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::history::{Entry, OpKind};
use crate::scenario::api::EventRows;
use crate::scenario::Scenario;
use std::collections::BTreeMap;

pub use crate::summary::PrecisionLoss;

/// Counts the history's `ok` completions whose value is unknown, by op
/// kind and reason (`OpResult::ambiguous`).
#[derive(Debug, Default)]
pub struct AmbiguousOps {
    counts: BTreeMap<(&'static str, String), u64>,
    /// Refused resolves by the status word their answer named, when it is
    /// none of the spec's (open, resolved, regressed).
    unknown_status: BTreeMap<String, u64>,
}

impl AmbiguousOps {
    /// Feeds one history entry.
    pub fn feed(&mut self, e: &Entry) {
        if let Entry::Fail(c) = e {
            if c.f == OpKind::Resolve {
                if let Some(word) = &c.result.status {
                    if !matches!(word.as_str(), "open" | "resolved" | "regressed") {
                        *self.unknown_status.entry(word.clone()).or_default() += 1;
                    }
                }
            }
        }
        if let Entry::Ok(c) = e {
            if let Some(why) = &c.result.ambiguous {
                let f = c.f.name();
                *self.counts.entry((f, why.clone())).or_default() += 1;
            }
        }
    }
}

/// The precision losses of a run of `s` whose history fed `ops`;
/// `unprobed_refusals`: the mapped service's refusals do not give the
/// status and count they read (its workload's requests say).
pub fn losses(s: &Scenario, ops: &AmbiguousOps, unprobed_refusals: bool) -> Vec<PrecisionLoss> {
    let mut out = Vec::new();
    for ((f, why), n) in &ops.counts {
        match *f {
            "ingest" => {
                out.push(PrecisionLoss {
                    invariant: "TypeOK".into(),
                    what: "ingests answered ok whose event is not known to be stored are not \
                           checked for presence in error_events"
                        .into(),
                    why: why.clone(),
                    ops: *n,
                });
                out.push(PrecisionLoss {
                    invariant: "CountExact".into(),
                    what: "such events are Maybe (counted or not), so the count is judged \
                           between bounds instead of exactly"
                        .into(),
                    why: why.clone(),
                    ops: *n,
                });
            }
            "resolve" => out.push(PrecisionLoss {
                invariant: "NoMissedRegression".into(),
                what: "successful resolves without their count explain no probe: probes after \
                       them are unknown rather than judged"
                    .into(),
                why: why.clone(),
                ops: *n,
            }),
            _ => {}
        }
    }
    for (word, n) in &ops.unknown_status {
        out.push(PrecisionLoss {
            invariant: "NoMissedRegression".into(),
            what: format!(
                "refused resolves that named the status {word:?} are no probes (only \
                 \"resolved\" is)"
            ),
            why: format!(
                "the service's status {word:?} is none of open, resolved, regressed: if it means \
                 resolved, the service (or a proxy) must say \"resolved\""
            ),
            ops: *n,
        });
    }
    if unprobed_refusals {
        out.push(PrecisionLoss {
            invariant: "NoMissedRegression".into(),
            what: "refused resolves are no probes: only the final rows are".into(),
            why: "the refusal's answer does not give the status and count it read \
                  (api.resolve.status / event_count not set)"
                .into(),
            ops: 0,
        });
    }
    if s.audit
        .as_ref()
        .is_some_and(|a| a.events == EventRows::Pruned)
    {
        let why = "the service deletes event rows (audit.events = \"pruned\")".to_string();
        out.push(PrecisionLoss {
            invariant: "TypeOK".into(),
            what: "\"every acknowledged event is in error_events\" is not judged".into(),
            why: why.clone(),
            ops: 0,
        });
        out.push(PrecisionLoss {
            invariant: "CountExact".into(),
            what: "event_count <= |A(G)| is not judged; the bounds rest on the history alone"
                .into(),
            why,
            ops: 0,
        });
    }
    out
}
