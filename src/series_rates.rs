//! A series of seeds (`run --seeds`, `compare --seeds`) as `series.json`
//! holds it: each seed's run folder, exit and verdicts ([`SeedRun`]), and
//! what the series says over them: per invariant how many seeds found it
//! violated, the rate, and the spread of the time to its first violation
//! ([`InvariantRate`]); the `catch_rate` thresholds judged on those
//! rates, and the series' exit by cli.md's order ([`Series`]). Pure
//! arithmetic over saved summaries, so that tests judge committed run
//! folders rather than races.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use crate::exit_code::ExitCode;
use crate::scenario::Threshold;
use crate::summary::{Exit, Summary, ThresholdOutcome};
use crate::verdict::Verdict;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of `series.json`; bumped on any incompatible change.
pub const SERIES_SCHEMA_VERSION: u32 = 1;

/// File name of a series in its folder.
pub const FILE: &str = "series.json";

/// One invariant's verdict in one seed's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SeedVerdict {
    /// The checker's verdict.
    pub verdict: Verdict,
    /// Violations found in all.
    pub violations: u64,
    /// When the first violation became visible, s after the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_violation_s: Option<f64>,
}

/// One seed of the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// Its run folder, relative to the series' folder.
    pub run_dir: String,
    /// Its exit code and rule, as its own `summary.json` says (or its
    /// error's, for a run that saved no verdicts).
    pub exit: Exit,
    /// The user stopped it (Ctrl-C): its verdicts rest on part of a run,
    /// and it counts in no rate.
    pub partial: bool,
    /// Each invariant's verdict; absent when the run saved none (it
    /// failed before its audit): it counts in no rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariants: Option<BTreeMap<String, SeedVerdict>>,
}

impl SeedRun {
    /// The line of a seed whose run saved its summary.
    pub fn of(run_dir: &str, s: &Summary) -> SeedRun {
        SeedRun {
            seed: s.seed,
            run_dir: run_dir.to_string(),
            exit: s.exit.clone(),
            partial: s.partial,
            invariants: Some(
                s.invariants
                    .iter()
                    .map(|(name, i)| {
                        (
                            name.clone(),
                            SeedVerdict {
                                verdict: i.verdict,
                                violations: i.violations,
                                first_violation_s: i.first_violation_s,
                            },
                        )
                    })
                    .collect(),
            ),
        }
    }

    /// The line of a seed whose run ended before its verdicts.
    pub fn failed(seed: u64, run_dir: &str, exit: Exit) -> SeedRun {
        SeedRun {
            seed,
            run_dir: run_dir.to_string(),
            exit,
            partial: false,
            invariants: None,
        }
    }

    /// Its verdicts, when they count in the rates: a whole run's.
    fn counted(&self) -> Option<&BTreeMap<String, SeedVerdict>> {
        self.invariants.as_ref().filter(|_| !self.partial)
    }
}

/// Smallest, median and largest of a set of values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Spread {
    /// The smallest.
    pub min: f64,
    /// The median (of an even count, the mean of the two middle ones).
    pub median: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; None when there are none.
    pub fn of(mut values: Vec<f64>) -> Option<Spread> {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => values[n / 2],
            _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
        };
        Some(Spread {
            min: values[0],
            median: (median * 1000.0).round() / 1000.0,
            max: values[n - 1],
        })
    }
}

/// One invariant over the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct InvariantRate {
    /// The invariant (spec name).
    pub invariant: String,
    /// Seeds that found it violated.
    pub violated: u64,
    /// Seeds whose verdict on it was `unknown`.
    pub unknown: u64,
    /// Seeds counted: every seed whose whole run saved its verdicts.
    pub seeds: u64,
    /// `violated / seeds`, the catch rate (to 4 decimals); None when no
    /// seed counted.
    pub rate: Option<f64>,
    /// Time to the first violation over the seeds that found one, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_violation_s: Option<Spread>,
}

/// Each invariant's rate over `runs`, by name.
pub fn rates(runs: &[SeedRun]) -> Vec<InvariantRate> {
    let mut names: Vec<&String> = runs
        .iter()
        .filter_map(SeedRun::counted)
        .flat_map(|m| m.keys())
        .collect();
    names.sort();
    names.dedup();
    let counted: Vec<&BTreeMap<String, SeedVerdict>> =
        runs.iter().filter_map(SeedRun::counted).collect();
    names
        .into_iter()
        .map(|name| {
            let lines: Vec<&SeedVerdict> = counted.iter().filter_map(|m| m.get(name)).collect();
            let violated: Vec<&&SeedVerdict> = lines
                .iter()
                .filter(|l| l.verdict == Verdict::Violated)
                .collect();
            let seeds = counted.len() as u64;
            InvariantRate {
                invariant: name.clone(),
                violated: violated.len() as u64,
                unknown: lines
                    .iter()
                    .filter(|l| l.verdict == Verdict::Unknown)
                    .count() as u64,
                seeds,
                rate: (seeds > 0)
                    .then(|| (violated.len() as f64 / seeds as f64 * 1e4).round() / 1e4),
                first_violation_s: Spread::of(
                    violated
                        .iter()
                        .filter_map(|l| l.first_violation_s)
                        .collect(),
                ),
            }
        })
        .collect()
}

