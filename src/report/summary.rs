//! `summary.json`: every figure of a run, with its provenance. Its shape is
//! versioned by `schema_version` and documented in the README ("Reading the
//! summary"). Latencies are µs, throughputs ops/s, durations s.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::exit_code::ExitCode;
use crate::fault_kind::FaultKind;
use crate::figures::{Counts, Latency};
use crate::history::{CompletionType, OpKind};
use crate::scenario::{Expect, Scenario, Threshold};
use crate::stats::Stats;
use crate::verdict::{CheckResult, Verdict};
use crate::workload::groups::checker::stranded::Stranded;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the summary format; bumped on any incompatible change.
pub const SUMMARY_SCHEMA_VERSION: u32 = 2;

/// One invariant's line in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvariantSummary {
    /// The checker's verdict.
    pub verdict: Verdict,
    /// Violations found in all.
    pub violations: u64,
    /// Undecidable findings in all.
    pub unknowns: u64,
    /// The first violation's (or else the first unknown's) explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    /// Time to the first violation: when it became visible, s after the
    /// run started (its probe's instant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_violation_s: Option<f64>,
}

/// Where the run came from and how to run it again (cli.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `specstorm`.
    pub tool: String,
    /// Crate version of the tool.
    pub tool_version: String,
    /// Version of the (bundled) SQLite library.
    pub sqlite_version: String,
    /// The scenario file; None for the embedded default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_file: Option<String>,
    /// The statement file, or the built-in variant's name.
    pub variant_file: String,
    /// Hex SHA-256 of the statement file's bytes.
    pub variant_sha256: String,
    /// UTC start of the run (RFC 3339).
    pub started_utc: String,
    /// The command that reproduces the run.
    pub command: String,
    /// The version of the checkers that judged the run
    /// ([`crate::workload::groups::checker::CHECKER_VERSION`]); 1 for a folder written
    /// before it was recorded.
    #[serde(default = "first_checker_version")]
    pub checker_version: u32,
}

fn first_checker_version() -> u32 {
    crate::workload::groups::checker::FIRST_CHECKER_VERSION
}

/// The exit code and the rule of cli.md that decided it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exit {
    /// The process exit code (cli.md: 0, 1, 2, 3, 4 or 130).
    pub code: i32,
    /// The rule of cli.md's order that decided the code.
    pub rule: String,
}

impl Exit {
    /// The exit `code` for the reason `rule`.
    pub fn new(code: ExitCode, rule: impl Into<String>) -> Exit {
        Exit {
            code: code.code(),
            rule: rule.into(),
        }
    }

    /// The row of cli.md's table that `code` is; None for a number outside
    /// it (a summary this build did not write).
    pub fn exit_code(&self) -> Option<ExitCode> {
        ExitCode::from_code(self.code)
    }
}

