//! Stranded events (not a spec invariant; `docs/groups.md`, "Stranded
//! events", defines the report and its premises):
//! rows in error_events whose inserting attempt stopped after its
//! event-insert step and before the counting step, so that no retry will
//! ever count them (a retry stops as a duplicate). Counted and explained by
//! cause; they fail no run unless the scenario asks (a threshold on
//! `stranded_events.total`).
//!
//! Which attempt inserted a row is read from the step log: the attempt
//! whose event-insert step (the header's `event_step`, found from what the
//! statement does, whatever its position) changed a row. A history of this
//! version that names no such step cannot tell: `total` is then absent
//! (null in `summary.json`, so a threshold on it fails), never 0. A history
//! older than that field is read with step 0 as the event insert, as its
//! writer assumed, and a note says so. Without a step log (HTTP) only the
//! reference server's crash hook tells that an attempt stopped after
//! inserting, by the step it crashed after.
//!
//! A cut history cannot tell: the attempt that counted a row, or the one
//! that stopped between its steps, may be missing from it, so `total` is
//! absent (null), never a count, with a note.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::facts::EventStep;
use super::{Facts, Tables};

pub use crate::workload::groups::figures::Stranded;

/// Events present in the final table, certainly not counted (neither Done
/// nor Maybe), whose row an attempt of this run inserted; and events
/// answered duplicate that are not in the table at all, after an attempt
/// that may have stopped between its steps.
pub fn report(facts: &Facts, tables: &Tables) -> Stranded {
    parts(facts, tables).finish()
}

/// Examples kept per kind of stranded event (and in the report).
const EXAMPLES: usize = 10;

/// [`report`] before its examples are chosen: the first
/// [`EXAMPLES`] of each kind by event id, so that a judge of a history in
/// parts can merge the parts' ([`Parts::add`]) before [`Parts::finish`].
#[derive(Debug, Clone, Default)]
pub struct Parts {
    /// The report without examples.
    pub report: Stranded,
    /// Rows inserted and never counted: (event id, inserting op).
    pub inserted: Vec<(String, u64)>,
    /// Answered duplicate, never stored: (event id, indeterminate op).
    pub lost: Vec<(String, u64)>,
}

impl Parts {
    /// The report: the first examples of rows inserted, then of events lost.
    pub fn finish(mut self) -> Stranded {
        self.report.examples = self.inserted;
        self.report.examples.extend(self.lost);
        self.report.examples.truncate(EXAMPLES);
        self.report
    }

    /// Adds another part's figures (of other events; the notes are the
    /// same in every part, as they depend on the header and completeness).
    pub fn add(&mut self, o: Parts) {
        let r = &mut self.report;
        r.undetermined += o.report.undetermined;
        r.total = r.total.zip(o.report.total).map(|(a, b)| a + b);
        for (cause, n) in o.report.by_cause {
            *r.by_cause.entry(cause).or_default() += n;
        }
        for (mine, theirs) in [(&mut self.inserted, o.inserted), (&mut self.lost, o.lost)] {
            mine.extend(theirs);
            mine.sort();
            mine.truncate(EXAMPLES);
        }
    }
}

/// [`report`]'s figures and first examples of each kind ([`Parts`]).
pub fn parts(facts: &Facts, tables: &Tables) -> Parts {
    let mut p = Parts::default();
    let s = &mut p.report;
    *s = Stranded {
        undetermined: facts
            .events
            .iter()
            .filter(|(id, e)| e.is_maybe() && e.in_table(*id, tables))
            .count() as u64,
        ..Default::default()
    };
    if facts.completeness.is_cut() {
        s.total = None;
        s.notes.push(format!(
            "{}: which rows no attempt counted cannot be told (the attempt that counted one \
             may be missing)",
            crate::history::completeness::CUT
        ));
        return p;
    }
    if facts.step_log {
        match facts.event_step {
            EventStep::Known(_) => {}
            EventStep::Assumed(i) => s.notes.push(format!(
                "this history does not record which ingest step inserts the event row (it \
                 predates that record): step {i} ({}) is taken to be it",
                facts.ingest_step_name(i)
            )),
            EventStep::Unknown => {
                s.total = None;
                s.notes.push(
                    "the history does not name the ingest step that inserts the event row, so \
                     which rows an attempt inserted without counting them cannot be told"
                        .into(),
                );
                return p;
            }
        }
    }
    let mut ids: Vec<_> = facts
        .events
        .iter()
        .filter(|(id, e)| !e.done && !e.maybe && e.insert().is_some() && e.in_table(*id, tables))
        .collect();
    ids.sort_by_key(|(id, _)| *id);
    let mut total = 0;
    for (id, e) in ids {
        let (op, cause) = e.insert().expect("filtered");
        let cause = cause
            .map(|c| facts.causes[c as usize].clone())
            .unwrap_or_else(|| "unknown".into());
        total += 1;
        *s.by_cause.entry(cause).or_default() += 1;
        if p.inserted.len() < EXAMPLES {
            p.inserted.push((id.to_string(), op));
        }
    }
    // Answered duplicate, never stored, after an attempt that may have
    // stopped between its steps: lost by that stop, like a row inserted
    // and never counted (TypeOK judges the same loss where every attempt
    // ended ok or fail). Where rows are pruned, a missing row proves nothing.
    if !tables.events_pruned {
        let mut lost: Vec<_> = facts
            .events
            .iter()
            .filter(|(id, e)| {
                !e.acked
                    && e.tries.iter().any(|a| a.decided().is_some())
                    && e.tries.iter().any(|a| a.indeterminate)
                    && !e.in_table(*id, tables)
            })
            .collect();
        lost.sort_by_key(|(id, _)| *id);
        for (id, e) in lost {
            total += 1;
            *s.by_cause
                .entry("answered duplicate but never stored, after an indeterminate attempt".into())
                .or_default() += 1;
            if p.lost.len() < EXAMPLES {
                let op = e.tries.iter().find(|a| a.indeterminate).map_or(0, |a| a.op);
                p.lost.push((id.to_string(), op));
            }
        }
    }
    s.total = Some(total);
    p
}
