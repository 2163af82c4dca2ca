//! The step each finding names (docs/validate.md, "The named step").
//!
//! Finding (b): TLC's witness of a complete order (the any-order run's
//! error trace) is walked again, step by step, with the invariant checked
//! in each state; TLC's error trace of that walk ends in the first state
//! that violates it, and the step taken into that state is named.
//!
//! Finding (a): the any-order run dumps every reachable state of the trace
//! (one per class of allowed orders' prefixes, docs/validate.md); the first
//! step in start order that no reachable state has taken is named, else the
//! first step no state takes together with every step that began before
//! it, else (every step is taken by some complete order, which ends in
//! other tables) the rows of the final tables no such order ends with.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::module::{self, FinalTables, Written};
use super::states::{self, Reach};
use super::tlc;
use super::trace::{Observed, Role, Trace, TraceStep};
use super::ValidateError;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The step a finding names, as printed and as `validate.json` records it.
#[derive(Debug, Clone, Default)]
pub struct Named {
    /// The lines printed.
    pub lines: Vec<String>,
    /// The record in `validate.json`.
    pub json: Vec<serde_json::Value>,
}

/// `ingest` or `resolve`: the op kind a step of `role` belongs to.
fn op_kind(role: Role) -> &'static str {
    match role {
        Role::Resolve | Role::Refused | Role::Probe => "resolve",
        _ => "ingest",
    }
}

/// "step `ingest.s1` of op 3 (role s1, worker 1, event ev-1, recorded
/// [10, 11] ns after the run's start)".
pub fn describe(s: &TraceStep) -> String {
    let what = if s.role == Role::S1 { "event" } else { "group" };
    format!(
        "step `{}.{}` of op {} (role {}, worker {}, {what} {}, recorded over [{}, {}] ns after \
         the run's start)",
        op_kind(s.role),
        s.name,
        s.op,
        s.role.name(),
        s.worker,
        s.touches,
        s.start,
        s.end
    )
}

/// What the step observed, in words.
pub fn observation(s: &TraceStep) -> String {
    match (&s.observed, s.role) {
        (Observed::Changes(0), Role::S1) => {
            "it changed no row: a duplicate answered for its event id".into()
        }
        (Observed::Changes(_), Role::S1) => "it inserted its event".into(),
        (Observed::Changes(0), Role::S2) => "it changed no row: the group was there".into(),
        (Observed::Changes(_), Role::S2) => "it inserted the group".into(),
        (Observed::Changes(n), _) => format!("it changed {n} row(s)"),
        (Observed::Status(None), _) => "it read no group row".into(),
        (Observed::Status(Some(st)), _) => format!("it read status \"{st}\""),
        (Observed::Count(n), _) => format!("it resolved the group and returned count {n}"),
        (Observed::Refusal, _) => "it resolved nothing (a refusal)".into(),
        (Observed::Probe(None), _) => "it found no such group".into(),
        (Observed::Probe(Some((st, n))), _) => format!("it read status \"{st}\", count {n}"),
        (Observed::Unrecorded, _) => "what it returned is not recorded".into(),
    }
}

/// What the spec's action for the step's role requires of the state, for
/// the step's observation (the conjuncts of `Act` in the trace module).
fn requires(s: &TraceStep) -> &'static str {
    match (s.role, &s.observed) {
        (Role::S1, Observed::Changes(0)) => {
            "S1 changes no row only for an event id already in the spec's `events`"
        }
        (Role::S1, _) => "S1 inserts only an event id not yet in the spec's `events`",
        (Role::S2, Observed::Changes(0)) => "S2 changes no row only when the group exists",
        (Role::S2, _) => "S2 inserts the group only when it does not exist",
        (Role::S3 | Role::S3Write, _) => "the counting actions need the group's row",
        (Role::S3Read, _) => "S3ReadNaive reads the group's status in the spec's state",
        (Role::Resolve, _) => {
            "Resolve needs the group open or regressed, and the count returned must be its count"
        }
        (Role::Refused, _) => "a refusal needs the group absent or resolved",
        (Role::Probe, _) => "the probe's status and count must be the group's",
    }
}

fn json_of(s: &TraceStep, index: usize) -> serde_json::Value {
    serde_json::json!({
        "index": index, "op": s.op, "step": format!("{}.{}", op_kind(s.role), s.name),
        "role": s.role.name(), "worker": s.worker, "touches": s.touches,
        "start_ns": s.start, "end_ns": s.end, "observed": observation(s),
    })
}

/// Per state of TLC's error trace, the step (1-based) taken into it.
fn order_of(trace: &[states::State]) -> Vec<usize> {
    let mut prev: BTreeSet<i64> = BTreeSet::new();
    let mut order = Vec::new();
    for s in trace {
        let taken: BTreeSet<i64> = s
            .get("taken")
            .map(|v| states::numbers(v).into_iter().collect())
            .unwrap_or_default();
        order.extend(taken.difference(&prev).map(|&i| i as usize));
        prev = taken;
    }
    order
}

