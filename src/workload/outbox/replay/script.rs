//! What a shrunk outbox replay is written as: (a) a script for the
//! `sqlite3` shell, the `handle` statements with their parameters in the
//! order they ran, each worker's on a shell connection of its own, a
//! comment per step, and the final rows of the four canonical tables; (b)
//! an `explore` world of the same attempts (one message, its deliveries,
//! the handlers, the `Fail()` and redelivery budgets they used), so that
//! `specstorm explore` searches it from first principles.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::Recording;
use super::search::Ran;
use crate::replay_order::Plan;
use crate::replay_script::{ended, opening, param_names, shell_literal};
use crate::statements::ParamSource;
use crate::workload::outbox::statements::OutboxVariant;
use crate::workload::Next;
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The script of `ran` (a replay of `plan`), which makes `db_name` in the
/// shell's current folder. `db` is any database with the file's schema
/// (the statements' parameter names are read from it).
pub fn sqlite3_script(
    rec: &Recording,
    v: &OutboxVariant,
    (plan, ran): (&Plan, &Ran<'_>),
    db: &Connection,
    (title, db_name): (&str, &str),
) -> String {
    let mut out = String::new();
    let workers = ran
        .taken
        .iter()
        .map(|t| rec.ops[plan.ops[t.op]].invoke.worker);
    let conn_of = opening(&mut out, (title, db_name), &v.schema, workers);
    let mut current = 0usize;
    // (entry of the plan's ops, step index) -> its step number here.
    let mut number: BTreeMap<(usize, usize), usize> = BTreeMap::new();
    for (k, t) in ran.taken.iter().enumerate() {
        let op = &rec.ops[plan.ops[t.op]];
        let s = &op.steps[t.pos];
        let def = &v.handle.steps[s.idx as usize];
        let d = op.delivery;
        let last = t.pos + 1 == plan.keep[t.op];
        let end = match (last, t.next) {
            (false, _) => "",
            (true, Next::Continue) => "; the attempt crashes here (nothing more of it runs)",
            (true, Next::Finished) => "; the attempt ends: the bench acks the delivery",
            (true, Next::FailedIf { .. }) => "; the attempt fails here (a lost compare-and-swap)",
            (true, _) => "; the attempt ends here",
        };
        let _ = writeln!(
            out,
            "\n-- step {} of {}: worker {} (connection {}), op {} handle.{} (msg {} dup {} \
             attempt {}, tx {}): changed {} row(s), returned {} row(s){end}",
            k + 1,
            ran.taken.len(),
            op.invoke.worker,
            conn_of[&op.invoke.worker],
            op.invoke.op,
            def.name,
            d.msg_id,
            d.dup_id,
            d.attempt,
            d.tx_id,
            t.changes,
            t.rows,
        );
        let c = conn_of[&op.invoke.worker];
        if c != current {
            let _ = writeln!(out, ".connection {c}");
            current = c;
        }
        let _ = writeln!(out, ".parameter clear");
        for ((name, value), src) in param_names(db, &def.sql)
            .iter()
            .zip(&t.params)
            .zip(&def.params)
        {
            if let ParamSource::Column { step, .. } = src {
                if let Some(n) = number.get(&(t.op, *step)) {
                    let _ = writeln!(out, "-- {name} is what step {n} returned");
                }
            }
            let _ = writeln!(out, ".parameter set {name} {}", shell_literal(value));
        }
        number.insert((t.op, s.idx as usize), k + 1);
        let _ = writeln!(out, "{}", ended(&def.sql));
    }
    let _ = writeln!(out, "\n-- the final rows\n.connection 0");
    let mut exports = vec![("export.state_log", &v.export_state_log)];
    if let Some(o) = &v.export_outbox {
        exports.push(("export.outbox", o));
    }
    exports.push(("export.out_queue", &v.export_out_queue));
    exports.push(("export.processed", &v.export_processed));
    for (name, sql) in exports {
        let _ = writeln!(out, "-- {name}\n{}", ended(sql));
    }
    out
}

/// The explore world of `plan`'s attempts (all of one message), as a
/// scenario over `variant_file`: one message, as many deliveries as the
/// attempts have dup ids, as many handlers as they have workers, a
/// `Fail()` per attempt that crashed (or was cut short), a redelivery per
/// attempt after a delivery's first. Each of the replay's attempts is
/// thus a behaviour of the world (dup ids and tx ids renamed).
pub fn explore_world(
    rec: &Recording,
    (plan, ran): (&Plan, &Ran<'_>),
    variant_file: &str,
    title: &str,
) -> String {
    let mut dups: BTreeMap<u32, u32> = BTreeMap::new();
    let mut workers: BTreeSet<u32> = BTreeSet::new();
    let mut attempts: BTreeMap<u32, u32> = BTreeMap::new();
    let mut fails = 0u32;
    for (i, &o) in plan.ops.iter().enumerate() {
        let op = &rec.ops[o];
        let n = dups.len() as u32 + 1;
        dups.entry(op.delivery.dup_id).or_insert(n);
        workers.insert(op.invoke.worker);
        *attempts.entry(op.delivery.dup_id).or_default() += 1;
        let last = ran.taken.iter().rev().find(|t| t.op == i);
        if last.is_some_and(|t| t.next == Next::Continue) {
            fails += 1;
        }
    }
    let redeliveries: u32 = attempts.values().map(|a| a - 1).sum();
    let msg = plan.ops.first().map_or(0, |&o| rec.ops[o].delivery.msg_id);
    let mut out = String::new();
    let _ = writeln!(out, "# {title}");
    let _ = writeln!(
        out,
        "# `specstorm explore THIS_FILE` searches every interleaving of these attempts."
    );
    let _ = writeln!(out, "# message 1 is the run's message {msg}");
    for (d, n) in &dups {
        let _ = writeln!(out, "# delivery (1, {n}) is the run's (msg {msg}, dup {d})");
    }
    let _ = writeln!(
        out,
        "name = \"replay-world\"\nworkload = \"outbox\"\nvariant = {}\n",
        toml::Value::String(variant_file.to_string())
    );
    let _ = writeln!(out, "[explore]");
    let _ = writeln!(out, "messages = 1");
    let _ = writeln!(out, "deliveries = {}", dups.len());
    let _ = writeln!(out, "handlers = {}", workers.len().max(1));
    let _ = writeln!(out, "fails = {fails}");
    let _ = writeln!(out, "redeliveries = {redeliveries}");
    let _ = writeln!(out, "now_ms = {}", rec.started_ms);
    out
}
