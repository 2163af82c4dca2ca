//! One outbox run, end to end (`workload = "outbox"`): check the scenario
//! and its statement file, prepare the run folder and the SQLite database,
//! run the queue and the handlers ([`crate::outbox_runtime`]; on an HTTP
//! target [`crate::outbox_http`]), read the canonical tables as one
//! snapshot (HTTP: `GET /v1/outbox/export`), audit them with the outbox checkers,
//! and save the same run folder as groups (summary.json, checks.json,
//! junit.xml, history.jsonl, latency.hlog). `dispatch::run` and `specstorm
//! check` hand outbox scenarios here; `compare` runs each variant through
//! `dispatch::run`, `audit` re-judges a folder with [`crate::audit_outbox`];
//! `merge` joins the shards of a sharded outbox run ([`crate::merge_outbox`]).

use crate::checker::outbox::{self as checks, OutboxFacts};
use crate::client::sqlite;
use crate::clock::Clock;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::history::writer::HistoryWriter;
use crate::history::{Entry, Footer, Header, OpKind, OutboxHeader, HISTORY_SCHEMA_VERSION};
use crate::live::{Live, Phase as RunPhase, RunInfo, Verdicts};
use crate::nemesis::lock::LockNemesis;
use crate::nemesis::{FaultPlan, Recorder};
use crate::outbox_runtime::{run_outbox, OutboxPlan};
use crate::prepare::{RunError, RunOptions};
use crate::report::summary::{self, OutboxSummary, Summary, SUMMARY_SCHEMA_VERSION};
use crate::scenario::{self, Scenario, TargetKind, Workload};
use crate::statements::OutboxVariant;
use crate::variant;
use crate::verdict::CheckResult;
use crate::watch::Watcher;
use crate::whole::{write_whole, Reserve, WriteError};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

/// An outbox scenario and its checked variant, before anything runs.
pub struct OutboxPrepared {
    /// The resolved scenario.
    pub scenario: Scenario,
    /// Where it came from.
    pub source: scenario::Source,
    /// The statement file, checked against the outbox workload.
    pub variant: OutboxVariant,
}

/// Whether the scenario at `path` (with `overrides`) runs the outbox
/// workload. Errors: the scenario is invalid (exit 2).
pub fn is_outbox(path: Option<&Path>, overrides: &[String]) -> Result<bool, RunError> {
    let (s, _) = scenario::load(path, overrides).map_err(|e| RunError::Input(e.to_string()))?;
    Ok(s.workload == Workload::Outbox)
}

/// Loads and checks an outbox scenario and its statement file, and the
/// faults' step names against `handle`. Errors: file, line, reason (exit 2).
pub fn prepare(path: Option<&Path>, overrides: &[String]) -> Result<OutboxPrepared, RunError> {
    let (scenario, source) =
        scenario::load(path, overrides).map_err(|e| RunError::Input(e.to_string()))?;
    let dir = path.map(|p| p.parent().unwrap_or(Path::new(".")).to_path_buf());
    let variant = variant::load_outbox(&scenario.variant, dir.as_deref())
        .map_err(|e| RunError::Input(e.to_string()))?;
    let names: Vec<&str> = variant
        .handle
        .steps
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    for (i, f) in scenario.faults.iter().enumerate() {
        let Some(step) = &f.step else { continue };
        if !names.contains(&step.as_str()) {
            let file = path.map_or("<embedded default>".to_string(), |p| {
                p.display().to_string()
            });
            let line = scenario::fault_line(&source.text, i, Some("step"))
                .map_or(String::new(), |l| format!(":{l}"));
            return Err(RunError::Input(format!(
                "{file}{line}: `faults[{i}].step` = {step:?} is no step of handle (its steps \
                 are {})",
                names.join(", ")
            )));
        }
    }
    Ok(OutboxPrepared {
        scenario,
        source,
        variant,
    })
}

/// The `specstorm check` text of an outbox scenario.
pub fn describe(p: &OutboxPrepared) -> String {
    let v = &p.variant;
    format!(
        "{}# variant: {} (sha256 {}): handle {} steps ({})\n# this run expects: {}\n",
        p.scenario.to_toml(),
        v.file.path.display(),
        v.file.sha256,
        v.handle.steps.len(),
        v.handle
            .steps
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        p.scenario.expectation().0
    )
}

