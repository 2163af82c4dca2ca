//! The outbox workload's lines in the human summary: the queue and its
//! attempts under an `outbox:` heading, where a groups run prints events,
//! duplicates and resolves (none of which an outbox run has) ([`human`]).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::figures::{OutboxFigures, OutboxSummary};
use crate::summary::Summary;
use crate::workload::parts::HumanParts;
use std::fmt::Write;

/// The outbox lines of the human summary of `s` (a summary without the
/// outbox's figures has the common lines only). The end-of-run text of
/// an outbox run stops at its last line.
pub fn human(s: &Summary) -> HumanParts {
    HumanParts {
        load: s.part::<OutboxFigures>().map(|f| load_lines(s, &f.outbox)),
        trim_end: true,
        ..HumanParts::default()
    }
}

/// The outbox lines of `s` (whose outbox figures are `ob`): the queue,
/// the attempts and how they ended, leases when set, the messages and
/// liveness. One line per topic, each starting with two spaces.
fn load_lines(s: &Summary, ob: &OutboxSummary) -> String {
    let mut o = String::new();
    let lv = &ob.liveness;
    let _ = writeln!(
        o,
        "  outbox: {} messages x {} deliveries, {} handlers, {:.1}s, {:.0} ops/s in all",
        ob.messages,
        ob.deliveries,
        ob.handlers,
        s.duration_s,
        s.throughput_ops_per_s.get("total").copied().unwrap_or(0.0)
    );
    let _ = writeln!(
        o,
        "  attempts: {} ({} redelivered), {} deliveries acked ({:.0}/s), {} given up, {} \
         lost CAS, {} crashed, {} errors",
        ob.attempts,
        ob.redelivered_attempts,
        ob.acked_deliveries,
        ob.acked_per_s,
        ob.given_up_deliveries,
        ob.cas_lost,
        ob.crashed,
        ob.errors
    );
    if ob.lease_expired > 0 || ob.overlapping_attempts > 0 {
        let _ = writeln!(
            o,
            "  leases: {} expired, {} overlapping attempts, {} late acks (harmless)",
            ob.lease_expired, ob.overlapping_attempts, ob.late_acks
        );
    }
    let _ = writeln!(
        o,
        "  messages acked {}/{}, redeliveries (resends) {}, drained {}, liveness {}",
        lv.acked_messages,
        lv.messages,
        lv.redeliveries,
        lv.drained,
        match lv.holds {
            Some(true) => "holds".to_string(),
            Some(false) => format!("VIOLATED (unacked: {:?})", lv.unacked),
            None => "not judged (faults, or the queue did not drain)".to_string(),
        }
    );
    o
}
