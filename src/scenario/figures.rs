//! The figures `summary.json` has for a scenario, as JSON with zeros (the
//! skeleton): what a threshold may name, checked before the run. The
//! common figures are [`crate::summary`]'s; a built-in workload's whole
//! skeleton is its own (its `skeleton` in `crate::scenario::section`).
//! A test keeps this in step with real summaries.
//!
//! Layer: config. May import the modules of its own layer and of the
//! layers below it (core and model).

use super::{Scenario, TargetKind};
use crate::fault_kind::FaultKind;
use crate::summary::skeleton_common;

/// Every figure `summary.json` has for `s`, as JSON with zeros. An
/// invariant's `first_violation_s` is in, and breaches its threshold in a
/// run where it is absent.
pub fn skeleton(s: &Scenario) -> serde_json::Value {
    let faults: Vec<FaultKind> = s.faults.iter().map(|f| f.kind).collect();
    let wal = watched(s);
    if let Some(own) = super::section::of(s.workload.name()) {
        return (own.skeleton)(s, &faults, wal);
    }
    // A workload registered at run time: its own figures are its own; the
    // common ones are every workload's.
    let invariants = super::registered::find(s.workload.name()).map_or(&[][..], |r| r.invariants);
    skeleton_common(&[], invariants, &faults, wal)
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
