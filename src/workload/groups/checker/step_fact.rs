//! [`StepFact`]: a history step as the facts hold it while its op is in
//! flight. The facts read a step's index, interval, row counts and error;
//! its name only where it failed (the stranded report's cause names the
//! failed step), and never what it returned. So a step taken from a binary
//! record ([`crate::history::codec::step_view`]) is held with no text of
//! its own unless it failed, and one taken from an entry keeps the same
//! fields: both give the same facts.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::history::codec::StepView;
use crate::history::{Step, StepErrorKind};

/// A step of an op in flight (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFact {
    /// As [`Step::idx`].
    pub idx: u32,
    /// As [`Step::start`].
    pub start: u64,
    /// As [`Step::end`].
    pub end: Option<u64>,
    /// As [`Step::changes`].
    pub changes: u64,
    /// As [`Step::rows`].
    pub rows: u64,
    /// Its error and its name; boxed, as steps seldom fail.
    pub error: Option<Box<StepError>>,
    /// As [`Step::error_kind`].
    pub error_kind: Option<StepErrorKind>,
    /// As [`Step::maybe_applied`] (the field, not the method).
    pub maybe_applied: bool,
}

/// A failed step's error text and the step's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepError {
    /// As [`Step::error`].
    pub text: String,
    /// As [`Step::step`].
    pub step: String,
}

impl StepFact {
    /// The step's facts (its texts copied only if it failed).
    pub fn from_step(s: &Step) -> Self {
        StepFact::from_view(&StepView {
            op: s.op,
            idx: s.idx,
            step: &s.step,
            start: s.start,
            end: s.end,
            changes: s.changes,
            rows: s.rows,
            error: s.error.as_deref(),
            error_kind: s.error_kind,
            maybe_applied: s.maybe_applied,
        })
    }

    /// The step's facts, from its record; text copied only if it failed.
    /// Inlined: three per op.
    #[inline]
    pub fn from_view(s: &StepView<'_>) -> Self {
        StepFact {
            idx: s.idx,
            start: s.start,
            end: s.end,
            changes: s.changes,
            rows: s.rows,
            error: s.error.map(|text| {
                Box::new(StepError {
                    text: text.to_string(),
                    step: s.step.to_string(),
                })
            }),
            error_kind: s.error_kind,
            maybe_applied: s.maybe_applied,
        }
    }

    /// As [`Step::applied`].
    pub fn applied(&self) -> bool {
        self.end.is_some() && self.error.is_none() && self.changes > 0
    }

    /// As [`Step::maybe_applied`] (the method).
    pub fn maybe_applied(&self) -> bool {
        self.end.is_none() || (self.error.is_some() && self.maybe_applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{codec, Entry};

    fn step(end: Option<u64>, error: Option<&str>, changes: u64, maybe: bool) -> Step {
        Step {
            op: 7,
            idx: 2,
            step: "ingest.s3".into(),
            start: 10,
            end,
            changes,
            rows: 1,
            error: error.map(str::to_string),
            error_kind: error.map(|_| StepErrorKind::Busy),
            maybe_applied: maybe,
            returned: None,
        }
    }

    #[test]
    fn a_step_from_its_record_has_the_facts_of_the_step_decoded_and_answers_alike() {
        for s in [
            step(Some(20), None, 1, false),
            step(Some(20), None, 0, false),
            step(None, None, 0, false),
            step(Some(20), Some("database is locked"), 0, true),
            step(Some(20), Some("database is locked"), 0, false),
        ] {
            let mut payload = Vec::new();
            codec::encode_payload(&Entry::Step(s.clone()), &mut payload);
            let view = codec::step_view(&payload).unwrap().unwrap();
            assert_eq!(view.op, 7);
            let a = StepFact::from_view(&view);
            let b = StepFact::from_step(&s);
            assert_eq!(a, b);
            assert_eq!(
                (a.applied(), a.maybe_applied()),
                (s.applied(), s.maybe_applied())
            );
            assert_eq!(a.error.map(|e| e.step), s.error.map(|_| s.step.clone()));
        }
        // Any other record (here a JSON one) is no step.
        assert_eq!(codec::step_view(&[0, b'{', b'}']).unwrap(), None);
    }
}
