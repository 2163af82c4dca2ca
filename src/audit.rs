//! `specstorm audit RUN_DIR`: the checkers run again, offline, over a run
//! folder's saved history (`history.jsonl`) and final tables (`target.db`
//! read through the saved `variant.sql`'s export statements for an
//! in-process SQLite run, `export.json` for an HTTP run), and the verdicts
//! are compared with the ones the run saved (`checks.json`). Nothing in the
//! folder changes but `audit.json`, which holds the audited results and the
//! comparison; the folder's database and queries are not trusted (see
//! [`crate::audit_db`]).
//!
//! An audit that finds other verdicts than the run, by the same checkers,
//! cannot confirm it (exit 3): the history, the tables or the recorded
//! verdicts changed after the run. Where the run recorded another checker
//! version ([`CHECKER_VERSION`]), other verdicts are the rules' change,
//! not evidence against the folder: the audit says so and reports the new
//! verdicts. A history that is not the one the run wrote (other op counts,
//! no footer) is exit 3 whatever the checkers. Otherwise the exit code is
//! the one the run's own rule gives for the audited results
//! ([`exit_for`]).
//!
//! A run killed before it saved its verdicts (no `checks.json`) is judged
//! on what its folder holds, with nothing to compare ([`crate::audit_killed`]):
//! a history without a footer is cut, and the checkers apply the rules for
//! a cut history; the exit is the run's rule over those verdicts.
//!
//! The final rows are a probe of every resolved group (NoMissedRegression),
//! taken in the interval of the final read. The history's footer records
//! that interval; an older history without it gets an instant after every
//! entry of the history, which orders against every op exactly as the real
//! read did (the read began after the load drained, and the footer is
//! written after it), so the verdicts are the same; only the instant quoted
//! in an explanation may differ. A killed run's database is read after the
//! bench died, so that instant orders against every recorded op as the
//! real read did.

use crate::audit_db::{open_untrusted, Limits};
use crate::checker::stranded::Stranded;
use crate::checker::{
    check_all, CheckResult, Facts, GroupRow, Tables, Verdict, CHECKER_VERSION,
    FIRST_CHECKER_VERSION,
};
use crate::history::{reader, Entry, Footer, Header};
use crate::report::summary::{self, Coverage, Exit, ThresholdOutcome};
use crate::scenario::Expect;
use crate::statements::GroupsVariant;
use crate::workload::Value;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File the audit writes into the run folder.
pub const FILE: &str = "audit.json";

/// Why an audit could not be done; each maps to a cli.md exit code.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// RUN_DIR is not a run folder, or lacks a file the audit needs (the
    /// message names it): exit 2.
    #[error("{0}")]
    Input(String),
    /// A file is there but cannot be read as what a run writes (a broken
    /// history, an unreadable database): exit 3, nothing can be judged.
    #[error("{0}")]
    Unreadable(String),
    /// `audit.json` could not be written (a full disk): exit 3. It is
    /// left as it was, or absent.
    #[error(transparent)]
    Write(#[from] crate::whole::WriteError),
}

impl AuditError {
    /// The exit code (cli.md): 2 for a folder that is no run folder or
    /// lacks a file, 3 for a file that cannot be read.
    pub fn exit_code(&self) -> i32 {
        match self {
            AuditError::Input(_) => 2,
            AuditError::Unreadable(_) | AuditError::Write(_) => 3,
        }
    }

    /// A file that could not be read: unreadable (exit 3), or refused for
    /// its size ([`crate::input`]), a refused input (exit 2).
    pub(crate) fn reading(e: anyhow::Error) -> AuditError {
        if crate::input::is_too_large(&e) {
            AuditError::Input(format!("{e:#}"))
        } else {
            AuditError::Unreadable(format!("{e:#}"))
        }
    }
}

/// The audited results of a run folder and their comparison with the run's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Audit {
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
    pub evidence: crate::checker::evidence::EvidenceReport,
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

/// Audits a run folder and writes `audit.json` into it; returns the audit
/// and, when `audit.json` could not be written (a read-only folder), why
/// (the file and the error). The verdicts and the exit do not depend on
/// that write: the caller warns. Errors: see [`AuditError`] (the message
/// names the missing file).
pub fn audit(run_dir: &Path) -> Result<(Audit, Option<String>), AuditError> {
    audit_with(run_dir, Limits::default())
}

