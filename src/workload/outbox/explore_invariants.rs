//! The outbox spec's invariants as *state* invariants, checked on the
//! canonical tables of one explored state (as the file's `export.*`
//! statements map them) and the bench's acks, after every step; as
//! `docs/outbox.md` states them (the seed's letter is off, see
//! the README). The load-run checkers of [`crate::workload::outbox::checker`] judge a
//! drained run's history; these judge every state, so "acked" is the
//! state's: the bench acked the delivery AND `processed` holds it.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::explore::world::Violation;
use crate::workload::outbox::checker::OutboxTables;
use crate::workload::outbox::explore_constants::{Constants, Delivery};
use std::collections::BTreeSet;

/// Every invariant, in outbox.md's order: the broken ones. `complete`:
/// the state ends a complete path (queue empty, every handler idle), where
/// NoLostOutput applies.
pub fn check(
    c: &Constants,
    acked: &BTreeSet<Delivery>,
    complete: bool,
    t: &OutboxTables,
) -> Vec<Violation> {
    let mut out = Vec::new();
    out.extend(type_ok(c, t));
    out.extend(at_most_one_state_change(c, t));
    out.extend(at_most_one_out_queue_msg(c, t));
    out.extend(consistent_state_and_out_queue(c, acked, t));
    if complete {
        out.extend(no_lost_output(c, acked, t));
    }
    out
}

fn violation(invariant: &'static str, why: String) -> Violation {
    Violation { invariant, why }
}

/// The acked messages, and the deliveries the bench acked that
/// `processed` lacks (the file's ack step did not record them).
pub fn acked_messages(acked: &BTreeSet<Delivery>, t: &OutboxTables) -> (Vec<i64>, Vec<Delivery>) {
    let mut msgs: Vec<i64> = Vec::new();
    let mut missing = Vec::new();
    for &(m, d) in acked {
        if t.processed_holds(m, d) {
            if !msgs.contains(&m) {
                msgs.push(m);
            }
        } else {
            missing.push((m, d));
        }
    }
    (msgs, missing)
}

/// TypeOK: `state_log` versions in `VersionIds` (0..2*M), kinds `init`,
/// `change`, `cleanup`, message ids in `MessageIds` (or NULL); `outbox`
/// and `out_queue` records in `[msgId: MessageIds, ver: VersionIds]`;
/// `processed` in `InputMessages`; every value of its canonical type.
/// (`TxIdx` does not apply: tx ids are per attempt, see the world.)
pub fn type_ok(c: &Constants, t: &OutboxTables) -> Option<Violation> {
    let bad = |why: String| Some(violation("TypeOK", why));
    if let Some(v) = t.bad_values.first() {
        return bad(format!("{v} is not of its canonical type"));
    }
    let vers = 0..=2 * c.messages;
    let msg = |m: Option<i64>| m.is_some_and(|m| (1..=c.messages).contains(&m));
    for r in &t.state_log {
        if !r.ver.is_some_and(|v| vers.contains(&v)) {
            return bad(format!(
                "{}: ver not in VersionIds = 0..{}",
                r.describe(),
                2 * c.messages
            ));
        }
        if !matches!(r.kind.as_str(), "init" | "change" | "cleanup") {
            return bad(format!(
                "{}: kind is not init, change or cleanup",
                r.describe()
            ));
        }
        if r.msg_id.is_some() && !msg(r.msg_id) {
            return bad(format!(
                "{}: msg_id not in MessageIds = 1..{}",
                r.describe(),
                c.messages
            ));
        }
    }
    for &(m, v) in t.outbox.iter().flatten() {
        if !msg(m) || !v.is_some_and(|v| vers.contains(&v)) {
            return bad(format!(
                "outbox(msg_id={m:?}, ver={v:?}) is not in OutQueueMessages"
            ));
        }
    }
    for r in &t.out_queue {
        if !msg(r.msg_id) || !r.ver.is_some_and(|v| vers.contains(&v)) {
            return bad(format!("{} is not in OutQueueMessages", r.describe()));
        }
    }
    for &(m, d) in &t.processed {
        if !msg(m) || !d.is_some_and(|d| (1..=i64::from(c.deliveries)).contains(&d)) {
            return bad(format!(
                "processed(msg_id={m:?}, dup_id={d:?}) is not in InputMessages"
            ));
        }
    }
    None
}

