//! `run --seeds A..B` and `compare --seeds`: the same scenario run once
//! per seed, one seed after another, each a normal run into its own
//! folder (`DIR/seed-N/`) through the one pipeline; then the series'
//! rates, its `catch_rate` thresholds judged, `series.json` and
//! `junit.xml` written whole into `DIR`. The arithmetic is
//! [`crate::series_rates`]'s, the words [`crate::report::series`]'s.
//!
//! A Ctrl-C stops the running seed as any run (its audit runs, its
//! results are saved, exit 130) and starts no further seed; the series
//! still writes what the seeds that ran found.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::control::Control;
use crate::exit_code::ExitCode;
use crate::pipeline::run;
use crate::prepare::{RunError, RunOptions};
use crate::report::junit;
use crate::seed_list::SeedList;
use crate::series_rates::{SeedRun, Series, FILE};
use crate::summary::Exit;
use crate::whole::write_whole;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Runs `run`'s scenario once per seed of `seeds` into `run.out` (default
/// `results/<UTC time>-seeds-<scenario>-<variant>/`), one run after
/// another, and writes the series. Returns it and its folder. Errors: an
/// invalid scenario or a taken folder (exit 2, before any seed runs), or
/// a file of the series that cannot be written (exit 3).
pub fn run_series(
    run_opts: &RunOptions,
    seeds: &SeedList,
    control: Arc<Control>,
) -> Result<(Series, PathBuf), RunError> {
    let path = run_opts.scenario.as_deref();
    let workload = crate::workload::registry::of_scenario(path, &run_opts.overrides)?;
    let prepared = workload.prepare(path, &run_opts.overrides, false)?;
    let scenario = prepared.scenario().clone();
    let variant = crate::variant::short_name(&scenario.variant);
    let dir = run_opts.out.clone().unwrap_or_else(|| {
        crate::prepare::default_run_dir(
            SystemTime::now(),
            &format!("seeds-{}", scenario.name),
            &variant,
        )
    });
    crate::run_dir::claim(&dir).map_err(|e| RunError::Input(e.to_string()))?;
    let mut runs = Vec::new();
    for &seed in seeds.seeds() {
        if !control.rearm() {
            break;
        }
        let name = format!("seed-{seed}");
        let mut overrides = run_opts.overrides.clone();
        overrides.push(format!("seed={seed}"));
        let opts = RunOptions {
            overrides,
            out: Some(dir.join(&name)),
            in_series: true,
            ..run_opts.clone()
        };
        runs.push(match run(&opts, control.clone()) {
            Ok((summary, _)) => SeedRun::of(&name, &summary),
            Err(e) => SeedRun::failed(seed, &name, Exit::new(e.exit_code(), e.to_string())),
        });
    }
    let thresholds = scenario.expectation().1;
    let series = Series::judge(&scenario.name, &variant, seeds.seeds(), runs, &thresholds);
    save(&dir, &series)?;
    Ok((series, dir))
}

/// `junit.xml`, then `series.json` last: like a run's summary, it is
/// there only when everything before it was written.
fn save(dir: &Path, series: &Series) -> Result<(), RunError> {
    write_whole(
        &dir.join(junit::FILE),
        junit::render(
            &format!("specstorm seeds {}", series.scenario),
            vec![crate::report::series::suite(series)],
        )?,
    )?;
    let json = serde_json::to_string_pretty(series).map_err(anyhow::Error::from)?;
    write_whole(&dir.join(FILE), json)?;
    Ok(())
}

/// `compare --seeds`: each variant's series over the same seeds, in
/// `dir/<variant>/`, then `junit.xml` of every series in `dir`. Returns
/// each variant's name and series, and the exit: the first of cli.md's
/// order any series gave. Errors: as [`run_series`]'s, for the first
/// variant that could not run.
pub fn compare_series(
    run_opts: &RunOptions,
    variants: &[(String, Vec<String>)],
    seeds: &SeedList,
    dir: &Path,
    control: Arc<Control>,
) -> Result<(Vec<(String, Series)>, Exit), RunError> {
    crate::run_dir::claim(dir).map_err(|e| RunError::Input(e.to_string()))?;
    let mut list = Vec::new();
    for (name, overrides) in variants {
        let opts = RunOptions {
            overrides: overrides.clone(),
            out: Some(dir.join(name)),
            ..run_opts.clone()
        };
        let (series, _) = run_series(&opts, seeds, control.clone())?;
        list.push((name.clone(), series));
    }
    let suites = list
        .iter()
        .map(|(_, s)| crate::report::series::suite(s))
        .collect();
    write_whole(
        &dir.join(junit::FILE),
        junit::render("specstorm compare --seeds", suites)?,
    )?;
    let exit = ExitCode::PRECEDENCE
        .into_iter()
        .find_map(|code| {
            let hit: Vec<&(String, Series)> = list
                .iter()
                .filter(|(_, s)| s.exit.exit_code() == Some(code))
                .collect();
            let (_, first) = hit.first()?;
            let names: Vec<&str> = hit.iter().map(|(n, _)| n.as_str()).collect();
            Some(Exit::new(
                code,
                format!("{}: {}", names.join(", "), first.exit.rule),
            ))
        })
        .unwrap_or_else(|| Exit::new(ExitCode::Met, "every variant's series met its expectation"));
    Ok((list, exit))
}
