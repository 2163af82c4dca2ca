//! The groups workload behind the [`Workload`] trait: its statement file
//! and fault steps checked ([`super::prepare`]), its shards and namespace,
//! its load phase on either target ([`super::load`]), its facts, checkers
//! and evidence, and its figures in the summary (events, duplicates,
//! resolves, the open model, stranded events, evidence, precision).
//!
//! App layer (the groups workload's implementation): imports the checkers,
//! the report's summary types and [`super::load`].

use super::config::{GroupsScenario, LoadModel};
use super::figures::GroupsFigures;
use super::load::{http_phase, namespace_for, run_namespace, sqlite_phase};
use super::prepare::{apply_shard, prepare, prepare_offline, Prepared};
use crate::history::{CompletionType, Entry, Header, OpKind};
use crate::prepare::{RunError, RunOptions};
use crate::scenario::{Scenario, TargetKind};
use crate::statements::StatementFile;
use crate::summary::{self, Summary};
use crate::verdict::CheckResult;
use crate::workload::groups::checker::{check_all, evidence, Facts, Tables};
use crate::workload::groups::runtime::{LoadOutcome, LoadPlan};
use crate::workload::parts::{CompareRow, HumanParts};
use crate::workload::traits::{LoadCx, Loaded, SummaryCx, Workload, WorkloadRun};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

/// The groups workload (BacktalkGroups.tla).
pub struct Groups;

impl Workload for Groups {
    fn name(&self) -> &'static str {
        "groups"
    }

    fn validate(&self, opts: &crate::validate::ValidateOptions) -> crate::exit_code::ExitCode {
        super::validate::main(opts)
    }

    fn replay(&self, opts: &crate::replay::ReplayOptions) -> crate::exit_code::ExitCode {
        super::replay::main(opts)
    }

    fn invariants(&self) -> &'static [&'static str] {
        &crate::workload::groups::config::GROUPS_INVARIANTS
    }

    fn audit(
        &self,
        f: &crate::audit_record::AuditFolder<'_>,
    ) -> Result<crate::audit_record::Rejudged, crate::audit_error::AuditError> {
        crate::workload::groups::audit::judge(f)
    }

    fn merge(&self) -> Option<&'static dyn crate::merge_parts::ShardMerge> {
        Some(&crate::workload::groups::merge::GroupsMerge)
    }

    fn prepare(
        &self,
        path: Option<&Path>,
        overrides: &[String],
        offline: bool,
    ) -> Result<Box<dyn WorkloadRun>, RunError> {
        let p = if offline {
            prepare_offline(path, overrides)?
        } else {
            prepare(path, overrides)?
        };
        Ok(Box::new(GroupsRun {
            p,
            shard: None,
            sharded_namespace: None,
            namespace: String::new(),
            outcome: None,
            tables: None,
            judged: None,
        }))
    }

    fn explore(&self, opts: &crate::explore::ExploreOptions) -> crate::exit_code::ExitCode {
        crate::workload::groups::explore_main::main(opts)
    }

    fn human(&self, s: &Summary) -> HumanParts {
        super::human::human(s)
    }

    fn compare_figures(&self, s: &Summary) -> serde_json::Map<String, serde_json::Value> {
        super::compare::figures(s)
    }

    fn compare_rows(&self) -> Vec<CompareRow> {
        super::compare::rows()
    }

    fn check_target(
        &self,
        opts: &crate::probe_report::ProbeOptions,
        out: &mut dyn std::io::Write,
    ) -> Option<Result<crate::probe_report::Report, crate::probe_report::ProbeError>> {
        Some(crate::workload::groups::probe::check_target(opts, out))
    }
}

/// One groups scenario, from its check to its figures.
struct GroupsRun {
    p: Prepared,
    shard: Option<crate::shard::Shard>,
    /// A shard's namespace, derived from its run id.
    sharded_namespace: Option<String>,
    /// The prefix of this run's projects on the target.
    namespace: String,
    /// The load's figures, its latency taken by the pipeline.
    outcome: Option<LoadOutcome>,
    /// The final tables, when they could be read.
    tables: Option<Tables>,
    /// What the audit found besides the verdicts.
    judged: Option<Judged>,
}

