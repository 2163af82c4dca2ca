//! `specstorm merge` of the shards of an outbox run: the outbox's part of
//! [`crate::merge`], which has read the shards, checked that they are the
//! n shards of one run of one workload, and written the merged history,
//! latency log, final tables (`GET /v1/outbox/export`), scenario and
//! statement file. Here ([`OutboxMerge`]): the shards' own refusals
//! ([`check_parts`]), the saved scenario read as an outbox one, and the one
//! judgement of the merged history against the final tables with the
//! outbox checkers, into the merged folder's checks and summary
//! ([`judge`]).
//!
//! Why the merged judgement is that of one unsharded run (docs/outbox.md,
//! "Shards", says it for users):
//! - Shard i of n sent exactly the deliveries of the message ids it owns,
//!   (m - 1) mod n = i, in the order of the unsharded queue
//!   ([`crate::workload::outbox::runtime::Queue::sharded`]), with the unsharded
//!   run's fault draws (they are keyed by (msg, dup, attempt), not by
//!   shard). The owners are disjoint and cover 1..=M, so every attempt of
//!   one message, and so of one delivery, lies in one shard's history: a
//!   delivery's acks, its attempts against `max_attempts` (given up), the
//!   acks the history and `processed` agree on, are exactly what that
//!   shard's queue saw, whatever the merged order. The merged header
//!   keeps the whole run's queue (M, D, budget), as every shard's did.
//! - No outbox checker orders two attempts in time: TypeOK and the two
//!   AtMostOne rules read the final tables only; ConsistentStateAndOutQueue
//!   and NoLostOutput judge the acked messages (an `ok` attempt in the
//!   history and its row in `processed`) against the tables; times appear
//!   in evidence only. So the clock skew between runners cannot change a
//!   verdict, and no skew note is added.
//! - The final tables are read once, after every shard's load ended
//!   ([`crate::merge`]'s `final_tables`): every row any attempt of the run
//!   wrote before its completion was recorded is in them, as in an
//!   unsharded run's snapshot after its load drained.
//! - The tables hold no other run's rows: each shard refused, before its
//!   load, rows its siblings cannot have written
//!   ([`crate::workload::outbox::shard::refuse_used`]), which catches every row that
//!   was there before the run. A run folder exists with a summary only for
//!   a shard that got past that check (a refused shard saves a failed
//!   summary, which [`crate::merge`] does not take as a shard's).
//! - A shard whose history has no footer (the runner was killed) may lack
//!   attempts that wrote rows: it is refused ([`check_parts`]), as a
//!   missing shard is; the run cannot be judged, and running that shard
//!   again would meet its own rows and be refused: run all shards again
//!   with a fresh run id against a fresh service.
//!
//! So the checkers see what they would see of one run that sent the same
//! deliveries with n x H handlers, and the arguments of each checker
//! (`checker::outbox`) hold as they are.
//!
//! App layer, beside [`crate::merge`], which calls it: imports
//! [`crate::merge_parts`], the outbox runner's scenario check, the outbox checkers, the export reader (with the contract's mapping), the history and
//! the reports.

use crate::exit_code::ExitCode;
use crate::history::{reader, Entry};
use crate::merge_parts::{MergeError, Merged, Part, ShardMerge};
use crate::prepare::RunError;
use crate::scenario::mapping::Mapping;
use crate::scenario::{Scenario, Workload};
use crate::summary::{self, Summary, SUMMARY_SCHEMA_VERSION};
use crate::target::http::client::HttpClient;
use crate::workload::outbox::checker::{check_all, OutboxFacts};
use crate::workload::outbox::config::OutboxConfig;
use crate::workload::outbox::export::read_outbox_export;
use crate::workload::outbox::figures::{OutboxFigures, OutboxSummary};
use std::collections::BTreeMap;
use std::path::Path;

/// The outbox workload's part of `specstorm merge`: its shards split the
/// message ids and run the scenario whole.
pub struct OutboxMerge;

impl ShardMerge for OutboxMerge {
    /// Read and checked as an outbox scenario with its saved `variant.sql`.
    fn read_scenario(&self, path: &Path) -> Result<Scenario, RunError> {
        crate::workload::outbox::prepare::prepare(Some(path), &[]).map(|p| p.scenario)
    }

    fn check_parts(&self, parts: &[Part]) -> Result<(), MergeError> {
        check_parts(parts)
    }

    fn export_endpoint(&self) -> &'static str {
        "/v1/outbox/export"
    }

    fn export(
        &self,
        client: &HttpClient,
        rt: &tokio::runtime::Runtime,
        to: &Path,
    ) -> Result<(), String> {
        // The client speaks the contract of the default workload; the
        // export is the outbox's own.
        let outbox = Workload::named("outbox").expect("the outbox is built in");
        let contract = Mapping::contract_for(outbox);
        rt.block_on(client.export_to(&contract.export, to))
            .map(|_| ())
    }

    fn judge(&self, m: &Merged<'_>) -> Result<Summary, MergeError> {
        judge(m)
    }
}

/// Refuses (exit 2) outbox shards that cannot be judged together, before
/// anything is written: a shard whose history has no footer (its runner
/// was killed: attempts that wrote rows may be missing from it).
pub(crate) fn check_parts(parts: &[Part]) -> Result<(), MergeError> {
    if let Some(p) = parts.iter().find(|p| p.footer.is_none()) {
        return Err(MergeError::Input(format!(
            "{}: shard {}/{}'s history has no footer (its runner was killed): attempts that \
             wrote rows may be missing from it, so the run cannot be judged; run every shard \
             again with a fresh --run-id against a fresh service",
            p.dir.display(),
            p.shard.index,
            p.shard.count
        )));
    }
    Ok(())
}

