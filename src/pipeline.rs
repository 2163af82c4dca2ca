//! The one pipeline of `specstorm run` for every workload: prepare
//! (scenario, statement file, run folder) -> load -> drain -> final tables
//! -> audit -> report. The workload ([`crate::workload::traits`]) brings
//! its statement file, its load phase, its checkers and its own figures;
//! the run folder, the history's header and footer, the nemesis's
//! recorder, the dashboard, the latency log, the common figures, the
//! thresholds, the exit decision and the saved results are written here,
//! once, for all of them.
//!
//! App layer: imports the workload registry, the run folder's writers and
//! the report; no runner imports it.

use crate::abort_on_fail::AbortWatch;
use crate::clock::Clock;
use crate::control::Control;
use crate::history::writer::HistoryWriter;
use crate::history::{Entry, Footer, Header, HISTORY_SCHEMA_VERSION};
use crate::live::{Live, Phase as RunPhase, RunInfo, Verdicts};
use crate::nemesis::{FaultPlan, Recorder};
use crate::prepare::{default_run_dir, scenario_base, RunError, RunOptions};
use crate::run_folder::{provenance, save_failure, save_results, saved_scenario};
use crate::scenario::TargetKind;
use crate::summary::{self, Summary, SUMMARY_SCHEMA_VERSION};
use crate::variant;
use crate::watch::Watcher;
use crate::whole::{write_whole, Reserve, WriteError};
use crate::workload::registry;
use crate::workload::traits::{LoadCx, SummaryCx, Workload, WorkloadRun};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

/// Runs a scenario end to end with its workload and saves its results;
/// returns the summary (whose `exit.code` is the process's exit code) and
/// the run folder. Errors: a refused input runs nothing and leaves no
/// folder (exit 2); any later error leaves the folder with a failed
/// summary and `junit.xml` (exit 3 or 130).
pub fn run(opts: &RunOptions, control: Arc<Control>) -> Result<(Summary, PathBuf), RunError> {
    let workload = registry::of_scenario(opts.scenario.as_deref(), &opts.overrides)?;
    let mut w = workload.prepare(opts.scenario.as_deref(), &opts.overrides, false)?;
    w.take_shard(opts)?;
    let s = w.scenario();
    control.set_grace(s.stop.grace);
    let started = SystemTime::now();
    let run_dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_run_dir(started, &s.name, &variant::short_name(&s.variant)));
    // An address in use is bad input: refused before the folder exists.
    let metrics = match opts.metrics_addr {
        Some(a) => Some(
            crate::metrics::Exporter::bind(a)
                .map_err(|e| RunError::Input(format!("--metrics-addr {a}: {e}")))?,
        ),
        None => None,
    };
    // The folder is this run's before anything else can take time: a
    // second run on the same --out is refused now, not after both wrote.
    let claim = crate::run_dir::claim(&run_dir).map_err(|e| RunError::Input(e.to_string()))?;
    let claimed = w.claim_target(started);
    // A refused input (a database that holds rows) ran nothing: no folder.
    if let Err(e @ RunError::Input(_)) = claimed {
        claim.release();
        return Err(e);
    }
    let cx = ExecuteCx {
        run_dir: &run_dir,
        started,
        metrics,
    };
    match claimed.and_then(|()| execute(opts, workload, w.as_mut(), cx, control)) {
        Ok(summary) => Ok((summary, run_dir)),
        Err(e) => {
            save_failure(&run_dir, opts, w.scenario(), w.file(), started, &e);
            Err(e)
        }
    }
}

/// Where and when a run goes, and what it serves on the side.
struct ExecuteCx<'a> {
    run_dir: &'a Path,
    started: SystemTime,
    /// `--metrics-addr`'s socket, bound before the folder was claimed.
    metrics: Option<std::net::TcpListener>,
}

