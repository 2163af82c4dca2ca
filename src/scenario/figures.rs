//! The figures `summary.json` has for a scenario, as JSON with zeros (the
//! skeleton): what a threshold may name, checked before the run. The
//! common figures are [`crate::summary`]'s; a built-in workload's own are
//! its figures module's (`crate::workload::<name>::figures`), picked here
//! by the scenario's `workload` as the loader picks its keys, until the
//! registry of workloads sits below the config. A test keeps this in step
//! with real summaries.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::invariants::{GROUPS_INVARIANTS, OUTBOX_INVARIANTS};
use super::{Scenario, TargetKind, Workload};
use crate::fault_kind::FaultKind;
use crate::summary::{merge_figures, skeleton_common};
use crate::workload::groups::config::{GroupsScenario, LoadModel};
use crate::workload::groups::figures as groups_figures;
use crate::workload::outbox::figures as outbox_figures;

/// Every figure `summary.json` has for `s`, as JSON with zeros. An
/// invariant's `first_violation_s` is in, and breaches its threshold in a
/// run where it is absent.
pub fn skeleton(s: &Scenario) -> serde_json::Value {
    let faults: Vec<FaultKind> = s.faults.iter().map(|f| f.kind).collect();
    let wal = watched(s);
    match s.workload {
        Workload::Groups => {
            let mut v =
                skeleton_common(&groups_figures::OP_KINDS, &GROUPS_INVARIANTS, &faults, wal);
            let open = s.load().model == LoadModel::Open;
            merge_figures(
                &mut v,
                groups_figures::skeleton(&GROUPS_INVARIANTS, &faults, open),
            );
            v
        }
        Workload::Outbox => {
            let mut v =
                skeleton_common(&outbox_figures::OP_KINDS, &OUTBOX_INVARIANTS, &faults, wal);
            merge_figures(&mut v, outbox_figures::skeleton());
            v
        }
        // Its own figures are its own; the common ones are every
        // workload's.
        Workload::Registered(name) => {
            let invariants = super::registered::find(name).map_or(&[][..], |r| r.invariants);
            skeleton_common(&[], invariants, &faults, wal)
        }
    }
}

/// Whether a run of `s` watches its target's WAL: `journal_mode = wal` on
/// the in-process SQLite target or the spawned reference server (a
/// service at `target.url` keeps its database where the bench does not
/// look).
pub fn watched(s: &Scenario) -> bool {
    s.target.journal_mode.eq_ignore_ascii_case("wal")
        && match s.target.kind {
            TargetKind::Sqlite => true,
            TargetKind::Http => s.target.url.is_none(),
        }
}
