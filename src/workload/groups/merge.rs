//! `specstorm merge` of the shards of a groups run: the groups' part of
//! [`crate::merge`] ([`GroupsMerge`]), which has read the shards, checked
//! that they are the n shards of one run of one workload, and written the
//! merged history, latency log, final tables (`GET /v1/export`), scenario
//! and statement file. Here: the shard's saved scenario read as a groups
//! one, the keys shards split (`stop.events`, `load.rate`: each shard
//! runs its share), and the one audit of the merged history against the
//! final tables with the groups checkers, into the merged folder's checks
//! and summary.
//!
//! Why the merged audit of groups is sound (it must never report a
//! violation on a correct system, nor `holds` on a broken one):
//! - Event ids of different shards are disjoint: by construction (see
//!   [`crate::shard::Shard`]), or, for plain ids (`keys.event_id`), but
//!   for a chance of about 2^-82 per pair (a hash keyed by the shard: see
//!   `generator::EventIds`), so every attempt of one event id lies in
//!   one shard's history: Done / Maybe per event, and so CountExact and
//!   TypeOK, are what they are in that shard, whatever the merged order.
//! - The checkers compare instants of different shards only through "this
//!   ended before that began" (NoMissedRegression's candidates and the
//!   steps between a resolve and a probe), and [`crate::merge`] widens
//!   every op's window by half the clock skew on each side, so that such
//!   an order in the merged history held in reality (see there); widening
//!   can only add candidates and overlaps, which turn violations into
//!   unknowns or holds, never the reverse.
//! - The final tables are read after every shard's load ended, and their
//!   read instant is after every entry of the merged history.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use super::config::{GroupsScenario, LoadModel};
use super::export::read_export;
use crate::exit_code::ExitCode;
use crate::merge_parts::{MergeError, Merged, Part, ShardMerge};
use crate::prepare::RunError;
use crate::report::summary::{self, Summary, SUMMARY_SCHEMA_VERSION};
use crate::scenario::Scenario;
use crate::target::http::client::HttpClient;
use crate::workload::groups::audit::read_history;
use crate::workload::groups::checker::sharded::note_skew;
use crate::workload::groups::checker::{check_all, Tables};
use crate::workload::groups::figures::GroupsFigures;
use std::collections::BTreeMap;
use std::path::Path;

/// The groups workload's part of `specstorm merge`.
pub struct GroupsMerge;

impl ShardMerge for GroupsMerge {
    fn read_scenario(&self, path: &Path) -> Result<Scenario, RunError> {
        super::prepare::prepare(Some(path), &[]).map(|p| p.scenario)
    }

    fn unshare(&self, s: &mut Scenario) {
        s.stop.events = 0;
        let load = s.load_mut();
        load.rate = 0.0;
        if load.model == LoadModel::Open {
            for stage in &mut load.stages {
                stage.target = 0.0;
            }
            load.resolve_rate = load.resolve_rate.map(|_| 0.0);
        }
    }

    fn whole(&self, parts: &[Part]) -> Scenario {
        let mut scenario = parts[0].scenario.clone();
        scenario.stop.events = parts.iter().map(|p| p.scenario.stop.events).sum();
        scenario.load_mut().rate = parts.iter().map(|p| p.scenario.load().rate).sum();
        let open = scenario.load().model == LoadModel::Open;
        let load = scenario.load_mut();
        if open {
            for (i, stage) in load.stages.iter_mut().enumerate() {
                stage.target = parts
                    .iter()
                    .map(|p| p.scenario.load().stages[i].target)
                    .sum();
            }
            if load.resolve_rate.is_some() {
                load.resolve_rate = Some(
                    parts
                        .iter()
                        .filter_map(|p| p.scenario.load().resolve_rate)
                        .sum(),
                );
            }
        }
        scenario
    }

