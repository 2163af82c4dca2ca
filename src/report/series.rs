//! A series of seeds in words and for CI: the rate table that `run
//! --seeds` prints (per invariant, seeds violated k/N, the rate, the time
//! to first violation min/median/max; then the catch-rate thresholds and
//! each seed's folder), the side-by-side table of `compare --seeds`, and
//! the series' `junit.xml`: one test case per seed (failing as the seed's
//! own run does) and one per catch-rate threshold.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::exit_code::ExitCode;
use crate::series_rates::{InvariantRate, SeedRun, Series};
use crate::summary::ThresholdOutcome;
use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, TestSuite};
use std::fmt::Write as _;

/// `k/N`, the rate and the spread of the time to first violation.
fn cells(r: &InvariantRate) -> [String; 3] {
    let rate = r.rate.map_or("-".to_string(), |x| format!("{x:.2}"));
    let first = r.first_violation_s.as_ref().map_or("-".to_string(), |s| {
        format!("{} / {} / {}", s.min, s.median, s.max)
    });
    let unknown = if r.unknown > 0 {
        format!(" ({} unknown)", r.unknown)
    } else {
        String::new()
    };
    [format!("{}/{}{unknown}", r.violated, r.seeds), rate, first]
}

/// Rows of left-aligned columns, two spaces apart.
fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    out
}

/// The series in words: the rate table, the catch-rate thresholds, each
/// seed's exit and folder (under `dir`), and the series' exit.
pub fn text(s: &Series, dir: &str) -> String {
    let mut out = String::new();
    let counted = s.rates.first().map_or(0, |r| r.seeds);
    let _ = writeln!(
        out,
        "catch rates of {} / {} over {} seed(s) ({} counted):",
        s.scenario,
        s.variant,
        s.runs.len(),
        counted
    );
    let mut rows = vec![vec![
        "invariant".to_string(),
        "violated".into(),
        "rate".into(),
        "first violation s (min / median / max)".into(),
    ]];
    for r in &s.rates {
        let mut row = vec![r.invariant.clone()];
        row.extend(cells(r));
        rows.push(row);
    }
    out.push_str(&columns(&rows));
    if !s.thresholds.is_empty() {
        let _ = writeln!(out, "catch-rate thresholds:");
        for t in &s.thresholds {
            let _ = writeln!(
                out,
                "  {}: {}",
                if t.passed { "met" } else { "BREACHED" },
                t.describe()
            );
        }
    }
    let _ = writeln!(out, "seeds:");
    let rows: Vec<Vec<String>> = s
        .runs
        .iter()
        .map(|r| {
            vec![
                format!("seed {}", r.seed),
                format!("exit {}", r.exit.code),
                format!("{dir}/{}", r.run_dir),
                seed_note(r),
            ]
        })
        .collect();
    out.push_str(&columns(&rows));
    if !s.not_run().is_empty() {
        let list: Vec<String> = s.not_run().iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "  not run (the series was stopped): {}",
            list.join(", ")
        );
    }
    let _ = writeln!(out, "series: exit {} ({})", s.exit.code, s.exit.rule);
    out
}

/// What a seed found violated, or why it counts in no rate.
fn seed_note(r: &SeedRun) -> String {
    match &r.invariants {
        None => format!("no verdicts: {}", r.exit.rule),
        Some(_) if r.partial => "stopped by the user: counts in no rate".into(),
        Some(m) => {
            let v: Vec<&str> = m
                .iter()
                .filter(|(_, v)| v.verdict == crate::verdict::Verdict::Violated)
                .map(|(k, _)| k.as_str())
                .collect();
            if v.is_empty() {
                String::new()
            } else {
                format!("violated: {}", v.join(", "))
            }
        }
    }
}

/// `compare --seeds`: one column per variant, a row per invariant, each
/// cell `k/N rate`; then each variant's series exit.
pub fn side_by_side(list: &[(String, Series)]) -> String {
    let mut header = vec!["invariant".to_string()];
    header.extend(list.iter().map(|(name, _)| name.clone()));
    let mut names: Vec<&str> = list
        .iter()
        .flat_map(|(_, s)| s.rates.iter().map(|r| r.invariant.as_str()))
        .collect();
    names.sort();
    names.dedup();
    let mut rows = vec![header];
    for name in names {
        let mut row = vec![name.to_string()];
        for (_, s) in list {
            row.push(
                s.rates
                    .iter()
                    .find(|r| r.invariant == name)
                    .map_or("-".to_string(), |r| {
                        let [k, rate, _] = cells(r);
                        format!("{k} {rate}")
                    }),
            );
        }
        rows.push(row);
    }
    let mut out = String::from("catch rates (violated seeds / seeds, rate):\n");
    out.push_str(&columns(&rows));
    for (name, s) in list {
        let _ = writeln!(out, "{name}: exit {} ({})", s.exit.code, s.exit.rule);
    }
    out
}

/// The series' JUnit suite: a case per seed, a case per catch rate.
pub fn suite(s: &Series) -> TestSuite {
    let mut suite = TestSuite::new(format!("{}/{} seeds", s.scenario, s.variant));
    for r in &s.runs {
        let mut case = TestCase::new(format!("seed {}", r.seed), seed_status(r));
        case.set_classname("specstorm.seeds");
        suite.add_test_case(case);
    }
    for t in &s.thresholds {
        let mut case = TestCase::new(t.threshold.clone(), threshold_status(t));
        case.set_classname("specstorm.catch_rates");
        suite.add_test_case(case);
    }
    suite
}

/// A seed's case, as its own run's `junit.xml` judges it: met passes,
/// 1 fails, 4 is skipped (inconclusive), 130, 3 and 2 are errors.
fn seed_status(r: &SeedRun) -> TestCaseStatus {
    let rule = format!("{}: {}", r.run_dir, r.exit.rule);
    let non_success = |kind, ty: &str| {
        let mut st = TestCaseStatus::non_success(kind);
        st.set_message(rule.clone());
        st.set_description(rule.clone());
        st.set_type(ty.to_string());
        st
    };
    match r.exit.exit_code() {
        Some(ExitCode::Met) => TestCaseStatus::success(),
        Some(ExitCode::NotMet) => non_success(NonSuccessKind::Failure, "expectation-not-met"),
        Some(ExitCode::Inconclusive) => {
            let mut st = TestCaseStatus::skipped();
            st.set_message(rule);
            st
        }
        _ => non_success(NonSuccessKind::Error, &format!("exit {}", r.exit.code)),
    }
}

fn threshold_status(t: &ThresholdOutcome) -> TestCaseStatus {
    if t.passed {
        return TestCaseStatus::success();
    }
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
    st.set_message(format!("catch rate breached: {}", t.describe()));
    st.set_description(format!("catch rate breached: {}", t.describe()));
    st.set_type("threshold");
    st
}
