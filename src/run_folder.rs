//! What every runner writes into its run folder besides the history: the
//! scenario it saves (`scenario.toml`), the results of a finished run
//! (`checks.json`, `junit.xml`, `summary.json`, each whole), what a failed
//! run can say, and the provenance both carry. Written here once for every
//! workload.
//!
//! App layer, below every runner: imports the reports, the verdicts, the
//! config and [`crate::prepare`], never a runner.

use crate::prepare::{reproduce_command, RunError, RunOptions};
use crate::scenario::Scenario;
use crate::summary::{Exit, FailedSummary, Provenance, Summary, SUMMARY_SCHEMA_VERSION};
use crate::variant;
use crate::whole::write_whole;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// Saves what a run that failed with `e` can say, the one place both
/// workloads' failed runs are written: a `summary.json` that says what the
/// run was and why it stopped (scenario, workload, variant, seed, partial,
/// error, provenance, exit), and a `junit.xml` whose run case is in error,
/// each whole or absent. Earlier ones are removed first: they may tell of a
/// run that went well (the failure came while the results were written),
/// and the space they free may be what the new ones need. A file that
/// cannot be written either is said on stderr.
pub(crate) fn save_failure(
    run_dir: &Path,
    opts: &RunOptions,
    s: &Scenario,
    file: &crate::statements::StatementFile,
    started: SystemTime,
    e: &RunError,
) {
    let variant = variant::short_name(&s.variant);
    let summary = FailedSummary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        scenario: s.name.clone(),
        workload: s.workload.name().to_string(),
        variant: variant.clone(),
        seed: s.seed,
        partial: matches!(e, RunError::Interrupted(_)),
        error: e.to_string(),
        provenance: provenance(opts, file, s.seed, started),
        exit: Exit::new(e.exit_code(), e.to_string()),
    };
    // Through a JSON value: its keys in sorted order, as every summary's.
    let summary = serde_json::to_value(&summary).expect("a FailedSummary always serializes");
    let junit_path = run_dir.join(crate::report::junit::FILE);
    let summary_path = run_dir.join("summary.json");
    for p in [&summary_path, &junit_path] {
        let _ = std::fs::remove_file(p);
    }
    let suite =
        crate::report::junit::failed_suite(&s.name, &variant, e.exit_code(), &e.to_string());
    let junit = crate::report::junit::render("specstorm", vec![suite]);
    let text = serde_json::to_string_pretty(&summary).map_err(anyhow::Error::from);
    for (path, text) in [(&summary_path, text), (&junit_path, junit)] {
        let written = text.and_then(|t| write_whole(path, t).map_err(anyhow::Error::from));
        if let Err(w) = written {
            let _ = writeln!(
                std::io::stderr(),
                "specstorm: the failed run's {} could not be saved either: {w}",
                path.file_name().unwrap_or_default().to_string_lossy()
            );
        }
    }
}

/// The scenario a run saves as `scenario.toml` (both workloads): it names
/// the saved `variant.sql`, so that `specstorm run RUN_DIR/scenario.toml`
/// runs the very same thing again, and runs one variant with its own
/// expectation, resolved. What names the scenario's folder (`base`) or
/// variant is resolved now, so that the saved scenario starts and audits
/// the same service again.
pub(crate) fn saved_scenario(s: &Scenario, base: &Path) -> Scenario {
    let mut saved = s.clone();
    saved.variant = "variant.sql".into();
    if let Some(c) = &mut saved.target.command {
        *c = c.replace("{variant}", &variant::short_name(&s.variant));
        let dir = base.join(saved.target.workdir.as_deref().unwrap_or("."));
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        saved.target.workdir = Some(dir.display().to_string());
    }
    if let Some(ca) = &mut saved.target.ca_file {
        let abs = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        *ca = abs.join(&*ca);
    }
    if let Some(p) = saved.audit.as_mut().and_then(|a| a.sqlite.as_mut()) {
        if !p.starts_with("{run_dir}") && Path::new(p.as_str()).is_relative() {
            let abs = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
            *p = abs.join(p.as_str()).display().to_string();
        }
    }
    (saved.expect, saved.thresholds) = s.expectation();
    saved.variants.clear();
    saved
}

/// Where the run came from, and the command that reproduces it (cli.md):
/// tool and SQLite versions, scenario and statement files, the file's
/// sha256, the UTC start. Shared by both workloads' runs.
pub(crate) fn provenance(
    opts: &RunOptions,
    file: &crate::statements::StatementFile,
    seed: u64,
    started: SystemTime,
) -> Provenance {
    Provenance {
        tool: "specstorm".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        sqlite_version: rusqlite::version().into(),
        scenario_file: opts.scenario.as_ref().map(|f| {
            std::fs::canonicalize(f)
                .unwrap_or_else(|_| f.clone())
                .display()
                .to_string()
        }),
        variant_file: file.path.display().to_string(),
        variant_sha256: file.sha256.clone(),
        started_utc: humantime::format_rfc3339_millis(started).to_string(),
        command: reproduce_command(opts, seed),
        checker_version: crate::summary::CHECKER_VERSION,
    }
}

/// Writes a finished run's results (crate::report::export): its latency
/// log (when given), `checks.json`, `junit.xml` and, last, `summary.json`,
/// each whole. The summary goes last: a run whose results could not all
/// be written ends with exit 3, and its failed summary replaces none that
/// says otherwise. Shared by every workload's runs.
pub(crate) fn save_results(
    run_dir: &Path,
    summary: &Summary,
    results: &[crate::verdict::CheckResult],
    latency_log: Option<&crate::report::hlog::Log>,
) -> Result<(), RunError> {
    use crate::report::export::{write_all, ExportError, Exporter, RunResults};
    use crate::report::results::RESULTS;
    let log = latency_log.map(crate::report::hlog::LatencyLog);
    let mut files: Vec<&dyn Exporter> = Vec::new();
    if let Some(l) = &log {
        files.push(l);
    }
    files.extend(RESULTS);
    let run = RunResults {
        summary,
        results,
        junit_name: "specstorm",
    };
    write_all(run_dir, &files, &run).map_err(|e| match e {
        ExportError::Write(w) => RunError::Write(w),
        e @ ExportError::Serialize { .. } => RunError::Other(e.into()),
    })
}
