//! A counterexample as the user reads it: the path replayed on a fresh
//! database, numbered as TLC numbers the states of a trace (state 1 is the
//! initial state), each step with its machine, statement, answer and the
//! rows it changed, then the broken invariants and why.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::db::Db;
use super::search::Counterexample;
use super::world::{ExploreError, World};
use std::fmt::Write as _;

/// Renders `cx` by replaying its path on a fresh database.
///
/// # Errors
/// The schema or reading the rows failed.
pub fn render<W: World>(world: &W, cx: &Counterexample<W::Choice>) -> Result<String, ExploreError> {
    let db = Db::new(world.schema())?;
    let mut state = world.init();
    let mut out = String::new();
    let names: Vec<&str> = cx.violations.iter().map(|v| v.invariant).collect();
    let _ = writeln!(
        out,
        "Invariant {} is violated after {} step(s): a shortest counterexample of {} states, \
         numbered as TLC numbers them:",
        names.join(", "),
        cx.path.len(),
        cx.path.len() + 1
    );
    let _ = writeln!(out, "State 1: <Initial state> {}", world.describe(&state));
    let mut before = db.rows()?;
    for (i, c) in cx.path.iter().enumerate() {
        let label = world.take(&mut state, c, &db.conn);
        let after = db.rows()?;
        let changes = before.changes(&after);
        let _ = writeln!(out, "State {}: {label}", i + 2);
        if changes.is_empty() {
            let _ = writeln!(out, "    (no row changed)");
        }
        for ch in changes {
            let _ = writeln!(out, "    {ch}");
        }
        before = after;
    }
    let _ = writeln!(out, "  then: {}", world.describe(&state));
    for v in &cx.violations {
        let _ = writeln!(out, "{} violated: {}", v.invariant, v.why);
    }
    Ok(out)
}
