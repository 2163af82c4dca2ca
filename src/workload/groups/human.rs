//! The groups workload's lines in the human summary: events, duplicates
//! and ops/s under the heading, resolves, each invariant's evidence and
//! the stranded events ([`human`]).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::figures::GroupsFigures;
use crate::summary::Summary;
use crate::workload::groups::config::GROUPS_INVARIANTS;
use crate::workload::parts::HumanParts;
use std::fmt::Write;

/// The groups lines of the human summary of `s`.
pub fn human(s: &Summary) -> HumanParts {
    let f: GroupsFigures = s.part().unwrap_or_default();
    let mut load = String::new();
    let _ = writeln!(
        load,
        "  {} events in {:.1}s: {:.0} events/s accepted, {} duplicates rejected, {:.0} ops/s in all",
        f.events,
        s.duration_s,
        f.events_per_s,
        f.duplicates,
        s.throughput_ops_per_s.get("total").copied().unwrap_or(0.0)
    );
    let mut figures = String::new();
    let _ = writeln!(
        figures,
        "  resolves: {} resolved, {} refused",
        f.resolves.get("resolved").copied().unwrap_or(0),
        f.resolves.get("refused").copied().unwrap_or(0)
    );
    let mut evidence = String::new();
    evidence_lines(&mut evidence, &f);
    let mut closing = String::new();
    stranded_line(&mut closing, &f);
    HumanParts {
        load: Some(load),
        figures,
        evidence,
        closing,
        trim_end: false,
    }
}

/// Groups: each invariant's evidence (the chances it had to see a
/// violation), then what each fault with a duration left while active.
fn evidence_lines(o: &mut String, f: &GroupsFigures) {
    let per = |m: &std::collections::BTreeMap<String, u64>| {
        GROUPS_INVARIANTS
            .iter()
            .filter_map(|name| m.get(*name).map(|n| format!("{name} {n}")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if f.evidence.invariants.is_empty() {
        return;
    }
    let _ = writeln!(o, "evidence: {}", per(&f.evidence.invariants));
    for (i, w) in &f.evidence.faults {
        let _ = writeln!(
            o,
            "  while {} (fault {i}) was active ({} windows, {:.3}s): {}",
            w.kind,
            w.windows,
            w.active_s,
            per(&w.invariants)
        );
    }
}

/// Groups: the stranded-events line (an outbox run has no events).
fn stranded_line(o: &mut String, f: &GroupsFigures) {
    let st = &f.stranded_events;
    let undetermined = if st.undetermined > 0 {
        format!(
            "; {} more may be (an attempt that may or may not have counted: indeterminate, \
             or an ok whose answer did not say)",
            st.undetermined
        )
    } else {
        String::new()
    };
    match st.total {
        None => {
            let _ = writeln!(o, "stranded events: cannot tell{undetermined}");
        }
        Some(0) => {
            let _ = writeln!(o, "stranded events: 0{undetermined}");
        }
        Some(total) => {
            let causes: Vec<_> = st
                .by_cause
                .iter()
                .map(|(c, n)| format!("{n} {c}"))
                .collect();
            let _ = writeln!(
                o,
                "stranded events: {total} (inserted, never counted; retries stop as \
                 duplicates): {}{undetermined}",
                causes.join(", ")
            );
        }
    }
    for n in &st.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}