/// The whole `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// [`SUMMARY_SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Workload name (`groups` or `outbox`).
    pub workload: String,
    /// Variant name.
    pub variant: String,
    /// Seed of the run.
    pub seed: u64,
    /// The target, e.g. `sqlite PATH`.
    pub target: String,
    /// The load was stopped early by the user (Ctrl-C, SIGTERM).
    pub partial: bool,
    /// Wall time of the load, s.
    pub duration_s: f64,
    /// Distinct events generated, and accepted events per second
    /// (groups; absent for outbox, whose messages are `outbox.messages`).
    #[serde(default)]
    pub events: u64,
    /// Accepted events per second of load wall time (groups; absent for
    /// outbox: `outbox.acked_per_s`).
    #[serde(default)]
    pub events_per_s: f64,
    /// ok / fail / info counts per op kind.
    pub ops: BTreeMap<String, Counts>,
    /// ops/s per op kind (all completions) and `total`.
    pub throughput_ops_per_s: BTreeMap<String, f64>,
    /// Latency of `ok` ops per op kind, µs (open model: from the intended start).
    pub latency_us: BTreeMap<String, Latency>,
    /// Latency of `fail` and `info` ops, kept apart, µs.
    pub latency_us_not_ok: BTreeMap<String, BTreeMap<String, Latency>>,
    /// Histogram values refused (never expected; shown, not hidden).
    pub latency_saturated: u64,
    /// Ingests answered duplicate (`ok`, accepted = false; groups, absent
    /// for outbox).
    #[serde(default)]
    pub duplicates: u64,
    /// Resolves: `resolved` (status changed) and `refused` counts (groups;
    /// absent for outbox).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resolves: BTreeMap<String, u64>,
    /// Open model: ops started later than `load.late_after`, and ops due
    /// before the stop that never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_model: Option<BTreeMap<String, u64>>,
    /// One line per invariant, by name.
    pub invariants: BTreeMap<String, InvariantSummary>,
    /// Stranded events (groups.md; reported, fails no run by default;
    /// groups, absent for outbox).
    #[serde(default)]
    pub stranded_events: Stranded,
    /// Faults injected per kind (`[[faults]]`; absent without a schedule):
    /// per-op injections, and for kill and lock the times they began.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub faults_injected: BTreeMap<String, u64>,
    /// What the run exercised; a gap makes it inconclusive (exit 4).
    pub coverage: Coverage,
    /// Groups: per invariant, the chances the run gave it to see a
    /// violation, and per fault with a duration, those gathered while it
    /// was active (`checker::evidence`); a `holds` below the scenario's
    /// `[min_evidence]` is `unknown`. Absent for outbox.
    #[serde(default)]
    pub evidence: crate::workload::groups::checker::evidence::EvidenceReport,
    /// The expectation the run was judged against (`holds`, or the
    /// invariants it must find violated).
    #[serde(default)]
    pub expect: Expect,
    /// The scenario's thresholds, each judged against this summary.
    #[serde(default)]
    pub thresholds: Vec<ThresholdOutcome>,
    /// Checks whose verdicts rest on less than they could (a mapped
    /// service's answers that do not tell, pruned event rows), and why;
    /// absent when none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision: Vec<crate::report::precision::PrecisionLoss>,
    /// The history file: `file`, `bytes`, `ops`, `unfinished_ops`, ...
    pub history: BTreeMap<String, serde_json::Value>,
    /// Tool, versions and the reproducing command (cli.md).
    pub provenance: Provenance,
    /// The resolved scenario (after overrides and defaults).
    pub resolved_scenario: serde_json::Value,
    /// Exit code and the rule that decided it (cli.md).
    pub exit: Exit,
    /// This run is shard i of n of a sharded run (`--shard i/n --run-id
    /// ID`); absent for an ordinary run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::history::ShardHeader>,
    /// This run folder was merged from shards (`specstorm merge`): the
    /// shards, the clock-skew bound, where the final tables came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::shard::MergeInfo>,
    /// Outbox runs: the queue, the attempts and the liveness report
    /// (absent for groups).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<OutboxSummary>,
    /// The target database's WAL as the bench watched it (in-process
    /// SQLite and the spawned reference server, `journal_mode = wal`):
    /// its peak size and the bench's blocking checkpoints ([`crate::wal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal: Option<crate::wal::WalReport>,
}

/// Top-level figures of `summary.json` that only the groups workload has:
/// an outbox summary leaves them out (see [`Summary::to_json`]).
pub const GROUPS_ONLY_FIGURES: [&str; 6] = [
    "events",
    "events_per_s",
    "duplicates",
    "resolves",
    "stranded_events",
    "evidence",
];

impl Summary {
    /// `summary.json` as JSON: every field for groups (schema 2 as it
    /// was); for outbox, without [`GROUPS_ONLY_FIGURES`] (its own figures
    /// are under `outbox`). Write and judge thresholds through this.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a Summary always serializes");
        if self.outbox.is_some() {
            if let Some(m) = v.as_object_mut() {
                for k in GROUPS_ONLY_FIGURES {
                    m.remove(k);
                }
            }
        }
        v
    }
}