/// Judges the merged outbox run `m` (its files are in `m.opts.out`) with
/// the outbox checkers, writes `checks.json`, `junit.xml` and
/// `summary.json`, prints the summary and returns it (its `exit.code` is
/// the process's). Errors: the merged history or the final tables cannot
/// be read (exit 3), a file cannot be written (exit 3).
pub(crate) fn judge(m: &Merged<'_>) -> Result<Summary, MergeError> {
    let out = &m.opts.out;
    let mut tables_read = None;
    let facts = OutboxFacts::read(reader::read(m.history)?.inspect(|e| {
        if let Ok(Entry::Footer(f)) = e {
            tables_read = f.tables_read;
        }
    }))?;
    let mut tables = read_outbox_export(&out.join("export.json")).map_err(MergeError::Target)?;
    if let Some([a, b]) = tables_read {
        (tables.read_start, tables.read_end) = (a, b);
    }
    let (results, liveness) = check_all(&facts, &tables);
    let coverage = crate::workload::outbox::coverage::of(&liveness);
    let parts = m.parts;
    let s0 = &parts[0].summary;
    let partial = parts.iter().any(|p| p.summary.partial);
    let (expect, thresholds) = parts[0].scenario.expectation();
    let duration_s = m.duration_s();
    let fig = m.figures(&crate::workload::outbox::figures::OP_KINDS, duration_s);
    let cfg = parts[0]
        .scenario
        .part::<OutboxConfig>()
        .cloned()
        .ok_or_else(|| {
            MergeError::Input(format!(
                "{}: an outbox scenario without [outbox]",
                parts[0].dir.display()
            ))
        })?;
    let shards: Vec<OutboxSummary> = parts
        .iter()
        .filter_map(|p| p.summary.part::<OutboxFigures>())
        .map(|f| f.outbox)
        .collect();
    let sum = |f: fn(&OutboxSummary) -> u64| shards.iter().map(f).sum::<u64>();
    let acked = sum(|o| o.acked_deliveries);
    let unfinished = facts.attempts.iter().filter(|a| a.t1.is_none()).count();
    let outbox = OutboxSummary {
        messages: cfg.messages,
        deliveries: cfg.deliveries,
        max_attempts: cfg.max_attempts,
        // Every shard ran the scenario's H handlers.
        handlers: shards.iter().map(|o| o.handlers).sum(),
        attempts: sum(|o| o.attempts),
        acked_deliveries: acked,
        given_up_deliveries: sum(|o| o.given_up_deliveries),
        // Shard by shard, each in the order its queue gave them up.
        given_up: shards
            .iter()
            .flat_map(|o| o.given_up.iter().copied())
            .take(50)
            .collect(),
        cas_lost: sum(|o| o.cas_lost),
        crashed: sum(|o| o.crashed),
        errors: sum(|o| o.errors),
        redelivered_attempts: sum(|o| o.redelivered_attempts),
        overlapping_attempts: sum(|o| o.overlapping_attempts),
        lease_expired: sum(|o| o.lease_expired),
        late_acks: sum(|o| o.late_acks),
        acked_per_s: summary::rate(acked, duration_s),
        liveness,
    };
    let mut summary = Summary {
        schema_version: SUMMARY_SCHEMA_VERSION,
        scenario: s0.scenario.clone(),
        workload: s0.workload.clone(),
        variant: s0.variant.clone(),
        seed: s0.seed,
        target: s0.target.clone(),
        partial,
        duration_s: (duration_s * 1000.0).round() / 1000.0,
        ops: fig.ops,
        throughput_ops_per_s: fig.throughput,
        latency_us: fig.latency_ok,
        latency_us_not_ok: fig.latency_not_ok,
        latency_saturated: parts.iter().map(|p| p.summary.latency_saturated).sum(),
        open_model: None,
        invariants: summary::invariants(&results),
        faults_injected: m.sum_maps(&|s| Some(&s.faults_injected)),
        coverage,
        expect: expect.clone(),
        thresholds: Vec::new(),
        aborted_by: None,
        precision: Vec::new(),
        history: BTreeMap::from([
            (
                "file".to_string(),
                serde_json::json!(crate::history::file::FILE),
            ),
            ("bytes".to_string(), serde_json::json!(m.history_bytes)),
            ("ops".to_string(), serde_json::json!(facts.attempts.len())),
            ("unfinished_ops".to_string(), serde_json::json!(unfinished)),
        ]),
        provenance: m.provenance(),
        resolved_scenario: s0.resolved_scenario.clone(),
        exit: summary::Exit::new(ExitCode::Met, String::new()),
        shard: None,
        merged: Some(m.info()),
        // Shards load a service of their own (`target.url`): no WAL is known.
        wal: None,
        workload_figures: Default::default(),
    };
    summary.put(&OutboxFigures { outbox });
    // The thresholds judge the merged figures, as a run's judge its own.
    summary.thresholds = summary::judge_thresholds(&summary.to_json(), &thresholds);
    m.carry_abort(&mut summary);
    summary.exit = crate::audit_record::exit_for(
        partial,
        &results,
        &summary.coverage,
        &expect,
        &summary.thresholds,
    );
    m.save(
        &summary,
        &results,
        &crate::workload::outbox::human::human(&summary),
    )?;
    Ok(summary)
}
