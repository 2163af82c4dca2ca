//! The final tables as the audit reads them (`docs/groups.md`, "The
//! canonical tables"): the canonical `error_groups` rows, and `error_events` reduced to what the checkers need (the ids
//! present and the rows per (project, fingerprint)), so a table of millions
//! of events is never held row by row.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::id_set::IdSet;
use crate::workload::Value;
use std::collections::{BTreeMap, HashMap};

/// One canonical `error_groups` row. Values are kept as read: a broken
/// target may store a status that is no text or a count that is no integer,
/// and TypeOK must be able to say so.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRow {
    /// `id`, as read.
    pub id: Value,
    /// `project`, as read.
    pub project: Value,
    /// `fingerprint`, as read.
    pub fingerprint: Value,
    /// `status`, as read (TypeOK wants open, resolved or regressed).
    pub status: Value,
    /// `event_count`, as read (TypeOK wants an integer >= 0).
    pub event_count: Value,
}

impl GroupRow {
    /// A well-typed row, for tests and examples.
    pub fn new(id: &str, project: &str, fingerprint: &str, status: &str, count: i64) -> Self {
        GroupRow {
            id: Value::Text(id.into()),
            project: Value::Text(project.into()),
            fingerprint: Value::Text(fingerprint.into()),
            status: Value::Text(status.into()),
            event_count: Value::Int(count),
        }
    }

    /// (project, fingerprint) as text (a non-text value is shown as JSON).
    pub fn key(&self) -> (String, String) {
        (text(&self.project), text(&self.fingerprint))
    }

    /// The group id as text (a non-text value is shown as JSON).
    pub fn id_text(&self) -> String {
        text(&self.id)
    }
}

/// A value as text: text as is, anything else as JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// The final tables, read as one snapshot after the load drained.
#[derive(Debug, Clone, Default)]
pub struct Tables {
    /// Every `error_groups` row.
    pub groups: Vec<GroupRow>,
    /// Ids of the rows in `error_events`.
    pub event_ids: IdSet,
    /// |A(G)|: rows of `error_events` per (project, fingerprint).
    pub events_per_key: HashMap<(String, String), u64>,
    /// Rows of `error_events` in all.
    pub event_rows: u64,
    /// The snapshot's read transaction: start and end, ns since run start
    /// (the final rows are a probe taken in this interval).
    pub read_start: u64,
    /// End of the snapshot's read transaction, ns since run start.
    pub read_end: u64,
    /// The service deletes event rows (`audit.events = "pruned"`:
    /// retention, sampling): a missing row proves nothing, and the checks
    /// that count rows rest on the history alone.
    pub events_pruned: bool,
}

impl Tables {
    /// The group rows per (project, fingerprint), the key every checker
    /// compares by (a design may compute its own group ids; only the key
    /// is shared by the history and the tables). More than one row under
    /// a key breaks OneGroupPerFingerprint, and the checkers that need
    /// one row per key leave it unjudged.
    pub fn rows_by_key(&self) -> BTreeMap<(String, String), Vec<&GroupRow>> {
        let mut m: BTreeMap<(String, String), Vec<&GroupRow>> = BTreeMap::new();
        for g in &self.groups {
            m.entry(g.key()).or_default().push(g);
        }
        m
    }

    /// Adds one `error_events` row.
    pub fn add_event(&mut self, id: &Value, project: &Value, fingerprint: &Value) {
        self.event_rows += 1;
        self.event_ids.insert(&text(id));
        *self
            .events_per_key
            .entry((text(project), text(fingerprint)))
            .or_default() += 1;
    }

    /// Tables from hand-made rows: events as (id, project, fingerprint).
    pub fn from_rows(events: &[(&str, &str, &str)], groups: Vec<GroupRow>, read_at: u64) -> Self {
        let mut t = Tables {
            groups,
            read_start: read_at,
            read_end: read_at + 1,
            ..Default::default()
        };
        for (id, p, f) in events {
            t.add_event(
                &Value::Text((*id).into()),
                &Value::Text((*p).into()),
                &Value::Text((*f).into()),
            );
        }
        t
    }
}

/// Where the final rows go as they are read: [`Tables`], or a judge of
/// a history in parts that routes each row to its part.
pub trait RowSink {
    /// One `error_events` row (id, project, fingerprint, as read).
    fn event(&mut self, id: &Value, project: &Value, fingerprint: &Value);
    /// One `error_events` row whose three values are text: as
    /// [`RowSink::event`] of them, for a sink that needs no copy of its
    /// own.
    fn event_text(&mut self, id: &str, project: &str, fingerprint: &str) {
        self.event(
            &Value::Text(id.into()),
            &Value::Text(project.into()),
            &Value::Text(fingerprint.into()),
        );
    }
    /// One `error_events` row whose id is the bytes `id`, hex digits (and
    /// dashes) that [`crate::workload::groups::id_bits::bits_of`] read as
    /// `bits`: as [`RowSink::event_text`], for a sink that keeps an id as
    /// its bits and so needs neither the id's UTF-8 check nor a second
    /// read of its digits (an audit reads one per event row).
    fn event_bits(&mut self, id: &[u8], bits: (bool, u128), project: &str, fingerprint: &str) {
        let _ = bits;
        // Hex digits and dashes are ASCII: this never fails.
        let id = std::str::from_utf8(id).expect("an id of hex digits is UTF-8");
        self.event_text(id, project, fingerprint);
    }
    /// One `error_groups` row.
    fn group(&mut self, row: GroupRow);
}

impl RowSink for Tables {
    fn event(&mut self, id: &Value, project: &Value, fingerprint: &Value) {
        self.add_event(id, project, fingerprint);
    }

    fn group(&mut self, row: GroupRow) {
        self.groups.push(row);
    }
}

impl crate::workload::ran::ReadSpan for Tables {
    fn read_span(&self) -> [u64; 2] {
        [self.read_start, self.read_end]
    }
}
