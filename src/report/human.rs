//! The short human summary printed at the end of a run.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::summary::Summary;
use crate::figures::Latency;
use crate::verdict::{CheckResult, Verdict};
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
/// evidence under each violated invariant. Groups' and outbox's figures
/// (events, resolves, stranded events; the outbox's queue) have their
/// lines; [`render_common`] is the text of a workload without them.
pub fn render(s: &Summary, results: &[CheckResult], run_dir: &str) -> String {
    render_parts(s, results, run_dir, true)
}

/// [`render`] with the common figures only: the text of a workload that
/// has none of groups' or outbox's own (one registered at run time).
pub fn render_common(s: &Summary, results: &[CheckResult], run_dir: &str) -> String {
    render_parts(s, results, run_dir, false)
}

fn render_parts(s: &Summary, results: &[CheckResult], run_dir: &str, built_in: bool) -> String {
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
    match &s.outbox {
        Some(ob) => o.push_str(&super::human_outbox::load_lines(s, ob)),
        None if !built_in => {
            let total: u64 = s.ops.values().map(|c| c.ok + c.fail + c.info).sum();
            let _ = writeln!(
                o,
                "  {total} ops in {:.1}s: {:.0} ops/s in all",
                s.duration_s,
                s.throughput_ops_per_s.get("total").copied().unwrap_or(0.0)
            );
        }
        None => {
            let _ = writeln!(
            o,
            "  {} events in {:.1}s: {:.0} events/s accepted, {} duplicates rejected, {:.0} ops/s in all",
            s.events,
            s.duration_s,
            s.events_per_s,
            s.duplicates,
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
    if s.outbox.is_none() && built_in {
        let _ = writeln!(
            o,
            "  resolves: {} resolved, {} refused",
            s.resolves.get("resolved").copied().unwrap_or(0),
            s.resolves.get("refused").copied().unwrap_or(0)
        );
    }
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
            let _ = writeln!(o, "    {}", f.explanation);
            for e in f.evidence.iter().take(8) {
                let _ = writeln!(o, "      {:>10.6}s  {}", e.t as f64 / 1e9, e.what);
            }
        }
        for n in &r.notes {
            let _ = writeln!(o, "    note: {n}");
        }
    }
    evidence_lines(&mut o, s);
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
    if s.outbox.is_none() && built_in {
        stranded_line(&mut o, s);
    }
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
    if let Some(w) = &s.wal {
        let _ = writeln!(o, "{}", wal_line(w));
    }
    let _ = writeln!(o, "results: {run_dir}");
    let _ = writeln!(o, "reproduce: {}", s.provenance.command);
    let _ = writeln!(o, "exit {}: {}", s.exit.code, s.exit.rule);
    o
}

/// Groups: each invariant's evidence (the chances it had to see a
/// violation), then what each fault with a duration left while active.
fn evidence_lines(o: &mut String, s: &Summary) {
    let per = |m: &std::collections::BTreeMap<String, u64>| {
        crate::workload::groups::checker::GROUPS_INVARIANTS
            .iter()
            .filter_map(|name| m.get(*name).map(|n| format!("{name} {n}")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if s.evidence.invariants.is_empty() {
        return;
    }
    let _ = writeln!(o, "evidence: {}", per(&s.evidence.invariants));
    for (i, f) in &s.evidence.faults {
        let _ = writeln!(
            o,
            "  while {} (fault {i}) was active ({} windows, {:.3}s): {}",
            f.kind,
            f.windows,
            f.active_s,
            per(&f.invariants)
        );
    }
}

/// The WAL line: its peak, and the bench's blocking checkpoints that kept
/// it bounded (`crate::wal`).
fn wal_line(w: &crate::wal::WalReport) -> String {
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

/// Groups: the stranded-events line (an outbox run has no events).
fn stranded_line(o: &mut String, s: &Summary) {
    let st = &s.stranded_events;
    let undetermined = if st.undetermined > 0 {
        format!(
            "; {} more may be (an attempt that may or may not have counted: indeterminate, \
             or an ok whose answer did not say)",
            st.undetermined
        )
    } else {
        String::new()
    };
    match st.total {
        None => {
            let _ = writeln!(o, "stranded events: cannot tell{undetermined}");
        }
        Some(0) => {
            let _ = writeln!(o, "stranded events: 0{undetermined}");
        }
        Some(total) => {
            let causes: Vec<_> = st
                .by_cause
                .iter()
                .map(|(c, n)| format!("{n} {c}"))
                .collect();
            let _ = writeln!(
                o,
                "stranded events: {total} (inserted, never counted; retries stop as \
                 duplicates): {}{undetermined}",
                causes.join(", ")
            );
        }
    }
    for n in &st.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}
