//! One run, end to end: load and check the scenario and variant, prepare
//! the run folder and the database, run the load, read the final tables as
//! one snapshot, audit them against the history, and save the results.

use crate::checker::{check_all, evidence, Facts, Tables};
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
use crate::history::reader;
use crate::history::writer::HistoryWriter;
use crate::history::{Entry, Footer, Header, HISTORY_SCHEMA_VERSION};
use crate::http_runtime::{run_load_http, GroupIdSource, Nonconforming};
use crate::live::{Live, Phase as RunPhase, RunInfo, Verdicts};
use crate::nemesis::kill::KillNemesis;
use crate::nemesis::lock::LockNemesis;
use crate::nemesis::proxy::FaultProxy;
use crate::nemesis::{FaultPlan, Recorder};
use crate::prepare::{
    default_run_dir, faults_of, fit, holds_rows, prepare, scenario_base, Prepared, RunError,
    RunOptions,
};
use crate::report::summary::{self, Summary, SUMMARY_SCHEMA_VERSION};
use crate::run_folder::{provenance, save_failure, save_results, saved_scenario};
use crate::runtime::LoadOutcome;
use crate::runtime::{run_load, LoadPlan};
use crate::scenario::api::{EventRows, GroupIds};
use crate::scenario::{self, TargetKind};
use crate::statements::GroupsVariant;
use crate::target_service::{start_service, wait_healthy};
use crate::variant;
use crate::verdict::CheckResult;
use crate::wal::WalKeeper;
use crate::watch::Watcher;
use crate::whole::{write_whole, Reserve, WriteError};
use rusqlite::{Connection, OpenFlags};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Runs a groups scenario end to end and saves its results; returns the
/// summary (whose `exit.code` is the process's exit code) and the run
/// folder. [`crate::dispatch::run`] hands every scenario to its workload's
/// runner.
pub fn run(opts: &RunOptions, control: Arc<Control>) -> Result<(Summary, PathBuf), RunError> {
    let mut p = prepare(opts.scenario.as_deref(), &opts.overrides)?;
    let sharded = crate::prepare::apply_shard(&mut p.scenario, opts.shard, opts.run_id.as_deref())?;
    let s = &p.scenario;
    control.set_grace(s.stop.grace);
    let started = SystemTime::now();
    let variant_name = variant::short_name(&s.variant);
    let run_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_run_dir(started, &s.name, &variant_name));
    // The folder is this run's before anything else can take time: a
    // second run on the same --out is refused now, not after both wrote.
    let claim = crate::run_dir::claim(&run_dir).map_err(|e| RunError::Input(e.to_string()))?;
    // A database given by path is checked before anything is written.
    let target = &s.target;
    let namespace = match (&target.url, &target.path) {
        // An external service may hold rows of earlier runs (or real data):
        // this run works in a namespace of projects of its own.
        // Shards share one namespace, derived from their run id.
        (Some(_), _) => Ok(sharded.unwrap_or_else(|| run_namespace(started))),
        (None, Some(path)) => namespace_for(path, &target.sqlite(), started),
        (None, None) => Ok(String::new()),
    };
    // A refused input (a database that holds rows) ran nothing: no folder.
    if let Err(e @ RunError::Input(_)) = namespace {
        claim.release();
        return Err(e);
    }
    match namespace.and_then(|ns| execute(opts, &p, &run_dir, ns, started, control)) {
        Ok(summary) => Ok((summary, run_dir)),
        Err(e) => {
            save_failure(&run_dir, opts, s, &p.variant.file, started, &e);
            Err(e)
        }
    }
}

