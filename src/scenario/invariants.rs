//! The invariants of each workload, by their spec names, in report order.
//! The loader checks `expect` against them and the checkers judge exactly
//! these (`crate::workload::groups::checker` re-exports them and asserts, when it compiles,
//! that each name is its checker's). They live here, below both, until a
//! workload owns its names.
//!
//! May import: nothing.

/// The invariants of the `groups` workload (BacktalkGroups.tla).
pub const GROUPS_INVARIANTS: [&str; 4] = [
    "TypeOK",
    "OneGroupPerFingerprint",
    "CountExact",
    "NoMissedRegression",
];

/// The invariants of the `outbox` workload (exactly_once_none_atomic.tla,
/// as `docs/outbox.md` defines them).
pub const OUTBOX_INVARIANTS: [&str; 5] = [
    "TypeOK",
    "AtMostOneStateChange",
    "AtMostOneOutQueueMsg",
    "ConsistentStateAndOutQueue",
    "NoLostOutput",
];

/// Whether `listed` names exactly `checkers`, in order: each workload's
/// checker module asserts it when it compiles, so a list cannot drift from
/// the checkers that judge it.
pub const fn same_names(listed: &[&str], checkers: &[&str]) -> bool {
    if listed.len() != checkers.len() {
        return false;
    }
    let mut i = 0;
    while i < listed.len() {
        let (a, b) = (listed[i].as_bytes(), checkers[i].as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut j = 0;
        while j < a.len() {
            if a[j] != b[j] {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}