/// Runs an outbox scenario end to end; returns the summary (whose
/// `exit.code` is the process's) and the run folder. Errors as `run::run`.
pub fn run(opts: &RunOptions, control: Arc<Control>) -> Result<(Summary, PathBuf), RunError> {
    let p = prepare(opts.scenario.as_deref(), &opts.overrides)?;
    crate::outbox_shard::check(&p.scenario, opts.shard, opts.run_id.as_deref())?;
    let s = &p.scenario;
    control.set_grace(s.stop.grace);
    let started = SystemTime::now();
    let variant_name = variant::short_name(&s.variant);
    let run_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| crate::prepare::default_run_dir(started, &s.name, &variant_name));
    // The folder is this run's before anything else can take time (see
    // `run_dir`); a refusal below gives it up again.
    let claim = crate::run_dir::claim(&run_dir).map_err(|e| RunError::Input(e.to_string()))?;
    // A refused input (a database that holds rows) ran nothing: no folder.
    // A database that cannot be read is the target's failure, said in the
    // folder as groups says it.
    let checked = refuse_used_database(s);
    if let Err(e @ RunError::Input(_)) = checked {
        claim.release();
        return Err(e);
    }
    match checked.and_then(|()| execute(opts, &p, &run_dir, started, control)) {
        Ok(summary) => Ok((summary, run_dir)),
        Err(e) => {
            crate::run_folder::save_failure(&run_dir, opts, s, &p.variant.file, started, &e);
            Err(e)
        }
    }
}

/// Refuses a `target.path` database that holds rows (exit 2), or that
/// cannot be read (exit 3): an outbox run's versions and message ids are
/// its own.
fn refuse_used_database(s: &Scenario) -> Result<(), RunError> {
    let Some(path) = s.target.path.as_ref().filter(|p| p.exists()) else {
        return Ok(());
    };
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| RunError::Target(format!("{}: {e}", path.display())))?;
    if crate::prepare::holds_rows(&conn)
        .map_err(|e| RunError::Target(format!("{}: {e}", path.display())))?
    {
        return Err(RunError::Input(format!(
            "the database {} already holds rows: an outbox run needs a fresh \
             database (its versions and message ids are the run's own)",
            path.display()
        )));
    }
    Ok(())
}

