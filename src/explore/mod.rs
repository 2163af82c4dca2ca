//! `specstorm explore`: a deterministic scheduler that drives the step
//! machines of a scenario's world through *every* interleaving, each step
//! the real statement of the user's statement file on a real (in-memory)
//! SQLite database, checks the spec's invariants after every step, and
//! prints a shortest counterexample, as TLC does for the spec.
//!
//! [`world`] is the interface a workload implements (each workload's
//! world, its invariants and its `specstorm explore` entry are its own,
//! reached through the registry);
//! [`search`] is the breadth-first search, [`db`] the database and its
//! snapshots, [`cursor`] the database as the path of savepoints to the
//! state being expanded, [`trace`] the counterexample's rendering.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

pub mod cursor;
pub mod db;
pub mod machine;
pub mod options;
pub mod search;
pub mod trace;
pub mod world;

pub use db::Restore;
pub use options::ExploreOptions;
pub use search::{search, Bounds, Counterexample, Figures, Outcome, Verdict};
pub use world::{ExploreError, StepLabel, Violation, World};

use crate::exit_code::ExitCode;
use crate::scenario::Explore;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The search of one world over one statement file, and its rendered
/// report; `C` is the world's choice type.
#[derive(Debug)]
pub struct Report<C> {
    /// The search's outcome.
    pub outcome: Outcome<C>,
    /// The report as printed on stdout (counterexample, figures, verdict).
    pub text: String,
    /// The exit code (`docs/cli.md`): 0 no violation in the
    /// whole space, 1 a violation, 4 a bound cut the search short, 130
    /// interrupted.
    pub code: ExitCode,
}

/// Searches `world` and renders the report (counterexample, figures,
/// verdict) with its exit code.
///
/// # Errors
/// The schema or an export statement failed on the explorer's database.
pub fn explore_world<W: World>(
    world: &W,
    bounds: Bounds,
    restore: Restore,
    mut progress: impl FnMut(&str),
) -> Result<Report<W::Choice>, ExploreError> {
    let outcome = search(world, bounds, restore, |f, t| {
        progress(&format!(
            "explore: {} states generated, {} distinct, depth {}, {} on queue, {:.1}s, {:.0} states/s",
            f.generated,
            f.distinct,
            f.depth,
            f.queued,
            t.as_secs_f64(),
            rate(f.generated, t)
        ))
    })?;
    let mut text = String::new();
    let f = &outcome.figures;
    let (violations, code, verdict) = match &outcome.verdict {
        Verdict::Violated(cx) => {
            text.push_str(&trace::render(world, cx)?);
            (
                1,
                ExitCode::NotMet,
                "an invariant is violated (exit 1)".to_string(),
            )
        }
        Verdict::Holds => (
            0,
            ExitCode::Met,
            "every invariant holds in every reachable state (exit 0)".to_string(),
        ),
        Verdict::Cut(by) => (
            0,
            ExitCode::Inconclusive,
            format!("no violation found, but {by} cut the search short: inconclusive (exit 4)"),
        ),
        Verdict::Interrupted => (
            0,
            ExitCode::Interrupted,
            format!(
                "interrupted with {} state(s) left to expand: no violation in the states \
                 explored so far, nothing concluded (exit 130)",
                f.queued
            ),
        ),
    };
    let _ = writeln!(
        text,
        "states generated: {}, distinct states: {}, depth: {}, violations: {violations}, \
         time: {:.3}s, states/s: {:.0}",
        f.generated,
        f.distinct,
        f.depth,
        outcome.elapsed.as_secs_f64(),
        rate(f.generated, outcome.elapsed)
    );
    let _ = writeln!(text, "verdict: {verdict}");
    Ok(Report {
        outcome,
        text,
        code,
    })
}

fn rate(n: u64, t: Duration) -> f64 {
    n as f64 / t.as_secs_f64().max(1e-9)
}

/// The search's bounds, and Ctrl-C (SIGINT, SIGTERM) to stop it: the
/// first signal stops the search before its next state and the report
/// shows what it found (exit 130); a second exits at once.
pub fn bounds_of(opts: &ExploreOptions, x: &Explore) -> Bounds {
    static STOP: AtomicBool = AtomicBool::new(false);
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::AcqRel) {
            std::process::exit(ExitCode::Interrupted.code());
        }
        let _ = writeln!(
            std::io::stderr(),
            "specstorm: interrupted: stopping the search, then printing what it explored"
        );
    });
    let bound = |flag: Option<u64>, key: u64| flag.or(Some(key)).filter(|&n| n > 0);
    Bounds {
        max_depth: bound(opts.max_depth, x.max_depth),
        max_states: bound(opts.max_states, x.max_states),
        stop: Some(&STOP),
    }
}

/// How the explorer restores a state, as the report's first line says.
pub fn restore_name(r: Restore) -> &'static str {
    match r {
        Restore::Savepoint => "savepoints along each state's path",
        Restore::Serialize => "sqlite3_serialize/deserialize",
        Restore::Replay => "replaying the path",
    }
}