/// Each `catch_rate` threshold of `thresholds` (the others are each
/// seed's own) judged on `rates`: breached when its invariant has no
/// rate (no seed counted).
pub fn judge(rates: &[InvariantRate], thresholds: &[Threshold]) -> Vec<ThresholdOutcome> {
    thresholds
        .iter()
        .filter_map(|t| {
            let name = t.catch_rate()?;
            let actual = rates
                .iter()
                .find(|r| r.invariant == name)
                .and_then(|r| r.rate);
            Some(ThresholdOutcome {
                threshold: t.to_string(),
                actual,
                passed: actual.is_some_and(|a| t.cmp.holds(a, t.limit)),
                aborted: None,
            })
        })
        .collect()
}

/// `series.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Series {
    /// [`SERIES_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Variant name.
    pub variant: String,
    /// The seeds asked for, in order (`--seeds`).
    pub seeds: Vec<u64>,
    /// One line per seed that ran, in order; fewer than `seeds` when the
    /// user stopped the series.
    pub runs: Vec<SeedRun>,
    /// Each invariant over the seeds counted.
    pub rates: Vec<InvariantRate>,
    /// The `catch_rate` thresholds, judged on `rates`.
    pub thresholds: Vec<ThresholdOutcome>,
    /// The series' exit: the first of 130, 3, 1, 4 that a seed produced
    /// or a breached catch rate (1) gives, else 0.
    pub exit: Exit,
}

impl Series {
    /// The series over `runs`, its rates and `thresholds`' catch rates
    /// judged, its exit decided.
    pub fn judge(
        scenario: &str,
        variant: &str,
        seeds: &[u64],
        runs: Vec<SeedRun>,
        thresholds: &[Threshold],
    ) -> Series {
        let rates = rates(&runs);
        let judged = judge(&rates, thresholds);
        let exit = exit(seeds.len(), &runs, &judged);
        Series {
            schema_version: SERIES_SCHEMA_VERSION,
            scenario: scenario.to_string(),
            variant: variant.to_string(),
            seeds: seeds.to_vec(),
            runs,
            rates,
            thresholds: judged,
            exit,
        }
    }

    /// Seeds asked for that never ran (the series was stopped).
    pub fn not_run(&self) -> &[u64] {
        &self.seeds[self.runs.len().min(self.seeds.len())..]
    }
}