/// The run after its folder exists: history, load, audit, results.
fn execute(
    opts: &RunOptions,
    workload: &dyn Workload,
    w: &mut dyn WorkloadRun,
    cx: ExecuteCx,
    control: Arc<Control>,
) -> Result<Summary, RunError> {
    let ExecuteCx {
        run_dir,
        started,
        metrics,
    } = cx;
    let s = w.scenario().clone();
    let variant_name = variant::short_name(&s.variant);
    // Provenance first, so even a run that fails later says what it was.
    let base = scenario_base(opts);
    write_whole(
        &run_dir.join("scenario.toml"),
        saved_scenario(&s, &base).to_toml(),
    )?;
    write_whole(&run_dir.join("variant.sql"), &w.file().text)?;
    // Room for the results, should the load fill the disk; freed (also on
    // every error) before they are written.
    let mut reserve = Reserve::keep(run_dir);

    let history_path = run_dir.join(crate::history::file::FILE);
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
    let shard = crate::shard::shard_header(opts.shard, opts.run_id.as_deref(), clock_utc_ns);
    let mut header = Header {
        schema_version: HISTORY_SCHEMA_VERSION,
        workload: s.workload.name().into(),
        scenario: s.name.clone(),
        variant: variant_name.clone(),
        seed: s.seed,
        started_utc: humantime::format_rfc3339_millis(started).to_string(),
        // Only the in-process target sees every statement.
        step_log: !http,
        counting_step: 0,
        event_step: None,
        namespace: String::new(),
        ingest_steps: Vec::new(),
        ingest_block: None,
        shard: shard.clone(),
        merged: None,
        workload_part: Default::default(),
    };
    w.header(&mut header);
    sink.send_entry(&Entry::Header(header));
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
            stop_events: w.stop_events(),
            stop_duration: crate::scenario::section::load_duration(&s),
            ingest_target: w.ingest_target(),
        },
        w.op_kinds(),
        w.workers(),
        Some(nemesis.plan.clone()),
    ));
    live.set_abort(AbortWatch::new(&s.expectation().1));
    let exporter = match metrics {
        Some(l) => {
            let e = crate::metrics::Exporter::start(l, live.clone())
                .map_err(|e| anyhow::anyhow!("--metrics-addr: {e}"))?;
            // Also under -q: with port 0 this line is the only way to
            // learn where the figures are.
            let _ = writeln!(std::io::stderr(), "metrics: http://{}/metrics", e.addr());
            Some(e)
        }
        None => None,
    };
    let watcher = Watcher::start(opts.watch, live.clone(), control.clone());
    let cx = LoadCx {
        opts,
        run_dir,
        base: &base,
        sink: sink.clone(),
        clock,
        control: &control,
        nemesis: nemesis.clone(),
        live: live.clone(),
    };
    let loaded = w.load(&cx);
    drop(cx);
    if let Ok(l) = &loaded {
        // Draining included, as in the summary's duration.
        live.set_elapsed(l.elapsed_ns);
    }
    live.set_phase(RunPhase::Audit);
    // Every sender must be gone for the writer to finish.
    let faults = nemesis.plan.clone();
    drop(nemesis);
    let interrupted = control.interrupted.load(Ordering::Acquire);
    sink.send_entry(&Entry::Footer(Footer {
        t: clock.now(),
        partial: interrupted,
        ops: loaded.as_ref().map(|l| l.ops).unwrap_or(0),
        tables_read: loaded.as_ref().ok().and_then(|l| l.tables_read),
    }));
    drop(sink);
    let history_bytes = writer.finish().map_err(|e| {
        anyhow::anyhow!(
            "history could not be written to {}: {e}",
            history_path.display()
        )
    })?;
    let loaded = loaded?;

    // The audit: the checkers over the history and the final tables. One
    // pass over the history feeds the checkers and the latency log.
    let mut hlog = crate::report::hlog::Builder::default();
    let results = w.judge(
        &history_path,
        &mut |e| hlog.feed(e),
        loaded.target_error.as_deref(),
    )?;
    reserve.release();
    let latency_log = crate::report::hlog::Log {
        started,
        intervals: hlog.finish(),
    };

    let duration_s = loaded.elapsed_ns as f64 / 1e9;
    let fig = summary::figures_of(&loaded.stats, duration_s, w.op_kinds());
    let (expect, mut thresholds) = s.expectation();
    if opts.in_series {
        thresholds.retain(|t| t.catch_rate().is_none());
    }
    let mut summary = Summary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        scenario: s.name.clone(),
        workload: s.workload.name().into(),
        variant: variant_name,
        seed: s.seed,
        target: loaded.target_desc.clone(),
        partial: interrupted,
        duration_s: (duration_s * 1000.0).round() / 1000.0,
        ops: fig.ops,
        throughput_ops_per_s: fig.throughput,
        latency_us: fig.latency_ok,
        latency_us_not_ok: fig.latency_not_ok,
        latency_saturated: loaded.stats.saturated,
        open_model: None,
        invariants: summary::invariants(&results),
        faults_injected: faults.injected_by_kind(),
        coverage: Default::default(),
        expect: expect.clone(),
        thresholds: Vec::new(),
        aborted_by: None,
        precision: Vec::new(),
        history: BTreeMap::from([
            (
                "file".to_string(),
                serde_json::json!(crate::history::file::FILE),
            ),
            ("bytes".to_string(), serde_json::json!(history_bytes)),
        ]),
        provenance: provenance(opts, w.file(), s.seed, started),
        resolved_scenario: serde_json::to_value(&s).map_err(anyhow::Error::from)?,
        exit: summary::Exit {
            code: 0,
            rule: String::new(),
        },
        shard,
        merged: None,
        wal: loaded.wal.clone(),
        workload_figures: Default::default(),
    };
    w.fill_summary(
        &mut summary,
        &SummaryCx {
            stats: &loaded.stats,
            duration_s,
            interrupted,
            history_bytes,
        },
    );
    // Thresholds name figures of this very summary.
    summary.thresholds = summary::judge_thresholds(&summary.to_json(), &thresholds);
    if let Some(b) = live.abort_breach() {
        summary.mark_aborted(b.index, b.by);
    }
    summary.exit = summary::exit(
        interrupted,
        loaded.target_error.as_deref(),
        &results,
        &summary.coverage,
        &expect,
        &summary.thresholds,
    );
    save_results(run_dir, &summary, &results, Some(&latency_log))?;
    // Before the phase turns done: an interrupt sent on seeing it ends the
    // metrics' linger, however soon it comes.
    let linger_mark = control.interrupts();
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
        stranded: w.stranded(&summary),
        exit: (summary.exit.code, summary.exit.rule.clone()),
        run_dir: run_dir.display().to_string(),
    });
    // The dashboard shows the verdicts for a few seconds (or until a key);
    // then the terminal is the summary's.
    watcher.finish();
    // A closed pipe (`| head`) must not turn a finished run into a panic.
    let parts = workload.human(&summary);
    let text =
        crate::report::human::render(&summary, &results, &run_dir.display().to_string(), &parts);
    let text = if parts.trim_end {
        text.trim_end().to_string()
    } else {
        text
    };
    let _ = if opts.summary_on_stderr {
        writeln!(std::io::stderr(), "{text}")
    } else {
        writeln!(std::io::stdout(), "{text}")
    };
    if let Some(e) = exporter {
        if !opts.metrics_linger.is_zero() && opts.watch != crate::run_options::Watch::Quiet {
            let _ = writeln!(
                std::io::stderr(),
                "metrics: the final figures stay at http://{}/metrics for {} (Ctrl-C ends it)",
                e.addr(),
                humantime::format_duration(opts.metrics_linger)
            );
        }
        e.finish(opts.metrics_linger, &control, linger_mark);
    }
    Ok(summary)
}