/// The outbox figures of a run (`summary.json`'s `outbox`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutboxSummary {
    /// Message ids M.
    pub messages: u64,
    /// Deliveries per message D.
    pub deliveries: u32,
    /// Concurrent handlers H.
    pub handlers: u32,
    /// Attempts a delivery may take before it is given up.
    pub max_attempts: u32,
    /// Attempts started (handle ops).
    pub attempts: u64,
    /// Deliveries acked by the bench.
    pub acked_deliveries: u64,
    /// Deliveries given up after their budget.
    pub given_up_deliveries: u64,
    /// The first given-up deliveries, as [msg_id, dup_id] (at most 50).
    pub given_up: Vec<(i64, u32)>,
    /// Attempts that lost a compare-and-swap (`fail-if`; natural failures).
    pub cas_lost: u64,
    /// Attempts a crash fault ended.
    pub crashed: u64,
    /// Attempts ended by an error or the step bound.
    pub errors: u64,
    /// Attempts started on a delivery the queue had handed out before
    /// (after a failed attempt, or an expired lease).
    #[serde(default)]
    pub redelivered_attempts: u64,
    /// Leases (`outbox.lease`): attempts started while an attempt of the
    /// same delivery still ran (0 without a lease).
    #[serde(default)]
    pub overlapping_attempts: u64,
    /// Leases that ran out while their attempt ran.
    #[serde(default)]
    pub lease_expired: u64,
    /// Acks of a delivery an overlapping attempt had acked first
    /// (recorded, harmless).
    #[serde(default)]
    pub late_acks: u64,
    /// Deliveries acked per second of load wall time.
    pub acked_per_s: f64,
    /// The liveness report (every message acked once the queue drains
    /// without faults), with redeliveries and ack disagreements.
    pub liveness: crate::workload::outbox::checker::Liveness,
}

/// The load figures of a run, per op kind.
pub struct Figures {
    /// ok / fail / info counts per op kind.
    pub ops: BTreeMap<String, Counts>,
    /// ops/s per op kind (all completions) and `total`.
    pub throughput: BTreeMap<String, f64>,
    /// Latency of `ok` ops per op kind, µs.
    pub latency_ok: BTreeMap<String, Latency>,
    /// Latency of `fail` and `info` ops per op kind, then per completion type, µs.
    pub latency_not_ok: BTreeMap<String, BTreeMap<String, Latency>>,
}

/// Counts per kind and the ok / not-ok latencies from merged stats;
/// `duration_s` is the load's wall time in s.
pub fn figures(stats: &Stats, duration_s: f64) -> Figures {
    figures_of(stats, duration_s, &OpKind::ALL)
}

/// [`figures`] for the op kinds of one workload (`OpKind::ALL` for
/// groups, `OpKind::OUTBOX` for outbox).
pub fn figures_of(stats: &Stats, duration_s: f64, kinds: &[OpKind]) -> Figures {
    let mut f = Figures {
        ops: BTreeMap::new(),
        throughput: BTreeMap::new(),
        latency_ok: BTreeMap::new(),
        latency_not_ok: BTreeMap::new(),
    };
    let mut total = 0u64;
    for &k in kinds {
        let c = Counts {
            ok: stats.count(k, CompletionType::Ok),
            fail: stats.count(k, CompletionType::Fail),
            info: stats.count(k, CompletionType::Info),
        };
        let n = c.ok + c.fail + c.info;
        total += n;
        let name = k.name().to_string();
        f.throughput.insert(name.clone(), rate(n, duration_s));
        f.ops.insert(name.clone(), c);
        f.latency_ok.insert(
            name.clone(),
            Latency::of(stats.histogram(k, CompletionType::Ok)),
        );
        let other = [CompletionType::Fail, CompletionType::Info]
            .into_iter()
            .map(|ct| (ct.name().to_string(), Latency::of(stats.histogram(k, ct))))
            .collect();
        f.latency_not_ok.insert(name, other);
    }
    f.throughput.insert("total".into(), rate(total, duration_s));
    f
}

/// n per second, rounded to 0.1.
pub fn rate(n: u64, seconds: f64) -> f64 {
    if seconds <= 0.0 {
        0.0
    } else {
        (n as f64 / seconds * 10.0).round() / 10.0
    }
}

/// Invariant lines from check results.
pub fn invariants(results: &[CheckResult]) -> BTreeMap<String, InvariantSummary> {
    results
        .iter()
        .map(|r| {
            let first = r.first_explanation();
            (
                r.invariant.clone(),
                InvariantSummary {
                    verdict: r.verdict,
                    violations: r.violations,
                    unknowns: r.unknowns,
                    first,
                    first_violation_s: r
                        .first_violation_ns
                        .map(|ns| (ns as f64 / 1e6).round() / 1e3),
                },
            )
        })
        .collect()
}

