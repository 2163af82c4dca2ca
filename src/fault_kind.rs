//! What a fault does ([`FaultKind`]): the kind a scenario's `[[faults]]`
//! names, the history records with every injection, and the summary
//! counts by.
//!
//! Model layer: imports nothing of the crate.

use serde::{Deserialize, Serialize};

/// `faults[].kind`: what a fault does (see `scenarios/README.md`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum FaultKind {
    /// A worker abandons its op after a step, as a stateless worker dies
    /// mid-request: the op is `info`, its event is sent again later.
    Crash,
    /// A delay (with jitter) before a step, widening race windows.
    Pause,
    /// The built-in fault proxy between the bench and an HTTP target.
    Proxy,
    /// SIGKILL of the spawned reference server, restarted on the same
    /// database after a pause.
    Kill,
    /// A connection that holds SQLite's write lock for a while.
    Lock,
}

impl FaultKind {
    /// Every kind, in report order.
    pub const ALL: [FaultKind; 5] = [
        FaultKind::Crash,
        FaultKind::Pause,
        FaultKind::Proxy,
        FaultKind::Kill,
        FaultKind::Lock,
    ];

    /// Lowercase name, as in scenarios, the history and the summary.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::Pause => "pause",
            FaultKind::Proxy => "proxy",
            FaultKind::Kill => "kill",
            FaultKind::Lock => "lock",
        }
    }
}