/// [`audit`] within `limits` (the database's size, the queries' work).
pub fn audit_with(run_dir: &Path, limits: Limits) -> Result<(Audit, Option<String>), AuditError> {
    let audit = judge_with(run_dir, limits)?;
    let json = serde_json::to_string_pretty(&audit)
        .map_err(|e| AuditError::Unreadable(format!("cannot encode the audit: {e}")))?;
    // The verdicts stand whether or not they could be saved (a read-only
    // folder): the caller warns.
    let unsaved = crate::whole::write_whole(&run_dir.join(FILE), json)
        .err()
        .map(|e| e.to_string());
    Ok((audit, unsaved))
}

/// What [`audit`] does, without writing `audit.json`.
pub fn judge(run_dir: &Path) -> Result<Audit, AuditError> {
    judge_with(run_dir, Limits::default())
}

/// What [`audit_with`] does, without writing `audit.json`.
pub fn judge_with(run_dir: &Path, limits: Limits) -> Result<Audit, AuditError> {
    if !run_dir.is_dir() {
        return Err(AuditError::Input(format!(
            "{} is not a run folder (no such folder)",
            run_dir.display()
        )));
    }
    let need = |name: &str, what: &str| {
        crate::run_dir::folder_file(run_dir, name).map_err(|is| {
            AuditError::Input(format!(
                "{} is not a run folder the audit can use: {name} {is} ({what})",
                run_dir.display()
            ))
        })
    };
    if run_dir.join("compare.json").is_file() {
        return Err(AuditError::Input(format!(
            "{} is a compare folder: audit each variant's run folder in it (e.g. {})",
            run_dir.display(),
            run_dir.join("<variant name>").display()
        )));
    }
    let history = need("history.jsonl", "the history of every op")?;
    // A run killed before it judged saved no verdicts: nothing to compare.
    let checks = Some(run_dir.join("checks.json")).filter(|p| p.is_file());
    let scenario = need("scenario.toml", "the resolved scenario")?;
    need("variant.sql", "the statement file with the export queries")?;
    let outbox = read_header(&history)
        .map_err(|e| AuditError::reading(e.context(history.display().to_string())))?
        .is_some_and(|h| h.workload == "outbox");
    if outbox {
        return crate::audit_outbox::judge(run_dir, &history, checks.as_deref(), &scenario, limits);
    }
    let p = crate::run::prepare_offline(Some(&scenario), &[])
        .map_err(|e| AuditError::Input(format!("the saved scenario cannot be used: {e}")))?;
    let saved = checks.as_deref().map(read_saved).transpose()?;

    let read = read_history(&history)?;
    let header = read.facts.header.clone().expect("read_history checks it");
    let saved_summary = read_summary(run_dir)?;
    let killed = saved.is_none().then(|| {
        crate::audit_killed::killed(
            read.footer.is_some(),
            read.cut_line_bytes,
            crate::audit_killed::in_flight_groups(&p.scenario),
            &saved_summary,
        )
    });
    let (mut tables, source) = crate::audit_tables::final_tables(
        run_dir,
        &p,
        &header.namespace,
        killed.is_some(),
        read.footer.is_none(),
        limits,
    )?;
    [tables.read_start, tables.read_end] = read.tables_read();
    tables.events_pruned = p
        .scenario
        .audit
        .as_ref()
        .is_some_and(|a| a.events == crate::scenario::api::EventRows::Pruned);
    let (mut results, stranded) = check_all(&read.facts, &tables);
    let evidence = crate::checker::evidence::judge(
        &read.facts,
        &tables,
        &p.scenario.min_evidence(),
        &mut results,
    );
    if let Some(m) = &header.merged {
        crate::merge::note_skew(&mut results, m);
    }
    // A shard of several is not judged alone, as its run did not judge it.
    let shard = header.shard.as_ref().map(|s| crate::generator::Shard {
        index: s.index,
        count: s.count,
    });
    let (results, stranded) = match crate::merge::shard_verdicts(shard) {
        Some(r) => (r, Default::default()),
        None => (results, stranded),
    };
    let coverage = coverage(&read.facts, &tables);
    let partial = read.footer.as_ref().is_some_and(|f| f.partial);
    // Same verdicts over a changed history would confirm nothing: the
    // history must be the one the run wrote (to the end, same op counts).
    let r = reconcile(
        saved
            .as_ref()
            .map_or_else(Vec::new, |s| compare(s, &results)),
        history_changes(&read, &saved_summary),
        &saved_summary,
    );
    let exit = audit_exit(
        &r.differences,
        partial,
        &results,
        &coverage,
        &p.scenario.expectation().0,
        &saved_summary,
    );
    Ok(Audit {
        run_dir: run_dir.display().to_string(),
        tables: source,
        results,
        stranded,
        coverage,
        evidence,
        same_as_run: killed.is_none() && r.differences.is_empty() && r.checker_changes.is_empty(),
        differences: r.differences,
        checker_version: CHECKER_VERSION,
        run_checker_version: r.run_checker_version,
        checker_changes: r.checker_changes,
        exit,
        killed,
    })
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
        out.push(
            "history.jsonl has no footer: it was cut short after the run wrote it".to_string(),
        );
    }
    for (key, now) in [("ops", ops), ("unfinished_ops", unfinished)] {
        if let Some(then) = recorded.get(key).and_then(serde_json::Value::as_u64) {
            if then != now {
                out.push(format!(
                    "history.jsonl: the run recorded {then} {key}, the file now holds {now}"
                ));
            }
        }
    }
    out
}

