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