/// What the audit read and found, for the summary.
struct Judged {
    /// Events acknowledged at least once.
    accepted: u64,
    coverage: crate::summary::Coverage,
    /// Ops invoked, and those never completed.
    ops: u64,
    unfinished: u64,
    /// Rows of the final tables.
    event_rows: u64,
    group_rows: u64,
    /// Parts the history was judged in (0: whole).
    parts: u64,
    stranded: crate::workload::groups::checker::stranded::Stranded,
    evidence: crate::workload::groups::checker::evidence::EvidenceReport,
    ambiguous: crate::report::precision::AmbiguousOps,
}

impl WorkloadRun for GroupsRun {
    fn scenario(&self) -> &Scenario {
        &self.p.scenario
    }

    fn file(&self) -> &StatementFile {
        &self.p.variant.file
    }

    fn describe(&self) -> String {
        let v = &self.p.variant;
        let (expect, thresholds) = self.p.scenario.expectation();
        format!(
            "{}# variant: {} (sha256 {}): ingest {} steps (counting step {}), resolve {} \
             steps\n# this run expects: {expect}{}\n",
            self.p.scenario.to_toml(),
            v.file.path.display(),
            v.file.sha256,
            v.ingest.steps.len(),
            v.ingest.steps[v.counting_step].name,
            v.resolve.steps.len(),
            if thresholds.is_empty() {
                String::new()
            } else {
                format!(
                    "; thresholds: {}",
                    thresholds
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )
    }

    fn take_shard(&mut self, opts: &RunOptions) -> Result<(), RunError> {
        self.sharded_namespace =
            apply_shard(&mut self.p.scenario, opts.shard, opts.run_id.as_deref())?;
        self.shard = opts.shard;
        Ok(())
    }

    fn claim_target(&mut self, started: SystemTime) -> Result<(), RunError> {
        let target = &self.p.scenario.target;
        self.namespace = match (&target.url, &target.path) {
            // An external service may hold rows of earlier runs (or real
            // data): this run works in a namespace of projects of its own.
            // Shards share one namespace, derived from their run id.
            (Some(_), _) => self
                .sharded_namespace
                .clone()
                .unwrap_or_else(|| run_namespace(started)),
            (None, Some(path)) => namespace_for(path, &target.sqlite(), started)?,
            (None, None) => String::new(),
        };
        Ok(())
    }

    fn header(&self, h: &mut Header) {
        let v = &self.p.variant;
        h.counting_step = v.counting_step as u32;
        h.event_step = v.event_step.map(|i| i as u32);
        h.ingest_steps = v.ingest.steps.iter().map(|s| s.name.clone()).collect();
        // CountExact's one-block rule rests on the bench (or the reference
        // server it spawns) running this very file's blocks; a service at
        // `target.url` runs statements of its own, whatever `variant` says.
        let runs_this_file = self.p.scenario.target.url.is_none();
        h.ingest_block = v.event_step.filter(|_| runs_this_file).and_then(|e| {
            let t = v.ingest.txn_of(e)?;
            t.holds(v.counting_step)
                .then_some([t.first as u32, t.last as u32])
        });
        h.namespace = self.namespace.clone();
        crate::workload::groups::generator::put_event_id(h, self.p.scenario.keys().event_id);
    }

    fn workers(&self) -> usize {
        let l = &self.p.scenario.load();
        (l.ingesters + l.resolvers) as usize
    }

    fn stop_events(&self) -> u64 {
        self.p.scenario.stop.events
    }

    fn ingest_target(&self) -> Option<crate::scenario::stages::Curve> {
        let load = self.p.scenario.load();
        (load.model == crate::workload::groups::config::LoadModel::Open)
            .then(|| load.curve())
            .flatten()
    }

    fn op_kinds(&self) -> &'static [OpKind] {
        &crate::workload::groups::figures::OP_KINDS
    }

    fn load(&mut self, cx: &LoadCx<'_>) -> Result<Loaded, RunError> {
        let plan = LoadPlan {
            scenario: &self.p.scenario,
            variant: &self.p.variant,
            namespace: &self.namespace,
            sink: cx.sink.clone(),
            clock: cx.clock,
            control: cx.control,
            nemesis: cx.nemesis.clone(),
            live: cx.live.clone(),
            shard: self.shard,
        };
        let x = cx.setup(&self.p.scenario);
        let phase = if self.p.scenario.target.kind == TargetKind::Http {
            http_phase(&self.p, &x, &plan)
        } else {
            sqlite_phase(&self.p, &x, &plan)
        }?;
        let (loaded, load, tables) = phase.into_loaded();
        self.outcome = Some(load);
        self.tables = tables;
        Ok(loaded)
    }

    fn judge(
        &mut self,
        history: &Path,
        feed: &mut dyn FnMut(&Entry),
        target_error: Option<&str>,
    ) -> Result<Vec<CheckResult>, RunError> {
        if let Some(results) = self.judge_in_parts(history, feed)? {
            return Ok(results);
        }
        let mut ambiguous = crate::report::precision::AmbiguousOps::default();
        let facts = Facts::from_entries(crate::history::reader::read(history)?.inspect(|e| {
            if let Ok(e) = e {
                feed(e);
                ambiguous.feed(e);
            }
        }))?;
        let (results, stranded, tables, evidence) = match self.tables.take() {
            Some(tables) => {
                let (mut r, st) = check_all(&facts, &tables);
                let ev = evidence::judge(&facts, &tables, &self.p.scenario.min_evidence(), &mut r);
                (r, st, tables, ev)
            }
            None => (
                unjudged(target_error.unwrap_or("the final tables are missing")),
                Default::default(),
                Tables::default(),
                Default::default(),
            ),
        };
        // A shard of several cannot be judged alone (see
        // checker::sharded::shard_verdicts).
        let (results, stranded) =
            match crate::workload::groups::checker::sharded::shard_verdicts(self.shard) {
                Some(r) => (r, Default::default()),
                None => (results, stranded),
            };
        self.judged = Some(Judged {
            accepted: facts.acked_events(),
            coverage: super::coverage::of(&facts, &tables),
            ops: facts.ops,
            unfinished: facts.unfinished,
            event_rows: tables.event_rows,
            group_rows: tables.groups.len() as u64,
            parts: 0,
            stranded,
            evidence,
            ambiguous,
        });
        Ok(results)
    }

    fn fill_summary(&mut self, s: &mut Summary, cx: &SummaryCx<'_>) {
        let sc = &self.p.scenario;
        let load = self.outcome.as_ref().expect("judged after the load");
        let j = self.judged.take().expect("filled after the audit");
        let accepted = j.accepted;
        let mut coverage = j.coverage;
        let resolves_sent: u64 = CompletionType::ALL
            .iter()
            .map(|&c| cx.stats.count(OpKind::Resolve, c))
            .sum();
        if sc.target.kind == TargetKind::Http
            && sc.load().resolvers > 0
            && resolves_sent == 0
            && !cx.interrupted
        {
            // Resolvers resolve only groups whose id the service named.
            coverage.gaps.push(
                "no resolve was sent: the resolvers never learned a group id (see \
                 api.ingest.group_id and api.group_ids)"
                    .into(),
            );
        }
        s.open_model = (sc.load().model == LoadModel::Open).then(|| {
            BTreeMap::from([
                ("late".to_string(), cx.stats.late),
                ("missed".to_string(), load.missed),
            ])
        });
        s.put(&GroupsFigures {
            events: load.fresh_events,
            events_per_s: summary::rate(accepted, cx.duration_s),
            duplicates: cx.stats.duplicates,
            resolves: BTreeMap::from([
                ("resolved".to_string(), cx.stats.resolved),
                ("refused".to_string(), cx.stats.refused),
            ]),
            stranded_events: j.stranded,
            evidence: j.evidence,
        });
        s.coverage = coverage;
        // A mapped resolve whose refusal does not give the status and count
        // it read: its refusals are no probes.
        let unprobed = sc
            .api
            .as_ref()
            .and_then(|a| a.part::<super::api::GroupsApi>())
            .is_some_and(|g| g.resolve.status.is_empty() || g.resolve.event_count.is_empty());
        s.precision = crate::report::precision::losses(sc, &j.ambiguous, unprobed);
        s.history.extend([
            ("ops".to_string(), serde_json::json!(j.ops)),
            (
                "unfinished_ops".to_string(),
                serde_json::json!(j.unfinished),
            ),
            ("event_rows".to_string(), serde_json::json!(j.event_rows)),
            ("group_rows".to_string(), serde_json::json!(j.group_rows)),
        ]);
        if j.parts > 0 {
            s.history
                .insert("judge_parts".to_string(), serde_json::json!(j.parts));
        }
    }

    fn stranded(&self, s: &Summary) -> Option<u64> {
        s.part::<GroupsFigures>()
            .and_then(|f| f.stranded_events.total)
    }
}

/// Every invariant `unknown`: the final tables could not be read, so no
/// verdict can be given (the run exits 3 for the target's failure).
fn unjudged(why: &str) -> Vec<CheckResult> {
    crate::workload::groups::checker::all_unknown(
        "the final tables",
        "none",
        &format!("not judged: the final tables could not be read ({why})"),
    )
}

impl GroupsRun {
    /// The run's judge of a long history in parts, as `specstorm audit`
    /// judges it ([`super::audit::judge_run_in_parts`]), so that the
    /// run's memory at the end does not grow with its length: the final
    /// tables the load read are dropped first (only their row counts are
    /// kept) and read again, key by key, from the run folder, and the
    /// history is read once more for `feed` (the latency log) and the
    /// ambiguous ops. None where the whole history is judged at once: the
    /// final tables could not be read, the run is a shard of several, the
    /// history is short, or no exact judge in parts exists (an error of the judge in parts says so at
    /// debug level; the whole judge then reports what it finds).
    fn judge_in_parts(
        &mut self,
        history: &Path,
        feed: &mut dyn FnMut(&Entry),
    ) -> Result<Option<Vec<CheckResult>>, RunError> {
        let (Some(tables), Some(run_dir)) = (&self.tables, history.parent()) else {
            return Ok(None);
        };
        // A shard of several shares its namespace with the other shards,
        // whose rows no op of its history inserted: no part could be
        // judged exactly (and its verdicts are not its own anyway).
        let sharded = crate::workload::groups::checker::sharded::shard_verdicts(self.shard);
        if sharded.is_some() {
            return Ok(None);
        }
        let budget = parts_budget();
        if std::fs::metadata(history).map_or(0, |m| m.len()) < budget.whole_below_bytes {
            return Ok(None);
        }
        let rows = (tables.event_rows, tables.groups.len() as u64);
        let read = (tables.read_start, tables.read_end, tables.events_pruned);
        let kept = self.tables.take();
        drop(kept);
        let j = match super::audit::judge_run_in_parts(run_dir, history, &self.p, budget) {
            Ok(Some(j)) => j,
            other => {
                match other {
                    Err(e) => {
                        tracing::debug!("no judge in parts: {e}; the whole history is judged")
                    }
                    _ => tracing::debug!("no exact judge in parts: the whole history is judged"),
                }
                // The whole judge takes the tables the load read: read
                // again from where the judge in parts read them.
                let mut t = super::audit::run_final_tables(run_dir, &self.p, &self.namespace)
                    .map_err(|e| {
                        RunError::Target(format!("the final tables could not be read again: {e}"))
                    })?;
                (t.read_start, t.read_end, t.events_pruned) = read;
                self.tables = Some(t);
                return Ok(None);
            }
        };
        let mut ambiguous = crate::report::precision::AmbiguousOps::default();
        for e in crate::history::reader::read(history)?.flatten() {
            feed(&e);
            ambiguous.feed(&e);
        }
        let (results, stranded, evidence, coverage) = j.merged;
        let (results, stranded) =
            match crate::workload::groups::checker::sharded::shard_verdicts(self.shard) {
                Some(r) => (r, Default::default()),
                None => (results, stranded),
            };
        self.judged = Some(Judged {
            accepted: j.acked,
            coverage,
            ops: j.ops,
            unfinished: j.unfinished,
            event_rows: rows.0,
            group_rows: rows.1,
            parts: j.parts,
            stranded,
            evidence,
            ambiguous,
        });
        Ok(Some(results))
    }
}

/// The run's budget for a judge in parts: the audit's
/// ([`super::audit_parts::Budget::DEFAULT`]), unless the environment
/// gives another: `SPECSTORM_JUDGE_PARTS_ABOVE`, the history size in
/// bytes from which the run's judge goes in parts, and
/// `SPECSTORM_JUDGE_PART_OPS`, the ops of a part (tests judge short runs
/// in many parts with them).
fn parts_budget() -> super::audit_parts::Budget {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    let mut b = super::audit_parts::Budget::DEFAULT;
    if let Some(bytes) = var("SPECSTORM_JUDGE_PARTS_ABOVE") {
        b.whole_below_bytes = bytes;
    }
    if let Some(ops) = var("SPECSTORM_JUDGE_PART_OPS") {
        b.part_ops = ops;
    }
    b
}
