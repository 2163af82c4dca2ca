//! TypeOK of the outbox tables (the spec's TypeInvariant, on what SQLite
//! holds): `state_log` is a chain of versions 0..=head with the head row
//! `init` at 0 and kinds `change`/`cleanup` above it, message ids in
//! 1..=M; out-queue entries carry a message in 1..=M and a version of the
//! chain; `processed` holds deliveries (1..=M, 1..=D); every value of its
//! canonical type (integers) (`docs/outbox.md`, "Invariants").
//!
//! Soundness. Every rule is a property of the final tables that any
//! correct variant keeps by construction (versions are appended as head +
//! 1 only; ids come from the bench's queue), so a correct system never
//! breaks it, crashed attempts included (a row is whole or absent). Every
//! row is examined, so a broken row is never missed.
//!
//! A cut history (`Completeness::Cut`) changes nothing: the rule reads the
//! final tables only (the queue's shape comes from the header).
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::{finding, OutboxFacts, OutboxTables};
use crate::verdict::CheckResult;

/// The invariant's name in the spec (`TypeInvariant`, named as groups').
pub const NAME: &str = "TypeOK";

/// Judges TypeOK on the final tables.
pub fn check(facts: &OutboxFacts, tables: &OutboxTables) -> CheckResult {
    let mut r = CheckResult::new(NAME);
    let (m_max, d_max) = facts.header.map_or((i64::MAX, i64::MAX), |h| {
        (h.messages as i64, h.deliveries as i64)
    });
    let mut bad = |what: String| {
        r.violation(finding(
            None,
            "the outbox tables' types (TypeInvariant)",
            &what,
            "a row the protocol can never write",
            vec![],
        ))
    };
    for v in &tables.bad_values {
        bad(format!("not an integer: {v}"));
    }
    let mut vers: Vec<i64> = tables.state_log.iter().filter_map(|r| r.ver).collect();
    vers.sort_unstable();
    let head = vers.last().copied().unwrap_or(-1);
    if vers.first() != Some(&0) || vers.iter().enumerate().any(|(i, v)| *v != i as i64) {
        bad(format!(
            "state_log versions are not the chain 0..={head} (found {} rows)",
            vers.len()
        ));
    }
    for row in &tables.state_log {
        let ok = match row.kind.as_str() {
            "init" => row.ver == Some(0),
            "change" | "cleanup" => {
                row.ver.is_some_and(|v| v > 0)
                    && row.msg_id.is_some_and(|m| (1..=m_max).contains(&m))
            }
            _ => false,
        };
        if !ok {
            bad(format!("{}", row.describe()));
        }
    }
    for o in &tables.out_queue {
        let ok = o.msg_id.is_some_and(|m| (1..=m_max).contains(&m))
            && o.ver.is_some_and(|v| (0..=head).contains(&v));
        if !ok {
            bad(o.describe());
        }
    }
    for &(m, d) in &tables.processed {
        let ok = m.is_some_and(|m| (1..=m_max).contains(&m))
            && d.is_some_and(|d| (1..=d_max).contains(&d));
        if !ok {
            bad(format!("processed(msg_id={m:?}, dup_id={d:?})"));
        }
    }
    r
}
