//! `summary.json`: every figure of a run, with its provenance. Its shape is
//! versioned by `schema_version` and documented in the README ("Reading the
//! summary"). Latencies are µs, throughputs ops/s, durations s.
//!
//! The figures every workload has are fields of [`Summary`]; a workload's
//! own figures (groups' events and stranded events, the outbox's queue)
//! are its own types, which it puts into [`Summary::workload_figures`]
//! and reads back ([`Summary::put`], [`Summary::part`]): they sit at the
//! top level of `summary.json`, among the common ones (its keys are
//! written in sorted order), and nothing here names a workload. The exit
//! rule, the thresholds' judgement and the common figures' arithmetic are
//! here too, so that every workload, the audit and the merge share them.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use crate::exit_code::ExitCode;
use crate::figures::{Counts, Latency};
use crate::history::{CompletionType, OpKind};
use crate::scenario::{Expect, Threshold};
use crate::stats::Stats;
use crate::verdict::{CheckResult, Verdict};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the summary format; bumped on any incompatible change.
pub const SUMMARY_SCHEMA_VERSION: u32 = 2;

/// One invariant's line in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
    /// ([`CHECKER_VERSION`]); 1 for a folder written
    /// before it was recorded.
    #[serde(default = "first_checker_version")]
    pub checker_version: u32,
}

/// The version of the rules the checkers of this build apply (every
/// workload's: a change to any workload's rules raises it), recorded in
/// every run folder (`summary.json`, `provenance.checker_version`; a folder without
/// it was judged by version 1). Raised whenever a rule changes so that the
/// same history and tables can get another verdict: `specstorm audit` then
/// reports the new verdicts as the checkers' change, not as a folder that
/// was tampered with (`docs/cli.md`, "Auditing a run folder").
pub const CHECKER_VERSION: u32 = 2;

/// The checker version of a run folder that records none
/// (the groups checkers re-export it).
pub const FIRST_CHECKER_VERSION: u32 = 1;

fn first_checker_version() -> u32 {
    FIRST_CHECKER_VERSION
}

/// The exit code and the rule of cli.md that decided it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Summary {
    /// [`SUMMARY_SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Workload name.
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
    /// Open model: ops started later than `load.late_after`, and ops due
    /// before the stop that never started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_model: Option<BTreeMap<String, u64>>,
    /// One line per invariant, by name.
    pub invariants: BTreeMap<String, InvariantSummary>,
    /// Faults injected per kind (`[[faults]]`; absent without a schedule):
    /// per-op injections, and for kill and lock the times they began.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub faults_injected: BTreeMap<String, u64>,
    /// What the run exercised; a gap makes it inconclusive (exit 4).
    pub coverage: Coverage,
    /// The expectation the run was judged against (`holds`, or the
    /// invariants it must find violated).
    #[serde(default)]
    pub expect: Expect,
    /// The scenario's thresholds, each judged against this summary.
    #[serde(default)]
    pub thresholds: Vec<ThresholdOutcome>,
    /// The `abort_on_fail` threshold whose breach stopped the load early
    /// (`crate::abort_on_fail`); absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted_by: Option<AbortedBy>,
    /// Checks whose verdicts rest on less than they could (a mapped
    /// service's answers that do not tell, pruned event rows), and why;
    /// absent when none did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub precision: Vec<PrecisionLoss>,
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
    /// The target database's WAL as the bench watched it (in-process
    /// SQLite and the spawned reference server, `journal_mode = wal`):
    /// its peak size and the bench's blocking checkpoints (`crate::wal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal: Option<WalReport>,
    /// The workload's own figures, by their top-level keys (every key of
    /// `summary.json` that is none of the fields above). The workload
    /// writes them with [`Summary::put`] and reads them with
    /// [`Summary::part`].
    #[serde(flatten)]
    pub workload_figures: serde_json::Map<String, serde_json::Value>,
}

