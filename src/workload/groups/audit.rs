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

use super::config::GroupsScenario;
use super::export::read_export;
use super::statements::GroupsVariant;
use super::tables_read::{read_tables, read_tables_with};
use crate::audit_db::{open_untrusted, Limits};
use crate::audit_error::AuditError;
use crate::audit_history::entry_time;
use crate::audit_record::{AuditFolder, HistoryRead, Rejudged};
use crate::history::{Entry, Footer};
use crate::scenario::Scenario;
use crate::workload::groups::checker::Tables;
use crate::workload::groups::checker::{check_all, Facts};
use std::path::Path;

/// Judges the groups run folder `f` again: its verdicts and what its
/// history held. Errors: the saved scenario or statement file cannot be
/// used, a file is missing or over its size cap (exit 2); the history or
/// the final tables cannot be read (exit 3).
pub fn judge(f: &AuditFolder<'_>) -> Result<Rejudged, AuditError> {
    let p = super::prepare::prepare_offline(Some(f.scenario), &[])
        .map_err(|e| AuditError::Input(format!("the saved scenario cannot be used: {e}")))?;
    let read = read_history(f.history)?;
    let header = read.facts.header.clone().expect("read_history checks it");
    let (mut tables, source) = final_tables(
        f.run_dir,
        &p,
        &header.namespace,
        f.killed,
        read.footer.is_none(),
        f.limits,
    )?;
    [tables.read_start, tables.read_end] = read.tables_read();
    tables.events_pruned = p
        .scenario
        .audit
        .as_ref()
        .is_some_and(|a| a.events == crate::scenario::api::EventRows::Pruned);
    let (mut results, stranded) = check_all(&read.facts, &tables);
    let evidence = crate::workload::groups::checker::evidence::judge(
        &read.facts,
        &tables,
        &p.scenario.min_evidence(),
        &mut results,
    );
    if let Some(m) = &header.merged {
        crate::workload::groups::checker::sharded::note_skew(&mut results, m);
    }
    // A shard of several is not judged alone, as its run did not judge it.
    let shard = header.shard.as_ref().map(|s| crate::shard::Shard {
        index: s.index,
        count: s.count,
    });
    let (results, stranded) = match crate::workload::groups::checker::sharded::shard_verdicts(shard)
    {
        Some(r) => (r, Default::default()),
        None => (results, stranded),
    };
    let coverage = crate::workload::groups::coverage::of(&read.facts, &tables);
    Ok(Rejudged {
        tables: source,
        results,
        stranded,
        coverage,
        evidence,
        history: HistoryRead {
            footer: read.footer.is_some(),
            partial: read.footer.as_ref().is_some_and(|f| f.partial),
            ops: read.facts.ops,
            unfinished: read.facts.unfinished,
            cut_line_bytes: read.cut_line_bytes,
        },
        in_flight: in_flight(&p.scenario),
        expect: p.scenario.expectation().0,
    })
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

/// The final tables of a groups run folder, and where they were read
/// from ([`crate::audit_tables::locate`] says where). Errors: as [`crate::audit_tables::locate`]; a file that cannot
/// be read (exit 3).
fn final_tables(
    run_dir: &Path,
    p: &super::prepare::Prepared,
    namespace: &str,
    killed: bool,
    cut: bool,
    limits: Limits,
) -> Result<(Tables, String), AuditError> {
    match crate::audit_tables::locate(run_dir, &p.scenario, killed, cut)? {
        crate::audit_tables::Located::Db(db, source) => {
            Ok((read_db(&db, &p.variant, namespace, limits)?, source))
        }
        crate::audit_tables::Located::ServiceDb(db, source) => {
            let audit = p.scenario.audit.clone().unwrap_or_default();
            let mut conn = open_untrusted(&db, limits)?;
            let t = read_tables_with(
                &mut conn,
                super::service_db::queries(&audit),
                namespace,
                &|| 0,
            )
            .map_err(|e| conn.error(&e))?;
            Ok((t, source))
        }
        crate::audit_tables::Located::Export(export) => {
            let mut t = Tables::default();
            read_export(&export, namespace, &mut t).map_err(AuditError::Unreadable)?;
            Ok((t, "export.json".into()))
        }
    }
}

/// Reads the final tables of a saved database through the variant's
/// export queries, trusting neither (see [`crate::audit_db`]). Errors:
/// unreadable (exit 3), naming a stop by the budget or a refusal.
fn read_db(
    db: &Path,
    variant: &GroupsVariant,
    namespace: &str,
    limits: Limits,
) -> Result<Tables, AuditError> {
    let mut conn = open_untrusted(db, limits)?;
    read_tables(&mut conn, variant, namespace, &|| 0).map_err(|e| conn.error(&e))
}
