//! `specstorm audit RUN_DIR` on a groups run folder: the groups checkers
//! run again over the saved history (as [`Facts`]) and the final
//! tables (`target.db` read through the saved `variant.sql`'s export
//! statements for an in-process SQLite run, `export.json` for an HTTP run,
//! found by [`final_tables`]); [`crate::audit`]
//! compares the verdicts with the run's and decides the exit.
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

use super::audit_parts::{Budget, Judged};
use super::config::GroupsScenario;
use super::export::read_export;
use super::tables_read::read_rows_with;
use crate::audit_db::{open_untrusted, Limits};
use crate::audit_error::AuditError;
use crate::audit_history::entry_time;
use crate::audit_record::{AuditFolder, HistoryRead, Rejudged};
use crate::history::{Entry, Footer};
use crate::scenario::Scenario;
use crate::workload::groups::checker::tables::RowSink;
use crate::workload::groups::checker::Tables;
use crate::workload::groups::checker::{check_all, Facts};
use std::path::Path;

/// Judges the groups run folder `f` again: its verdicts and what its
/// history held. Errors: the saved scenario or statement file cannot be
/// used, a file is missing or over its size cap (exit 2); the history or
/// the final tables cannot be read (exit 3).
pub fn judge(f: &AuditFolder<'_>) -> Result<Rejudged, AuditError> {
    judge_with(f, Budget::DEFAULT)
}

/// [`judge`], judging a history of `budget.whole_below_bytes` or more in
/// parts ([`super::audit_parts`]) when that gives the same verdicts.
pub fn judge_with(f: &AuditFolder<'_>, budget: Budget) -> Result<Rejudged, AuditError> {
    let p = prepare(f)?;
    let len = std::fs::metadata(f.history).map_or(0, |m| m.len());
    let parts = if len >= budget.whole_below_bytes {
        in_parts(f, &p, budget)?
    } else {
        None
    };
    let j = match parts {
        Some(j) => j,
        None => whole(f, &p)?,
    };
    Ok(rejudged(&p, j))
}

/// [`judge`] of the whole history at once, as before parts existed.
pub fn judge_whole(f: &AuditFolder<'_>) -> Result<Rejudged, AuditError> {
    judge_with(
        f,
        Budget {
            whole_below_bytes: u64::MAX,
            ..Budget::DEFAULT
        },
    )
}

/// [`judge`] in parts of `part_ops` ops, whatever the history's size;
/// None where no exact judge in parts exists ([`super::audit_parts`]).
pub fn judge_in_parts(f: &AuditFolder<'_>, part_ops: u64) -> Result<Option<Rejudged>, AuditError> {
    let p = prepare(f)?;
    let budget = Budget {
        whole_below_bytes: 0,
        part_ops,
    };
    Ok(in_parts(f, &p, budget)?.map(|j| rejudged(&p, j)))
}

fn prepare(f: &AuditFolder<'_>) -> Result<super::prepare::Prepared, AuditError> {
    super::prepare::prepare_offline(Some(f.scenario), &[])
        .map_err(|e| AuditError::Input(format!("the saved scenario cannot be used: {e}")))
}

/// The audit's record of a judged history.
fn rejudged(
    p: &super::prepare::Prepared,
    (j, source, cut_line_bytes): (Judged, String, u64),
) -> Rejudged {
    let (mut results, stranded, evidence, coverage) = j.merged;
    if let Some(m) = &j.header.merged {
        crate::workload::groups::checker::sharded::note_skew(&mut results, m);
    }
    // A shard of several is not judged alone, as its run did not judge it.
    let shard = j.header.shard.as_ref().map(|s| crate::shard::Shard {
        index: s.index,
        count: s.count,
    });
    let (results, stranded) = match crate::workload::groups::checker::sharded::shard_verdicts(shard)
    {
        Some(r) => (r, Default::default()),
        None => (results, stranded),
    };
    Rejudged {
        tables: source,
        results,
        stranded,
        coverage,
        evidence,
        history: HistoryRead {
            footer: j.footer.is_some(),
            partial: j.footer.as_ref().is_some_and(|f| f.partial),
            ops: j.ops,
            unfinished: j.unfinished,
            cut_line_bytes,
        },
        in_flight: in_flight(&p.scenario),
        expect: p.scenario.expectation().0,
    }
}

