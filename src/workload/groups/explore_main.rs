//! `specstorm explore` on a groups scenario: the groups world
//! ([`GroupsWorld`]) of the scenario's `[explore]` over its statement
//! file, searched and reported by the explorer ([`crate::explore`]); the
//! workload's `explore` hands each groups scenario here.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::prepare::prepare;
use super::statements::GroupsVariant;
use crate::exit_code::ExitCode;
use crate::explore::{
    bounds_of, explore_world, restore_name, Bounds, ExploreError, ExploreOptions, Report, Restore,
};
use crate::prepare::RunError;
use crate::scenario::Explore;
use crate::workload::groups::explore::Choice;
pub use crate::workload::groups::explore::GroupsWorld;
use std::io::Write;

/// Explores the world `x` over `variant` within `bounds` (None: those of
/// `x`, 0 meaning none); progress lines go to `progress` about once a
/// second.
///
/// # Errors
/// The schema or an export statement failed on the explorer's database.
pub fn explore_groups(
    variant: &GroupsVariant,
    x: &Explore,
    bounds: Bounds,
    restore: Restore,
    progress: impl FnMut(&str),
) -> Result<Report<Choice>, ExploreError> {
    explore_world(&GroupsWorld::new(variant, x), bounds, restore, progress)
}

/// One line saying which world is explored.
pub fn describe_world(x: &Explore) -> String {
    let queues: Vec<String> = x
        .queues
        .iter()
        .enumerate()
        .map(|(w, q)| format!("{} runs {}", GroupsWorld::worker_name(w), q.join(", ")))
        .collect();
    let fps: Vec<String> = x
        .fingerprints
        .iter()
        .filter(|(e, _)| x.queues.iter().flatten().any(|q| q == *e))
        .map(|(e, f)| format!("{e}->{f}"))
        .collect();
    format!(
        "{}; fingerprints {}; one resolver, {} resolve(s)",
        queues.join("; "),
        fps.join(", "),
        x.resolves
    )
}

/// `specstorm explore` on a groups scenario: loads the scenario and its
/// statement file, searches, prints the report on stdout (progress on
/// stderr); returns the exit code: 0, 1, 4, 130 as [`Report::code`]; 2 for
/// a bad scenario or statement file; 3 when the explorer's database
/// refused the file's schema or exports. The workload registry hands each
/// scenario to its workload's explorer.
pub fn main(opts: &ExploreOptions) -> ExitCode {
    let p = match prepare(opts.scenario.as_deref(), &opts.overrides) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "specstorm: error: {e}");
            return e.exit_code();
        }
    };
    let x = &p.scenario.explore;
    let bounds = bounds_of(opts, x);
    let _ = writeln!(
        std::io::stdout(),
        "# explore {} ({}): {}; :now_ms = {}; snapshots by {}",
        p.scenario.variant,
        p.variant.file.path.display(),
        describe_world(x),
        x.now_ms,
        restore_name(opts.restore)
    );
    let quiet = opts.quiet;
    match explore_groups(&p.variant, x, bounds, opts.restore, |line| {
        if !quiet {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }) {
        Ok(r) => {
            let _ = write!(std::io::stdout(), "{}", r.text);
            r.code
        }
        Err(e) => {
            let e = RunError::Target(format!("explore: {e}"));
            let _ = writeln!(std::io::stderr(), "specstorm: error: {e}");
            e.exit_code()
        }
    }
}
