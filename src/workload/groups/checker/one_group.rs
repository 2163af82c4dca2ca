//! OneGroupPerFingerprint: at most one error_groups row per
//! (project, fingerprint) (`docs/groups.md`, "OneGroupPerFingerprint").
//!
//! Sound: a plain count over the final snapshot; the schema has no UNIQUE
//! constraint on purpose, so only the design (deterministic group ids) can
//! keep it, and only the audit can see it broken.
//!
//! A cut history (`Completeness::Cut`) changes nothing: the rule reads the
//! final tables only.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::{secs, Tables};
use crate::verdict::{CheckResult, Evidence, Finding, GroupRef};
use std::collections::BTreeMap;

/// Invariant name as reported (spec `OneGroupPerFingerprint`).
pub const NAME: &str = "OneGroupPerFingerprint";

/// OneGroupPerFingerprint (`docs/groups.md`): at most one `error_groups` row per (project, fingerprint); one violation per duplicated key.
pub fn check(tables: &Tables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    let mut by_key: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for g in &tables.groups {
        by_key.entry(g.key()).or_default().push(g.id_text());
    }
    for ((project, fingerprint), ids) in by_key {
        if ids.len() > 1 {
            r.violation(Finding {
                msg_id: None,
                group: Some(GroupRef {
                    project: project.clone(),
                    fingerprint: fingerprint.clone(),
                    id: ids[0].clone(),
                }),
                event_id: None,
                expected: "at most 1 group row".into(),
                found: format!("{} group rows: {}", ids.len(), ids.join(", ")),
                explanation: format!(
                    "({project}, {fingerprint}) has several group rows: group ids are not a \
                     deterministic function of (project, fingerprint)"
                ),
                // Visible from the final snapshot's read on.
                evidence: vec![Evidence {
                    t: tables.read_start,
                    op: None,
                    what: format!(
                        "the final snapshot (at {}) holds {} rows for the key",
                        secs(tables.read_start),
                        ids.len()
                    ),
                }],
            });
        }
    }
    r
}