/// Whether the scenario's service prunes event rows.
fn pruned(p: &super::prepare::Prepared) -> bool {
    p.scenario
        .audit
        .as_ref()
        .is_some_and(|a| a.events == crate::scenario::api::EventRows::Pruned)
}

/// The whole history judged at once: its verdicts, where the tables were
/// read from, and the bytes of a cut last line.
fn whole(
    f: &AuditFolder<'_>,
    p: &super::prepare::Prepared,
) -> Result<(Judged, String, u64), AuditError> {
    let read = read_history(f.history)?;
    let header = read.facts.header.clone().expect("read_history checks it");
    let (mut tables, source) = final_tables(
        f.run_dir,
        p,
        &header.namespace,
        f.killed,
        read.footer.is_none(),
        f.limits,
    )?;
    [tables.read_start, tables.read_end] = read.tables_read();
    tables.events_pruned = pruned(p);
    let (mut results, stranded) = check_all(&read.facts, &tables);
    let evidence = crate::workload::groups::checker::evidence::judge(
        &read.facts,
        &tables,
        &p.scenario.min_evidence(),
        &mut results,
    );
    let coverage = crate::workload::groups::coverage::of(&read.facts, &tables);
    let j = Judged {
        merged: (results, stranded, evidence, coverage),
        header,
        footer: read.footer,
        ops: read.facts.ops,
        unfinished: read.facts.unfinished,
        acked: read.facts.acked_events(),
        parts: 0,
    };
    Ok((j, source, read.cut_line_bytes))
}

/// A run's own judge of its history in parts ([`super::audit_parts`]),
/// once its folder holds the history and the final tables as `specstorm
/// audit` reads them (`target.db`, `export.json`, a service database's
/// copy): the history of `run_dir` at `history`, judged as [`judge`]
/// judges that folder, whatever its size. None where no exact judge in
/// parts exists. The run read these tables itself, so no cap on the
/// database's size or the queries' work applies. Errors: as [`judge`]'s.
pub(crate) fn judge_run_in_parts(
    run_dir: &Path,
    history: &Path,
    p: &super::prepare::Prepared,
    budget: Budget,
) -> Result<Option<Judged>, AuditError> {
    let scenario = run_dir.join("scenario.toml");
    let f = AuditFolder {
        run_dir,
        history,
        scenario: &scenario,
        killed: false,
        limits: RUN_OWN,
    };
    Ok(in_parts(&f, p, budget)?.map(|(j, _, _)| j))
}

/// The bounds of a run's read of its own final tables: none.
const RUN_OWN: Limits = Limits {
    max_steps: u64::MAX,
    max_db_bytes: u64::MAX,
};

/// The final tables of run folder `run_dir` (its rows of `namespace`),
/// read again as [`judge_run_in_parts`] reads them, for a run whose judge
/// in parts gave way to the whole judge; the read's interval is left to
/// the caller. Errors: as [`judge`]'s.
pub(crate) fn run_final_tables(
    run_dir: &Path,
    p: &super::prepare::Prepared,
    namespace: &str,
) -> Result<Tables, AuditError> {
    Ok(final_tables(run_dir, p, namespace, false, false, RUN_OWN)?.0)
}