/// cli.md's order over the seeds and the catch rates: the first of 2,
/// 130, 3, 1, 4 that a seed's exit (or, for 1, a breached catch rate)
/// gives, with the seeds that gave it; else 0.
fn exit(asked: usize, runs: &[SeedRun], thresholds: &[ThresholdOutcome]) -> Exit {
    let breached: Vec<String> = thresholds
        .iter()
        .filter(|t| !t.passed)
        .map(ThresholdOutcome::describe)
        .collect();
    for code in ExitCode::PRECEDENCE {
        let seeds: Vec<&SeedRun> = runs
            .iter()
            .filter(|r| r.exit.exit_code() == Some(code))
            .collect();
        let mut why = Vec::new();
        if let Some(first) = seeds.first() {
            let list: Vec<String> = seeds.iter().map(|r| r.seed.to_string()).collect();
            why.push(format!(
                "seed{} {}: {}",
                if seeds.len() == 1 { "" } else { "s" },
                list.join(", "),
                first.exit.rule
            ));
        }
        if code == ExitCode::Interrupted && runs.len() < asked {
            why.push(format!(
                "stopped by the user: {} of {asked} seed(s) not run",
                asked - runs.len()
            ));
        }
        if code == ExitCode::NotMet && !breached.is_empty() {
            why.push(format!("catch rate breached: {}", breached.join("; ")));
        }
        if !why.is_empty() {
            return Exit::new(code, why.join("; "));
        }
    }
    let n = thresholds.len();
    let rates = if n == 0 {
        String::new()
    } else {
        format!("; {n} catch rate{} met", if n == 1 { "" } else { "s" })
    };
    Exit::new(
        ExitCode::Met,
        format!(
            "every seed of {} met its expectation{rates}",
            runs.len().min(asked)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(n: u64, exit: i32, verdicts: &[(&str, Verdict, Option<f64>)]) -> SeedRun {
        SeedRun {
            seed: n,
            run_dir: format!("seed-{n}"),
            exit: Exit {
                code: exit,
                rule: format!("rule {n}"),
            },
            partial: exit == 130,
            invariants: Some(
                verdicts
                    .iter()
                    .map(|(name, v, t)| {
                        (
                            name.to_string(),
                            SeedVerdict {
                                verdict: *v,
                                violations: u64::from(*v == Verdict::Violated),
                                first_violation_s: *t,
                            },
                        )
                    })
                    .collect(),
            ),
        }
    }

    fn four() -> Vec<SeedRun> {
        use Verdict::*;
        vec![
            seed(1, 1, &[("A", Violated, Some(0.5)), ("B", Holds, None)]),
            seed(2, 0, &[("A", Holds, None), ("B", Holds, None)]),
            seed(3, 1, &[("A", Violated, Some(2.0)), ("B", Unknown, None)]),
            seed(4, 1, &[("A", Violated, Some(1.0)), ("B", Holds, None)]),
        ]
    }

    #[test]
    fn rates_count_seeds_and_spread_the_times_to_first_violation() {
        let r = rates(&four());
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].violated, r[0].seeds, r[0].rate), (3, 4, Some(0.75)));
        assert_eq!(
            r[0].first_violation_s,
            Some(Spread {
                min: 0.5,
                median: 1.0,
                max: 2.0
            })
        );
        assert_eq!((r[1].violated, r[1].unknown, r[1].rate), (0, 1, Some(0.0)));
        assert_eq!(r[1].first_violation_s, None);
        assert_eq!(Spread::of(vec![4.0, 1.0]).unwrap().median, 2.5);
    }

    #[test]
    fn partial_and_failed_seeds_count_in_no_rate() {
        let mut runs = four();
        runs.push(seed(
            5,
            130,
            &[("A", Verdict::Holds, None), ("B", Verdict::Holds, None)],
        ));
        runs.push(SeedRun::failed(
            6,
            "seed-6",
            Exit::new(ExitCode::Target, "x"),
        ));
        let r = rates(&runs);
        assert_eq!((r[0].violated, r[0].seeds), (3, 4));
        assert!(rates(&runs[5..]).is_empty());
    }

    #[test]
    fn a_breached_catch_rate_exits_1_and_a_met_one_leaves_the_seeds_exits() {
        let t = |s: &str| Threshold::parse(s).unwrap();
        let met: Vec<SeedRun> = four()
            .into_iter()
            .map(|mut r| {
                r.exit = Exit::new(ExitCode::Met, "met");
                r
            })
            .collect();
        let s = Series::judge(
            "s",
            "v",
            &[1, 2, 3, 4],
            met.clone(),
            &[t("catch_rate.A >= 0.75")],
        );
        assert_eq!(s.exit.code, 0, "{:?}", s.exit);
        assert_eq!(s.thresholds[0].actual, Some(0.75));
        let s = Series::judge("s", "v", &[1, 2, 3, 4], met, &[t("catch_rate.A > 0.75")]);
        assert_eq!(s.exit.code, 1);
        assert!(
            s.exit.rule.contains("catch rate breached"),
            "{}",
            s.exit.rule
        );
        // Other thresholds are each seed's own; a rate of no seed breaches.
        let s = Series::judge(
            "s",
            "v",
            &[],
            vec![],
            &[t("catch_rate.A >= 0"), t("ops.x > 1")],
        );
        assert_eq!((s.thresholds.len(), s.exit.code), (1, 1));
    }

    #[test]
    fn the_series_exit_follows_cli_md_order_over_the_seeds() {
        let mut runs = four();
        let s = Series::judge("s", "v", &[1, 2, 3, 4], runs.clone(), &[]);
        assert_eq!(s.exit.code, 1);
        assert!(
            s.exit.rule.starts_with("seeds 1, 3, 4: rule 1"),
            "{}",
            s.exit.rule
        );
        assert!(s.not_run().is_empty());
        // A seed never run: the user stopped the series.
        let s = Series::judge("s", "v", &[1, 2, 3, 4, 5], runs.clone(), &[]);
        assert_eq!((s.exit.code, s.not_run()), (130, &[5][..]));
        assert!(
            s.exit.rule.contains("1 of 5 seed(s) not run"),
            "{}",
            s.exit.rule
        );
        runs[1].exit = Exit::new(ExitCode::Interrupted, "interrupted");
        let s = Series::judge("s", "v", &[1, 2, 3, 4], runs, &[]);
        assert_eq!(s.exit.code, 130);
    }
}