impl Summary {
    /// `summary.json` as JSON: the common figures and the workload's own.
    /// Write and judge thresholds through this.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a Summary always serializes")
    }

    /// Puts the workload's figures `part` (a struct whose fields are
    /// top-level keys of `summary.json`) into [`Summary::workload_figures`],
    /// replacing the keys it has.
    pub fn put<T: Serialize>(&mut self, part: &T) {
        match serde_json::to_value(part).expect("a figures part always serializes") {
            serde_json::Value::Object(m) => self.workload_figures.extend(m),
            other => panic!("a figures part is a struct, not {other}"),
        }
    }

    /// Records that the threshold `index` (of [`Summary::thresholds`])
    /// stopped the load with its live breach `by`: breached, whatever
    /// its final figure.
    pub fn mark_aborted(&mut self, index: usize, by: AbortedBy) {
        if let Some(t) = self.thresholds.get_mut(index) {
            t.passed = false;
            t.aborted = Some(LiveBreach {
                actual: by.actual,
                at_s: by.at_s,
            });
        }
        self.aborted_by = Some(by);
    }

    /// The workload's figures as its type `T` (each absent key `T`'s
    /// default); None when they are no `T` (a summary of another
    /// workload, or of a later schema).
    pub fn part<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_value(serde_json::Value::Object(self.workload_figures.clone())).ok()
    }
}

/// The `summary.json` of a run that failed after its folder existed and
/// before its verdicts (exit 2, 3, or 130 before the load; cli.md, "Run
/// folders"): what the run was and why it stopped, the same keys for every
/// workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FailedSummary {
    /// [`SUMMARY_SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// Scenario name.
    pub scenario: String,
    /// Workload name.
    pub workload: String,
    /// Variant name.
    pub variant: String,
    /// Seed of the run.
    pub seed: u64,
    /// The user stopped the run before its load began (exit 130).
    pub partial: bool,
    /// Why the run failed, in words.
    pub error: String,
    /// Tool, versions and the reproducing command (cli.md).
    pub provenance: Provenance,
    /// Exit code and the rule that decided it: the error's.
    pub exit: Exit,
}

/// One check whose verdict rests on less than it could
/// (`crate::report::precision` finds them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct PrecisionLoss {
    /// The invariant (spec name).
    pub invariant: String,
    /// What part of it is weaker.
    pub what: String,
    /// Why.
    pub why: String,
    /// Ops concerned (0 when it is about the tables or the mapping).
    pub ops: u64,
}

/// What the WAL keeper (`crate::wal`) saw and did (`summary.json`'s `wal`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct WalReport {
    /// The largest size of the `-wal` file seen, bytes (sampled every
    /// 100 ms while the load ran, and once as it ended).
    pub peak_bytes: u64,
    /// Blocking (RESTART) checkpoints the bench ran: the history's `bench`
    /// entries.
    pub checkpoints: u64,
    /// Their time in all, s: writers waited at most this long for them.
    pub checkpoint_s: f64,
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

/// Counts per kind and the ok / not-ok latencies from merged stats, for
/// the op kinds of one workload; `duration_s` is the load's wall time in s.
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
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
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ThresholdOutcome {
    /// The threshold as written (`latency_us.ingest.p99 < 20000`).
    pub threshold: String,
    /// The figure's value in this run; None when the summary has no such
    /// figure (e.g. `first_violation_s` of an invariant that held, or a
    /// latency percentile of no ops): then the threshold is breached,
    /// never passed by default.
    pub actual: Option<f64>,
    /// Whether the figure meets the threshold (false for the threshold
    /// that stopped the load, whatever its final figure).
    pub passed: bool,
    /// An `abort_on_fail` threshold that breached while the load ran and
    /// stopped it: the live figure then, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<LiveBreach>,
}

impl ThresholdOutcome {
    /// `<threshold> (actual <value>)`, or `(no such figure in this run)`;
    /// with the live breach that stopped the load, if it did.
    pub fn describe(&self) -> String {
        let actual = match self.actual {
            Some(a) => format!("actual {a}"),
            None => "no such figure in this run: absent, or a latency of no ops".to_string(),
        };
        match &self.aborted {
            Some(b) => format!(
                "{} ({actual}; breached at {}s of the load, when it was {}, and stopped it)",
                self.threshold, b.at_s, b.actual
            ),
            None => format!("{} ({actual})", self.threshold),
        }
    }
}

/// A threshold's breach while the load ran (`abort_on_fail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct LiveBreach {
    /// The live figure's value at the breach (cumulative since the load
    /// began, as the final figure is).
    pub actual: f64,
    /// When the breach was seen and the load was told to stop, s since
    /// the load began.
    pub at_s: f64,
}

/// The threshold that stopped the load (`summary.json`'s `aborted_by`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct AbortedBy {
    /// The threshold as written (`latency_us.ingest.p99 < 1000`).
    pub threshold: String,
    /// Its figure's live value at the breach.
    pub actual: f64,
    /// When the load was told to stop, s since it began (ops in flight
    /// then finished: `duration_s` is when the last one did).
    pub at_s: f64,
}

