//! What an outbox run exercised (`summary.json`'s `coverage`): the
//! messages acked. Shared by the run, its audit and the merge.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::summary::Coverage;
use crate::workload::outbox::checker::Liveness;

/// What an outbox run exercised: the messages acked (a run that acked
/// none judged nothing: a gap, exit 4). Shared by the run and its audit.
pub fn of(liveness: &Liveness) -> Coverage {
    let mut coverage = Coverage {
        events_counted: liveness.acked_messages,
        probes: 0,
        gaps: Vec::new(),
    };
    if liveness.acked_messages == 0 {
        coverage
            .gaps
            .push("no message was acked, so the outbox invariants judged nothing".into());
    }
    coverage
}
