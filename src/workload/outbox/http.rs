//! The HTTP phase of an outbox run on an HTTP target
//! ([`crate::target::http`], which starts `target.command`, spawns the
//! reference server or uses `target.url`, waits until it answers, runs
//! the nemeses its caps allow and the fault proxy, and tears it down):
//! what is the outbox's own is here, the check that the target serves the
//! outbox endpoints and holds no rows of an earlier run, the load
//! ([`crate::workload::outbox::http_runtime`]), and the reader of the final tables
//! (from the service itself, never through the proxy): `GET
//! /v1/outbox/export` (`export.json`), or, for a service with an API of
//! its own (`[api]`, `[audit]`), its export request or its own database
//! through `[audit] export.*` (copied as `target.db`). Every request goes
//! through the scenario's mapping ([`crate::scenario::mapping`]; the
//! contract without `[api]`).
//!
//! The outbox tables have no project to namespace a run in (message ids
//! and versions are the run's own, 1..M and from 0), so an outbox target
//! must be empty at start: a service whose export shows rows beyond the
//! head row (ver 0) is refused (exit 2) whatever `target.reuse` says;
//! reset it (`POST /v1/reset` where it offers one) or start a fresh one.
//! A shard of several sends only its own messages and refuses only rows
//! its siblings cannot have written ([`crate::workload::outbox::shard`]).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::statements::OutboxVariant;
use crate::live::Live;
use crate::prepare::RunError;
use crate::scenario::api::AuditConfig;
use crate::scenario::Scenario;
use crate::target::http::mapping::{Mapping, RequestTemplate};
use crate::target::http::source::{HttpReader, HttpSource};
use crate::target::http::HttpTarget;
use crate::target::{Setup, Target};
use crate::workload::outbox::checker::tables::OutboxTables;
use crate::workload::outbox::config::OutboxConfig;
use crate::workload::outbox::export::read_outbox_export;
use crate::workload::outbox::http_runtime::{run_outbox_http, OutboxHttpPlan};
use crate::workload::outbox::runtime::OutboxOutcome;
use crate::workload::traits::Ran;
use std::path::Path;
use std::sync::Arc;

/// Runs the phase on the target `x` names; `shard` is this runner's part
/// of a sharded run (`--shard i/n`), if any. Errors: the target (or
/// `target.command`) cannot be started or reached (exit 3), holds rows of
/// an earlier run (exit 2), or the user stopped the wait (130).
pub fn phase(
    x: &Setup<'_>,
    variant: &OutboxVariant,
    live: &Arc<Live>,
    shard: Option<crate::shard::Shard>,
) -> Result<Ran<OutboxOutcome, OutboxTables>, RunError> {
    let s = x.scenario;
    let mut target = HttpTarget::start(x)?;
    target.before_load(|src| refuse_rows(src, s, shard))??;
    let out = target.run(|c| {
        run_outbox_http(OutboxHttpPlan {
            scenario: s.clone(),
            variant: Arc::new(variant.clone()),
            sink: x.sink.clone(),
            clock: x.clock,
            control: x.control.clone(),
            nemesis: x.nemesis.clone(),
            live: live.clone(),
            client: c.client,
            nonconforming: c.nonconforming,
            shard,
        })
    })?;
    target.failed(out.dead);
    let tables = target.final_read(|src| src.read(&Reader))?;
    Ok(Ran::new(out.outcome, tables, target.finish()))
}

/// The outbox's reader of an HTTP target's tables: the outbox export
/// (`[audit] request`, the contract's by default), or the service's own
/// database (`[audit] sqlite`, through its `export.*` queries).
struct Reader;

impl HttpReader for Reader {
    type Tables = OutboxTables;

    fn export<'m>(&self, mapping: &'m Mapping) -> &'m RequestTemplate {
        &mapping.export
    }

    fn parse_export(&self, path: &Path, [start, end]: [u64; 2]) -> Result<OutboxTables, String> {
        let mut tables = read_outbox_export(path)?;
        tables.read_start = start;
        tables.read_end = end;
        Ok(tables)
    }

    fn read_database(
        &self,
        db: &Path,
        audit: &AuditConfig,
        now: &dyn Fn() -> u64,
    ) -> Result<OutboxTables, String> {
        crate::workload::outbox::service_db::read_final(db, audit, now)
    }
}

/// Reads the export once before the load: the target must serve the
/// outbox endpoints, and hold no row but the head (ver 0); a shard of
/// several, no row its siblings cannot have written
/// ([`crate::workload::outbox::shard::refuse_used`]).
fn refuse_rows(
    src: &HttpSource<'_>,
    s: &Scenario,
    shard: Option<crate::shard::Shard>,
) -> Result<(), RunError> {
    let url = src.url();
    let read = src.read_before(&Reader).map_err(|e| {
        RunError::Target(if src.service_db().is_some() {
            format!("the service's database cannot be read through audit.export.*: {e}")
        } else if src.client().mapping().contract {
            format!("{url} does not serve the outbox endpoints of the contract: {e}")
        } else {
            format!("{url} does not answer the outbox export ([audit] request): {e}")
        })
    })?;
    let Some(t) = read else { return Ok(()) };
    if let Some(sh) = shard.filter(|sh| sh.count > 1) {
        let messages = s.part::<OutboxConfig>().map_or(0, |o| o.messages);
        return crate::workload::outbox::shard::refuse_used(&t, sh, messages, url);
    }
    let rows = t.state_log.iter().filter(|r| r.ver != Some(0)).count()
        + t.outbox.as_ref().map_or(0, Vec::len)
        + t.out_queue.len()
        + t.processed.len();
    if rows > 0 {
        return Err(RunError::Input(format!(
            "{url} already holds {rows} outbox row(s) (state_log beyond ver 0, outbox, \
             out_queue, processed): an outbox run needs an empty target, since its message \
             ids and versions are the run's own and the outbox tables have no namespace. \
             Reset the service (POST /v1/reset where it offers one) or start a fresh one"
        )));
    }
    Ok(())
}
