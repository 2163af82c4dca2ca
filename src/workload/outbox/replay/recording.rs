//! What an outbox run of the in-process SQLite target recorded of its
//! `handle` attempts, as `replay` re-executes them: each attempt's invoke
//! (its delivery: message, dup, attempt, tx_id, which are the step
//! machine's parameters), each step with its interval and what it changed
//! and returned (rows), and how the attempt ended.
//!
//! A crash fault here is the bench's own stop after a step: the runtime
//! records the step (its `step` entry) when it has ended, then draws the
//! crash and ends the attempt (`info`, `crashed_after`), so a crashed
//! attempt's recorded steps are exactly what it ran and each of them ran
//! whole (each step is one statement in autocommit). An abort (the stop's
//! grace) likewise comes between steps. What the replay cannot
//! re-execute is named per attempt: a step that failed (its effect may be
//! uncertain), a step that never ended, an attempt that never completed
//! (a cut history).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use crate::history::{CompletionType, Delivery, Entry, Header, Invoke, OpResult};
use std::collections::BTreeMap;

/// One recorded step.
#[derive(Debug, Clone)]
pub struct RecStep {
    /// Its index in the `handle` program.
    pub idx: u32,
    /// Its name.
    pub name: String,
    /// Its interval, ns since the run's start.
    pub start: u64,
    /// Its end.
    pub end: u64,
    /// Rows it changed.
    pub changes: u64,
    /// Rows it returned.
    pub rows: u64,
}

/// One recorded `handle` attempt.
#[derive(Debug, Clone)]
pub struct RecOp {
    /// Its invoke (worker, time).
    pub invoke: Invoke,
    /// Its delivery.
    pub delivery: Delivery,
    /// Its steps, in the order they ran.
    pub steps: Vec<RecStep>,
    /// How it ended (None: never completed).
    pub completion: Option<CompletionType>,
    /// What it answered.
    pub result: OpResult,
    /// Why it cannot be re-executed, if it cannot.
    pub unreplayable: Option<String>,
}

impl RecOp {
    /// Whether it ended before its machine did: a crash fault or an abort
    /// after its last recorded step.
    pub fn cut_short(&self) -> bool {
        self.result.crashed_after.is_some() || self.result.aborted.is_some()
    }
}

/// A run's recorded attempts, in invoke order.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The history's header.
    pub header: Header,
    /// The attempts.
    pub ops: Vec<RecOp>,
    /// The run's UTC start, ms since the epoch (`:now_ms` of an attempt is
    /// this plus its invoke time: the wall clock the run read is not
    /// recorded).
    pub started_ms: i64,
}

impl Recording {
    /// `:now_ms` for op `i`.
    pub fn now_ms(&self, i: usize) -> i64 {
        self.started_ms + (self.ops[i].invoke.t / 1_000_000) as i64
    }
}