fn read(p: &Path) -> Result<String, ValidateError> {
    std::fs::read_to_string(p)
        .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", p.display())))
}

/// Finding (b): for each invariant of `every` (those every complete order
/// violates; all of them when none is), the step of TLC's witness order
/// (`any_out`, the any-order run's output) after which it first fails.
pub fn where_violated(
    tools: &(PathBuf, PathBuf),
    out: &Path,
    name: &str,
    w: &Written,
    trace: &Trace,
    any_out: &Path,
    every: &[&'static str],
) -> Result<Named, ValidateError> {
    let order = order_of(&states::error_trace(&read(any_out)?));
    let mut named = Named::default();
    if order.len() != trace.steps.len() {
        named.lines.push(format!(
            "(the witness order in {} could not be read: no step named)",
            any_out.display()
        ));
        return Ok(named);
    }
    let wname = format!("{name}_witness");
    let wfile = out.join(format!("{wname}.tla"));
    std::fs::write(&wfile, module::witness_module(&wname, name, &order))
        .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", wfile.display())))?;
    let groups: Vec<Vec<&str>> = if every.is_empty() {
        vec![module::INVARIANTS.to_vec()]
    } else {
        every.iter().map(|i| vec![*i]).collect()
    };
    for invs in groups {
        let tag = if invs.len() == 1 { invs[0] } else { "any" };
        let cfg = format!("{wname}_{tag}.cfg");
        let cfg_path = out.join(&cfg);
        std::fs::write(&cfg_path, module::witness_cfg(&w.constants, &invs))
            .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", cfg_path.display())))?;
        let tlc_out = out.join(format!("tlc-witness-{tag}.out"));
        let a = tlc::run(tools, out, &wname, &cfg, &tlc_out)
            .map_err(|e| ValidateError::Unreadable(e.to_string()))?;
        let (Some(inv), true) = (a.violated.clone(), a.witness) else {
            named.lines.push(format!(
                "(TLC found no state of the witness order violating {}: no step named)",
                invs.join(", ")
            ));
            continue;
        };
        let walked = order_of(&states::error_trace(&read(&tlc_out)?));
        let Some(&at) = walked.last() else {
            named
                .lines
                .push(format!("{inv} fails in the initial state, before any step"));
            continue;
        };
        let step = &trace.steps[at - 1];
        let mut line = format!(
            "{inv} first fails, in the order TLC printed (tlc-any.out; every such order \
             violates it somewhere), after {}: {}",
            describe(step),
            observation(step)
        );
        line.push_str(&between(trace, &order, &walked, step));
        let mut j = json_of(step, at);
        j["invariant"] = serde_json::json!(inv);
        j["witness"] = serde_json::json!(tlc_out.display().to_string());
        named.json.push(j);
        named.lines.push(line);
    }
    Ok(named)
}

/// For a naive write: its op's read, and the resolves of its group that
/// the witness order took between the read and it.
fn between(trace: &Trace, order: &[usize], walked: &[usize], write: &TraceStep) -> String {
    if write.role != Role::S3Write {
        return String::new();
    }
    let pos = |i: usize| order.iter().position(|&o| o == i);
    let Some(read) = (1..=trace.steps.len()).find(|&i| {
        let s = &trace.steps[i - 1];
        s.role == Role::S3Read && s.op == write.op
    }) else {
        return String::new();
    };
    let (Some(r), Some(wpos)) = (pos(read), pos(*walked.last().unwrap_or(&0))) else {
        return String::new();
    };
    let rs = &trace.steps[read - 1];
    let mut text = format!(
        "; its op's read `ingest.{}` ([{}, {}] ns) {}",
        rs.name,
        rs.start,
        rs.end,
        observation(rs).trim_start_matches("it ")
    );
    let resolves: Vec<String> = order[r + 1..wpos]
        .iter()
        .map(|&i| &trace.steps[i - 1])
        .filter(|s| s.role == Role::Resolve && s.touches == write.touches)
        .map(|s| {
            format!(
                "`resolve.{}` of op {} ([{}, {}] ns)",
                s.name, s.op, s.start, s.end
            )
        })
        .collect();
    if !resolves.is_empty() {
        text.push_str(&format!(
            ", and that order took {} between the read and the write",
            resolves.join(", ")
        ));
    }
    text
}

/// Finding (a): why no order is a behavior ending in the final tables,
/// from every reachable state of the trace (`reach`).
pub fn why_no_behavior(reach: &Reach, trace: &Trace, w: &Written, tables: &FinalTables) -> Named {
    let mut named = Named::default();
    let n = trace.steps.len();
    let never = (1..=n as i64).find(|i| !reach.ever_taken.contains(i));
    if let Some(i) = never {
        let s = &trace.steps[i as usize - 1];
        named.lines.push(format!(
            "the first step in start order that no order of the recorded steps that is a \
             behavior of the spec takes (none of TLC's {} reachable states of the trace has \
             taken it): {}: {} ({})",
            reach.states,
            describe(s),
            observation(s),
            requires(s)
        ));
        let mut j = json_of(s, i as usize);
        j["why"] = serde_json::json!("never taken");
        named.json.push(j);
        return named;
    }
    if reach.complete.is_empty() {
        let l = reach.max_lo.clamp(1, n.max(1) as i64) as usize;
        if let Some(s) = trace.steps.get(l - 1) {
            named.lines.push(format!(
                "every step is taken by some order, but no order takes the first {l} steps in \
                 start order together (some takes the first {}): step {l} in start order is \
                 {}: {} ({})",
                l - 1,
                describe(s),
                observation(s),
                requires(s)
            ));
            let mut j = json_of(s, l);
            j["why"] = serde_json::json!("not taken after the steps that began before it");
            named.json.push(j);
        }
        return named;
    }
    named.lines.push(format!(
        "every order that takes all {n} steps ends in other tables than the run's (TLC's \
         reachable states that took them all: {} distinct final states):",
        reach.complete.len()
    ));
    let id = |k: &i64| w.ids.get(k).cloned().unwrap_or_else(|| format!("#{k}"));
    let table_events: BTreeSet<&String> = tables.events.iter().collect();
    let many = reach.complete.len() > 1;
    for (k, (events, groups)) in reach.complete.iter().enumerate() {
        if many {
            named.lines.push(format!(
                "  final state {} of {}:",
                k + 1,
                reach.complete.len()
            ));
        }
        let spec_events: BTreeSet<String> = events.iter().map(id).collect();
        for e in spec_events.iter().filter(|e| !table_events.contains(e)) {
            named.lines.push(format!(
                "  event {e}: in the spec's `events`, not in the table; its inserts: {}",
                writers(trace, e, &[Role::S1])
            ));
        }
        for e in table_events.iter().filter(|e| !spec_events.contains(**e)) {
            named.lines.push(format!(
                "  event {e}: in the table, not in the spec's `events`; its inserts: {}",
                writers(trace, e, &[Role::S1])
            ));
        }
        for g in groups {
            let gid = id(&g.id);
            let row = tables.groups.iter().find(|r| r.0 == gid);
            let held = row.map(|(_, st, c)| (st.clone(), *c));
            if held == Some((Some(g.status.clone()), Some(g.count))) {
                continue;
            }
            let held = match held {
                Some((st, c)) => format!(
                    "status {}, count {}",
                    st.unwrap_or_else(|| "(not text)".into()),
                    c.map_or("(not a number)".into(), |c| c.to_string())
                ),
                None => "no row".into(),
            };
            named.lines.push(format!(
                "  group {gid}: the table holds {held}; those orders end with status {}, count {}; \
                 its counting and resolving steps: {}",
                g.status,
                g.count,
                writers(trace, &gid, &[Role::S3, Role::S3Write, Role::Resolve])
            ));
            let mut j = serde_json::json!({ "group": gid, "spec_status": g.status,
                "spec_count": g.count, "table": held, "why": "final tables" });
            j["steps"] = serde_json::json!(steps_of(trace, &gid, &[Role::S3, Role::S3Write])
                .iter()
                .map(|&i| json_of(&trace.steps[i], i + 1))
                .collect::<Vec<_>>());
            named.json.push(j);
        }
        for r in &tables.groups {
            if !groups.iter().any(|g| id(&g.id) == r.0) {
                named.lines.push(format!(
                    "  group {}: in the table, not in the spec's `groups`; its inserts: {}",
                    r.0,
                    writers(trace, &r.0, &[Role::S2])
                ));
            }
        }
    }
    named
}

fn steps_of(trace: &Trace, touches: &str, roles: &[Role]) -> Vec<usize> {
    (0..trace.steps.len())
        .filter(|&i| {
            let s = &trace.steps[i];
            s.touches == touches && roles.contains(&s.role)
        })
        .collect()
}

/// The steps of `roles` that touch `touches`, named (at most four).
fn writers(trace: &Trace, touches: &str, roles: &[Role]) -> String {
    let all = steps_of(trace, touches, roles);
    if all.is_empty() {
        return "none".into();
    }
    let mut v: Vec<String> = all
        .iter()
        .take(4)
        .map(|&i| {
            let s = &trace.steps[i];
            format!(
                "`{}.{}` of op {} ([{}, {}] ns)",
                op_kind(s.role),
                s.name,
                s.op,
                s.start,
                s.end
            )
        })
        .collect();
    if all.len() > 4 {
        v.push(format!("and {} more", all.len() - 4));
    }
    v.join(", ")
}
