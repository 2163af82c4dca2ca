//! `specstorm explore` on an outbox scenario: the outbox world
//! ([`OutboxWorld`]) of the scenario's `[explore]` over its statement
//! file, searched and reported by the explorer ([`crate::explore`]); the
//! workload's `explore` hands each outbox scenario here.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::statements::OutboxVariant;
use crate::exit_code::ExitCode;
use crate::explore::{
    bounds_of, explore_world, restore_name, Bounds, ExploreError, ExploreOptions, Report, Restore,
};
use crate::prepare::RunError;
use crate::scenario::Explore;
pub use crate::workload::outbox::explore::OutboxWorld;
use std::io::Write;

/// Explores the outbox world of `x` (messages, deliveries, handlers,
/// Fail() and redelivery budgets) over `variant`, as
/// [`crate::workload::groups::explore_main::explore_groups`].
///
/// # Errors
/// The schema or an export statement failed on the explorer's database.
pub fn explore_outbox(
    variant: &OutboxVariant,
    x: &Explore,
    bounds: Bounds,
    restore: Restore,
    progress: impl FnMut(&str),
) -> Result<Report<crate::workload::outbox::explore::Choice>, ExploreError> {
    explore_world(&OutboxWorld::new(variant, x), bounds, restore, progress)
}

/// `specstorm explore` on an outbox scenario (`workload = "outbox"`): its
/// statement file over the `[explore]` outbox world; exit codes as
/// [`crate::workload::groups::explore_main::main`].
pub fn main(opts: &ExploreOptions) -> ExitCode {
    let p = match crate::workload::outbox::prepare::prepare(
        opts.scenario.as_deref(),
        &opts.overrides,
    ) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "specstorm: error: {e}");
            return e.exit_code();
        }
    };
    let x = &p.scenario.explore;
    let world = OutboxWorld::new(&p.variant, x);
    let _ = writeln!(
        std::io::stdout(),
        "# explore {} ({}): outbox world: {}; :now_ms = {}; snapshots by {}",
        p.scenario.variant,
        p.variant.file.path.display(),
        world.describe_world(),
        x.now_ms,
        restore_name(opts.restore)
    );
    let quiet = opts.quiet;
    match explore_world(&world, bounds_of(opts, x), opts.restore, |line| {
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
