//! Checkers: one per invariant of `specs/BacktalkGroups.tla`, exactly as
//! `docs/groups.md` defines them for a real run, each judging
//! the final [`Tables`] together with the [`Facts`] of the history. Each
//! module writes down why its rule is sound: it never reports a violation
//! on a correct system, and says `unknown` where the history cannot decide.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

pub mod count_exact;
pub mod event_map;
pub mod evidence;
pub mod facts;
pub mod id_set;
pub mod legacy;
pub mod no_missed_regression;
pub mod one_group;
pub mod op_assembly;
pub mod op_fact;
pub mod op_fact_codec;
pub mod op_types;
pub mod sharded;
pub mod step_fact;
pub mod stranded;
pub mod tables;
pub mod type_ok;

pub use crate::history::completeness::Completeness;
pub use facts::Facts;

use crate::verdict::{CheckResult, Finding};

/// The version of the rules the checkers apply (every workload's: one
/// version per build).
pub use crate::summary::CHECKER_VERSION;

/// The checker version of a run folder that records none.
pub use crate::summary::FIRST_CHECKER_VERSION;

/// The invariants of each workload, by their spec names, in report order.
/// They live in the config layer, which checks `expect` against them.
pub use crate::workload::groups::config::GROUPS_INVARIANTS;
pub use tables::{GroupRow, Tables};

// Each listed name is its checker's: the list cannot drift from the
// checkers without failing the build.
const _: () = assert!(crate::scenario::invariants::same_names(
    &GROUPS_INVARIANTS,
    &[
        type_ok::NAME,
        one_group::NAME,
        count_exact::NAME,
        no_missed_regression::NAME,
    ]
));

/// Every groups invariant `unknown` for one reason: nothing could be
/// judged (`expected` and `found` name what was missing, `explanation`
/// says why). Used where a verdict would be unsound, never as a default.
pub fn all_unknown(expected: &str, found: &str, explanation: &str) -> Vec<CheckResult> {
    GROUPS_INVARIANTS
        .iter()
        .map(|name| {
            let mut r = CheckResult::new(name);
            r.unknown(Finding {
                msg_id: None,
                group: None,
                event_id: None,
                expected: expected.into(),
                found: found.into(),
                explanation: explanation.into(),
                evidence: vec![],
            });
            r
        })
        .collect()
}

/// Every checker's result (TypeOK, OneGroupPerFingerprint, CountExact,
/// NoMissedRegression, in that order) and the stranded-events report.
pub fn check_all(facts: &Facts, tables: &Tables) -> (Vec<CheckResult>, stranded::Stranded) {
    let (count, premise_failed) = count_exact::check(facts, tables);
    let results = vec![
        type_ok::check(facts, tables),
        one_group::check(tables),
        count,
        no_missed_regression::check(facts, tables, &premise_failed),
    ];
    (results, stranded::report(facts, tables))
}

/// ns as seconds with millisecond precision, for explanations.
pub fn secs(ns: u64) -> String {
    format!("{:.6}s", ns as f64 / 1e9)
}