/// What the run exercised: a verdict of `holds` over nothing is vacuous.
/// For groups, each invariant's own evidence and minimum
/// (`checker::evidence`, `[min_evidence]`) decide whether its `holds`
/// stands; `gaps` holds what no invariant's evidence says (the resolvers
/// never learned a group id; an outbox queue that delivered nothing).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// Events certainly counted (CountExact's Done, over all groups).
    pub events_counted: u64,
    /// Probes that showed a group resolved (refused resolves' probes, and
    /// final rows reading resolved).
    pub probes: u64,
    /// What the run did not exercise at all (each makes the run inconclusive).
    pub gaps: Vec<String>,
}

impl Coverage {
    /// Coverage from the two counts, with no gap: where they are too low,
    /// the invariants' evidence minimums make the verdicts `unknown`.
    pub fn new(events_counted: u64, probes: u64) -> Self {
        Coverage {
            events_counted,
            probes,
            gaps: Vec::new(),
        }
    }
}

/// The exit code by cli.md's order: 130 interrupted, then 3 target
/// unusable, then 1 expectation not met (an invariant violated that should
/// hold, an expected violation not found, or a threshold breached), then 4
/// inconclusive (a verdict `unknown` on an invariant expected to hold, or
/// something the run never exercised), else 0. An invariant the
/// expectation does not judge (`not_judged`) decides nothing, whatever
/// its verdict.
///
/// `expect` is the run's expectation (`Expect::holds()` by default);
/// `thresholds` are the evaluated thresholds ([`judge_thresholds`]).
pub fn exit(
    interrupted: bool,
    target_error: Option<&str>,
    results: &[CheckResult],
    coverage: &Coverage,
    expect: &Expect,
    thresholds: &[ThresholdOutcome],
) -> Exit {
    let names = |pred: &dyn Fn(&CheckResult) -> bool| -> Vec<&str> {
        results
            .iter()
            .filter(|r| !expect.ignores(&r.invariant) && pred(r))
            .map(|r| r.invariant.as_str())
            .collect()
    };
    // Violated where it should hold.
    let unexpected = names(&|r| r.verdict == Verdict::Violated && !expect.violates(&r.invariant));
    // Expected violated, but not found so (holds, or unknown).
    let missed: Vec<String> = expect
        .violated
        .iter()
        .filter(|name| {
            !results
                .iter()
                .any(|r| &r.invariant == *name && r.verdict == Verdict::Violated)
        })
        .map(|name| {
            let found = results
                .iter()
                .find(|r| &r.invariant == name)
                .map_or("not checked".to_string(), |r| r.verdict.to_string());
            format!("{name} ({found})")
        })
        .collect();
    let breached: Vec<String> = thresholds
        .iter()
        .filter(|t| !t.passed)
        .map(|t| t.describe())
        .collect();
    let unknown = names(&|r| r.verdict == Verdict::Unknown && !expect.violates(&r.invariant));
    let (code, rule) = if interrupted {
        (
            ExitCode::Interrupted,
            "interrupted: partial results saved".to_string(),
        )
    } else if let Some(e) = target_error {
        (
            ExitCode::Target,
            format!("the target could not be used: {e}"),
        )
    } else if !unexpected.is_empty() || !missed.is_empty() || !breached.is_empty() {
        let mut why = Vec::new();
        if !unexpected.is_empty() {
            why.push(format!(
                "{} violated but expected to hold",
                unexpected.join(", ")
            ));
        }
        if !missed.is_empty() {
            why.push(format!(
                "expected violation not found: {}",
                missed.join(", ")
            ));
        }
        if !breached.is_empty() {
            why.push(format!("threshold breached: {}", breached.join("; ")));
        }
        (
            ExitCode::NotMet,
            format!("expectation not met: {}", why.join("; ")),
        )
    } else if !unknown.is_empty() || !coverage.gaps.is_empty() {
        // Every reason, so that a gap that explains an unknown (no resolve
        // was ever sent) is said with it.
        let mut why = Vec::new();
        if !unknown.is_empty() {
            why.push(format!(
                "{} unknown, nothing violated unexpectedly",
                unknown.join(", ")
            ));
        }
        why.extend(coverage.gaps.iter().cloned());
        (
            ExitCode::Inconclusive,
            format!("inconclusive: {}", why.join("; ")),
        )
    } else {
        let others = if expect.not_judged.is_empty() {
            "every other invariant".to_string()
        } else {
            "every other judged invariant".to_string()
        };
        let mut met = if expect.is_holds() && expect.not_judged.is_empty() {
            "every invariant holds, as expected".to_string()
        } else if expect.is_holds() {
            "every judged invariant holds, as expected".to_string()
        } else {
            format!(
                "{} violated, as expected; {others} holds",
                expect.violated.join(", ")
            )
        };
        if !expect.not_judged.is_empty() {
            let verdicts: Vec<String> = expect
                .not_judged
                .iter()
                .map(|name| {
                    let v = results
                        .iter()
                        .find(|r| &r.invariant == name)
                        .map_or("not checked".to_string(), |r| r.verdict.to_string());
                    format!("{name} {v}")
                })
                .collect();
            met.push_str(&format!("; not judged: {}", verdicts.join(", ")));
        }
        if thresholds.is_empty() {
            (ExitCode::Met, met)
        } else {
            let n = thresholds.len();
            (
                ExitCode::Met,
                format!("{met}; {n} threshold{} met", if n == 1 { "" } else { "s" }),
            )
        }
    };
    Exit::new(code, rule)
}

