//! What a shrunk replay is written as: (a) a script for the `sqlite3`
//! shell, the statements with their parameters in the order they ran,
//! each worker's on a shell connection of its own (`.connection N`), with
//! a comment per step saying what it is and what it answered; (b) an
//! `explore` world (queues, fingerprints, resolves) of the same ops, so
//! that `specstorm explore` finds the violation from first principles.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::recording::Recording;
use super::search::{Plan, Ran};
use crate::explore::db::show;
use crate::replay_script::{ended, opening, param_names, shell_literal};
use crate::statements::ParamSource;
use crate::workload::groups::statements::GroupsVariant;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The script of `ran` (a replay of `plan`), which makes `db_name` in the
/// shell's current folder. `db` is any database with the file's schema
/// (the statements' parameter names are read from it). `title` opens it.
pub fn sqlite3_script(
    rec: &Recording,
    v: &GroupsVariant,
    plan: &Plan,
    ran: &Ran<'_>,
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
        let m = &ran.machines[t.op];
        let def = &m.program().steps[s.idx as usize];
        let what = match &op.invoke.event_id {
            Some(e) => format!("event {e}, attempt {}", op.invoke.attempt.unwrap_or(0)),
            None => format!("group {}", op.invoke.group_id),
        };
        let mut said = format!("changed {} row(s)", t.changes);
        if !def.columns.is_empty() {
            match &t.first {
                Some(r) => {
                    let cols: Vec<String> = def
                        .columns
                        .iter()
                        .zip(r)
                        .map(|(c, v)| format!("{c}={}", show(v)))
                        .collect();
                    let _ = write!(said, ", returned {}", cols.join(" "));
                }
                None => said.push_str(", returned no row"),
            }
        }
        let cut = if t.pos + 1 == plan.keep[t.op] && super::search::cut(plan, rec, t.op) {
            "; the op is cut short here (nothing more of it runs)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "\n-- step {} of {}: worker {} (connection {}), op {} {}.{} [{}] ({what}): {said}{cut}",
            k + 1,
            ran.taken.len(),
            op.invoke.worker,
            conn_of[&op.invoke.worker],
            op.invoke.op,
            m.program().op,
            def.name,
            s.trace.role.name(),
        );
        let c = conn_of[&op.invoke.worker];
        if c != current {
            let _ = writeln!(out, ".connection {c}");
            current = c;
        }
        let names = param_names(db, &def.sql);
        let _ = writeln!(out, ".parameter clear");
        for ((name, value), src) in names.iter().zip(&t.params).zip(&def.params) {
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
    let _ = writeln!(
        out,
        "\n-- the final rows (export.groups)\n.connection 0\n{}",
        ended(&v.export_groups)
    );
    out
}

/// The number of steps of `ran` (the statements the script runs between
/// the schema and the final read).
pub fn steps(ran: &Ran<'_>) -> usize {
    ran.taken.len()
}

/// The explore world of `plan`'s ops, as a scenario over `variant_file`:
/// each worker that ingests gets its queue (its events in the order it
/// ingested them), the events their fingerprints, the resolver as many
/// resolves as the plan has resolve ops. Names are short (`e1`, `f1`);
/// a comment maps them to the run's.
pub fn explore_world(rec: &Recording, plan: &Plan, variant_file: &str, title: &str) -> String {
    let mut events: BTreeMap<&str, String> = BTreeMap::new();
    let mut fps: BTreeMap<&str, String> = BTreeMap::new();
    let mut queues: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    let mut fp_of: BTreeMap<String, String> = BTreeMap::new();
    let mut resolves = 0u32;
    let mut project = "p1";
    for &i in &plan.ops {
        let o = &rec.ops[i];
        project = &o.invoke.project;
        let n = fps.len() + 1;
        let fp = fps
            .entry(o.invoke.fingerprint.as_str())
            .or_insert_with(|| format!("f{n}"))
            .clone();
        match &o.invoke.event_id {
            Some(e) => {
                let n = events.len() + 1;
                let e = events
                    .entry(e.as_str())
                    .or_insert_with(|| format!("e{n}"))
                    .clone();
                fp_of.insert(e.clone(), fp);
                queues.entry(o.invoke.worker).or_default().push(e);
            }
            None => resolves += 1,
        }
    }
    let mut out = String::new();
    let _ = writeln!(out, "# {title}");
    let _ = writeln!(
        out,
        "# `specstorm explore THIS_FILE` searches every interleaving of these ops."
    );
    for (w, q) in &queues {
        let _ = writeln!(out, "# worker {w} of the run ingests {}", q.join(", "));
    }
    for (id, e) in &events {
        let _ = writeln!(out, "# {e} is event {id}");
    }
    for (fp, f) in &fps {
        let _ = writeln!(out, "# {f} is fingerprint {fp} of project {project}");
    }
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let _ = writeln!(out, "name = \"replay-world\"\nworkload = \"groups\"");
    let _ = writeln!(out, "variant = {}\n", q(variant_file));
    let _ = writeln!(out, "[explore]");
    let qs: Vec<String> = queues
        .values()
        .map(|q| {
            let items: Vec<String> = q.iter().map(|e| format!("\"{e}\"")).collect();
            format!("[{}]", items.join(", "))
        })
        .collect();
    let _ = writeln!(out, "queues = [{}]", qs.join(", "));
    let _ = writeln!(out, "resolves = {resolves}");
    let _ = writeln!(out, "project = {}", q(project));
    let _ = writeln!(out, "now_ms = {}", rec.started_ms);
    let _ = writeln!(out, "\n[explore.fingerprints]");
    for (e, f) in &fp_of {
        let _ = writeln!(out, "{e} = \"{f}\"");
    }
    out
}