/// The run after its folder exists: database, load, audit, results.
fn execute(
    opts: &RunOptions,
    p: &Prepared,
    run_dir: &Path,
    namespace: String,
    started: SystemTime,
    control: Arc<Control>,
) -> Result<Summary, RunError> {
    let s = &p.scenario;
    let started_utc = humantime::format_rfc3339_millis(started).to_string();
    let variant_name = variant::short_name(&s.variant);
    // Provenance first, so even a run that fails later says what it was.
    let base = scenario_base(opts);
    let saved = saved_scenario(s, &base);
    write_whole(&run_dir.join("scenario.toml"), saved.to_toml())?;
    write_whole(&run_dir.join("variant.sql"), &p.variant.file.text)?;
    // Room for the results, should the load fill the disk; freed (also on
    // every error) before they are written.
    let mut reserve = Reserve::keep(run_dir);

    let history_path = run_dir.join("history.jsonl");
    // A history that cannot be written (a full disk) stops the load at
    // once; its error ends the run with exit 3 (`writer.finish()`).
    let stop = control.clone();
    let writer = HistoryWriter::create_with(&history_path, move |_| stop.request_stop())
        .map_err(|e| WriteError::new(&history_path, e))?;
    let sink = writer.sink();
    let http = s.target.kind == TargetKind::Http;
    // The clock's origin as UTC, read next to it, so that shards' times
    // can be put on one time base (`merge`).
    let clock = Clock::start();
    let clock_utc_ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    sink.send_entry(&Entry::Header(Header {
        outbox: None,
        schema_version: HISTORY_SCHEMA_VERSION,
        workload: "groups".into(),
        scenario: s.name.clone(),
        variant: variant_name.clone(),
        seed: s.seed,
        started_utc: started_utc.clone(),
        // Only the in-process target sees every statement.
        step_log: !http,
        counting_step: p.variant.counting_step as u32,
        event_step: p.variant.event_step.map(|i| i as u32),
        ingest_steps: p
            .variant
            .ingest
            .steps
            .iter()
            .map(|s| s.name.clone())
            .collect(),
        namespace: namespace.clone(),
        shard: crate::shard::shard_header(opts.shard, opts.run_id.as_deref(), clock_utc_ns),
        merged: None,
    }));
    let nemesis = Recorder {
        plan: Arc::new(FaultPlan::new(s.seed, &s.faults)),
        sink: sink.clone(),
        clock,
    };
    let live = Arc::new(Live::new(
        RunInfo {
            scenario: s.name.clone(),
            variant: variant_name.clone(),
            target: match (&s.target.url, s.target.kind) {
                (Some(url), _) => format!("http {url}"),
                (None, TargetKind::Http) => "http (spawned reference server)".into(),
                (None, TargetKind::Sqlite) => format!(
                    "sqlite {}",
                    s.target
                        .path
                        .clone()
                        .unwrap_or_else(|| run_dir.join("target.db"))
                        .display()
                ),
            },
            seed: s.seed,
            stop_events: s.stop.events,
            stop_duration: s.stop.duration,
        },
        (s.load.ingesters + s.load.resolvers) as usize,
        Some(nemesis.plan.clone()),
    ));
    let watcher = Watcher::start(opts.watch, live.clone(), control.clone());
    let plan = LoadPlan {
        scenario: s,
        variant: &p.variant,
        namespace: &namespace,
        sink: sink.clone(),
        clock,
        control: &control,
        nemesis: nemesis.clone(),
        live: live.clone(),
        shard: opts.shard,
    };
    let phase = if http {
        http_phase(p, run_dir, &base, &plan, control.clone())
    } else {
        sqlite_phase(p, run_dir, &plan, control.clone())
    };
    drop(plan);
    if let Ok(ph) = &phase {
        // Draining included, as in the summary's duration.
        live.set_elapsed(ph.load.elapsed_ns);
    }
    live.set_phase(RunPhase::Audit);
    // Every sender must be gone for the writer to finish.
    let faults = nemesis.plan.clone();
    drop(nemesis);
    let interrupted = control.interrupted.load(Ordering::Acquire);
    sink.send_entry(&Entry::Footer(Footer {
        t: clock.now(),
        partial: interrupted,
        ops: phase.as_ref().map(|ph| ph.load.ops).unwrap_or(0),
        tables_read: phase
            .as_ref()
            .ok()
            .and_then(|ph| ph.tables.as_ref())
            .map(|t| [t.read_start, t.read_end]),
    }));
    drop(sink);
    let history_bytes = writer.finish().map_err(|e| {
        anyhow::anyhow!(
            "history could not be written to {}: {e}",
            history_path.display()
        )
    })?;
    let Phase {
        load,
        tables,
        target_desc,
        target_error,
        wal,
    } = phase?;

    // The audit: the checkers over the history and the final tables.
    // One pass over the history feeds the checkers and the latency log.
    let mut hlog = crate::report::hlog::Builder::default();
    let mut ambiguous = crate::report::precision::AmbiguousOps::default();
    let facts = Facts::from_entries(reader::read(&history_path)?.inspect(|e| {
        if let Ok(e) = e {
            hlog.feed(e);
            ambiguous.feed(e);
        }
    }))?;
    reserve.release();
    crate::report::hlog::write(
        &run_dir.join(crate::report::hlog::FILE),
        &crate::report::hlog::Log {
            started,
            intervals: hlog.finish(),
        },
    )?;
    let (results, stranded, tables, evidence) = match tables {
        Some(tables) => {
            let (mut r, st) = check_all(&facts, &tables);
            let ev = evidence::judge(&facts, &tables, &s.min_evidence(), &mut r);
            (r, st, tables, ev)
        }
        None => (
            unjudged(
                target_error
                    .as_deref()
                    .unwrap_or("the final tables are missing"),
            ),
            Default::default(),
            Tables::default(),
            Default::default(),
        ),
    };

    // A shard of several cannot be judged alone (see checker::sharded::shard_verdicts).
    let (results, stranded) = match crate::checker::sharded::shard_verdicts(opts.shard) {
        Some(r) => (r, Default::default()),
        None => (results, stranded),
    };
    let duration_s = load.elapsed_ns as f64 / 1e9;
    let fig = summary::figures(&load.stats, duration_s);
    let accepted = facts.events.values().filter(|e| e.acked).count() as u64;
    let mut coverage = crate::report::coverage::groups(&facts, &tables);
    let resolves_sent: u64 = crate::history::CompletionType::ALL
        .iter()
        .map(|&c| load.stats.count(crate::history::OpKind::Resolve, c))
        .sum();
    if http
        && s.load.resolvers > 0
        && resolves_sent == 0
        && !control.interrupted.load(Ordering::Acquire)
    {
        // Resolvers resolve only groups whose id the service named.
        coverage.gaps.push(
            "no resolve was sent: the resolvers never learned a group id (see \
             api.ingest.group_id and api.group_ids)"
                .into(),
        );
    }
    let (expect, thresholds) = s.expectation();
    let mut summary = Summary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        scenario: s.name.clone(),
        workload: "groups".into(),
        variant: variant_name,
        seed: s.seed,
        target: target_desc,
        partial: interrupted,
        duration_s: (duration_s * 1000.0).round() / 1000.0,
        events: load.fresh_events,
        events_per_s: summary::rate(accepted, duration_s),
        ops: fig.ops,
        throughput_ops_per_s: fig.throughput,
        latency_us: fig.latency_ok,
        latency_us_not_ok: fig.latency_not_ok,
        latency_saturated: load.stats.saturated,
        duplicates: load.stats.duplicates,
        resolves: BTreeMap::from([
            ("resolved".to_string(), load.stats.resolved),
            ("refused".to_string(), load.stats.refused),
        ]),
        open_model: (s.load.model == scenario::LoadModel::Open).then(|| {
            BTreeMap::from([
                ("late".to_string(), load.stats.late),
                ("missed".to_string(), load.missed),
            ])
        }),
        invariants: summary::invariants(&results),
        stranded_events: stranded,
        faults_injected: faults.injected_by_kind(),
        coverage,
        evidence,
        history: BTreeMap::from([
            ("file".to_string(), serde_json::json!("history.jsonl")),
            ("bytes".to_string(), serde_json::json!(history_bytes)),
            ("ops".to_string(), serde_json::json!(facts.ops)),
            (
                "unfinished_ops".to_string(),
                serde_json::json!(facts.unfinished),
            ),
            (
                "event_rows".to_string(),
                serde_json::json!(tables.event_rows),
            ),
            (
                "group_rows".to_string(),
                serde_json::json!(tables.groups.len()),
            ),
        ]),
        provenance: provenance(opts, &p.variant.file, p.scenario.seed, started),
        resolved_scenario: serde_json::to_value(s).map_err(anyhow::Error::from)?,
        expect: expect.clone(),
        thresholds: Vec::new(),
        precision: crate::report::precision::losses(s, &ambiguous),
        exit: summary::Exit {
            code: 0,
            rule: String::new(),
        },
        shard: crate::shard::shard_header(opts.shard, opts.run_id.as_deref(), clock_utc_ns),
        merged: None,
        outbox: None,
        wal,
    };
    // Thresholds name figures of this very summary.
    summary.thresholds = summary::judge_thresholds(
        &serde_json::to_value(&summary).map_err(anyhow::Error::from)?,
        &thresholds,
    );
    summary.exit = summary::exit(
        interrupted,
        target_error.as_deref(),
        &results,
        &summary.coverage,
        &expect,
        &summary.thresholds,
    );
    save_results(run_dir, &summary.to_json(), &summary, &results)?;
    live.set_verdicts(Verdicts {
        invariants: results
            .iter()
            .map(|r| {
                let first = r.first_explanation();
                let n = if r.violations > 0 {
                    r.violations
                } else {
                    r.unknowns
                };
                (r.invariant.clone(), r.verdict, n, first)
            })
            .collect(),
        stranded: summary.stranded_events.total,
        exit: (summary.exit.code, summary.exit.rule.clone()),
        run_dir: run_dir.display().to_string(),
    });
    // The dashboard shows the verdicts until a key; then the terminal is
    // the summary's.
    watcher.finish();
    // A closed pipe (`| head`) must not turn a finished run into a panic.
    let text = crate::report::human::render(&summary, &results, &run_dir.display().to_string());
    let _ = if opts.summary_on_stderr {
        writeln!(std::io::stderr(), "{text}")
    } else {
        writeln!(std::io::stdout(), "{text}")
    };
    Ok(summary)
}

