//! What both workloads' audits share: the [`Audit`] written to
//! `audit.json`, the run's own records read back (`checks.json`,
//! `summary.json`), their comparison with the audited verdicts, and the
//! audit's exit by the run's own rule.
//!
//! App layer, below [`crate::audit`] and [`crate::workload::outbox::audit`]: imports
//! the verdicts, the summary, the checkers' versions and the lower audit
//! modules, never a runner or another audit.

use crate::audit_error::AuditError;
use crate::exit_code::ExitCode;
use crate::figures::{EvidenceReport, Stranded};
use crate::scenario::Expect;
use crate::summary::{
    self, Coverage, Exit, ThresholdOutcome, CHECKER_VERSION, FIRST_CHECKER_VERSION,
};
use crate::verdict::{CheckResult, Verdict};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of `audit.json` ([`Audit::schema_version`]); bumped on any
/// incompatible change. 1: the first, also of a file that names none.
pub const AUDIT_SCHEMA_VERSION: u32 = 1;

/// The audited results of a run folder and their comparison with the run's.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Audit {
    /// [`AUDIT_SCHEMA_VERSION`] of the writer (absent in files written
    /// before it was recorded: version 1).
    #[serde(default = "first_audit_schema_version")]
    pub schema_version: u32,
    /// The run folder audited.
    pub run_dir: String,
    /// Where the final tables were read from (`target.db` or `export.json`).
    pub tables: String,
    /// The checkers' results over the saved history and tables, in the
    /// run's order (TypeOK, OneGroupPerFingerprint, CountExact,
    /// NoMissedRegression).
    pub results: Vec<CheckResult>,
    /// Stranded events, as the run reports them.
    pub stranded: Stranded,
    /// What the history exercised.
    pub coverage: Coverage,
    /// Per invariant, the chances the history gave it to see a violation
    /// (and per fault with a duration, those while it was active).
    #[serde(default)]
    pub evidence: EvidenceReport,
    /// Whether every invariant's verdict, violations and unknowns equal
    /// the run's (`checks.json`), and the history is the one it recorded.
    pub same_as_run: bool,
    /// Each difference from the run's records that the audit cannot
    /// explain, in words (empty when it confirms the run): exit 3.
    pub differences: Vec<String>,
    /// The version of the checkers that judged this audit.
    #[serde(default = "first_checker_version")]
    pub checker_version: u32,
    /// The version of the checkers that judged the run, as its
    /// `summary.json` records it (None: no readable `summary.json`).
    #[serde(default)]
    pub run_checker_version: Option<u32>,
    /// Each difference from the run's verdicts when the run was judged by
    /// other checkers (`run_checker_version` is not `checker_version`):
    /// the rules changed, so these confirm or refute nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checker_changes: Vec<String>,
    /// The audit's exit code and the rule that decided it: 3 when
    /// `differences` is not empty, else the run's rule over the audited
    /// results.
    pub exit: Exit,
    /// The run saved no verdicts (it was killed): what the audit says of
    /// it. None for a run that saved its verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed: Option<crate::audit_killed::Killed>,
}

fn first_checker_version() -> u32 {
    FIRST_CHECKER_VERSION
}

fn first_audit_schema_version() -> u32 {
    1
}

/// A run folder the audit can use: the files it found in it, for the
/// workload that wrote it ([`crate::workload::traits::Workload::audit`]).
#[derive(Debug, Clone, Copy)]
pub struct AuditFolder<'a> {
    /// The run folder.
    pub run_dir: &'a Path,
    /// Its history file (`history.bin`, or `history.jsonl` of an earlier
    /// release).
    pub history: &'a Path,
    /// Its `scenario.toml` (the resolved scenario; its `variant` is the
    /// folder's `variant.sql`).
    pub scenario: &'a Path,
    /// The run saved no verdicts (no `checks.json`: it was killed): its
    /// final tables may be found elsewhere ([`crate::audit_tables::locate`]).
    pub killed: bool,
    /// The bounds of a read of the folder's database.
    pub limits: crate::audit_db::Limits,
}

/// What a workload's audit judged of a run folder: its verdicts, and what
/// the shared part of the audit ([`crate::audit`]) needs to compare them
/// with the run's records and decide the exit.
#[derive(Debug, Clone)]
pub struct Rejudged {
    /// Where the final tables were read from (`target.db`, `export.json`).
    pub tables: String,
    /// The checkers' results, in the run's order.
    pub results: Vec<CheckResult>,
    /// Stranded events (groups), as the run reports them.
    pub stranded: Stranded,
    /// What the history exercised.
    pub coverage: Coverage,
    /// The chances the history gave each invariant.
    pub evidence: EvidenceReport,
    /// The history as read.
    pub history: HistoryRead,
    /// Ops (and fault records) a killed run may not have sent yet
    /// ([`crate::audit_killed::killed`]).
    pub in_flight: u64,
    /// The run's expectation (its saved scenario's).
    pub expect: Expect,
}