    fn export_endpoint(&self) -> &'static str {
        "/v1/export"
    }

    fn export(
        &self,
        client: &HttpClient,
        rt: &tokio::runtime::Runtime,
        to: &Path,
    ) -> Result<(), String> {
        rt.block_on(client.export_to(&client.mapping().export, to))
            .map(|_| ())
    }

    fn judge(&self, m: &Merged<'_>) -> Result<Summary, MergeError> {
        // One audit of the merged history against the final tables, through
        // the very functions `specstorm audit` uses.
        let h = read_history(m.history).map_err(|e| MergeError::Target(e.to_string()))?;
        let mut tables = Tables::default();
        read_export(
            &m.opts.out.join("export.json"),
            &m.parts[0].header.namespace,
            &mut tables,
        )
        .map_err(MergeError::Target)?;
        [tables.read_start, tables.read_end] = h.tables_read();
        let (mut results, stranded) = check_all(&h.facts, &tables);
        let evidence = crate::workload::groups::checker::evidence::judge(
            &h.facts,
            &tables,
            &m.parts[0].scenario.min_evidence(),
            &mut results,
        );
        note_skew(&mut results, m.header);
        let coverage = crate::workload::groups::coverage::of(&h.facts, &tables);
        let partial = m.parts.iter().any(|p| p.summary.partial);
        let (expect, thresholds) = m.parts[0].scenario.expectation();

        let s0 = &m.parts[0].summary;
        let duration_s = m.duration_s();
        let fig = m.figures(&crate::workload::groups::figures::OP_KINDS, duration_s);
        let sum_maps = |f: &dyn Fn(&Summary) -> Option<&BTreeMap<String, u64>>| m.sum_maps(f);
        let accepted = h.facts.acked_events();
        let mut resolved_scenario = s0.resolved_scenario.clone();
        resolved_scenario["stop"]["events"] = serde_json::json!(m.scenario.stop.events);
        resolved_scenario["load"]["rate"] = serde_json::json!(m.scenario.load().rate);
        let load = m.scenario.load();
        if !load.stages.is_empty() {
            resolved_scenario["load"]["stages"] =
                serde_json::to_value(&load.stages).unwrap_or_default();
        }
        if let Some(r) = load.resolve_rate {
            resolved_scenario["load"]["resolve_rate"] = serde_json::json!(r);
        }
        let shard_figures: Vec<GroupsFigures> = m
            .parts
            .iter()
            .map(|p| p.summary.part().unwrap_or_default())
            .collect();
        let mut resolves = BTreeMap::<String, u64>::new();
        for (k, v) in shard_figures.iter().flat_map(|f| &f.resolves) {
            *resolves.entry(k.clone()).or_default() += v;
        }
        let mut summary = Summary {
            // Shards load a service of their own (`target.url`): no WAL is known.
            wal: None,
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
            latency_saturated: m.parts.iter().map(|p| p.summary.latency_saturated).sum(),
            open_model: m
                .parts
                .iter()
                .any(|p| p.summary.open_model.is_some())
                .then(|| sum_maps(&|s| s.open_model.as_ref())),
            invariants: summary::invariants(&results),
            faults_injected: sum_maps(&|s| Some(&s.faults_injected)),
            coverage,
            history: BTreeMap::from([
                (
                    "file".to_string(),
                    serde_json::json!(crate::history::file::FILE),
                ),
                ("bytes".to_string(), serde_json::json!(m.history_bytes)),
                ("ops".to_string(), serde_json::json!(h.facts.ops)),
                (
                    "unfinished_ops".to_string(),
                    serde_json::json!(h.facts.unfinished),
                ),
                (
                    "event_rows".to_string(),
                    serde_json::json!(tables.event_rows),
                ),
                (
                    "group_rows".to_string(),
                    serde_json::json!(tables.groups.len()),
                ),
            ]),
            provenance: m.provenance(),
            resolved_scenario,
            expect: expect.clone(),
            thresholds: Vec::new(),
            aborted_by: None,
            precision: Vec::new(),
            exit: summary::Exit::new(ExitCode::Met, String::new()),
            shard: None,
            merged: Some(m.info()),
            workload_figures: Default::default(),
        };
        summary.put(&GroupsFigures {
            events: shard_figures.iter().map(|f| f.events).sum(),
            events_per_s: summary::rate(accepted, duration_s),
            duplicates: shard_figures.iter().map(|f| f.duplicates).sum(),
            resolves,
            stranded_events: stranded,
            evidence,
        });
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
            &crate::workload::groups::human::human(&summary),
        )?;
        Ok(summary)
    }
}
