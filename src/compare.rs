//! `specstorm compare`: the same scenario, seed and load against several
//! variants, one after the other, each judged against its own expectation;
//! then one side-by-side table (terminal or Markdown), `compare.json` and
//! `junit.xml` in one folder holding every variant's run folder.
//!
//! Any workload: the table shows its invariants, and its own figures and
//! rows, which it hands over ([`Workload::compare_figures`],
//! [`Workload::compare_rows`]).
//!
//! The exit code follows cli.md over all variants: 2 before anything runs
//! (every variant is checked first), then the first of 130, 3, 1, 4 that
//! any variant produced, else 0.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::control::Control;
use crate::exit_code::ExitCode;
use crate::pipeline::run;
use crate::prepare::{RunError, RunOptions};
use crate::report::junit;
use crate::scenario::Expect;
use crate::scenario::Scenario;
use crate::summary::{Exit, Summary};
use crate::variant;
use crate::watch::Watch;
use crate::workload::parts::CompareRow;
use crate::workload::registry;
use crate::workload::traits::Workload;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Version of `compare.json`; bumped on any incompatible change.
pub const COMPARE_SCHEMA_VERSION: u32 = 1;

/// File name of the comparison in its folder.
pub const FILE: &str = "compare.json";

/// What `specstorm compare` was asked.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// Scenario file; None: the embedded default (then `variants` is needed).
    pub scenario: Option<PathBuf>,
    /// `--set` overrides (and `--seed`, `--duration`), for every variant.
    pub overrides: Vec<String>,
    /// `--variant FILE` (repeatable): these instead of `[[variants]]`.
    pub variants: Vec<String>,
    /// Folder of the comparison; None: `results/<UTC time>-compare-<scenario>/`.
    pub out: Option<PathBuf>,
    /// How each run is watched.
    pub watch: Watch,
    /// Print the table as Markdown.
    pub markdown: bool,
}

/// One variant's line in `compare.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct VariantResult {
    /// Name (folder name under the comparison's folder).
    pub name: String,
    /// The variant as given (statement file or built-in name).
    pub variant: String,
    /// Its run folder, relative to the comparison's folder.
    pub run_dir: String,
    /// What it was expected to do.
    pub expect: Expect,
    /// Its exit code and rule (cli.md); a run that could not start has
    /// its error's code here.
    pub exit: Exit,
    /// Its summary's figures (absent when the run could not start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<serde_json::Value>,
}

/// `compare.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Comparison {
    /// [`COMPARE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// The workload's name (absent in files written when groups was the
    /// only workload; such files read as groups).
    #[serde(default = "workload_of_older_files")]
    pub workload: String,
    /// The seed every variant ran with.
    pub seed: u64,
    /// One entry per variant, in run order.
    pub variants: Vec<VariantResult>,
    /// The comparison's exit code: the first of 2, 130, 3, 1, 4 any variant
    /// produced, else 0 (cli.md, [`ExitCode::PRECEDENCE`]).
    pub exit: Exit,
}

/// The workload of a `compare.json` without `workload`: such a file was
/// written when groups was the only workload, so it is groups whatever
/// the registry's default workload is now (a literal, not the default,
/// and so listed in `tests/architecture.rs`'s allowance).
fn workload_of_older_files() -> String {
    "groups".into()
}

/// The resolved scenario of any workload, its statement file checked by
/// its workload ([`crate::workload::registry`]). Errors: as its
/// workload's (exit 2).
pub fn prepare_any(path: Option<&Path>, overrides: &[String]) -> Result<Scenario, RunError> {
    let w = crate::workload::registry::of_scenario(path, overrides)?;
    Ok(w.prepare(path, overrides, false)?.scenario().clone())
}

/// The variants to run: `(value for --set variant=..., name)`.
fn variant_list(opts: &CompareOptions) -> Result<Vec<(String, String)>, RunError> {
    let p = prepare_any(opts.scenario.as_deref(), &opts.overrides)?;
    let p = Prepared { scenario: p };
    if !opts.variants.is_empty() {
        return Ok(opts
            .variants
            .iter()
            .map(|v| {
                // A file named on the command line is relative to the
                // current folder, while the scenario's are relative to it.
                let value = if v.ends_with(".sql") {
                    std::fs::canonicalize(v)
                        .unwrap_or_else(|_| PathBuf::from(v))
                        .display()
                        .to_string()
                } else {
                    v.clone()
                };
                (value, variant::short_name(v))
            })
            .collect());
    }
    if p.scenario.variants.is_empty() {
        return Err(RunError::Input(format!(
            "{}: no variants to compare: list them in the scenario ([[variants]] with \
             `variant` and `expect`) or give --variant A.sql --variant B.sql",
            describe(&opts.scenario)
        )));
    }
    Ok(p.scenario
        .variants
        .iter()
        .map(|e| (e.variant.clone(), e.name()))
        .collect())
}