fn execute(
    opts: &RunOptions,
    p: &OutboxPrepared,
    run_dir: &Path,
    started: SystemTime,
    control: Arc<Control>,
) -> Result<Summary, RunError> {
    let s = &p.scenario;
    let cfg = s.outbox.clone().expect("an outbox scenario has [outbox]");
    let variant_name = variant::short_name(&s.variant);
    let base = crate::prepare::scenario_base(opts);
    let saved = crate::run_folder::saved_scenario(s, &base);
    write_whole(&run_dir.join("scenario.toml"), saved.to_toml())?;
    write_whole(&run_dir.join("variant.sql"), &p.variant.file.text)?;
    // Room for the results, should the load fill the disk; freed (also on
    // every error) before they are written.
    let mut reserve = Reserve::keep(run_dir);

    let http = s.target.kind == TargetKind::Http;
    let history_path = run_dir.join("history.jsonl");
    // A history that cannot be written (a full disk) stops the load at
    // once; its error ends the run with exit 3 (`writer.finish()`).
    let stop = control.clone();
    let writer = HistoryWriter::create_with(&history_path, move |_| stop.request_stop())
        .map_err(|e| WriteError::new(&history_path, e))?;
    let sink = writer.sink();
    let clock = Clock::start();
    sink.send_entry(&Entry::Header(Header {
        schema_version: HISTORY_SCHEMA_VERSION,
        workload: "outbox".into(),
        scenario: s.name.clone(),
        variant: variant_name.clone(),
        seed: s.seed,
        started_utc: humantime::format_rfc3339_millis(started).to_string(),
        // Over HTTP the server runs the steps: the bench sees none.
        step_log: !http,
        counting_step: 0,
        event_step: None,
        namespace: String::new(),
        ingest_steps: Vec::new(),
        shard: crate::shard::shard_header(
            opts.shard,
            opts.run_id.as_deref(),
            crate::shard::clock_utc_ns(),
        ),
        merged: None,
        outbox: Some(OutboxHeader {
            messages: cfg.messages,
            deliveries: cfg.deliveries,
            max_attempts: cfg.max_attempts,
        }),
    }));
    let nemesis = Recorder {
        plan: Arc::new(FaultPlan::new(s.seed, &s.faults)),
        sink: sink.clone(),
        clock,
    };
    let target = s.target.sqlite();
    let db_path = target
        .path
        .clone()
        .unwrap_or_else(|| run_dir.join("target.db"));
    let live = Arc::new(Live::new(
        RunInfo {
            scenario: s.name.clone(),
            variant: variant_name.clone(),
            target: match &s.target.url {
                Some(url) if http => format!("http {url}"),
                _ if http => "http (spawned reference server)".into(),
                _ => format!("sqlite {}", db_path.display()),
            },
            seed: s.seed,
            stop_events: 0,
            stop_duration: s.stop.duration,
        },
        cfg.handlers as usize,
        Some(nemesis.plan.clone()),
    ));
    let watcher = Watcher::start(opts.watch, live.clone(), control.clone());

    // The database, the handlers' connections, the load, the snapshot.
    let mut target_desc = format!("sqlite {}", db_path.display());
    let mut target_error = None;
    let mut wal = None;
    let phase = if http {
        crate::outbox_http::phase(crate::outbox_http::HttpInputs {
            scenario: s,
            variant: &p.variant,
            run_dir,
            base: &base,
            sink: sink.clone(),
            clock,
            control: control.clone(),
            nemesis: nemesis.clone(),
            live: live.clone(),
            shard: opts.shard,
        })
        .map(|o| {
            target_desc = o.target_desc;
            target_error = o.target_error;
            wal = o.wal;
            (o.load, o.tables)
        })
    } else {
        sqlite_phase(
            s, p, &db_path, &target, &nemesis, &sink, clock, &control, &live, run_dir,
        )
        .map(|(l, t, w)| {
            wal = w;
            target_error = control.take_failure();
            (l, Some(t))
        })
    };
    live.set_phase(RunPhase::Audit);
    let faults = nemesis.plan.clone();
    drop(nemesis);
    let interrupted = control.interrupted.load(Ordering::Acquire);
    sink.send_entry(&Entry::Footer(Footer {
        t: clock.now(),
        partial: interrupted,
        ops: phase.as_ref().map(|(l, _)| l.ops).unwrap_or(0),
        tables_read: phase
            .as_ref()
            .ok()
            .and_then(|(_, t)| t.as_ref())
            .map(|t| [t.read_start, t.read_end]),
    }));
    drop(sink);
    let history_bytes = writer.finish().map_err(|e| {
        anyhow::anyhow!(
            "history could not be written to {}: {e}",
            history_path.display()
        )
    })?;
    let (load, tables) = phase?;
    live.set_elapsed(load.elapsed_ns);

    let mut hlog = crate::report::hlog::Builder::default();
    let facts = OutboxFacts::read(crate::history::reader::read(&history_path)?.inspect(|e| {
        if let Ok(e) = e {
            hlog.feed(e);
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
    let (results, liveness) = match &tables {
        Some(t) => checks::check_all(&facts, t),
        // No final tables (the target failed): nothing is judged.
        None => (
            checks::all_unknown(
                target_error
                    .as_deref()
                    .unwrap_or("the final tables could not be read"),
            ),
            checks::liveness::report(&facts, &checks::OutboxTables::default()),
        ),
    };
    let duration_s = load.elapsed_ns as f64 / 1e9;
    let fig = summary::figures_of(&load.stats, duration_s, &OpKind::OUTBOX);
    let (expect, thresholds) = s.expectation();
    let coverage = crate::report::coverage::outbox(&liveness);
    let unfinished = facts.attempts.iter().filter(|a| a.t1.is_none()).count();
    let mut summary = Summary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        scenario: s.name.clone(),
        workload: "outbox".into(),
        variant: variant_name,
        seed: s.seed,
        target: target_desc,
        partial: interrupted,
        duration_s: (duration_s * 1000.0).round() / 1000.0,
        // Groups-only figures: left out of summary.json (Summary::to_json).
        events: 0,
        events_per_s: 0.0,
        ops: fig.ops,
        throughput_ops_per_s: fig.throughput,
        latency_us: fig.latency_ok,
        latency_us_not_ok: fig.latency_not_ok,
        latency_saturated: load.stats.saturated,
        duplicates: 0,
        resolves: BTreeMap::new(),
        open_model: None,
        invariants: summary::invariants(&results),
        stranded_events: Default::default(),
        faults_injected: faults.injected_by_kind(),
        coverage,
        evidence: Default::default(),
        expect: expect.clone(),
        thresholds: Vec::new(),
        precision: Vec::new(),
        history: BTreeMap::from([
            ("file".to_string(), serde_json::json!("history.jsonl")),
            ("bytes".to_string(), serde_json::json!(history_bytes)),
            ("ops".to_string(), serde_json::json!(facts.attempts.len())),
            ("unfinished_ops".to_string(), serde_json::json!(unfinished)),
        ]),
        provenance: crate::run_folder::provenance(opts, &p.variant.file, p.scenario.seed, started),
        resolved_scenario: serde_json::to_value(s).map_err(anyhow::Error::from)?,
        exit: summary::Exit {
            code: 0,
            rule: String::new(),
        },
        shard: facts.shard.clone(),
        merged: None,
        wal,
        outbox: Some(OutboxSummary {
            messages: cfg.messages,
            deliveries: cfg.deliveries,
            handlers: cfg.handlers,
            max_attempts: cfg.max_attempts,
            attempts: load.ops,
            acked_deliveries: load.acked,
            given_up_deliveries: load.given_up.len() as u64,
            given_up: load.given_up.iter().take(50).copied().collect(),
            cas_lost: load.cas_lost,
            crashed: load.crashed,
            errors: load.errors,
            redelivered_attempts: load.redelivered,
            overlapping_attempts: load.overlapping_attempts,
            lease_expired: load.lease_expired,
            late_acks: load.late_acks,
            acked_per_s: summary::rate(load.acked, duration_s),
            liveness,
        }),
    };
    summary.thresholds = summary::judge_thresholds(&summary.to_json(), &thresholds);
    summary.exit = summary::exit(
        interrupted,
        target_error.as_deref(),
        &results,
        &summary.coverage,
        &expect,
        &summary.thresholds,
    );
    crate::run_folder::save_results(run_dir, &summary.to_json(), &summary, &results)?;
    live.set_verdicts(Verdicts {
        invariants: results
            .iter()
            .map(|r| {
                let n = if r.violations > 0 {
                    r.violations
                } else {
                    r.unknowns
                };
                (r.invariant.clone(), r.verdict, n, r.first_explanation())
            })
            .collect(),
        stranded: Some(0),
        exit: (summary.exit.code, summary.exit.rule.clone()),
        run_dir: run_dir.display().to_string(),
    });
    watcher.finish();
    let text = render(&summary, &results, &run_dir.display().to_string());
    let _ = if opts.summary_on_stderr {
        writeln!(std::io::stderr(), "{text}")
    } else {
        writeln!(std::io::stdout(), "{text}")
    };
    Ok(summary)
}

/// The in-process SQLite phase: the database, the handlers' connections,
/// the load with the lock nemesis, the snapshot (and the final copy).
#[allow(clippy::too_many_arguments)]
fn sqlite_phase(
    s: &Scenario,
    p: &OutboxPrepared,
    db_path: &Path,
    target: &scenario::SqliteTarget,
    nemesis: &Recorder,
    sink: &crate::history::writer::HistorySink,
    clock: crate::clock::Clock,
    control: &Arc<Control>,
    live: &Arc<Live>,
    run_dir: &Path,
) -> Result<
    (
        crate::outbox_runtime::OutboxOutcome,
        checks::OutboxTables,
        Option<crate::wal::WalReport>,
    ),
    RunError,
> {
    let cfg = s.outbox.clone().expect("an outbox scenario has [outbox]");
    let db_path = db_path.to_path_buf();
    let target = target.clone();
    (|| -> Result<_, RunError> {
        let conn = sqlite::open(&db_path, &target)
            .map_err(|e| RunError::Target(format!("{}: {e}", db_path.display())))?;
        conn.execute_batch(&p.variant.schema).map_err(|e| {
            RunError::Target(format!("schema failed on {}: {e}", db_path.display()))
        })?;
        crate::prepare::fit(&conn, &db_path, &p.variant.file)?;
        drop(conn);
        let mut conns = Vec::with_capacity(cfg.handlers as usize);
        for _ in 0..cfg.handlers {
            conns.push(sqlite::open(&db_path, &target).map_err(|e| {
                RunError::Target(format!("cannot open {}: {e}", db_path.display()))
            })?);
        }
        let locks = LockNemesis::start(
            db_path.clone(),
            target.clone(),
            crate::prepare::faults_of(s, FaultKind::Lock),
            nemesis.clone(),
            clock.now(),
            control.clone(),
        );
        let plan = OutboxPlan {
            scenario: s,
            variant: &p.variant,
            sink: sink.clone(),
            clock,
            control,
            nemesis: nemesis.clone(),
            live: live.clone(),
        };
        let keeper = crate::wal::WalKeeper::start(db_path.clone(), &target, sink.clone(), clock);
        let load = run_outbox(&plan, conns);
        locks.stop();
        let wal = keeper.stop();
        // A database that could not be written (a full disk) says so first;
        // otherwise the run's phase takes the reason as its target error.
        let after = |what: String| match control.take_failure() {
            Some(why) => RunError::Target(format!("{why}; then {what}")),
            None => RunError::Target(what),
        };
        let mut conn = sqlite::open(&db_path, &target)
            .map_err(|e| after(format!("cannot reopen {}: {e}", db_path.display())))?;
        let tables = checks::tables::read(&mut conn, &p.variant, &|| clock.now())
            .map_err(|e| after(format!("cannot read the final tables: {e}")))?;
        if target.path.is_some() {
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
        Ok((load, tables, wal))
    })()
}

/// The end-of-run text of an outbox run: the human summary, whose load
/// part is the outbox's own (queue, attempts, leases, liveness) and which
/// has no groups figures (events, resolves, stranded events).
pub fn render(s: &Summary, results: &[CheckResult], run_dir: &str) -> String {
    crate::report::human::render(s, results, run_dir)
        .trim_end()
        .to_string()
}
