//! The short human summary printed at the end of a run: the common
//! figures, and the workload's own lines where it puts them
//! ([`HumanParts`]).
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::figures::Latency;
use crate::summary::{Summary, WalReport};
use crate::verdict::{CheckResult, Verdict};
use crate::workload::parts::HumanParts;
use std::fmt::Write;

/// Counts per kind as `crash 12, lock 3`.
pub fn per_kind(m: &std::collections::BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A latency in µs as text: `850µs`, `12.3ms`.
pub fn duration_us(us: f64) -> String {
    ms(us)
}

fn ms(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1}ms", us / 1000.0)
    } else {
        format!("{us:.0}µs")
    }
}

fn lat(l: &Latency) -> String {
    if l.count == 0 {
        return "-".into();
    }
    format!(
        "p50 {} p90 {} p99 {} p99.9 {} max {}",
        ms(l.p50),
        ms(l.p90),
        ms(l.p99),
        ms(l.p999),
        ms(l.max)
    )
}

/// The summary as a few lines of text; `results` adds the first violation's
/// evidence under each violated invariant, `parts` the workload's own
/// lines (its load, its counts, its evidence, what it left behind).
pub fn render(s: &Summary, results: &[CheckResult], run_dir: &str, parts: &HumanParts) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "specstorm: {} / {} on {}, seed {}{}",
        s.scenario,
        s.variant,
        s.target,
        s.seed,
        if s.partial {
            " (PARTIAL: interrupted)"
        } else {
            ""
        }
    );
    match &parts.load {
        Some(lines) => o.push_str(lines),
        None => {
            let total: u64 = s.ops.values().map(|c| c.ok + c.fail + c.info).sum();
            let _ = writeln!(
                o,
                "  {total} ops in {:.1}s: {:.0} ops/s in all",
                s.duration_s,
                s.throughput_ops_per_s.get("total").copied().unwrap_or(0.0)
            );
        }
    }
    for (kind, c) in &s.ops {
        let _ = writeln!(
            o,
            "  {kind:<8} ok {:<8} fail {:<6} info {:<6} {:>9.0} ops/s  {}",
            c.ok,
            c.fail,
            c.info,
            s.throughput_ops_per_s.get(kind).copied().unwrap_or(0.0),
            s.latency_us.get(kind).map(lat).unwrap_or_default()
        );
    }
    if let Some(open) = &s.open_model {
        let _ = writeln!(
            o,
            "  open model: {} ops started late, {} due but never started",
            open.get("late").copied().unwrap_or(0),
            open.get("missed").copied().unwrap_or(0)
        );
    }
    o.push_str(&parts.figures);
    if !s.faults_injected.is_empty() {
        let _ = writeln!(o, "  faults injected: {}", per_kind(&s.faults_injected));
    }
    let _ = writeln!(o, "invariants (expected: {}):", s.expect);
    for r in results {
        let v = match r.verdict {
            Verdict::Holds => "holds".to_string(),
            Verdict::Violated => match r.first_violation_ns {
                Some(t) => format!(
                    "VIOLATED ({} violations, first visible at {:.3}s)",
                    r.violations,
                    t as f64 / 1e9
                ),
                None => format!("VIOLATED ({} violations)", r.violations),
            },
            Verdict::Unknown => format!("unknown ({} undecided)", r.unknowns),
        };
        let v = if s.expect.ignores(&r.invariant) {
            format!("{v} (not judged)")
        } else {
            v
        };
        let _ = writeln!(o, "  {:<24} {v}", r.invariant);
        if let Some(f) = r.examples.first().or(r.unknown_examples.first()) {
            finding_lines(&mut o, f, "    ");
        }
        for n in &r.notes {
            let _ = writeln!(o, "    note: {n}");
        }
    }
    o.push_str(&parts.evidence);
    for gap in &s.coverage.gaps {
        let _ = writeln!(o, "not exercised: {gap}");
    }
    for p in &s.precision {
        let ops = if p.ops > 0 {
            format!(" ({} ops)", p.ops)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "precision lost: {}: {}{ops}; why: {}",
            p.invariant, p.what, p.why
        );
    }
    o.push_str(&parts.closing);
    if !s.thresholds.is_empty() {
        let _ = writeln!(o, "thresholds:");
        for t in &s.thresholds {
            let mark = if t.passed { "met     " } else { "BREACHED" };
            let actual = t
                .actual
                .map_or("no such figure".to_string(), |a| a.to_string());
            let _ = writeln!(o, "  {mark} {}  (actual {actual})", t.threshold);
        }
    }
    if let Some(a) = &s.aborted_by {
        let _ = writeln!(
            o,
            "aborted: {} breached at {}s of the load (live value {}): the load stopped \
             early (abort_on_fail), the audit judged what ran",
            a.threshold, a.at_s, a.actual
        );
    }
    if let Some(w) = &s.wal {
        let _ = writeln!(o, "{}", wal_line(w));
    }
    let _ = writeln!(o, "results: {run_dir}");
    let _ = writeln!(o, "reproduce: {}", s.provenance.command);
    let _ = writeln!(o, "exit {}: {}", s.exit.code, s.exit.rule);
    o
}

/// The WAL line: its peak, and the bench's blocking checkpoints that kept
/// it bounded (`crate::wal`).
fn wal_line(w: &WalReport) -> String {
    let checkpoints = match w.checkpoints {
        0 => String::new(),
        n => format!(
            " ({n} blocking checkpoint{} by the bench, {:.3}s in all)",
            if n == 1 { "" } else { "s" },
            w.checkpoint_s
        ),
    };
    format!("WAL: peak {:.1} MB{checkpoints}", w.peak_bytes as f64 / 1e6)
}

/// A finding as the terminal prints it under its invariant: the
/// explanation, then its timeline (at most 8 ops and steps, in time
/// order), each line after `indent`. `junit.xml` carries the same text.
pub fn finding_lines(o: &mut String, f: &crate::verdict::Finding, indent: &str) {
    let _ = writeln!(o, "{indent}{}", f.explanation);
    for e in f.evidence.iter().take(8) {
        let _ = writeln!(o, "{indent}  {:>10.6}s  {}", e.t as f64 / 1e9, e.what);
    }
}
