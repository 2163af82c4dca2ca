//! The groups world's constants (from the scenario's `[explore]`
//! section) and the canonical tables of one explored state: what the
//! world and its state invariants ([`super::invariants`]) both read.
//!
//! Workload layer: imports the final tables' rows, the scenario's
//! `[explore]`, the groups' ids and the SQL values.

use crate::scenario::Explore;
use crate::workload::groups::checker::GroupRow;
use crate::workload::groups::group_id;
use crate::workload::Value;

/// The spec's constants, from the scenario's `[explore]` section.
#[derive(Debug, Clone)]
pub struct Constants {
    /// `Events`: the distinct event ids of the queues, sorted.
    pub events: Vec<String>,
    /// `Fps`: the distinct fingerprints of those events, sorted.
    pub fps: Vec<String>,
    /// `FpOf`: per event (index into `events`), its fingerprint's index.
    pub fp_of: Vec<usize>,
    /// `Queue`: per worker, the event indices it ingests in order.
    pub queues: Vec<Vec<usize>>,
    /// The bench's group id per fingerprint, `g:{project}:{fp}` (the
    /// `:group_id` it passes; a design may use its own ids instead).
    pub group_ids: Vec<String>,
    /// The project of every event.
    pub project: String,
    /// `MaxResolves`.
    pub resolves: u32,
    /// The constant `:now_ms`.
    pub now_ms: i64,
}

impl Constants {
    /// The world of an `[explore]` section (the loader checked that every
    /// queued id has a fingerprint).
    pub fn new(x: &Explore) -> Constants {
        let mut events: Vec<String> = x.queues.iter().flatten().cloned().collect();
        events.sort();
        events.dedup();
        let mut fps: Vec<String> = events.iter().map(|e| x.fingerprints[e].clone()).collect();
        fps.sort();
        fps.dedup();
        let fp_of = events
            .iter()
            .map(|e| fps.binary_search(&x.fingerprints[e]).expect("listed above"))
            .collect();
        let queues = x
            .queues
            .iter()
            .map(|q| {
                q.iter()
                    .map(|e| events.binary_search(e).expect("listed above"))
                    .collect()
            })
            .collect();
        Constants {
            group_ids: fps.iter().map(|f| group_id(&x.project, f)).collect(),
            events,
            fps,
            fp_of,
            queues,
            project: x.project.clone(),
            resolves: x.resolves,
            now_ms: x.now_ms,
        }
    }
}

/// The canonical tables of one state, from the file's export statements.
#[derive(Debug, Clone, Default)]
pub struct GroupsView {
    /// `export.events`: (id, project, fingerprint) per row.
    pub events: Vec<(Value, Value, Value)>,
    /// `export.groups`, as the audit reads it.
    pub groups: Vec<GroupRow>,
}