/// The recording of `entries` (a whole history, in file order). Errors:
/// no header, or a history without step records (the message says which).
pub fn of_entries(entries: &[Entry]) -> Result<Recording, String> {
    let Some(header) = entries.iter().find_map(|e| match e {
        Entry::Header(h) => Some(h.clone()),
        _ => None,
    }) else {
        return Err("no header: not a history a run wrote".into());
    };
    if !header.step_log || !entries.iter().any(|e| matches!(e, Entry::Step(_))) {
        return Err(
            "the history records no steps (an HTTP run, or a run whose history holds no step \
             records): replay re-executes each recorded statement in an order its interval \
             allows, which only the in-process SQLite target records"
                .into(),
        );
    }
    let mut ops: BTreeMap<u64, RecOp> = BTreeMap::new();
    for e in entries {
        match e {
            Entry::Invoke(i) => {
                if let Some(d) = i.delivery {
                    ops.insert(
                        i.op,
                        RecOp {
                            invoke: i.clone(),
                            delivery: d,
                            steps: Vec::new(),
                            completion: None,
                            result: OpResult::default(),
                            unreplayable: None,
                        },
                    );
                }
            }
            Entry::Step(s) => {
                let Some(o) = ops.get_mut(&s.op) else {
                    continue;
                };
                let why = match (&s.error, s.end) {
                    (Some(e), _) => Some(format!(
                        "step {} of op {} failed ({e}): whether it applied is not known",
                        s.step, s.op
                    )),
                    (None, None) => Some(format!("step {} of op {} never ended", s.step, s.op)),
                    _ => None,
                };
                if o.unreplayable.is_none() {
                    o.unreplayable = why;
                }
                o.steps.push(RecStep {
                    idx: s.idx,
                    name: s.step.clone(),
                    start: s.start,
                    end: s.end.unwrap_or(s.start),
                    changes: s.changes,
                    rows: s.rows,
                });
            }
            Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) => {
                if let Some(o) = ops.get_mut(&c.op) {
                    o.result = c.result.clone();
                    o.completion = Some(match e {
                        Entry::Ok(_) => CompletionType::Ok,
                        Entry::Fail(_) => CompletionType::Fail,
                        _ => CompletionType::Info,
                    });
                }
            }
            _ => {}
        }
    }
    let mut ops: Vec<RecOp> = ops.into_values().collect();
    for o in &mut ops {
        if o.completion.is_none() && o.unreplayable.is_none() {
            o.unreplayable = Some(format!(
                "op {} never completed (the history is cut)",
                o.invoke.op
            ));
        }
        // An `info` attempt that neither crashed nor was aborted ended on
        // an error: its last step's effect is uncertain.
        if o.completion == Some(CompletionType::Info) && !o.cut_short() && o.unreplayable.is_none()
        {
            o.unreplayable = Some(format!(
                "op {} ended info without a crash fault ({}): its effect is uncertain",
                o.invoke.op,
                o.result.error.clone().unwrap_or_default()
            ));
        }
    }
    ops.sort_by_key(|o| (o.invoke.t, o.invoke.op));
    let started_ms = humantime::parse_rfc3339(&header.started_utc)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    Ok(Recording {
        header,
        ops,
        started_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed fixture's history (tests/fixtures/README.md).
    fn fixture() -> Vec<Entry> {
        let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/replay-outbox-no-redo/history.bin");
        crate::history::reader::read(&f)
            .unwrap()
            .collect::<anyhow::Result<Vec<_>>>()
            .unwrap()
    }

    fn op(r: &Recording, id: u64) -> &RecOp {
        r.ops.iter().find(|o| o.invoke.op == id).unwrap()
    }

    #[test]
    fn an_attempt_a_crash_fault_cut_short_is_replayed_as_far_as_it_ran() {
        let r = of_entries(&fixture()).unwrap();
        // Op 5 crashed after state_commit: its four steps, nothing refused.
        let o = op(&r, 5);
        assert!(o.cut_short());
        assert_eq!(o.steps.len(), 4);
        assert_eq!(o.steps.last().unwrap().name, "state_commit");
        assert!(o.unreplayable.is_none(), "{:?}", o.unreplayable);
        assert!(!op(&r, 9).cut_short());
    }

    #[test]
    fn a_failed_step_or_a_missing_completion_makes_the_attempt_unreplayable() {
        let mut entries = fixture();
        for e in &mut entries {
            if let Entry::Step(s) = e {
                if s.op == 5 && s.step == "state_commit" {
                    s.error = Some("disk I/O error".into());
                }
            }
        }
        entries.retain(|e| !matches!(e, Entry::Ok(c) if c.op == 9));
        let r = of_entries(&entries).unwrap();
        let why5 = op(&r, 5).unreplayable.clone().unwrap();
        assert!(
            why5.contains("state_commit") && why5.contains("failed"),
            "{why5}"
        );
        let why9 = op(&r, 9).unreplayable.clone().unwrap();
        assert!(why9.contains("never completed"), "{why9}");
        assert!(op(&r, 21).unreplayable.is_none());
    }
}
