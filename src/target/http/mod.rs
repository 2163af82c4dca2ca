//! An HTTP target: a service that speaks the contract, or the scenario's
//! `[api]` mapping of its own API; the spawned reference server (with the
//! run's very statement file) or `target.url`, with `target.command`
//! started first when the scenario has one ([`start`]). The target is
//! ready once its health request answers; before the load the workload
//! may read its tables ([`HttpTarget::before_load`], to refuse an earlier
//! run's rows). The load goes through the fault proxy when the plan has
//! proxy faults; the kill and lock nemeses and the WAL keeper act on the
//! spawned server and its database. The final tables are read from the
//! service itself ([`source`]), then the server and the service are
//! stopped, and what went wrong (a failed restart, a dead server or
//! service, an export that failed, answers not of the mapping's shape) is
//! the run's target error.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

pub mod client;
pub mod nonconforming;
pub mod plain;
pub mod probe;
pub mod service;
pub mod service_db;
pub mod source;
pub mod spawn;
pub mod start;
pub mod tls;
pub mod watchdog;

// The `[api]` compiler is the config layer's (the loader compiles `[api]`
// to report a bad template with its line); the HTTP target's modules use
// it by these names.
pub use crate::scenario::mapping::{self, request_template, template};

use super::{Caps, Finished, Setup, Target, TargetError};
use crate::clock::Clock;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::history::writer::HistorySink;
use crate::nemesis::kill::KillNemesis;
use crate::nemesis::lock::LockNemesis;
use crate::nemesis::proxy::FaultProxy;
use crate::nemesis::Recorder;
use crate::scenario::{self, SqliteTarget as Pragmas};
use crate::wal::{WalKeeper, WalReport};
use client::HttpClient;
use mapping::Mapping;
use nonconforming::Nonconforming;
use service::Service;
use source::{HttpSource, ServiceDb};
use spawn::SpawnedServer;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use tls::Tls;

/// What the load's workers get from an HTTP target.
pub struct HttpClients {
    /// A client of the load's URL (the fault proxy's, with proxy faults).
    pub client: HttpClient,
    /// Where the workers count answers not of the mapping's shape.
    pub nonconforming: Arc<Nonconforming>,
    /// The service's own database (`[audit] sqlite`).
    pub service_db: ServiceDb,
}

/// A running, healthy HTTP target.
pub struct HttpTarget {
    url: String,
    target: scenario::Target,
    /// What the clients of the service trust (`target.ca_file`,
    /// `target.insecure_skip_verify`).
    tls: Tls,
    mapping: Arc<Mapping>,
    db: ServiceDb,
    run_dir: PathBuf,
    /// The spawned server's database (a local file the bench knows).
    server_db: PathBuf,
    server: Option<Arc<Mutex<SpawnedServer>>>,
    service: Option<Service>,
    rt: tokio::runtime::Runtime,
    caps: Caps,
    kills: Vec<(u32, scenario::Fault)>,
    locks: Vec<(u32, scenario::Fault)>,
    proxy: bool,
    sink: HistorySink,
    clock: Clock,
    control: Arc<Control>,
    nemesis: Recorder,
    nonconforming: Arc<Nonconforming>,
    /// What went wrong so far (the first cause is kept).
    error: Option<String>,
    /// Why the load ended early, said after whatever else went wrong.
    ended_early: Option<String>,
    wal: Option<WalReport>,
}

