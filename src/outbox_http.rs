//! The HTTP phase of an outbox run: spawn the reference server with the
//! run's statement file (or use `target.url`, starting `target.command`
//! there first, as a groups run does), wait until it answers,
//! check that it serves the outbox endpoints and holds no rows of an
//! earlier run, run the load ([`crate::outbox_http_runtime`]) with the
//! kill and lock nemeses, then read `GET /v1/outbox/export` into the run
//! folder (`export.json`) and into the outbox checkers' tables.
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

use crate::checker::outbox::OutboxTables;
use crate::client::http::HttpClient;
use crate::client::outbox_export::read_outbox_export;
use crate::client::service::Service;
use crate::client::spawn::SpawnedServer;
use crate::clock::Clock;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::history::writer::HistorySink;
use crate::http_runtime::Nonconforming;
use crate::live::Live;
use crate::nemesis::kill::KillNemesis;
use crate::nemesis::lock::LockNemesis;
use crate::nemesis::Recorder;
use crate::outbox_http_runtime::{run_outbox_http, OutboxHttpPlan};
use crate::outbox_runtime::OutboxOutcome;
use crate::prepare::{faults_of, RunError};
use crate::scenario::Scenario;
use crate::statements::OutboxVariant;
use crate::wal::WalKeeper;
use std::path::Path;
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
    // The service the scenario starts itself, stopped after the final read.
    let mut service =
        crate::target_service::start_service(s, x.run_dir, x.base, &Default::default())?;
    let url = match &t.url {
        Some(url) => url.clone(),
        None => {
            // The server gets the very statement file this run checked.
            let hooks = plan.has(FaultKind::Crash) || plan.has(FaultKind::Pause);
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
    let client_of = |url: &str| HttpClient::new(url, t.connect_timeout, t.request_timeout);
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
    refuse_rows(&rt, &client_of(&url)?, &url, x.run_dir, s, x.shard)?;

    let load_start = x.clock.now();
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
        client: client_of(&url)?,
        nonconforming: nonconforming.clone(),
        shard: x.shard,
    });
    locks.stop();
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
    let export = x.run_dir.join("export.json");
    let read_start = x.clock.now();
    let exported = rt.block_on(client_of(&url)?.outbox_export_to(&export));
    let read_end = x.clock.now();
    if let Some(srv) = server {
        srv.lock().expect("server").stop();
    }
    if let Some(svc) = service.as_mut() {
        svc.stop();
    }
    // Without the final tables nothing can be judged (empty tables would
    // read as lost output: a false violation).
    let tables = match exported
        .map_err(|e| format!("the export could not be read: {e}"))
        .and_then(|_| read_outbox_export(&export))
    {
        Ok(mut tables) => {
            tables.read_start = read_start;
            tables.read_end = read_end;
            Some(tables)
        }
        Err(e) => {
            target_error.get_or_insert(e);
            None
        }
    };
    let n = nonconforming.count.load(Ordering::Relaxed);
    if n > 0 {
        let examples = nonconforming.examples.lock().expect("examples").join(" | ");
        target_error.get_or_insert(format!(
            "{n} answers were not the contract's shape, e.g. {examples}"
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

/// Reads the export once before the load: the target must serve the
/// outbox endpoints, and hold no row but the head (ver 0); a shard of
/// several, no row its siblings cannot have written
/// ([`crate::outbox_shard::refuse_used`]).
fn refuse_rows(
    rt: &tokio::runtime::Runtime,
    client: &HttpClient,
    url: &str,
    run_dir: &Path,
    s: &Scenario,
    shard: Option<crate::shard::Shard>,
) -> Result<(), RunError> {
    let before = run_dir.join("export-before.json");
    let read = rt
        .block_on(client.outbox_export_to(&before))
        .and_then(|_| read_outbox_export(&before));
    let _ = std::fs::remove_file(&before);
    let t = read.map_err(|e| {
        RunError::Target(format!(
            "{url} does not serve the outbox endpoints of the contract: {e}"
        ))
    })?;
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