fn describe(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map_or("<embedded default>".into(), |p| p.display().to_string())
}

/// Runs every variant and writes the comparison. Returns it and its
/// folder. Errors: an invalid scenario or variant (exit 2, before anything
/// runs), or a folder that cannot be made.
pub fn compare(
    opts: &CompareOptions,
    control: Arc<Control>,
) -> Result<(Comparison, PathBuf), RunError> {
    let runs = checked(opts)?;
    let scenario = runs[0].3.scenario.name.clone();
    let seed = runs[0].3.scenario.seed;
    let workload = runs[0].3.scenario.workload;
    let compared = registry::get(workload.name());
    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_dir(SystemTime::now(), &scenario));
    // One comparison per folder (see `run_dir`); each variant's run then
    // claims its own folder in it.
    crate::run_dir::claim(&dir).map_err(|e| RunError::Input(e.to_string()))?;

    let mut results = Vec::new();
    let mut suites = Vec::new();
    for (name, value, overrides, p) in runs {
        let expect = p.scenario.expectation().0;
        let run_dir = dir.join(&name);
        if !control.rearm() {
            suites.push(junit::failed_suite(
                &p.scenario.name,
                &name,
                ExitCode::Interrupted,
                "not run: the comparison was interrupted",
            ));
            results.push(VariantResult {
                name,
                variant: value,
                run_dir: String::new(),
                expect,
                exit: Exit::new(
                    ExitCode::Interrupted,
                    "not run: the comparison was interrupted",
                ),
                summary: None,
            });
            continue;
        }
        let run_opts = RunOptions {
            scenario: opts.scenario.clone(),
            overrides,
            out: Some(run_dir.clone()),
            watch: opts.watch,
            summary_on_stderr: true,
            ..RunOptions::default()
        };
        let (exit, summary) = match run(&run_opts, control.clone()) {
            Ok((summary, _)) => {
                let checks = read_checks(&run_dir);
                suites.push(junit::suite(&summary, &checks));
                (summary.exit.clone(), Some(summary))
            }
            Err(e) => {
                suites.push(junit::failed_suite(
                    &p.scenario.name,
                    &name,
                    e.exit_code(),
                    &e.to_string(),
                ));
                (Exit::new(e.exit_code(), e.to_string()), None)
            }
        };
        results.push(VariantResult {
            name: name.clone(),
            variant: value,
            run_dir: name,
            expect,
            exit,
            summary: summary.map(|s| figures(compared, &s)),
        });
    }
    let exit = overall_exit(&results);
    let comparison = Comparison {
        schema_version: COMPARE_SCHEMA_VERSION,
        scenario,
        workload: workload.name().to_string(),
        seed,
        variants: results,
        exit,
    };
    // compare.json last: like a run's summary, it is there only when
    // everything before it was written.
    crate::whole::write_whole(
        &dir.join(junit::FILE),
        junit::render(
            &format!("specstorm compare {}", comparison.scenario),
            suites,
        )?,
    )?;
    let json = serde_json::to_string_pretty(&comparison).map_err(anyhow::Error::from)?;
    crate::whole::write_whole(&dir.join(FILE), json)?;
    Ok((comparison, dir))
}

/// `compare --seeds`: each variant's series over the same seeds
/// ([`crate::series::compare_series`]), every variant checked before the
/// first seed runs. Returns each variant's series, the exit over them
/// and the folder.
pub fn compare_seeds(
    opts: &CompareOptions,
    seeds: &crate::seed_list::SeedList,
    control: Arc<Control>,
) -> Result<CompareSeeds, RunError> {
    let runs = checked(opts)?;
    let dir = opts
        .out
        .clone()
        .unwrap_or_else(|| default_dir(SystemTime::now(), &runs[0].3.scenario.name));
    let variants: Vec<(String, Vec<String>)> = runs
        .into_iter()
        .map(|(name, _, overrides, _)| (name, overrides))
        .collect();
    let run_opts = RunOptions {
        scenario: opts.scenario.clone(),
        watch: opts.watch,
        summary_on_stderr: true,
        ..RunOptions::default()
    };
    let (list, exit) = crate::series::compare_series(&run_opts, &variants, seeds, &dir, control)?;
    Ok(CompareSeeds { list, exit, dir })
}

/// What `compare --seeds` found: each variant's name and series, the
/// exit over them, the folder.
pub struct CompareSeeds {
    /// Each variant's name and series, in run order.
    pub list: Vec<(String, crate::series_rates::Series)>,
    /// The first of cli.md's order any series gave.
    pub exit: Exit,
    /// The comparison's folder.
    pub dir: PathBuf,
}