/// Every invariant `unknown`: the final tables could not be read, so no
/// verdict can be given (the run exits 3 for the target's failure).
fn unjudged(why: &str) -> Vec<CheckResult> {
    crate::checker::all_unknown(
        "the final tables",
        "none",
        &format!("not judged: the final tables could not be read ({why})"),
    )
}

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
struct Phase {
    load: LoadOutcome,
    /// The final tables, read as one snapshot after the load drained; None
    /// when the target could not give them (then nothing is judged).
    tables: Option<Tables>,
    /// The target, for the summary.
    target_desc: String,
    /// The target misbehaved in a way that makes the run exit 3.
    target_error: Option<String>,
    /// The target database's WAL, when the bench could watch it.
    wal: Option<crate::wal::WalReport>,
}

/// The in-process SQLite target: connections, load, snapshot.
fn sqlite_phase(
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
fn http_phase(
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
            let hooks = faults.has(FaultKind::Crash) || faults.has(FaultKind::Pause);
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
fn namespace_for(
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
fn run_namespace(started: SystemTime) -> String {
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
pub fn snapshot(
    conn: &mut Connection,
    variant: &GroupsVariant,
    namespace: &str,
    clock: &Clock,
) -> rusqlite::Result<Tables> {
    crate::client::sqlite_tables::read_tables(conn, variant, namespace, &|| clock.now())
}
