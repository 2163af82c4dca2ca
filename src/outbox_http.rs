//! The HTTP phase of an outbox run: spawn the reference server with the
//! run's statement file (or use `target.url`, starting `target.command`
//! there first, as a groups run does), wait until it answers,
//! check that it serves the outbox endpoints and holds no rows of an
//! earlier run, run the load ([`crate::outbox_http_runtime`]) with the
//! kill and lock nemeses and, with proxy faults, through the fault proxy
//! ([`crate::nemesis::proxy`]), then read the final tables (from the
//! service itself, never through the proxy) into the run folder and the
//! outbox checkers' tables: `GET /v1/outbox/export` (`export.json`), or,
//! for a service with an API of its own (`[api]`, `[audit]`), its export
//! request or its own database through `[audit] export.*` (copied as
//! `target.db`). Every request goes through the scenario's mapping
//! ([`crate::client::mapping`]; the contract without `[api]`).
//!
//! The outbox tables have no project to namespace a run in (message ids
//! and versions are the run's own, 1..M and from 0), so an outbox target
//! must be empty at start: a service whose export shows rows beyond the
//! head row (ver 0) is refused (exit 2) whatever `target.reuse` says;
//! reset it (`POST /v1/reset` where it offers one) or start a fresh one.
//! A shard of several sends only its own messages and refuses only rows
//! its siblings cannot have written ([`crate::outbox_shard`]).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::checker::outbox::tables::OutboxTables;
use crate::client::http::HttpClient;
use crate::client::mapping::Mapping;
use crate::client::outbox_export::read_outbox_export;
use crate::client::service::Service;
use crate::client::service_db;
use crate::client::spawn::SpawnedServer;
use crate::clock::Clock;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::history::writer::HistorySink;
use crate::http_runtime::Nonconforming;
use crate::live::Live;
use crate::nemesis::kill::KillNemesis;
use crate::nemesis::lock::LockNemesis;
use crate::nemesis::proxy::FaultProxy;
use crate::nemesis::Recorder;
use crate::outbox_http_runtime::{run_outbox_http, OutboxHttpPlan};
use crate::outbox_runtime::OutboxOutcome;
use crate::prepare::{faults_of, RunError};
use crate::scenario::api::AuditConfig;
use crate::scenario::{Scenario, Workload};
use crate::statements::OutboxVariant;
use crate::wal::WalKeeper;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// What the HTTP phase produced.
pub struct HttpOutcome {
    /// The load's outcome.
    pub load: OutboxOutcome,
    /// The final tables (None: the export could not be read; nothing is
    /// judged then).
    pub tables: Option<OutboxTables>,
    /// `http URL`, for the summary.
    pub target_desc: String,
    /// Why the target failed the run, if it did (exit 3).
    pub target_error: Option<String>,
    /// The spawned server's WAL, as the bench watched it.
    pub wal: Option<crate::wal::WalReport>,
}

/// The inputs of the phase.
pub struct HttpInputs<'a> {
    /// The resolved scenario.
    pub scenario: &'a Scenario,
    /// The checked statement file.
    pub variant: &'a OutboxVariant,
    /// The run folder (`variant.sql` already saved there).
    pub run_dir: &'a Path,
    /// The scenario file's folder (where `target.workdir` is relative to).
    pub base: &'a Path,
    /// History sink.
    pub sink: HistorySink,
    /// The run's clock.
    pub clock: Clock,
    /// Stop signals.
    pub control: Arc<Control>,
    /// The fault plan and its recorder.
    pub nemesis: Recorder,
    /// Live figures.
    pub live: Arc<Live>,
    /// This runner's part of a sharded run (`--shard i/n`), if any.
    pub shard: Option<crate::shard::Shard>,
}