/// The top-level figures of `summary.json` that exist while the load
/// runs ([`live_figures`]): the only ones an `abort_on_fail` threshold
/// may name.
pub const LIVE_FIGURES: &[&str] = &[
    "duration_s",
    "ops",
    "throughput_ops_per_s",
    "latency_us",
    "latency_us_not_ok",
    "latency_saturated",
];

/// The figures of [`LIVE_FIGURES`] from the load's stats so far, `elapsed_s`
/// after it began, under the same paths and by the same arithmetic as the
/// final summary's ([`figures_of`]): counts and latencies since the load
/// began, throughputs their count over `elapsed_s`.
pub fn live_figures(stats: &Stats, elapsed_s: f64, kinds: &[OpKind]) -> serde_json::Value {
    let fig = figures_of(stats, elapsed_s, kinds);
    serde_json::json!({
        "duration_s": (elapsed_s * 1000.0).round() / 1000.0,
        "ops": fig.ops,
        "throughput_ops_per_s": fig.throughput,
        "latency_us": fig.latency_ok,
        "latency_us_not_ok": fig.latency_not_ok,
        "latency_saturated": stats.saturated,
    })
}

/// Judges each threshold against a summary (as JSON, before its `exit`),
/// or against [`live_figures`] while the load runs.
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
            let actual = match t.catch_rate() {
                Some(invariant) => rate_of_one(summary, invariant),
                None if empty => None,
                None => t.actual(summary),
            };
            ThresholdOutcome {
                threshold: t.to_string(),
                actual,
                passed: actual.is_some_and(|a| t.cmp.holds(a, t.limit)),
                aborted: None,
            }
        })
        .collect()
}

/// A run's catch rate of `invariant` as a series of one seed: 1 when it
/// is violated, else 0; None when the run has no such invariant.
fn rate_of_one(summary: &serde_json::Value, invariant: &str) -> Option<f64> {
    let verdict = summary.get("invariants")?.get(invariant)?.get("verdict")?;
    Some(if verdict == "violated" { 1.0 } else { 0.0 })
}

/// The common figures of a skeleton (`crate::scenario::figures`, every
/// figure a threshold may name, as JSON with zeros): the load figures of
/// the op `kinds`, a line per invariant of `invariants` (with its
/// `first_violation_s`, which breaches its threshold in a run where it is
/// absent), `coverage`, the history's `bytes`, `ops`, `unfinished_ops`,
/// `faults_injected` for the kinds of `faults` (absent without), and `wal`
/// when the bench watches it.
pub fn skeleton_common(
    kinds: &[OpKind],
    invariants: &[&str],
    faults: &[crate::fault_kind::FaultKind],
    wal: bool,
) -> serde_json::Value {
    let fig = figures_of(&Stats::default(), 1.0, kinds);
    let lines: BTreeMap<&str, InvariantSummary> = invariants
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
    let mut v = serde_json::json!({
        "duration_s": 0.0,
        "ops": fig.ops,
        "throughput_ops_per_s": fig.throughput,
        "latency_us": fig.latency_ok,
        "latency_us_not_ok": fig.latency_not_ok,
        "latency_saturated": 0,
        "invariants": lines,
        "coverage": { "events_counted": 0, "probes": 0 },
        "history": { "bytes": 0, "ops": 0, "unfinished_ops": 0 },
    });
    let faults: BTreeMap<&str, u64> = faults.iter().map(|f| (f.name(), 0)).collect();
    if !faults.is_empty() {
        v["faults_injected"] = serde_json::json!(faults);
    }
    if wal {
        v["wal"] = serde_json::to_value(WalReport::default()).expect("serializes");
    }
    v
}

/// Merges `part` (a workload's figures in a skeleton) into `v`, key by key
/// and into objects both have (`history`).
pub fn merge_figures(v: &mut serde_json::Value, part: serde_json::Value) {
    match (v, part) {
        (serde_json::Value::Object(into), serde_json::Value::Object(from)) => {
            for (k, val) in from {
                match into.get_mut(&k) {
                    Some(existing) if existing.is_object() && val.is_object() => {
                        merge_figures(existing, val)
                    }
                    _ => {
                        into.insert(k, val);
                    }
                }
            }
        }
        (into, part) => *into = part,
    }
}
