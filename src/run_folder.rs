//! What every runner writes into its run folder besides the history: the
//! results of a finished run (`checks.json`, `junit.xml`, `summary.json`,
//! each whole), what a failed run can say, and the provenance both carry.
//! Written here once for every workload.
//!
//! App layer, below every runner: imports the reports, the verdicts and
//! [`crate::prepare`], never a runner.

use crate::prepare::{reproduce_command, RunError, RunOptions};
use crate::report::summary::{Provenance, Summary};
use crate::whole::write_whole;
use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

/// Saves what a run that failed with `e` can say: `summary` as its
/// `summary.json`, and a `junit.xml` whose run case is in error, each
/// whole or absent. Earlier ones are removed first: they may tell of a run
/// that went well (the failure came while the results were written), and
/// the space they free may be what the new ones need. A file that cannot
/// be written either is said on stderr. Shared by both workloads' runs.
pub(crate) fn save_failure(
    run_dir: &Path,
    summary: &serde_json::Value,
    scenario: &str,
    variant: &str,
    e: &RunError,
) {
    let junit_path = run_dir.join(crate::report::junit::FILE);
    let summary_path = run_dir.join("summary.json");
    for p in [&summary_path, &junit_path] {
        let _ = std::fs::remove_file(p);
    }
    let suite =
        crate::report::junit::failed_suite(scenario, variant, e.exit_code(), &e.to_string());
    let junit = crate::report::junit::render("specstorm", vec![suite]);
    let text = serde_json::to_string_pretty(summary).map_err(anyhow::Error::from);
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
        checker_version: crate::checker::CHECKER_VERSION,
    }
}

/// Writes a finished run's `checks.json`, `junit.xml` and, last,
/// `summary.json` (`json`, the summary as written), each whole. The
/// summary goes last: a run whose results could not all be written ends
/// with exit 3, and its failed summary replaces none that says otherwise.
/// Shared by both workloads' runs.
pub(crate) fn save_results(
    run_dir: &Path,
    json: &serde_json::Value,
    summary: &Summary,
    results: &[crate::verdict::CheckResult],
) -> Result<(), RunError> {
    let checks = serde_json::to_string_pretty(results).map_err(anyhow::Error::from)?;
    write_whole(&run_dir.join("checks.json"), checks)?;
    let junit = crate::report::junit::render(
        "specstorm",
        vec![crate::report::junit::suite(summary, results)],
    )?;
    write_whole(&run_dir.join(crate::report::junit::FILE), junit)?;
    let json = serde_json::to_string_pretty(json).map_err(anyhow::Error::from)?;
    write_whole(&run_dir.join("summary.json"), json)?;
    Ok(())
}
