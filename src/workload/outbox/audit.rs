//! `specstorm audit RUN_DIR` on an outbox run folder: the outbox checkers
//! run again over the saved history (as [`OutboxFacts`]) and the
//! final tables the run was judged from, found as for groups
//! ([`crate::audit_tables::locate`]): `target.db` read through the saved
//! `variant.sql`'s `export.*` statements for an in-process run, the
//! `export.json` of an HTTP run (the spawned reference server's
//! `target.db` when it was killed before that export), the copy of a
//! mapped service's own database through the scenario's `[audit]
//! export.*` queries. [`crate::audit`] compares the verdicts with the
//! run's `checks.json` (the history must also still hold the ops the run's
//! `summary.json` recorded) and decides the exit, as for every workload
//! (no stranded events here). A run killed before it saved its verdicts is
//! judged as [`crate::audit_killed`] says, with nothing to compare.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::audit_error::AuditError;
use crate::audit_record::{AuditFolder, HistoryRead, Rejudged};
use crate::audit_tables::Located;
use crate::history::{Entry, Footer};
use crate::scenario::Scenario;
use crate::workload::outbox::checker::{check_all, tables, OutboxFacts};
use crate::workload::outbox::export::read_outbox_export;

/// Judges the outbox run folder `f` again from its files and its final
/// tables (`target.db`, read within `f.limits`, or `export.json`): its
/// verdicts and what its history held. Errors: the saved scenario or
/// statement file cannot be used, the final tables' file is missing, or a
/// file is over its size cap (exit 2); the history, the database or the
/// export cannot be read, or a killed run left no final tables (exit 3).
pub fn judge(f: &AuditFolder<'_>) -> Result<Rejudged, AuditError> {
    let p = crate::workload::outbox::prepare::prepare(Some(f.scenario), &[])
        .map_err(|e| AuditError::Input(format!("the saved scenario cannot be used: {e}")))?;
    let bad = AuditError::reading;
    let mut footer: Option<Footer> = None;
    let (entries, cut_line_bytes) = crate::audit_killed::entries(f.history)?;
    let mut facts = OutboxFacts::read(entries.inspect(|e| {
        if let Ok(Entry::Footer(f)) = e {
            footer = Some(f.clone());
        }
    }))
    .map_err(bad)?;
    facts.completeness =
        crate::audit_killed::completeness(f.history, footer.is_some(), cut_line_bytes)?;
    if facts.header.is_none() {
        return Err(AuditError::Unreadable(format!(
            "{}: its header has no outbox queue (messages, deliveries): not an outbox history \
             a run wrote",
            f.history.display()
        )));
    }
    let (mut tables, source) =
        match crate::audit_tables::locate(f.run_dir, &p.scenario, f.killed, footer.is_none())? {
            Located::Db(db, source) => {
                let mut conn = crate::audit_db::open_untrusted(&db, f.limits)?;
                let t = tables::read(&mut conn, &p.variant, &|| 0).map_err(|e| conn.error(&e))?;
                (t, source)
            }
            Located::Export(export) => (
                read_outbox_export(&export).map_err(AuditError::Unreadable)?,
                "export.json".to_string(),
            ),
            // A service audited from its own database: the scenario's
            // `[audit] export.*` queries, not the statement file's.
            Located::ServiceDb(db, source) => {
                let audit = p.scenario.audit.clone().unwrap_or_default();
                let mut conn = crate::audit_db::open_untrusted(&db, f.limits)?;
                let queries = crate::workload::outbox::service_db::queries(&audit);
                let t = tables::read_with(&mut conn, queries, &|| 0).map_err(|e| conn.error(&e))?;
                (t, source)
            }
        };
    if let Some([a, b]) = footer.as_ref().and_then(|f| f.tables_read) {
        (tables.read_start, tables.read_end) = (a, b);
    }
    let (results, liveness) = check_all(&facts, &tables);
    let coverage = crate::workload::outbox::coverage::of(&liveness);
    let unfinished = facts.attempts.iter().filter(|a| a.t1.is_none()).count() as u64;
    Ok(Rejudged {
        tables: source,
        results,
        stranded: Default::default(),
        coverage,
        evidence: Default::default(),
        history: HistoryRead {
            footer: footer.is_some(),
            partial: footer.as_ref().is_some_and(|f| f.partial),
            ops: facts.attempts.len() as u64,
            unfinished,
            cut_line_bytes,
        },
        in_flight: in_flight(&p.scenario),
        expect: p.scenario.expectation().0,
    })
}

/// Attempts (and their fault records) a killed outbox run may not have
/// sent yet: one attempt per handler, a fault record per attempt at most,
/// plus one per fault with a thread of its own.
fn in_flight(s: &Scenario) -> u64 {
    let handlers = s
        .part::<crate::workload::outbox::config::OutboxConfig>()
        .map_or(0, |o| o.handlers) as u64;
    2 * handlers + s.faults.len() as u64
}