/// A variant checked before the first one runs: its name, the value of
/// `--set variant=`, its overrides and its scenario.
type Checked = (String, String, Vec<String>, Prepared);

/// Every variant to run, checked before the first one runs: its name,
/// the value of `--set variant=`, its overrides and its scenario.
/// Errors: an invalid scenario or variant, two variants of one name
/// (exit 2).
fn checked(opts: &CompareOptions) -> Result<Vec<Checked>, RunError> {
    let list = variant_list(opts)?;
    let mut names: Vec<&str> = Vec::new();
    let mut runs = Vec::new();
    for (value, name) in &list {
        if names.contains(&name.as_str()) {
            return Err(RunError::Input(format!(
                "two variants are named {name:?}: their results would mix; give distinct files or names"
            )));
        }
        names.push(name);
        let mut overrides = opts.overrides.clone();
        overrides.push(format!("variant={value}"));
        // Every variant is checked before the first one runs; an error
        // names the --variant the user wrote, not the override it became.
        let p = prepare_any(opts.scenario.as_deref(), &overrides).map_err(|e| match e {
            RunError::Input(m) if !opts.variants.is_empty() => RunError::Input(m.replace(
                &format!("--set variant={value}"),
                &format!("--variant {value}"),
            )),
            e => e,
        })?;
        let p = Prepared { scenario: p };
        runs.push((name.clone(), value.clone(), overrides, p));
    }
    Ok(runs)
}

