//! A checker's verdict on one invariant ([`CheckResult`]): the verdict,
//! the findings that explain it and the evidence of each. Every layer
//! above reads them: the checkers write them, the live view and the
//! dashboard show them, the reports and the audit save and compare them.
//!
//! Model layer: imports nothing of the crate.

use serde::{Deserialize, Serialize};

/// Violations kept in full per invariant (the rest are counted).
pub const MAX_KEPT: usize = 50;

/// A checker's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The invariant holds on every group and event checked.
    Holds,
    /// At least one finding breaks the invariant.
    Violated,
    /// The history cannot decide (indeterminate ops, a failed premise).
    Unknown,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Holds => "holds",
            Verdict::Violated => "violated",
            Verdict::Unknown => "unknown",
        })
    }
}

/// The group a finding is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct GroupRef {
    /// Project of the group.
    pub project: String,
    /// Fingerprint of the group.
    pub fingerprint: String,
    /// Group id (hash of project and fingerprint).
    pub id: String,
}

/// One op or step that explains a finding, with its time (ns since start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Evidence {
    /// ns since run start.
    pub t: u64,
    /// The op, if the evidence is one op or one of its steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<u64>,
    /// What happened, in words.
    pub what: String,
}

/// One violation (or one `unknown` finding): what was expected, what was
/// found, and the ops and steps that explain it, in time order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Finding {
    /// The group the finding is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupRef>,
    /// The event the finding is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// Outbox: the message id the finding is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg_id: Option<i64>,
    /// What the invariant requires here.
    pub expected: String,
    /// What the tables and history show instead.
    pub found: String,
    /// How the found state came about, in words.
    pub explanation: String,
    /// Ops and steps that explain the finding, in time order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
}

/// A checker's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CheckResult {
    /// Invariant name as in the spec (`TypeOK`, `CountExact`, ...).
    pub invariant: String,
    /// Overall verdict: violated if any violation, else unknown if any unknown, else holds.
    pub verdict: Verdict,
    /// Violations found in all.
    pub violations: u64,
    /// The first [`MAX_KEPT`] violations.
    pub examples: Vec<Finding>,
    /// Findings the history could not decide, in all, and the first few.
    pub unknowns: u64,
    /// The first [`MAX_KEPT`] findings that came out `unknown`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_examples: Vec<Finding>,
    /// What the verdict rests on (bounds used, premises).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The earliest instant (ns since run start) at which a violation was
    /// visible: the latest evidence of the earliest violation found (its
    /// probe). None when no violation carries timed evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_violation_ns: Option<u64>,
}

impl CheckResult {
    /// An empty result for `invariant`: holds until a finding says otherwise.
    pub fn new(invariant: &str) -> Self {
        CheckResult {
            invariant: invariant.into(),
            verdict: Verdict::Holds,
            violations: 0,
            examples: Vec::new(),
            unknowns: 0,
            unknown_examples: Vec::new(),
            notes: Vec::new(),
            first_violation_ns: None,
        }
    }

    /// Records a violation; the verdict becomes violated. The [`MAX_KEPT`]
    /// earliest are kept in full, by the instant each became visible (its
    /// latest evidence; those without timed evidence last, in arrival
    /// order), so the first example is the earliest violation.
    pub fn violation(&mut self, f: Finding) {
        self.violations += 1;
        let at = visible_at(&f);
        if let Some(at) = at {
            self.first_violation_ns = Some(self.first_violation_ns.map_or(at, |t| t.min(at)));
        }
        let key = at.unwrap_or(u64::MAX);
        let i = self
            .examples
            .partition_point(|e| visible_at(e).unwrap_or(u64::MAX) <= key);
        if i < MAX_KEPT {
            self.examples.insert(i, f);
            self.examples.truncate(MAX_KEPT);
        }
        self.verdict = Verdict::Violated;
    }

    /// The first violation's explanation, or else the first unknown's.
    pub fn first_explanation(&self) -> Option<String> {
        self.examples
            .first()
            .or(self.unknown_examples.first())
            .map(|f| f.explanation.clone())
    }

    /// Records an undecidable finding (kept up to [`MAX_KEPT`]); holds becomes unknown, violated stays.
    pub fn unknown(&mut self, f: Finding) {
        self.unknowns += 1;
        if self.unknown_examples.len() < MAX_KEPT {
            self.unknown_examples.push(f);
        }
        if self.verdict == Verdict::Holds {
            self.verdict = Verdict::Unknown;
        }
    }
}

/// The instant a finding became visible: its latest evidence.
fn visible_at(f: &Finding) -> Option<u64> {
    f.evidence.iter().map(|e| e.t).max()
}