/// What the audit read of a history: enough to tell whether it is the one
/// the run recorded (`summary.json`) and whether it is whole.
#[derive(Debug, Clone, Copy, Default)]
pub struct HistoryRead {
    /// It ends with a footer (it was written to its end).
    pub footer: bool,
    /// The footer says the run was partial (interrupted).
    pub partial: bool,
    /// Ops invoked.
    pub ops: u64,
    /// Ops without a completion.
    pub unfinished: u64,
    /// Bytes of a last line cut mid-way, left out (0: none).
    pub cut_line_bytes: u64,
}

/// Why `specstorm audit` does not judge a folder of workload `workload`
/// (exit 2): it is not a workload of this build, or it has no audit.
pub fn refused(run_dir: &Path, workload: &str) -> AuditError {
    // A workload registered at run time is judged by its own run only,
    // unless it brings an audit.
    AuditError::Input(format!(
        "{} is a run of workload {workload:?}, which this build cannot re-judge: `specstorm \
         audit` re-judges runs of the workloads built in or registered with an audit",
        run_dir.display()
    ))
}

/// The audited results against the run's records, sorted by what explains
/// each difference.
pub(crate) struct Reconciled {
    /// Differences nothing explains: the audit cannot confirm the run.
    pub differences: Vec<String>,
    /// Verdict differences explained by a change of the checkers.
    pub checker_changes: Vec<String>,
    /// The run's checker version, if its summary could be read.
    pub run_checker_version: Option<u32>,
}

/// The checker version a run folder's `summary.json` records: None when
/// there is no readable summary (nothing is known, so nothing is excused),
/// else its `provenance.checker_version`, or 1 for a summary written
/// before the version was recorded.
pub(crate) fn recorded_checker_version(summary: &serde_json::Value) -> Option<u32> {
    if !summary.is_object() {
        return None;
    }
    Some(
        summary
            .pointer("/provenance/checker_version")
            .and_then(serde_json::Value::as_u64)
            .map_or(FIRST_CHECKER_VERSION, |v| {
                u32::try_from(v).unwrap_or(u32::MAX)
            }),
    )
}

/// Sorts the differences from the run's records. `verdicts` are the
/// verdict differences ([`compare`]), `records` those of the history
/// (never excused: a history that is not the run's confirms nothing).
/// Verdict differences are the checkers' change when the run recorded
/// another checker version than [`CHECKER_VERSION`]; else they are
/// differences the audit cannot explain.
pub(crate) fn reconcile(
    verdicts: Vec<String>,
    records: Vec<String>,
    summary: &serde_json::Value,
) -> Reconciled {
    let run_checker_version = recorded_checker_version(summary);
    let changed = run_checker_version.is_some_and(|v| v != CHECKER_VERSION);
    let (mut differences, checker_changes) = if changed {
        (Vec::new(), verdicts)
    } else {
        (verdicts, Vec::new())
    };
    differences.extend(records);
    Reconciled {
        differences,
        checker_changes,
        run_checker_version,
    }
}

/// The run's verdicts (`checks.json`). Errors: unreadable (exit 3), over
/// its size cap (exit 2).
pub(crate) fn read_saved(checks: &Path) -> Result<Vec<CheckResult>, AuditError> {
    let text = crate::input::read_to_string(checks, crate::input::RUN_JSON)
        .map_err(|e| AuditError::reading(e.in_file(checks.display()).into()))?;
    serde_json::from_str(&text)
        .map_err(|e| AuditError::Unreadable(format!("{}: {e}", checks.display())))
}

/// The run's `summary.json` as JSON (null when absent or unreadable: the
/// checks that use it then say nothing). Errors: over its size cap (exit 2).
pub(crate) fn read_summary(run_dir: &Path) -> Result<serde_json::Value, AuditError> {
    let path = run_dir.join("summary.json");
    match crate::input::read(&path, crate::input::RUN_JSON) {
        Ok(b) => Ok(serde_json::from_slice(&b).unwrap_or_default()),
        Err(e) if e.is_too_large() => Err(AuditError::Input(e.in_file(path.display()).to_string())),
        Err(_) => Ok(serde_json::Value::Null),
    }
}

/// The differences of a re-read history from what `summary.json`
/// recorded of it (`history.ops`, `history.unfinished_ops`), and a missing
/// footer. Empty when it matches, or when the summary does not say.
pub(crate) fn recorded_changes(
    summary: &serde_json::Value,
    has_footer: bool,
    ops: u64,
    unfinished: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    let Some(recorded) = summary.get("history") else {
        return out;
    };
    if !has_footer {
        out.push("the history has no footer: it was cut short after the run wrote it".to_string());
    }
    for (key, now) in [("ops", ops), ("unfinished_ops", unfinished)] {
        if let Some(then) = recorded.get(key).and_then(serde_json::Value::as_u64) {
            if then != now {
                out.push(format!(
                    "the history: the run recorded {then} {key}, the file now holds {now}"
                ));
            }
        }
    }
    out
}