/// AtMostOneStateChange: for every message id, at most one `state_log`
/// entry of kind `change` (cleanups are not changes).
pub fn at_most_one_state_change(c: &Constants, t: &OutboxTables) -> Option<Violation> {
    (1..=c.messages).find_map(|m| {
        let ch = t.changes_of(m);
        (ch.len() > 1).then(|| {
            let rows: Vec<String> = ch.iter().map(|r| r.describe()).collect();
            violation(
                "AtMostOneStateChange",
                format!(
                    "message {m} changed the state {} times: {}",
                    ch.len(),
                    rows.join(", ")
                ),
            )
        })
    })
}

/// AtMostOneOutQueueMsg: for every message id, at most one distinct
/// (msg_id, ver) in the out queue (resends of the same one are allowed).
pub fn at_most_one_out_queue_msg(c: &Constants, t: &OutboxTables) -> Option<Violation> {
    (1..=c.messages).find_map(|m| {
        let vers: BTreeSet<Option<i64>> = t.out_of(m).iter().map(|r| r.ver).collect();
        (vers.len() > 1).then(|| {
            let v: Vec<String> = vers
                .iter()
                .map(|v| v.map_or("NULL".into(), |v| v.to_string()))
                .collect();
            violation(
                "AtMostOneOutQueueMsg",
                format!(
                    "the out queue holds {} distinct outputs of message {m}: ver {}",
                    vers.len(),
                    v.join(", ")
                ),
            )
        })
    })
}

/// ConsistentStateAndOutQueue: for every acked message id, exactly one
/// `change` entry for it, at version v+1, and at least one out-queue
/// entry, every one carrying v. A delivery the bench acked that
/// `processed` lacks breaks it too (outbox.md: the two must agree).
pub fn consistent_state_and_out_queue(
    _c: &Constants,
    acked: &BTreeSet<Delivery>,
    t: &OutboxTables,
) -> Option<Violation> {
    const NAME: &str = "ConsistentStateAndOutQueue";
    let (msgs, missing) = acked_messages(acked, t);
    if let Some((m, d)) = missing.first() {
        return Some(violation(
            NAME,
            format!("the bench acked delivery ({m}, {d}) but processed lacks it"),
        ));
    }
    for m in msgs {
        let ch = t.changes_of(m);
        let outs = t.out_of(m);
        let rows: Vec<String> = ch.iter().map(|r| r.describe()).collect();
        let out_rows: Vec<String> = outs
            .iter()
            .map(|r| {
                format!(
                    "(msg_id={m}, ver={})",
                    r.ver.map_or("NULL".into(), |v| v.to_string())
                )
            })
            .collect();
        let why = if ch.len() != 1 {
            Some(format!(
                "acked message {m} has {} change entries (expected exactly one): {}",
                ch.len(),
                rows.join(", ")
            ))
        } else if outs.is_empty() {
            Some(format!(
                "acked message {m} changed the state ({}) but has no out-queue entry",
                rows[0]
            ))
        } else {
            let base = ch[0].ver.map(|v| v - 1);
            outs.iter().any(|r| r.ver != base).then(|| {
                format!(
                    "acked message {m}: its change {} was staged on base ver {}, but the out \
                     queue holds {}",
                    rows[0],
                    base.map_or("NULL".into(), |v| v.to_string()),
                    out_rows.join(", ")
                )
            })
        };
        if let Some(why) = why {
            return Some(violation(NAME, why));
        }
    }
    None
}

/// NoLostOutput (at the end of a complete path): every acked message with
/// a `change` entry has an out-queue entry. Given-up deliveries are not
/// acked, so messages with no acked delivery are left out.
pub fn no_lost_output(
    _c: &Constants,
    acked: &BTreeSet<Delivery>,
    t: &OutboxTables,
) -> Option<Violation> {
    let (msgs, _) = acked_messages(acked, t);
    msgs.into_iter().find_map(|m| {
        let ch = t.changes_of(m);
        (!ch.is_empty() && t.out_of(m).is_empty()).then(|| {
            violation(
                "NoLostOutput",
                format!(
                    "the queue drained; acked message {m} changed the state ({}) but its \
                     output is lost (no out-queue entry)",
                    ch[0].describe()
                ),
            )
        })
    })
}
