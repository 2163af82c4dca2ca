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
//! ([`crate::audit_record::exit_for`]).
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
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::audit_db::Limits;
use crate::audit_error::AuditError;
use crate::audit_record::{
    audit_exit, compare, read_saved, read_summary, reconcile, recorded_changes, verdict_name, Audit,
};
use crate::checker::{check_all, Facts, CHECKER_VERSION, FIRST_CHECKER_VERSION};
use crate::history::{reader, Entry, Footer, Header};
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
    let history = need("history.jsonl", "the history of every op")?;
    // A run killed before it judged saved no verdicts: nothing to compare.
    let checks = Some(run_dir.join("checks.json")).filter(|p| p.is_file());
    let scenario = need("scenario.toml", "the resolved scenario")?;
    need("variant.sql", "the statement file with the export queries")?;
    let workload = read_header(&history)
        .map_err(|e| AuditError::reading(e.context(history.display().to_string())))?
        .map(|h| h.workload);
    if let Some(w) = workload
        .as_deref()
        .filter(|w| !["groups", "outbox"].contains(w))
    {
        // A workload registered at run time is judged by its own run only.
        return Err(AuditError::Input(format!(
            "{} is a run of workload {w:?}: `specstorm audit` re-judges groups and outbox \
             runs (for now)",
            run_dir.display()
        )));
    }
    if workload.as_deref() == Some("outbox") {
        return crate::audit_outbox::judge(run_dir, &history, checks.as_deref(), &scenario, limits);
    }
    let p = crate::prepare::prepare_offline(Some(&scenario), &[])
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
        crate::checker::sharded::note_skew(&mut results, m);
    }
    // A shard of several is not judged alone, as its run did not judge it.
    let shard = header.shard.as_ref().map(|s| crate::shard::Shard {
        index: s.index,
        count: s.count,
    });
    let (results, stranded) = match crate::checker::sharded::shard_verdicts(shard) {
        Some(r) => (r, Default::default()),
        None => (results, stranded),
    };
    let coverage = crate::workload::groups::coverage::of(&read.facts, &tables);
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
