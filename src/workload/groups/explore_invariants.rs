//! The spec's invariants as *state* invariants: checked on the rows of
//! one explored state (as the file's export statements map them onto the
//! canonical tables) and the spec's bookkeeping (`done`, `dirty`), after
//! every step. The load-run checkers of [`crate::workload::groups::checker`] judge histories
//! instead; these follow BacktalkGroups.tla's definitions literally.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::explore::world::Violation;
use crate::workload::groups::checker::tables::text;
use crate::workload::groups::checker::GroupRow;
use crate::workload::groups::explore_constants::{Constants, GroupsView};
use crate::workload::Value;

/// Every invariant of the spec, in its order: the broken ones.
pub fn check(c: &Constants, done: &[bool], dirty: &[bool], view: &GroupsView) -> Vec<Violation> {
    let mut out = Vec::new();
    out.extend(type_ok(c, done, view));
    out.extend(one_group_per_fingerprint(view));
    out.extend(count_exact(c, done, view));
    out.extend(no_missed_regression(c, dirty, view));
    out
}

fn violation(invariant: &'static str, why: String) -> Violation {
    Violation { invariant, why }
}

/// TypeOK: `events \subseteq Events`, `groups \subseteq GroupRec` (project
/// and fingerprint among the world's, status in `Statuses`, count in
/// `0..Cardinality(Events)`), `done \subseteq events`. The positions,
/// `dirty` and `resolvesLeft` are well-typed by construction.
///
/// A group is known by (project, fingerprint), which both the bench and
/// the design carry, not by its id: a design may compute its own ids
/// (`'grp-' || :project || ':' || :fingerprint`, a hash), and the spec's
/// `GroupId` is any injective function of the fingerprint.
pub fn type_ok(c: &Constants, done: &[bool], view: &GroupsView) -> Option<Violation> {
    let bad = |why: String| Some(violation("TypeOK", why));
    for (id, _, _) in &view.events {
        if !id.as_str().is_some_and(|e| c.events.iter().any(|x| x == e)) {
            return bad(format!(
                "error_events holds id {}, which is no event of the world (Events = {{{}}})",
                text(id),
                c.events.join(", ")
            ));
        }
    }
    for g in &view.groups {
        if let Some(why) = group_type(c, g) {
            return bad(format!("group {}: {why}", g.id_text()));
        }
    }
    for (e, _) in done.iter().enumerate().filter(|(_, &d)| d) {
        let id = Value::Text(c.events[e].clone());
        if !view.events.iter().any(|(x, _, _)| *x == id) {
            return bad(format!(
                "{} completed its counting step (done) but has no row in error_events (done \\subseteq events)",
                c.events[e]
            ));
        }
    }
    None
}

fn group_type(c: &Constants, g: &GroupRow) -> Option<String> {
    if g.project.as_str() != Some(c.project.as_str()) {
        return Some(format!(
            "project {} is not the world's ({})",
            text(&g.project),
            c.project
        ));
    }
    if !g
        .fingerprint
        .as_str()
        .is_some_and(|f| c.fps.iter().any(|x| x == f))
    {
        return Some(format!(
            "fingerprint {} is not in Fps",
            text(&g.fingerprint)
        ));
    }
    if !matches!(
        g.status.as_str(),
        Some("open") | Some("resolved") | Some("regressed")
    ) {
        return Some(format!(
            "status {} is not in Statuses (open, resolved, regressed)",
            text(&g.status)
        ));
    }
    match g.event_count {
        Value::Int(n) if (0..=c.events.len() as i64).contains(&n) => None,
        ref v => Some(format!(
            "event_count {} is not in 0..{} (Cardinality(Events))",
            text(v),
            c.events.len()
        )),
    }
}

/// OneGroupPerFingerprint: `\A f \in Fps : Cardinality({g \in groups : g.fp = f}) <= 1`
/// (per (project, fingerprint), as the audit reads it).
pub fn one_group_per_fingerprint(view: &GroupsView) -> Option<Violation> {
    for (i, g) in view.groups.iter().enumerate() {
        let same = view.groups[i + 1..]
            .iter()
            .filter(|h| h.key() == g.key())
            .count();
        if same > 0 {
            let (p, f) = g.key();
            return Some(violation(
                "OneGroupPerFingerprint",
                format!("({p}, {f}) has {} group rows", same + 1),
            ));
        }
    }
    None
}

/// CountExact: `\A g \in groups : g.count = Cardinality({e \in done : FpOf[e] = g.fp})`.
pub fn count_exact(c: &Constants, done: &[bool], view: &GroupsView) -> Option<Violation> {
    for g in view.groups.iter().filter(|g| of_world(c, g)) {
        let fp = g.fingerprint.as_str();
        let counted: Vec<&str> = (0..c.events.len())
            .filter(|&e| done[e] && Some(c.fps[c.fp_of[e]].as_str()) == fp)
            .map(|e| c.events[e].as_str())
            .collect();
        if g.event_count != Value::Int(counted.len() as i64) {
            return Some(violation(
                "CountExact",
                format!(
                    "group {} has event_count {}, but {} distinct event(s) of its fingerprint completed the counting step ({{{}}})",
                    g.id_text(),
                    text(&g.event_count),
                    counted.len(),
                    counted.join(", ")
                ),
            ));
        }
    }
    None
}

/// NoMissedRegression: `\A g \in groups : dirty[g.fp] => g.status # "resolved"`.
pub fn no_missed_regression(c: &Constants, dirty: &[bool], view: &GroupsView) -> Option<Violation> {
    for g in view.groups.iter().filter(|g| of_world(c, g)) {
        let Some(fp) = g
            .fingerprint
            .as_str()
            .and_then(|f| c.fps.iter().position(|x| x == f))
        else {
            continue;
        };
        if dirty[fp] && g.status.as_str() == Some("resolved") {
            return Some(violation(
                "NoMissedRegression",
                format!(
                    "group {} reads 'resolved' (event_count {}), yet dirty[{}] = TRUE: an ingest of {} \
                     completed its counting step after the group's latest resolve, and the \
                     resolved -> regressed transition was lost",
                    g.id_text(),
                    text(&g.event_count),
                    c.fps[fp],
                    c.fps[fp]
                ),
            ));
        }
    }
    None
}

/// A group row of the world's project (TypeOK reports any other).
fn of_world(c: &Constants, g: &GroupRow) -> bool {
    g.project.as_str() == Some(c.project.as_str())
}