/// An audit's exit (both workloads): 3 when anything differs from the
/// run's records that the audit cannot explain (`differences`, see
/// [`reconcile`]), else the run's rule over the audited
/// results, with the thresholds the run judged (load figures, which an
/// audit of the verdicts does not change: read from the saved summary).
pub fn audit_exit(
    differences: &[String],
    partial: bool,
    results: &[CheckResult],
    coverage: &Coverage,
    expect: &Expect,
    saved_summary: &serde_json::Value,
) -> Exit {
    if !differences.is_empty() {
        return Exit::new(
            ExitCode::Target,
            format!(
                "the audit cannot confirm the run: {} difference(s) from the run's records",
                differences.len()
            ),
        );
    }
    let thresholds: Vec<ThresholdOutcome> =
        serde_json::from_value(saved_summary["thresholds"].clone()).unwrap_or_default();
    exit_for(partial, results, coverage, expect, &thresholds)
}

/// The exit code of audited results, by the run's own rule (cli.md: 130
/// interrupted, 1 violated, 4 inconclusive, else 0). The one call of
/// [`summary::exit`] for audits and merges, so that a change of that rule
/// (expectations) is adapted here only. No target error: an offline audit
/// judges saved files, not the target.
///
/// `expect` is the run's expectation (its saved scenario's); `thresholds`
/// are the run's judged thresholds (load figures, which an audit of the
/// verdicts does not change).
pub fn exit_for(
    partial: bool,
    results: &[CheckResult],
    coverage: &Coverage,
    expect: &Expect,
    thresholds: &[ThresholdOutcome],
) -> Exit {
    summary::exit(partial, None, results, coverage, expect, thresholds)
}

/// Each difference between the run's verdicts and the audit's, per
/// invariant: verdict, violations and unknowns (explanations may quote
/// other instants and are not compared).
pub fn compare(saved: &[CheckResult], audited: &[CheckResult]) -> Vec<String> {
    let line = |r: &CheckResult| {
        format!(
            "{} ({} violations, {} unknowns)",
            verdict_name(r.verdict),
            r.violations,
            r.unknowns
        )
    };
    let mut out = Vec::new();
    for a in audited {
        match saved.iter().find(|s| s.invariant == a.invariant) {
            None => out.push(format!(
                "{}: not in checks.json; the audit says {}",
                a.invariant,
                line(a)
            )),
            Some(s)
                if s.verdict != a.verdict
                    || s.violations != a.violations
                    || s.unknowns != a.unknowns =>
            {
                out.push(format!(
                    "{}: the run said {}, the audit says {}",
                    a.invariant,
                    line(s),
                    line(a)
                ))
            }
            Some(_) => {}
        }
    }
    for s in saved {
        if !audited.iter().any(|a| a.invariant == s.invariant) {
            out.push(format!(
                "{}: in checks.json ({}), not judged by the audit",
                s.invariant,
                line(s)
            ));
        }
    }
    out
}

pub(crate) fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::Violated => "violated",
        Verdict::Unknown => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recorded_checker_version_is_1_without_the_field_and_unknown_without_a_summary() {
        assert_eq!(recorded_checker_version(&serde_json::Value::Null), None);
        assert_eq!(
            recorded_checker_version(&json!({"provenance": {"tool": "specstorm"}})),
            Some(FIRST_CHECKER_VERSION)
        );
        assert_eq!(
            recorded_checker_version(&json!({"provenance": {"checker_version": 7}})),
            Some(7)
        );
    }

    #[test]
    fn only_verdict_differences_are_excused_and_only_by_another_version() {
        let v = || vec!["CountExact: the run said violated".to_string()];
        let h = || vec!["the history has no footer".to_string()];
        let old = json!({"provenance": {"checker_version": 1}});
        let now = json!({"provenance": {"checker_version": CHECKER_VERSION}});

        let r = reconcile(v(), h(), &old);
        assert_eq!(r.checker_changes, v());
        assert_eq!(r.differences, h());
        assert_eq!(r.run_checker_version, Some(1));

        let r = reconcile(v(), vec![], &now);
        assert_eq!(r.differences, v());
        assert!(r.checker_changes.is_empty());

        // No readable summary: nothing is known of the run's checkers, so
        // nothing is excused.
        let r = reconcile(v(), vec![], &serde_json::Value::Null);
        assert_eq!(r.differences, v());
        assert_eq!(r.run_checker_version, None);
    }
}