/// The saved check results of a run, for its JUnit suite (empty if absent).
fn read_checks(run_dir: &Path) -> Vec<crate::verdict::CheckResult> {
    crate::input::read(&run_dir.join("checks.json"), crate::input::RUN_JSON)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// A checked variant's scenario (the one thing a comparison needs of it).
struct Prepared {
    scenario: Scenario,
}

/// The figures a comparison shows, from a variant's summary: the common
/// ones and the workload's own ([`Workload::compare_figures`]).
fn figures(w: Option<&dyn Workload>, s: &Summary) -> serde_json::Value {
    let mut v = serde_json::json!({
        "duration_s": s.duration_s,
        "throughput_ops_per_s": s.throughput_ops_per_s,
        "latency_us": s.latency_us,
        "ops": s.ops,
        "invariants": s.invariants,
        "faults_injected": s.faults_injected,
        "thresholds": s.thresholds,
    });
    if let (Some(w), Some(m)) = (w, v.as_object_mut()) {
        m.extend(w.compare_figures(s));
    }
    v
}

/// cli.md over several runs: the first of 2, 130, 3, 1, 4 that any
/// produced ([`ExitCode::PRECEDENCE`]).
pub fn overall_exit(results: &[VariantResult]) -> Exit {
    for code in ExitCode::PRECEDENCE {
        let hit: Vec<_> = results
            .iter()
            .filter(|r| r.exit.exit_code() == Some(code))
            .collect();
        if let Some(first) = hit.first() {
            let names: Vec<_> = hit.iter().map(|r| r.name.as_str()).collect();
            return Exit::new(code, format!("{}: {}", names.join(", "), first.exit.rule));
        }
    }
    Exit::new(ExitCode::Met, "every variant met its expectation")
}

fn default_dir(started: SystemTime, scenario: &str) -> PathBuf {
    let t = humantime::format_rfc3339_seconds(started)
        .to_string()
        .replace([':', '-'], "");
    PathBuf::from("results").join(format!(
        "{t}-compare-{}",
        crate::prepare::file_safe(scenario)
    ))
}

/// One row's cells: `f` of each variant, in order.
fn column(c: &Comparison, f: &dyn Fn(&VariantResult) -> String) -> Vec<String> {
    c.variants.iter().map(f).collect()
}

/// The figure at `path` of a variant's summary (None: no summary, or no
/// such figure).
fn fig(r: &VariantResult, path: &[&str]) -> Option<serde_json::Value> {
    let mut v = r.summary.as_ref()?;
    for p in path {
        v = v.get(*p)?;
    }
    Some(v.clone())
}

/// The figure at `path` as a table cell: whole numbers without a
/// fraction, others with one decimal, `-` when absent.
fn num(r: &VariantResult, path: &[&str]) -> String {
    fig(r, path).map_or("-".to_string(), |v| match v.as_f64() {
        Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
        Some(x) => format!("{x:.1}"),
        None => v.to_string(),
    })
}

/// The workload's figure rows ([`Workload::compare_rows`]; a workload
/// this build does not know: the default's), each in every variant's
/// column; a row shown only when nonzero only when some variant has it so.
fn workload_rows(c: &Comparison) -> Vec<(String, Vec<String>)> {
    let rows = registry::get(&c.workload).map_or_else(CompareRow::common, |w| w.compare_rows());
    rows.into_iter()
        .filter(|row| {
            let path: Vec<&str> = row.path.iter().map(String::as_str).collect();
            !row.only_when_nonzero
                || c.variants.iter().any(|r| {
                    fig(r, &path)
                        .and_then(|v| v.as_u64())
                        .is_some_and(|n| n > 0)
                })
        })
        .map(|row| {
            let path: Vec<&str> = row.path.iter().map(String::as_str).collect();
            (row.label, column(c, &|r| num(r, &path)))
        })
        .collect()
}

/// The side-by-side table: one column per variant, one row per figure.
/// `markdown` gives a GitHub table; else aligned plain text.
pub fn table(c: &Comparison, markdown: bool) -> String {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let col = |f: &dyn Fn(&VariantResult) -> String| column(c, f);
    rows.push(("expect".into(), col(&|r| r.expect.to_string())));
    rows.push((
        "exit".into(),
        col(&|r| {
            if r.summary.is_none() {
                let why = if r.exit.exit_code() == Some(ExitCode::Interrupted) {
                    "not run"
                } else {
                    "no result"
                };
                return format!("{} ({why})", r.exit.code);
            }
            let met = match r.exit.exit_code() {
                Some(ExitCode::Met) => "met",
                Some(ExitCode::NotMet) => "NOT MET",
                Some(ExitCode::Inconclusive) => "inconclusive",
                Some(ExitCode::Interrupted) => "interrupted",
                Some(ExitCode::Usage | ExitCode::Target) | None => "error",
            };
            format!("{} ({met})", r.exit.code)
        }),
    ));
    let mut invariants: Vec<String> = Vec::new();
    for r in &c.variants {
        if let Some(serde_json::Value::Object(m)) = fig(r, &["invariants"]) {
            for k in m.keys() {
                if !invariants.contains(k) {
                    invariants.push(k.clone());
                }
            }
        }
    }
    for inv in &invariants {
        rows.push((
            inv.clone(),
            col(&|r| {
                let verdict = fig(r, &["invariants", inv, "verdict"])
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or("-".into());
                let n = num(r, &["invariants", inv, "violations"]);
                let shown = match fig(r, &["invariants", inv, "first_violation_s"])
                    .and_then(|v| v.as_f64())
                {
                    Some(t) if verdict == "violated" => format!("VIOLATED x{n}, first at {t:.3}s"),
                    _ if verdict == "violated" => format!("VIOLATED x{n}"),
                    _ => verdict,
                };
                if r.expect.ignores(inv) {
                    format!("{shown} (not judged)")
                } else {
                    shown
                }
            }),
        ));
    }
    rows.extend(workload_rows(c));
    rows.push((
        "faults injected".into(),
        col(&|r| match fig(r, &["faults_injected"]) {
            _ if r.summary.is_none() => "-".into(),
            Some(serde_json::Value::Object(m)) if !m.is_empty() => m
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            _ => "none".into(),
        }),
    ));
    rows.push((
        "thresholds".into(),
        col(
            &|r| match fig(r, &["thresholds"]).and_then(|v| v.as_array().cloned()) {
                _ if r.summary.is_none() => "-".into(),
                Some(t) if !t.is_empty() => {
                    let met = t.iter().filter(|x| x["passed"] == true).count();
                    format!("{met}/{} met", t.len())
                }
                _ => "none".into(),
            },
        ),
    ));
    let header: Vec<String> = std::iter::once("figure".to_string())
        .chain(c.variants.iter().map(|r| r.name.clone()))
        .collect();
    let mut out = String::new();
    if markdown {
        let cell = |s: &str| s.replace('|', "\\|");
        let _ = writeln!(
            out,
            "| {} |",
            header
                .iter()
                .map(|h| cell(h))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for (name, cells) in &rows {
            let _ = writeln!(
                out,
                "| {} | {} |",
                cell(name),
                cells
                    .iter()
                    .map(|c| cell(c))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
        }
    } else {
        let width = |i: usize| {
            std::iter::once(header[i].chars().count())
                .chain(rows.iter().map(|(n, c)| {
                    if i == 0 {
                        n.chars().count()
                    } else {
                        c[i - 1].chars().count()
                    }
                }))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..header.len()).map(width).collect();
        let line = |cells: Vec<&str>| {
            cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let _ = writeln!(out, "{}", line(header.iter().map(String::as_str).collect()));
        for (name, cells) in &rows {
            let mut all = vec![name.as_str()];
            all.extend(cells.iter().map(String::as_str));
            let _ = writeln!(out, "{}", line(all));
        }
    }
    let _ = writeln!(out, "\nexit {}: {}", c.exit.code, c.exit.rule);
    out
}
