//! `specstorm audit RUN_DIR`: the checkers run again, offline, over a run
//! folder's saved history (`history.bin`, or an earlier release's
//! `history.jsonl`) and final tables (`target.db`
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
//! ([`crate::audit_record::exit_for`]).
//!
//! A run killed before it saved its verdicts (no `checks.json`) is judged
//! on what its folder holds, with nothing to compare ([`crate::audit_killed`]):
//! a history without a footer is cut, and the checkers apply the rules for
//! a cut history; the exit is the run's rule over those verdicts.
//!
//! What is read and judged is the workload's: audit asks the registry
//! for the workload the history's header names
//! ([`crate::workload::traits::Workload::audit`]), which returns its
//! verdicts and what its history held ([`Rejudged`]); the comparison with
//! the run's records, the note of a killed run and the exit are shared,
//! here. A workload that brings no audit is refused (exit 2).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::audit_db::Limits;
use crate::audit_error::AuditError;
use crate::audit_history::read_header;
use crate::audit_record::{
    audit_exit, compare, read_saved, read_summary, reconcile, recorded_changes, refused,
    verdict_name, Audit, AuditFolder,
};
use crate::summary::{CHECKER_VERSION, FIRST_CHECKER_VERSION};
use std::path::Path;

/// File the audit writes into the run folder.
pub const FILE: &str = "audit.json";

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
    let history = crate::history::file::in_folder(run_dir);
    let history = need(
        &history.file_name().unwrap_or_default().to_string_lossy(),
        "the history of every op",
    )?;
    // A run killed before it judged saved no verdicts: nothing to compare.
    let checks = Some(run_dir.join("checks.json")).filter(|p| p.is_file());
    let scenario = need("scenario.toml", "the resolved scenario")?;
    need("variant.sql", "the statement file with the export queries")?;
    let header = read_header(&history)
        .map_err(|e| AuditError::reading(e.context(history.display().to_string())))?;
    let Some(header) = header else {
        return Err(AuditError::Unreadable(format!(
            "{}: no header line: not a history a run wrote",
            history.display()
        )));
    };
    let workload = crate::workload::registry::get(&header.workload)
        .ok_or_else(|| refused(run_dir, &header.workload))?;
    let j = workload.audit(&AuditFolder {
        run_dir,
        history: &history,
        scenario: &scenario,
        killed: checks.is_none(),
        limits,
    })?;
    let saved = checks.as_deref().map(read_saved).transpose()?;
    let saved_summary = read_summary(run_dir)?;
    let killed = saved.is_none().then(|| {
        crate::audit_killed::killed(
            j.history.footer,
            j.history.cut_line_bytes,
            j.in_flight,
            &saved_summary,
        )
    });
    // Same verdicts over a changed history would confirm nothing: the
    // history must be the one the run wrote (to the end, same op counts).
    let r = reconcile(
        saved
            .as_ref()
            .map_or_else(Vec::new, |s| compare(s, &j.results)),
        recorded_changes(
            &saved_summary,
            j.history.footer,
            j.history.ops,
            j.history.unfinished,
        ),
        &saved_summary,
    );
    let exit = audit_exit(
        &r.differences,
        j.history.partial,
        &j.results,
        &j.coverage,
        &j.expect,
        &saved_summary,
    );
    Ok(Audit {
        schema_version: crate::audit_record::AUDIT_SCHEMA_VERSION,
        run_dir: run_dir.display().to_string(),
        tables: j.tables,
        results: j.results,
        stranded: j.stranded,
        coverage: j.coverage,
        evidence: j.evidence,
        same_as_run: killed.is_none() && r.differences.is_empty() && r.checker_changes.is_empty(),
        differences: r.differences,
        checker_version: CHECKER_VERSION,
        run_checker_version: r.run_checker_version,
        checker_changes: r.checker_changes,
        exit,
        killed,
    })
}

/// The audit in words: each invariant's verdict, counts and first
/// explanation, then whether the run's verdicts were confirmed, and the exit.
pub fn render(a: &Audit) -> String {
    let mut s = format!(
        "specstorm audit: {} (its history and {})\n",
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