/// Runs the phase. Errors: the target (or `target.command`) cannot be
/// started or reached (exit 3), holds rows of an earlier run (exit 2), or
/// the user stopped the wait (130).
pub fn phase(x: HttpInputs<'_>) -> Result<HttpOutcome, RunError> {
    let s = x.scenario;
    let t = &s.target;
    let plan = &x.nemesis.plan;
    let db = t
        .path
        .clone()
        .unwrap_or_else(|| x.run_dir.join("target.db"));
    let mut server = None;
    // The loader compiled it already; the environment is read again here.
    let mapping = Arc::new(
        Mapping::compile_for(Workload::Outbox, s.api.as_ref(), s.audit.as_ref(), true)
            .map_err(|e| RunError::Input(format!("{}: {}", e.path.join("."), e.reason)))?,
    );
    let finals = FinalRead {
        audit: s.audit.clone().unwrap_or_default(),
        run_dir: std::fs::canonicalize(x.run_dir).unwrap_or_else(|_| x.run_dir.to_path_buf()),
        base: x.base.to_path_buf(),
    };
    // The service the scenario starts itself, stopped after the final read.
    let mut service = crate::target_service::start_service(s, x.run_dir, x.base, &mapping.secrets)?;
    let url = match &t.url {
        Some(url) => url.clone(),
        None => {
            // The server gets the very statement file this run checked.
            let hooks = plan.has(FaultKind::Crash)
                || plan.has(FaultKind::Pause)
                || crate::fuzz::Fuzzer::of(s).is_some();
            let spawned = SpawnedServer::start(
                &x.run_dir.join("variant.sql").to_string_lossy(),
                &db,
                t,
                &x.run_dir.join("server.log"),
                hooks,
                &x.control,
            )?;
            let url = spawned.url.clone();
            server = Some(Arc::new(Mutex::new(spawned)));
            url
        }
    };
    // Each runtime gets a client of its own (pooled connections belong to
    // the runtime that opened them).
    let client_of = |url: &str| {
        HttpClient::new(url, t.connect_timeout, t.request_timeout)
            .map(|c| c.with_mapping(mapping.clone()))
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    crate::target_service::wait_healthy(
        &rt,
        &client_of(&url)?,
        &url,
        t,
        service.as_mut(),
        x.run_dir,
        &x.control,
    )?;
    refuse_rows(&rt, &client_of(&url)?, &url, x.run_dir, &finals, s, x.shard)?;

    let load_start = x.clock.now();
    // The fault proxy the load goes through, as a groups run's: it draws
    // its toxics for the `handle` requests and passes the export through.
    let mut proxy = if plan.has(FaultKind::Proxy) {
        Some(
            FaultProxy::start_with(
                &url,
                x.nemesis.clone(),
                load_start,
                mapping.contract,
                x.control.clone(),
            )
            .map_err(|e| RunError::Target(format!("the fault proxy: {e}")))?,
        )
    } else {
        None
    };
    let load_url = proxy.as_ref().map_or(url.clone(), |p| p.url.clone());
    let kills = server.as_ref().map(|srv| {
        KillNemesis::start(
            srv.clone(),
            faults_of(s, FaultKind::Kill),
            x.nemesis.clone(),
            load_start,
            x.control.clone(),
        )
    });
    // The spawned server's database is a local file the bench knows.
    let keeper = server
        .is_some()
        .then(|| WalKeeper::start(db.clone(), &t.sqlite(), x.sink.clone(), x.clock));
    let locks = LockNemesis::start(
        db,
        t.sqlite(),
        if server.is_some() {
            faults_of(s, FaultKind::Lock)
        } else {
            Vec::new()
        },
        x.nemesis.clone(),
        load_start,
        x.control.clone(),
    );
    let nonconforming = Arc::new(Nonconforming::default());
    let out = run_outbox_http(OutboxHttpPlan {
        scenario: s.clone(),
        variant: Arc::new(x.variant.clone()),
        sink: x.sink.clone(),
        clock: x.clock,
        control: x.control.clone(),
        nemesis: x.nemesis.clone(),
        live: x.live.clone(),
        client: client_of(&load_url)?,
        nonconforming: nonconforming.clone(),
        shard: x.shard,
    });
    locks.stop();
    if let Some(p) = proxy.as_mut() {
        p.stop();
    }
    // Closed before the server stops (its last connection then checkpoints).
    let wal = keeper.and_then(WalKeeper::stop);
    let mut target_error = kills.and_then(KillNemesis::stop);
    if server
        .as_ref()
        .is_some_and(|srv| !srv.lock().expect("server").alive())
    {
        target_error.get_or_insert("the spawned reference server died during the run".into());
    }
    if let Some(Err(e)) = service.as_mut().map(Service::check) {
        target_error.get_or_insert(format!("{e} during the run"));
    }
    if let Some(dead) = out.dead {
        target_error.get_or_insert(dead);
    }
    let final_read = finals.read(&rt, &client_of(&url)?, x.run_dir, &|| x.clock.now());
    if let Some(srv) = server {
        srv.lock().expect("server").stop();
    }
    if let Some(svc) = service.as_mut() {
        svc.stop();
    }
    // Without the final tables nothing can be judged (empty tables would
    // read as lost output: a false violation).
    let tables = match final_read {
        Ok(tables) => Some(tables),
        Err(e) => {
            target_error.get_or_insert(e);
            None
        }
    };
    let n = nonconforming.count.load(Ordering::Relaxed);
    if n > 0 {
        let examples = nonconforming.examples.lock().expect("examples").join(" | ");
        target_error.get_or_insert(format!(
            "{n} answers were not the {}'s shape, e.g. {examples}",
            if mapping.contract {
                "contract"
            } else {
                "[api] mapping"
            }
        ));
    }
    Ok(HttpOutcome {
        load: out.outcome,
        tables,
        target_desc: format!("http {url}"),
        target_error,
        wal,
    })
}

/// Where the final tables come from: the outbox export (`[audit]
/// request`, the contract's by default), or the service's own database
/// (`[audit] sqlite`, through its `export.*` queries).
struct FinalRead {
    audit: AuditConfig,
    /// The run folder, absolute (`{run_dir}` in `audit.sqlite`).
    run_dir: PathBuf,
    /// The scenario file's folder (`audit.sqlite` is relative to it).
    base: PathBuf,
}

impl FinalRead {
    /// The final tables, read once after the load: the export saved as
    /// `export.json` in `run_dir`, or the service's database read in one
    /// read transaction and copied there as `target.db`; `now` times the
    /// read. Errors: what could not be read, and why.
    fn read(
        &self,
        rt: &tokio::runtime::Runtime,
        client: &HttpClient,
        run_dir: &Path,
        now: &dyn Fn() -> u64,
    ) -> Result<OutboxTables, String> {
        if let Some(pattern) = &self.audit.sqlite {
            let path = service_db::locate(pattern, &self.run_dir, &self.base)?;
            let tables = service_db::read_outbox_final(&path, &self.audit, now)?;
            service_db::copy(&path, &run_dir.join("target.db"))?;
            return Ok(tables);
        }
        let export = run_dir.join("export.json");
        let read_start = now();
        let exported = rt.block_on(client.outbox_export_to(&export));
        let read_end = now();
        let mut tables = exported
            .map_err(|e| format!("the export could not be read: {e}"))
            .and_then(|_| read_outbox_export(&export))?;
        tables.read_start = read_start;
        tables.read_end = read_end;
        Ok(tables)
    }

    /// The tables as they are before the load, for [`refuse_rows`]: None
    /// when the service's database is not there yet (a service may create
    /// it on its first write; the final read says so if it never does).
    fn before(
        &self,
        rt: &tokio::runtime::Runtime,
        client: &HttpClient,
        run_dir: &Path,
    ) -> Result<Option<OutboxTables>, String> {
        if let Some(pattern) = &self.audit.sqlite {
            let Ok(path) = service_db::locate(pattern, &self.run_dir, &self.base) else {
                return Ok(None);
            };
            return service_db::read_outbox_final(&path, &self.audit, &|| 0).map(Some);
        }
        let before = run_dir.join("export-before.json");
        let read = rt
            .block_on(client.outbox_export_to(&before))
            .and_then(|_| read_outbox_export(&before));
        let _ = std::fs::remove_file(&before);
        read.map(Some)
    }
}

/// Reads the export once before the load: the target must serve the
/// outbox endpoints, and hold no row but the head (ver 0); a shard of
/// several, no row its siblings cannot have written
/// ([`crate::outbox_shard::refuse_used`]).
fn refuse_rows(
    rt: &tokio::runtime::Runtime,
    client: &HttpClient,
    url: &str,
    run_dir: &Path,
    finals: &FinalRead,
    s: &Scenario,
    shard: Option<crate::shard::Shard>,
) -> Result<(), RunError> {
    let read = finals.before(rt, client, run_dir).map_err(|e| {
        RunError::Target(if finals.audit.sqlite.is_some() {
            format!("the service's database cannot be read through audit.export.*: {e}")
        } else if client.mapping().contract {
            format!("{url} does not serve the outbox endpoints of the contract: {e}")
        } else {
            format!("{url} does not answer the outbox export ([audit] request): {e}")
        })
    })?;
    let Some(t) = read else { return Ok(()) };
    if let Some(sh) = shard.filter(|sh| sh.count > 1) {
        let messages = s.outbox.as_ref().map_or(0, |o| o.messages);
        return crate::outbox_shard::refuse_used(&t, sh, messages, url);
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