/// How the history read differs from what the run recorded of it in
/// `summary.json`: no footer (a run that saved a summary wrote its history
/// to the end), or other op counts. Empty when it matches, or when the
/// summary does not say.
fn history_changes(read: &ReadHistory, summary: &serde_json::Value) -> Vec<String> {
    recorded_changes(
        summary,
        read.footer.is_some(),
        read.facts.ops,
        read.facts.unfinished,
    )
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
        return Exit {
            code: 3,
            rule: format!(
                "the audit cannot confirm the run: {} difference(s) from the run's records",
                differences.len()
            ),
        };
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

/// A history read for an audit: its facts, its footer, and its last time.
pub struct ReadHistory {
    /// What the checkers take from it (a history without a footer is cut:
    /// [`Facts::completeness`]).
    pub facts: Facts,
    /// The footer, if the history was written to the end.
    pub footer: Option<Footer>,
    /// The latest time of any entry but the footer, ns since run start.
    pub last_t: u64,
    /// Bytes of a last line cut mid-way, left out (0: none; only without
    /// a footer).
    pub cut_line_bytes: u64,
}

impl ReadHistory {
    /// The final read's interval, ns since run start: the footer's record,
    /// or else an instant after every entry (see the module's doc).
    pub fn tables_read(&self) -> [u64; 2] {
        self.footer
            .as_ref()
            .and_then(|f| f.tables_read)
            .unwrap_or([self.last_t + 1, self.last_t + 1])
    }
}

/// Reads a history for an audit. A history without a footer is cut (its
/// facts say so), and a last line cut mid-way is left out. Errors: it
/// cannot be read, has no header, or is not one a run wrote (exit 3).
pub fn read_history(path: &Path) -> Result<ReadHistory, AuditError> {
    let bad = AuditError::reading;
    let mut footer = None;
    let mut last_t = 0u64;
    let (entries, cut_line_bytes) = crate::audit_killed::entries(path)?;
    let mut facts = Facts::from_entries(entries.inspect(|e| {
        if let Ok(e) = e {
            match e {
                Entry::Footer(f) => footer = Some(f.clone()),
                other => last_t = last_t.max(entry_time(other)),
            }
        }
    }))
    .map_err(bad)?;
    if facts.header.is_none() {
        return Err(AuditError::Unreadable(format!(
            "{}: no header line: not a history a run wrote",
            path.display()
        )));
    }
    facts.completeness = crate::audit_killed::completeness(path, footer.is_some(), cut_line_bytes)?;
    Ok(ReadHistory {
        facts,
        footer,
        last_t,
        cut_line_bytes,
    })
}

/// The latest time an entry carries, ns since run start (0 for a header).
pub fn entry_time(e: &Entry) -> u64 {
    match e {
        Entry::Header(_) => 0,
        Entry::Invoke(i) => i.t.max(i.intended.unwrap_or(0)),
        Entry::Step(s) => s.end.unwrap_or(s.start).max(s.start),
        Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) => c.t,
        Entry::Fault(f) => f.t,
        Entry::Bench(b) => b.end.max(b.t),
        Entry::Footer(f) => f.t,
    }
}

/// The first line of a history, if it is a header. Errors: the file
/// cannot be read or its first line is not a history entry.
pub fn read_header(path: &Path) -> anyhow::Result<Option<Header>> {
    match reader::read(path)?.next() {
        Some(Ok(Entry::Header(h))) => Ok(Some(h)),
        Some(Err(e)) => Err(e),
        _ => Ok(None),
    }
}

/// What a history and its final tables exercised: events certainly
/// counted, and probes that showed a group resolved (refused resolves'
/// probes, and final rows reading resolved).
pub fn coverage(facts: &Facts, tables: &Tables) -> Coverage {
    let probes = facts
        .groups
        .values()
        .map(|g| g.probes.len() as u64)
        .sum::<u64>()
        + tables
            .groups
            .iter()
            .filter(|g| g.status.as_str() == Some("resolved"))
            .count() as u64;
    Coverage::new(
        facts.events.values().filter(|e| e.done).count() as u64,
        probes,
    )
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

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::Violated => "violated",
        Verdict::Unknown => "unknown",
    }
}