impl HttpTarget {
    /// Starts `target.command` if the scenario has one, spawns the
    /// reference server unless the scenario names `target.url`, and waits
    /// until the service answers its health request. Errors: the mapping
    /// does not compile (exit 2), the service or the server cannot be
    /// started or reached (exit 3), the user stopped the wait (130).
    pub fn start(x: &Setup<'_>) -> Result<Self, TargetError> {
        let s = x.scenario;
        let t = &s.target;
        let plan = &x.nemesis.plan;
        // The loader compiled it already; the environment is read again here.
        let mapping = Arc::new(
            Mapping::compile_for(s.workload, s.api.as_ref(), s.audit.as_ref(), true)
                .map_err(|e| TargetError::Input(format!("{}: {}", e.path.join("."), e.reason)))?,
        );
        let caps = t.caps();
        let tls = Tls::of_target(t, x.base);
        // A bundle that cannot be read is the scenario's fault (exit 2),
        // found before any service is started.
        let _ = tls
            .apply(tls::client_builder())
            .map_err(|e| TargetError::Input(format!("target.ca_file: {e}")))?;
        let db = ServiceDb::new(s.audit.clone().unwrap_or_default(), x.run_dir, x.base);
        let server_db = t
            .path
            .clone()
            .unwrap_or_else(|| x.run_dir.join("target.db"));
        // The service the scenario starts itself, stopped after the final read.
        let mut service = start::start_service(s, x.run_dir, x.base, &mapping.secrets)?;
        let mut server = None;
        let url = match &t.url {
            Some(url) => url.clone(),
            None => {
                // The server gets the very statement file this run checked.
                let hooks = plan.has(FaultKind::Crash)
                    || plan.has(FaultKind::Pause)
                    || crate::fuzz::Fuzzer::of(s).is_some();
                let spawned = SpawnedServer::start(
                    &x.run_dir.join("variant.sql").to_string_lossy(),
                    &server_db,
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
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(anyhow::Error::from)?;
        let mut target = HttpTarget {
            kills: x.faults(FaultKind::Kill, caps),
            locks: x.faults(FaultKind::Lock, caps),
            proxy: caps.proxy && plan.has(FaultKind::Proxy),
            url,
            target: t.clone(),
            tls,
            mapping,
            db,
            run_dir: x.run_dir.to_path_buf(),
            server_db,
            server,
            service: None,
            rt,
            caps,
            sink: x.sink.clone(),
            clock: x.clock,
            control: x.control.clone(),
            nemesis: x.nemesis.clone(),
            nonconforming: Arc::new(Nonconforming::default()),
            error: None,
            ended_early: None,
            wal: None,
        };
        start::wait_healthy(
            &target.rt,
            &target.client_of(&target.url)?,
            &target.url,
            t,
            service.as_mut(),
            x.run_dir,
            &x.control,
        )?;
        target.service = service;
        Ok(target)
    }

    /// The mapping every request goes through.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }

    /// Reads the target before the load through `read` (an earlier run's
    /// rows, which the workload refuses). Errors: no client of the
    /// service can be made.
    pub fn before_load<R>(
        &self,
        read: impl FnOnce(&HttpSource<'_>) -> R,
    ) -> Result<R, TargetError> {
        Ok(read(&self.source()?))
    }

    /// The load failed the target (its last answers said it is gone): the
    /// cause, unless one was found already.
    pub fn failed(&mut self, why: Option<String>) {
        if let Some(why) = why {
            self.error.get_or_insert(why);
        }
    }

    /// Why the load ended early, said after whatever else went wrong (an
    /// export that then failed, a service that exited).
    pub fn ended_early(&mut self, why: Option<String>) {
        self.ended_early = why;
    }

    /// A client of `url`. A client's pooled connections belong to the
    /// runtime that opened them: each runtime gets a client of its own, or
    /// requests hang.
    fn client_of(&self, url: &str) -> Result<HttpClient, TargetError> {
        let t = &self.target;
        Ok(
            HttpClient::with_tls(url, t.connect_timeout, t.request_timeout, &self.tls)?
                .with_mapping(self.mapping.clone()),
        )
    }

    fn source(&self) -> Result<HttpSource<'_>, TargetError> {
        Ok(HttpSource {
            rt: &self.rt,
            client: self.client_of(&self.url)?,
            url: &self.url,
            run_dir: &self.run_dir,
            db: &self.db,
            clock: self.clock,
        })
    }

    /// Stops the spawned server and the service (after the final read).
    fn stop(&mut self) {
        if let Some(srv) = self.server.take() {
            srv.lock().expect("server").stop();
        }
        if let Some(svc) = self.service.as_mut() {
            svc.stop();
        }
    }
}

impl Target for HttpTarget {
    type Clients = HttpClients;
    type Source<'a> = HttpSource<'a>;

    fn caps(&self) -> Caps {
        self.caps
    }

    fn describe(&self) -> String {
        if self.tls.insecure_skip_verify {
            format!("http {} [{}]", self.url, tls::INSECURE_NOTE)
        } else {
            format!("http {}", self.url)
        }
    }

    fn run<O>(&mut self, load: impl FnOnce(HttpClients) -> O) -> Result<O, TargetError> {
        let load_start = self.clock.now();
        // The fault proxy the load goes through: it draws its toxics for
        // the workload's requests and passes the export through.
        let mut proxy = if self.proxy {
            Some(
                FaultProxy::start_with(
                    &self.url,
                    self.nemesis.clone(),
                    load_start,
                    self.mapping.contract,
                    self.control.clone(),
                    &self.tls,
                )
                .map_err(|e| TargetError::Target(format!("the fault proxy: {e}")))?,
            )
        } else {
            None
        };
        let load_url = proxy.as_ref().map_or(self.url.clone(), |p| p.url.clone());
        let client = self.client_of(&load_url)?;
        let kills = self.server.as_ref().map(|srv| {
            KillNemesis::start(
                srv.clone(),
                std::mem::take(&mut self.kills),
                self.nemesis.clone(),
                load_start,
                self.control.clone(),
            )
        });
        let locks = LockNemesis::start(
            self.server_db.clone(),
            self.target.sqlite(),
            std::mem::take(&mut self.locks),
            self.nemesis.clone(),
            load_start,
            self.control.clone(),
        );
        let pragmas: Pragmas = self.target.sqlite();
        let keeper = self.server.is_some().then(|| {
            WalKeeper::start(
                self.server_db.clone(),
                &pragmas,
                self.sink.clone(),
                self.clock,
            )
        });
        let out = load(HttpClients {
            client,
            nonconforming: self.nonconforming.clone(),
            service_db: self.db.clone(),
        });
        locks.stop();
        // Closed before the server stops: its last connection then
        // checkpoints the WAL into the database file the audit reads.
        self.wal = keeper.and_then(WalKeeper::stop);
        self.error = kills.and_then(KillNemesis::stop);
        if let Some(p) = proxy.as_mut() {
            p.stop();
        }
        let alive = self
            .server
            .as_ref()
            .is_none_or(|srv| srv.lock().expect("server").alive());
        if !alive {
            self.error
                .get_or_insert("the spawned reference server died during the run".to_string());
        }
        if let Some(Err(e)) = self.service.as_mut().map(Service::check) {
            self.error.get_or_insert(format!("{e} during the run"));
        }
        Ok(out)
    }

    fn final_read<T>(
        &mut self,
        read: impl FnOnce(HttpSource<'_>) -> Result<T, String>,
    ) -> Result<Option<T>, TargetError> {
        let read = read(self.source()?);
        self.stop();
        // Without the final tables nothing can be judged: an empty table
        // set would read as lost data, a false violation. A cause found
        // earlier (a server that could not be restarted) says more than
        // the export that then failed.
        Ok(match read {
            Ok(tables) => Some(tables),
            Err(e) => {
                self.error.get_or_insert(e);
                None
            }
        })
    }

    fn finish(mut self) -> Finished {
        self.stop();
        let mut error = self.error.take();
        if let Some(why) = self.ended_early.take() {
            error = Some(match error {
                Some(e) => format!("{e}; {why}"),
                None => why,
            });
        }
        let n = self.nonconforming.count.load(Ordering::Relaxed);
        if n > 0 {
            let examples = self
                .nonconforming
                .examples
                .lock()
                .expect("examples")
                .join(" | ");
            error.get_or_insert(format!(
                "{n} answers were not the {}'s shape, e.g. {examples}",
                if self.mapping.contract {
                    "contract"
                } else {
                    "[api] mapping"
                }
            ));
        }
        Finished {
            target_desc: self.describe(),
            target_error: error,
            wal: self.wal.take(),
        }
    }
}