/// One threshold, judged against a run's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdOutcome {
    /// The threshold as written (`latency_us.ingest.p99 < 20000`).
    pub threshold: String,
    /// The figure's value in this run; None when the summary has no such
    /// figure (e.g. `first_violation_s` of an invariant that held, or a
    /// latency percentile of no ops): then the threshold is breached,
    /// never passed by default.
    pub actual: Option<f64>,
    /// Whether the figure meets the threshold.
    pub passed: bool,
}

impl ThresholdOutcome {
    /// `<threshold> (actual <value>)`, or `(no such figure in this run)`.
    pub fn describe(&self) -> String {
        match self.actual {
            Some(a) => format!("{} (actual {a})", self.threshold),
            None => format!(
                "{} (no such figure in this run: absent, or a latency of no ops)",
                self.threshold
            ),
        }
    }
}

/// Judges each threshold against a summary (as JSON, before its `exit`).
pub fn judge_thresholds(
    summary: &serde_json::Value,
    thresholds: &[Threshold],
) -> Vec<ThresholdOutcome> {
    thresholds
        .iter()
        .map(|t| {
            // A latency of no ops is written as zeros: it is no figure, and
            // must not meet a `<` threshold by default.
            let empty = t.path.split_last().is_some_and(|(leaf, parent)| {
                leaf != "count"
                    && crate::scenario::lookup(summary, parent)
                        .and_then(|p| p.get("count"))
                        .and_then(serde_json::Value::as_u64)
                        == Some(0)
            });
            let actual = if empty { None } else { t.actual(summary) };
            ThresholdOutcome {
                threshold: t.to_string(),
                actual,
                passed: actual.is_some_and(|a| t.cmp.holds(a, t.limit)),
            }
        })
        .collect()
}

