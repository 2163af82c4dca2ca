//! `specstorm audit RUN_DIR` on an outbox run folder: the outbox checkers
//! run again over the saved `history.jsonl` (as [`OutboxFacts`]) and
//! `target.db` (read through the saved `variant.sql`'s `export.*`
//! statements, as the run read it), and their verdicts are compared with
//! the run's `checks.json`; the history must also still hold the ops the
//! run's `summary.json` recorded. The result is the groups audit's
//! [`Audit`] (no stranded events), so `audit.json` and the exit rule are
//! the same for both workloads.

use crate::audit::{
    compare, read_saved, read_summary, reconcile, recorded_changes, Audit, AuditError,
};
use crate::checker::outbox::{check_all, tables, OutboxFacts};
use crate::history::{reader, Entry, Footer};
use std::path::Path;

/// Audits the outbox run folder `run_dir` from its files (`history`,
/// `checks`, `scenario`, `db`: paths the caller found there), reading the
/// database within `limits`. Errors: the saved scenario or statement file
/// cannot be used, or a file is over its size cap (exit 2); the history or
/// the database cannot be read (exit 3).
pub fn judge(
    run_dir: &Path,
    history: &Path,
    checks: &Path,
    scenario: &Path,
    db: &Path,
    limits: crate::audit_db::Limits,
) -> Result<Audit, AuditError> {
    let p = crate::outbox_run::prepare(Some(scenario), &[])
        .map_err(|e| AuditError::Input(format!("the saved scenario cannot be used: {e}")))?;
    let saved = read_saved(checks)?;
    let bad = AuditError::reading;
    let mut footer: Option<Footer> = None;
    let facts = OutboxFacts::read(reader::read(history).map_err(bad)?.inspect(|e| {
        if let Ok(Entry::Footer(f)) = e {
            footer = Some(f.clone());
        }
    }))
    .map_err(bad)?;
    if facts.header.is_none() {
        return Err(AuditError::Unreadable(format!(
            "{}: its header has no outbox queue (messages, deliveries): not an outbox history \
             a run wrote",
            history.display()
        )));
    }
    let mut conn = crate::audit_db::open_untrusted(db, limits)?;
    let mut tables = tables::read(&mut conn, &p.variant, &|| 0).map_err(|e| conn.error(&e))?;
    if let Some([a, b]) = footer.as_ref().and_then(|f| f.tables_read) {
        (tables.read_start, tables.read_end) = (a, b);
    }
    let (results, liveness) = check_all(&facts, &tables);
    let coverage = crate::outbox_run::coverage(&liveness);
    // Same verdicts over a changed history would confirm nothing.
    let saved_summary = read_summary(run_dir)?;
    let unfinished = facts.attempts.iter().filter(|a| a.t1.is_none()).count() as u64;
    let r = reconcile(
        compare(&saved, &results),
        recorded_changes(
            &saved_summary,
            footer.is_some(),
            facts.attempts.len() as u64,
            unfinished,
        ),
        &saved_summary,
    );
    let partial = footer.as_ref().is_some_and(|f| f.partial);
    let exit = crate::audit::audit_exit(
        &r.differences,
        partial,
        &results,
        &coverage,
        &p.scenario.expectation().0,
        &saved_summary,
    );
    Ok(Audit {
        run_dir: run_dir.display().to_string(),
        tables: "target.db".into(),
        results,
        stranded: Default::default(),
        coverage,
        evidence: Default::default(),
        same_as_run: r.differences.is_empty() && r.checker_changes.is_empty(),
        differences: r.differences,
        checker_version: crate::checker::CHECKER_VERSION,
        run_checker_version: r.run_checker_version,
        checker_changes: r.checker_changes,
        exit,
    })
}
