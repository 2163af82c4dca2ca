//! The groups workload's load phase on each target: the in-process SQLite
//! database (connections, lock nemesis, WAL keeper, load, snapshot) and an
//! HTTP target (the spawned reference server or a service, its health, the
//! fault proxy, kill and lock nemeses, the load, the export or the
//! service's own database as the final tables); and the namespace a run
//! takes on a target that holds other runs' rows.
//!
//! App layer (the groups workload's implementation): imports the engine,
//! the targets and the nemesis.

use crate::checker::Tables;
use crate::client::export::read_export;
use crate::client::http::HttpClient;
use crate::client::mapping::Mapping;
use crate::client::service::Service;
use crate::client::service_db;
use crate::client::spawn::SpawnedServer;
use crate::client::sqlite;
use crate::clock::Clock;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::http_runtime::{run_load_http, GroupIdSource, Nonconforming};
use crate::nemesis::kill::KillNemesis;
use crate::nemesis::lock::LockNemesis;
use crate::nemesis::proxy::FaultProxy;
use crate::prepare::{faults_of, fit, holds_rows, Prepared, RunError};
use crate::runtime::LoadOutcome;
use crate::runtime::{run_load, LoadPlan};
use crate::scenario::api::{EventRows, GroupIds};
use crate::scenario::{self};
use crate::statements::GroupsVariant;
use crate::target_service::{start_service, wait_healthy};
use crate::wal::WalKeeper;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A shard refuses a run id that was used before: a sibling shard never
/// writes this shard's event ids (they carry its `k<i>-` prefix), so any
/// row with them at the start is an earlier run's, and would make the
/// merged audit count events nobody sent in this run (a false violation).
/// Checking only its own prefix keeps the check free of races with the
/// siblings. Errors: exit 2 when such rows exist, 3 when the export fails.
fn refuse_used_run_id(
    rt: &tokio::runtime::Runtime,
    client: &HttpClient,
    run_dir: &Path,
    namespace: &str,
    shard: crate::shard::Shard,
) -> Result<(), RunError> {
    let before = run_dir.join("export-before.json");
    rt.block_on(client.export_to(&before)).map_err(|e| {
        RunError::Target(format!("cannot read the target's rows before the run: {e}"))
    })?;
    let mut tables = Tables::default();
    read_export(&before, namespace, &mut tables).map_err(RunError::Target)?;
    let _ = std::fs::remove_file(&before);
    let own = format!("{namespace}{}", crate::shard::Shard::id_prefix(Some(shard)));
    let used = tables
        .event_ids
        .iter()
        .filter(|id| id.starts_with(&own))
        .count();
    if used > 0 {
        return Err(RunError::Input(format!(
            "the run id of namespace {namespace:?} was used before: the target already holds \
             {used} events of shard {}/{} (ids {own}...); give every sharded run a fresh --run-id",
            shard.index, shard.count
        )));
    }
    Ok(())
}

/// What a target's load phase hands to the audit.
pub(super) struct Phase {
    pub(super) load: LoadOutcome,
    /// The final tables, read as one snapshot after the load drained; None
    /// when the target could not give them (then nothing is judged).
    pub(super) tables: Option<Tables>,
    /// The target, for the summary.
    pub(super) target_desc: String,
    /// The target misbehaved in a way that makes the run exit 3.
    pub(super) target_error: Option<String>,
    /// The target database's WAL, when the bench could watch it.
    pub(super) wal: Option<crate::wal::WalReport>,
}