/// Every figure `summary.json` has for a scenario, as JSON with zeros:
/// what a threshold may name, checked before the run. Maps whose keys
/// depend on the run (`stranded_events.by_cause`) are left out; an
/// invariant's `first_violation_s` is in, and breaches its threshold in a
/// run where it is absent. A test keeps this in step with real summaries.
pub fn skeleton(s: &Scenario) -> serde_json::Value {
    if s.workload == crate::scenario::Workload::Outbox {
        return outbox_skeleton(s);
    }
    let fig = figures(&Stats::default(), 1.0);
    let invariants: BTreeMap<&str, InvariantSummary> =
        crate::workload::groups::checker::GROUPS_INVARIANTS
            .iter()
            .map(|&name| {
                (
                    name,
                    InvariantSummary {
                        verdict: Verdict::Holds,
                        violations: 0,
                        unknowns: 0,
                        first: None,
                        first_violation_s: Some(0.0),
                    },
                )
            })
            .collect();
    let faults: BTreeMap<&str, u64> = s.faults.iter().map(|f| (f.kind.name(), 0)).collect();
    let zeros: BTreeMap<&str, u64> = crate::workload::groups::checker::GROUPS_INVARIANTS
        .iter()
        .map(|&name| (name, 0))
        .collect();
    // Faults with a duration have windows; each one that was ever active
    // has its evidence, by its index in [[faults]].
    let windowed: BTreeMap<String, serde_json::Value> = s
        .faults
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.kind, FaultKind::Kill | FaultKind::Lock))
        .map(|(i, f)| {
            (
                i.to_string(),
                serde_json::json!({
                    "kind": f.kind.name(),
                    "windows": 0,
                    "active_s": 0.0,
                    "invariants": zeros,
                }),
            )
        })
        .collect();
    let mut v = serde_json::json!({
        "duration_s": 0.0,
        "events": 0,
        "events_per_s": 0.0,
        "ops": fig.ops,
        "throughput_ops_per_s": fig.throughput,
        "latency_us": fig.latency_ok,
        "latency_us_not_ok": fig.latency_not_ok,
        "latency_saturated": 0,
        "duplicates": 0,
        "resolves": { "resolved": 0, "refused": 0 },
        "invariants": invariants,
        "stranded_events": { "total": 0, "undetermined": 0 },
        "coverage": { "events_counted": 0, "probes": 0 },
        "evidence": { "invariants": zeros, "faults": windowed },
        "history": { "bytes": 0, "ops": 0, "unfinished_ops": 0, "event_rows": 0, "group_rows": 0 },
    });
    if !faults.is_empty() {
        v["faults_injected"] = serde_json::json!(faults);
    }
    if s.load.model == crate::scenario::LoadModel::Open {
        v["open_model"] = serde_json::json!({ "late": 0, "missed": 0 });
    }
    wal_skeleton(s, &mut v);
    v
}

/// The `wal` figures, in a skeleton of a scenario whose WAL the bench watches.
fn wal_skeleton(s: &Scenario, v: &mut serde_json::Value) {
    if crate::wal::watched(s) {
        v["wal"] = serde_json::to_value(crate::wal::WalReport::default()).expect("serializes");
    }
}

/// The invariant lines of a skeleton, for these names.
fn skeleton_invariants(names: &[&'static str]) -> BTreeMap<&'static str, InvariantSummary> {
    names
        .iter()
        .map(|&name| {
            (
                name,
                InvariantSummary {
                    verdict: Verdict::Holds,
                    violations: 0,
                    unknowns: 0,
                    first: None,
                    first_violation_s: Some(0.0),
                },
            )
        })
        .collect()
}

/// [`skeleton`] of an outbox scenario: op kind `handle`, the outbox
/// invariants, and the `outbox` figures.
fn outbox_skeleton(s: &Scenario) -> serde_json::Value {
    let fig = figures_of(&Stats::default(), 1.0, &OpKind::OUTBOX);
    let faults: BTreeMap<&str, u64> = s.faults.iter().map(|f| (f.kind.name(), 0)).collect();
    let mut o = serde_json::to_value(OutboxSummary::default()).expect("serializes");
    // Lists are no figures a threshold may name.
    for list in ["given_up"] {
        o.as_object_mut().expect("an object").remove(list);
    }
    o["liveness"]
        .as_object_mut()
        .expect("an object")
        .remove("unacked");
    let mut v = serde_json::json!({
        "duration_s": 0.0,
        "ops": fig.ops,
        "throughput_ops_per_s": fig.throughput,
        "latency_us": fig.latency_ok,
        "latency_us_not_ok": fig.latency_not_ok,
        "latency_saturated": 0,
        "invariants": skeleton_invariants(&crate::scenario::invariants::OUTBOX_INVARIANTS),
        "coverage": { "events_counted": 0, "probes": 0 },
        "history": { "bytes": 0, "ops": 0, "unfinished_ops": 0 },
        "outbox": o,
    });
    if !faults.is_empty() {
        v["faults_injected"] = serde_json::json!(faults);
    }
    wal_skeleton(s, &mut v);
    v
}