/// The history judged in parts, or None where that would not give the
/// whole history's verdicts (see [`super::audit_parts`]).
fn in_parts(
    f: &AuditFolder<'_>,
    p: &super::prepare::Prepared,
    budget: Budget,
) -> Result<Option<(Judged, String, u64)>, AuditError> {
    let (payloads, cut_line_bytes) = crate::audit_killed::payloads(f.history)?;
    let pruned = pruned(p);
    let mut read_rows = |sink: &mut dyn RowSink, namespace: &str, cut: bool| {
        final_rows(f.run_dir, p, namespace, f.killed, cut, f.limits, sink)
    };
    let judged = super::audit_parts::judge(
        payloads,
        &mut read_rows,
        &|t: &mut Tables, footer: Option<&Footer>, last_t: u64| {
            [t.read_start, t.read_end] = tables_read(footer, last_t);
            t.events_pruned = pruned;
        },
        &|footer| crate::audit_killed::completeness(f.history, footer, cut_line_bytes),
        &p.scenario.min_evidence(),
        budget,
    )?;
    Ok(judged.map(|(j, source)| (j, source, cut_line_bytes)))
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
        tables_read(self.footer.as_ref(), self.last_t)
    }
}

/// The final read's interval: the footer's record, or else an instant
/// after every entry (`last_t`: the latest; see the module's doc).
fn tables_read(footer: Option<&Footer>, last_t: u64) -> [u64; 2] {
    footer
        .and_then(|f| f.tables_read)
        .unwrap_or([last_t + 1, last_t + 1])
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

/// Ops (and their fault records) a killed groups run may not have sent
/// yet: one request per worker, of up to `api.ingest.batch` events for an
/// ingester, and a fault record per op at most, plus one per fault with a
/// thread of its own.
fn in_flight(s: &Scenario) -> u64 {
    let batch = s
        .api
        .as_ref()
        .and_then(|a| a.part::<super::api::GroupsApi>())
        .map_or(1, |g| g.ingest.batch.max(1)) as u64;
    let ops = s.load().ingesters as u64 * batch + s.load().resolvers as u64;
    2 * ops + s.faults.len() as u64
}

/// The final tables of a groups run folder, and where they were
/// read from ([`crate::audit_tables::locate`] says where). Errors: as [`crate::audit_tables::locate`]; a file that cannot
/// be read (exit 3).
fn final_tables(
    run_dir: &Path,
    p: &super::prepare::Prepared,
    namespace: &str,
    killed: bool,
    cut: bool,
    limits: Limits,
) -> Result<(Tables, String), AuditError> {
    let mut t = Tables::default();
    let source = final_rows(run_dir, p, namespace, killed, cut, limits, &mut t)?;
    Ok((t, source))
}

/// [`final_tables`] into any [`RowSink`]; returns where they were read
/// from (the read's own interval is not kept: the history's is used).
fn final_rows(
    run_dir: &Path,
    p: &super::prepare::Prepared,
    namespace: &str,
    killed: bool,
    cut: bool,
    limits: Limits,
    sink: &mut dyn RowSink,
) -> Result<String, AuditError> {
    let (mut conn, queries, source) =
        match crate::audit_tables::locate(run_dir, &p.scenario, killed, cut)? {
            crate::audit_tables::Located::Db(db, source) => {
                let v = &p.variant;
                let queries = (v.export_events.clone(), v.export_groups.clone());
                (open_untrusted(&db, limits)?, queries, source)
            }
            crate::audit_tables::Located::ServiceDb(db, source) => {
                let audit = p.scenario.audit.clone().unwrap_or_default();
                let (e, g) = super::service_db::queries(&audit);
                let queries = (e.to_string(), g.to_string());
                (open_untrusted(&db, limits)?, queries, source)
            }
            crate::audit_tables::Located::Export(export) => {
                read_export(&export, namespace, sink).map_err(AuditError::Unreadable)?;
                return Ok("export.json".into());
            }
        };
    read_rows_with(&mut conn, (&queries.0, &queries.1), namespace, &|| 0, sink)
        .map_err(|e| conn.error(&e))?;
    Ok(source)
}