/// The in-process SQLite target: connections, load, snapshot.
pub(super) fn sqlite_phase(
    p: &Prepared,
    run_dir: &Path,
    plan: &LoadPlan<'_>,
    control: Arc<Control>,
) -> Result<Phase, RunError> {
    let s = &p.scenario;
    let target = &s.target.sqlite();
    let db_path = target
        .path
        .clone()
        .unwrap_or_else(|| run_dir.join("target.db"));
    prepare_database(&db_path, target, &p.variant)?;
    let workers = s.load.ingesters as usize + s.load.resolvers as usize;
    let mut conns = Vec::with_capacity(workers);
    for _ in 0..workers {
        conns
            .push(sqlite::open(&db_path, target).map_err(|e| {
                RunError::Target(format!("cannot open {}: {e}", db_path.display()))
            })?);
    }
    let resolve_conns = conns.split_off(s.load.ingesters as usize);
    let locks = LockNemesis::start(
        db_path.clone(),
        target.clone(),
        faults_of(s, FaultKind::Lock),
        plan.nemesis.clone(),
        plan.clock.now(),
        control,
    );
    let keeper = WalKeeper::start(db_path.clone(), target, plan.sink.clone(), plan.clock);
    let load = run_load(plan, conns, resolve_conns);
    locks.stop();
    let wal = keeper.stop();
    // A database that could not be written (a full disk) says so first.
    let after = |what: String| match plan.control.take_failure() {
        Some(why) => RunError::Target(format!("{why}; then {what}")),
        None => RunError::Target(what),
    };
    let mut conn = sqlite::open(&db_path, target)
        .map_err(|e| after(format!("cannot reopen {}: {e}", db_path.display())))?;
    let tables = snapshot(&mut conn, &p.variant, plan.namespace, &plan.clock)
        .map_err(|e| after(format!("cannot read the final tables: {e}")))?;
    if target.path.is_some() {
        // The database lives elsewhere: keep a copy of it as audited.
        let copy = run_dir.join("target.db");
        crate::whole::produce(&copy, |tmp| {
            conn.execute("VACUUM INTO ?1", [tmp.to_string_lossy()])
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .map_err(|e| {
            after(format!(
                "cannot copy the final database to {}: {e}",
                copy.display()
            ))
        })?;
    }
    Ok(Phase {
        load,
        tables: Some(tables),
        target_desc: format!("sqlite {}", db_path.display()),
        target_error: plan.control.take_failure(),
        wal,
    })
}

/// An HTTP target: spawn the reference server if asked, check it answers,
/// run the load, then read `GET /v1/export` into the run folder and audit it.
pub(super) fn http_phase(
    p: &Prepared,
    run_dir: &Path,
    base: &Path,
    plan: &LoadPlan<'_>,
    control: Arc<Control>,
) -> Result<Phase, RunError> {
    let s = &p.scenario;
    let t = &s.target;
    let faults = &plan.nemesis.plan;
    let mut server = None;
    // The loader compiled it already; the environment is read again here.
    let mapping = Arc::new(
        Mapping::compile(s.api.as_ref(), s.audit.as_ref(), true)
            .map_err(|e| RunError::Input(format!("{}: {}", e.path.join("."), e.reason)))?,
    );
    let audit = s.audit.clone().unwrap_or_default();
    let run_dir_abs = std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    // The service the scenario starts itself, stopped after the final read.
    let mut service = start_service(s, run_dir, base, &mapping.secrets)?;
    let url = match &t.url {
        Some(url) => url.clone(),
        None => {
            // The server gets the very statement file this run checked.
            let db = t.path.clone().unwrap_or_else(|| run_dir.join("target.db"));
            let variant = run_dir.join("variant.sql");
            let hooks = faults.has(FaultKind::Crash)
                || faults.has(FaultKind::Pause)
                || crate::fuzz::Fuzzer::of(s).is_some();
            let spawned = SpawnedServer::start(
                &variant.to_string_lossy(),
                &db,
                t,
                &run_dir.join("server.log"),
                hooks,
                &control,
            )?;
            let url = spawned.url.clone();
            server = Some(Arc::new(Mutex::new(spawned)));
            url
        }
    };
    // A client's pooled connections belong to the runtime that opened them:
    // each runtime below gets a client of its own, or requests hang.
    let client_of = |url: &str| {
        HttpClient::new(url, t.connect_timeout, t.request_timeout)
            .map(|c| c.with_mapping(mapping.clone()))
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?;
    let probe = client_of(&url)?;
    wait_healthy(&rt, &probe, &url, t, service.as_mut(), run_dir, &control)?;
    if let Some(shard) = plan.shard.filter(|s| s.count > 1) {
        refuse_used_run_id(&rt, &client_of(&url)?, run_dir, plan.namespace, shard)?;
    }
    let nonconforming = Arc::new(Nonconforming::default());
    let load_start = plan.clock.now();
    // The nemesis's timed faults, and the fault proxy the load goes through.
    let mut proxy = if faults.has(FaultKind::Proxy) {
        Some(
            FaultProxy::start_with(
                &url,
                plan.nemesis.clone(),
                load_start,
                mapping.contract,
                control.clone(),
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
            plan.nemesis.clone(),
            load_start,
            control.clone(),
        )
    });
    let server_db = t.path.clone().unwrap_or_else(|| run_dir.join("target.db"));
    let locks = LockNemesis::start(
        server_db.clone(),
        t.sqlite(),
        if server.is_some() {
            faults_of(s, FaultKind::Lock)
        } else {
            Vec::new()
        },
        plan.nemesis.clone(),
        load_start,
        control.clone(),
    );
    // The spawned server's database is a local file the bench knows.
    let keeper = server
        .is_some()
        .then(|| WalKeeper::start(server_db, &t.sqlite(), plan.sink.clone(), plan.clock));
    let db =
        |run_dir: &Path| service_db::locate(audit.sqlite.as_deref().unwrap_or(""), run_dir, base);
    let ids = match mapping.group_ids {
        GroupIds::Answer => GroupIdSource::Answers,
        GroupIds::Lookup => GroupIdSource::Lookup,
        GroupIds::Audit => {
            let (audit, run_dir, base) = (audit.clone(), run_dir_abs.clone(), base.to_path_buf());
            GroupIdSource::Database(Arc::new(move || {
                let path =
                    service_db::locate(audit.sqlite.as_deref().unwrap_or(""), &run_dir, &base)?;
                service_db::group_ids(&path, &audit)
            }))
        }
    };
    let (load, gone) = run_load_http(
        plan,
        control,
        client_of(&load_url)?,
        nonconforming.clone(),
        ids,
    );
    locks.stop();
    // Closed before the server stops: its last connection then checkpoints
    // the WAL into the database file the audit reads.
    let wal = keeper.and_then(WalKeeper::stop);
    let mut target_error = kills.and_then(KillNemesis::stop);
    if let Some(p) = proxy.as_mut() {
        p.stop();
    }
    let alive = server
        .as_ref()
        .is_none_or(|srv| srv.lock().expect("server").alive());
    if !alive {
        target_error.get_or_insert("the spawned reference server died during the run".to_string());
    }
    if let Some(Err(e)) = service.as_mut().map(Service::check) {
        target_error.get_or_insert(format!("{e} during the run"));
    }
    let final_read = if audit.sqlite.is_some() {
        // The service's own database, through the scenario's export queries.
        db(&run_dir_abs).and_then(|path| {
            let tables =
                service_db::read_final(&path, &audit, plan.namespace, &|| plan.clock.now())?;
            service_db::copy(&path, &run_dir.join("target.db"))?;
            Ok(tables)
        })
    } else {
        let export = run_dir.join("export.json");
        let read_start = plan.clock.now();
        let exported = rt.block_on(client_of(&url)?.export_to(&export));
        let read_end = plan.clock.now();
        let mut tables = Tables {
            read_start,
            read_end,
            ..Default::default()
        };
        exported
            .map_err(|e| format!("the export could not be read: {e}"))
            .and_then(|_| read_export(&export, plan.namespace, &mut tables))
            .map(|()| tables)
    };
    if let Some(srv) = server {
        srv.lock().expect("server").stop();
    }
    if let Some(svc) = service.as_mut() {
        svc.stop();
    }
    // Without the final tables nothing can be judged: an empty table set
    // would read as "acknowledged data lost", a false violation.
    let tables = match final_read.map(|mut t| {
        t.events_pruned = audit.events == EventRows::Pruned;
        t
    }) {
        Ok(tables) => Some(tables),
        Err(e) => {
            // A cause found earlier (a server that could not be restarted)
            // says more than the export that then failed.
            target_error.get_or_insert(e);
            None
        }
    };
    // Why the load ended early is said after whatever else went wrong
    // (an export that then failed, a service that exited).
    if let Some(why) = gone {
        target_error = Some(match target_error {
            Some(e) => format!("{e}; {why}"),
            None => why,
        });
    }
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
    Ok(Phase {
        load,
        tables,
        target_desc: format!("http {url}"),
        target_error,
        wal,
    })
}

/// Refuses a database that holds rows unless the scenario reuses it; then
/// returns the run's own project namespace (empty for a fresh database).
pub(super) fn namespace_for(
    path: &Path,
    target: &scenario::SqliteTarget,
    started: SystemTime,
) -> Result<String, RunError> {
    if !path.exists() {
        return Ok(String::new());
    }
    let terr = |e: rusqlite::Error| RunError::Target(format!("{}: {e}", path.display()));
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(terr)?;
    if !holds_rows(&conn).map_err(terr)? {
        return Ok(String::new());
    }
    if !target.reuse {
        return Err(RunError::Input(format!(
            "the database {} already holds rows: refusing to mix runs. Set \
             target.reuse = true to run in a namespace of its own, or choose a fresh path",
            path.display()
        )));
    }
    Ok(run_namespace(started))
}

/// The project prefix of a run that shares its target:
/// `r<unix ms>-<random>.`. The random part keeps two runs started in the
/// same millisecond apart (their ids and projects would otherwise mix).
pub(super) fn run_namespace(started: SystemTime) -> String {
    let since = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    // Two runs at once on one machine differ in pid; elsewhere, in ns.
    let tag = (since.subsec_nanos() as u64 ^ ((std::process::id() as u64) << 32))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("r{}-{:08x}.", since.as_millis(), tag >> 32)
}

/// Applies the variant's schema, then checks that the database fits the
/// file (a table already there keeps its shape). Errors: the database
/// cannot be opened, refuses the schema, or does not fit (exit 3, before
/// any op).
fn prepare_database(
    path: &Path,
    target: &scenario::SqliteTarget,
    variant: &GroupsVariant,
) -> Result<(), RunError> {
    let conn = sqlite::open(path, target)
        .map_err(|e| RunError::Target(format!("{}: {e}", path.display())))?;
    conn.execute_batch(&variant.schema)
        .map_err(|e| RunError::Target(format!("schema failed on {}: {e}", path.display())))?;
    fit(&conn, path, &variant.file)
}

/// Reads the canonical tables (the variant's `export.*` queries) in one
/// read transaction, keeping only this run's namespace; times on `clock`
/// (see [`crate::client::sqlite_tables::read_tables`]).
pub(super) fn snapshot(
    conn: &mut Connection,
    variant: &GroupsVariant,
    namespace: &str,
    clock: &Clock,
) -> rusqlite::Result<Tables> {
    crate::client::sqlite_tables::read_tables(conn, variant, namespace, &|| clock.now())
}