/// The audit in words: each invariant's verdict, counts and first
/// explanation, then whether the run's verdicts were confirmed, and the exit.
pub fn render(a: &Audit) -> String {
    let mut s = format!(
        "specstorm audit: {} (history.jsonl and {})\n",
        a.run_dir, a.tables
    );
    if let Some(k) = &a.killed {
        s.push_str(&format!("{}\n", k.note));
    }
    s.push_str("invariants:\n");
    for r in &a.results {
        s.push_str(&format!(
            "  {:<24} {:<8} violations {}  unknowns {}\n",
            r.invariant,
            verdict_name(r.verdict),
            r.violations,
            r.unknowns
        ));
        if let Some(first) = r.first_explanation() {
            s.push_str(&format!("    first: {first}\n"));
        }
    }
    if a.same_as_run {
        s.push_str("same verdicts as the run (checks.json)\n");
    }
    if !a.checker_changes.is_empty() {
        s.push_str(&format!(
            "the checkers changed since this run (run: v{}, now: v{}): the verdicts above are \
             the new checkers'; the run's (checks.json) were:\n",
            a.run_checker_version.unwrap_or(FIRST_CHECKER_VERSION),
            a.checker_version
        ));
        for d in &a.checker_changes {
            s.push_str(&format!("  {d}\n"));
        }
    }
    if !a.differences.is_empty() {
        s.push_str("differs from the run (checks.json):\n");
        for d in &a.differences {
            s.push_str(&format!("  {d}\n"));
        }
    }
    s.push_str(&format!("exit {}: {}", a.exit.code, a.exit.rule));
    s
}

/// Reads the final tables of a saved database through the variant's
/// export queries, trusting neither (see [`crate::audit_db`]). Errors:
/// unreadable (exit 3), naming a stop by the budget or a refusal.
pub(crate) fn read_db(
    db: &Path,
    variant: &GroupsVariant,
    namespace: &str,
    limits: Limits,
) -> Result<Tables, AuditError> {
    let mut conn = open_untrusted(db, limits)?;
    read_tables(&mut conn, variant, namespace, &|| 0).map_err(|e| conn.error(&e))
}

/// Reads the canonical tables (the variant's `export.*` queries) in one
/// read transaction, keeping only projects that start with `namespace`
/// (all when empty). `now` gives the read's start and end, ns since run
/// start. Errors: SQLite's (a query fails, a table is missing).
pub fn read_tables(
    conn: &mut Connection,
    variant: &GroupsVariant,
    namespace: &str,
    now: &dyn Fn() -> u64,
) -> rusqlite::Result<Tables> {
    read_tables_with(
        conn,
        (&variant.export_events, &variant.export_groups),
        namespace,
        now,
    )
}

/// [`read_tables`] with the two export queries given: `export.events`
/// (id, project, fingerprint, ...) and `export.groups` (id, project,
/// fingerprint, status, event_count), in that column order. Errors: a
/// query SQLite refuses, or a row with fewer columns.
pub fn read_tables_with(
    conn: &mut Connection,
    (export_events, export_groups): (&str, &str),
    namespace: &str,
    now: &dyn Fn() -> u64,
) -> rusqlite::Result<Tables> {
    let tx = conn.transaction()?;
    let mut t = Tables {
        read_start: now(),
        ..Default::default()
    };
    let mine = |project: &Value| {
        namespace.is_empty() || project.as_str().is_some_and(|p| p.starts_with(namespace))
    };
    {
        let mut st = tx.prepare(export_events)?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let project = Value::from(r.get_ref(1)?);
            if mine(&project) {
                t.add_event(
                    &Value::from(r.get_ref(0)?),
                    &project,
                    &Value::from(r.get_ref(2)?),
                );
            }
        }
    }
    {
        let mut st = tx.prepare(export_groups)?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let row = GroupRow {
                id: Value::from(r.get_ref(0)?),
                project: Value::from(r.get_ref(1)?),
                fingerprint: Value::from(r.get_ref(2)?),
                status: Value::from(r.get_ref(3)?),
                event_count: Value::from(r.get_ref(4)?),
            };
            if mine(&row.project) {
                t.groups.push(row);
            }
        }
    }
    t.read_end = now();
    tx.commit()?;
    Ok(t)
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
        let h = || vec!["history.jsonl has no footer".to_string()];
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
