//! The groups scenario and its statement file, loaded and checked before
//! anything runs ([`prepare`]: the faults' steps against the ops, a
//! mapping's secrets, the journal a transaction block needs), and a
//! shard's part of a groups scenario ([`apply_shard`]). `run`, `check`,
//! `compare`, `explore`, `audit` and `merge` of a groups scenario start
//! here.
//!
//! App layer: imports the config, the statement files and the run's
//! errors; never a command.

use super::config::{GroupsScenario, LoadModel};
use super::statements::{load_groups, GroupsVariant};
use crate::prepare::{shard_flags, RunError};
use crate::scenario::{self, Scenario, TargetKind};
use crate::shard::{namespace_of, Shard};
use std::path::Path;

/// A scenario and its checked variant, before anything runs.
pub struct Prepared {
    /// The resolved scenario (overrides and defaults applied).
    pub scenario: Scenario,
    /// Where the scenario came from, and its text.
    pub source: scenario::Source,
    /// The statement file, checked against the groups workload.
    pub variant: GroupsVariant,
}

/// Loads and checks a scenario and its statement file (`specstorm check`
/// and the first step of a run). Errors: file, line and reason (exit 2).
pub fn prepare(path: Option<&Path>, overrides: &[String]) -> Result<Prepared, RunError> {
    let p = prepare_offline(path, overrides)?;
    let file = || {
        path.map_or("<embedded default>".to_string(), |p| {
            p.display().to_string()
        })
    };
    // Before a run, not in the audit of a saved one (which ran nothing).
    if let Some(reason) = blocks_without_journal(&p.scenario, &p.variant) {
        let line = scenario::key_line(&p.source.text, &["target", "journal_mode"])
            .map_or(String::new(), |l| format!(":{l}"));
        return Err(RunError::Input(format!("{}{line}: {reason}", file())));
    }
    crate::prepare::secrets_present(path, &p.scenario, &p.source.text)?;
    Ok(p)
}

/// [`prepare`] without reading a mapping's secrets from the environment:
/// for what sends no request (`audit` of a saved run folder).
pub fn prepare_offline(path: Option<&Path>, overrides: &[String]) -> Result<Prepared, RunError> {
    let (scenario, source) =
        scenario::load(path, overrides).map_err(|e| RunError::Input(e.to_string()))?;
    if scenario.workload.name() == "outbox" {
        // The registry hands outbox scenarios to the outbox workload first.
        return Err(RunError::Input(
            "workload = \"outbox\" is prepared by its own runner (`run`, `check`, `compare`, \
             `audit` and `merge` take it)"
                .into(),
        ));
    }
    let dir = path.map(|p| p.parent().unwrap_or(Path::new(".")).to_path_buf());
    let variant = load_groups(&scenario.variant, dir.as_deref())
        .map_err(|e| RunError::Input(e.to_string()))?;
    // Step names in faults can only be checked against the statement file.
    if let Err((i, reason)) =
        crate::nemesis::check_steps(&scenario.faults, &variant.ingest, &variant.resolve)
    {
        let file = path.map_or("<embedded default>".to_string(), |p| {
            p.display().to_string()
        });
        let line = scenario::fault_line(&source.text, i, Some("step"))
            .map_or(String::new(), |l| format!(":{l}"));
        return Err(RunError::Input(format!("{file}{line}: {reason}")));
    }
    Ok(Prepared {
        scenario,
        source,
        variant,
    })
}

/// Why `variant` cannot run on the target of `s`: it has a transaction
/// block, the bench runs it (in process, or on the reference server it
/// spawns: a service at `target.url` runs its own statements on its own
/// database), and `journal_mode = off` has no rollback journal, so a
/// rolled-back block could leave half its writes. Refused before the run,
/// naming the block's `begin` (the step driver refuses the block at run
/// time too, for `specstorm serve --journal-mode off`).
pub fn blocks_without_journal(s: &Scenario, variant: &GroupsVariant) -> Option<String> {
    let runs_blocks = s.target.kind == TargetKind::Sqlite || s.target.spawn;
    if !runs_blocks || !s.target.journal_mode.eq_ignore_ascii_case("off") {
        return None;
    }
    let (program, txn) = [&variant.ingest, &variant.resolve]
        .into_iter()
        .find_map(|p| p.txns.first().map(|t| (p, t)))?;
    let step = &program.steps[txn.first];
    Some(format!(
        "`target.journal_mode = \"off\"` has no rollback journal, and transaction blocks \
         need one (a rolled-back block could leave half its writes): {}:{} opens one \
         (`-- begin: {}` at step {}.{}); use wal (the default), delete, truncate, persist \
         or memory",
        variant.file.path.display(),
        step.line,
        txn.mode.name(),
        program.op,
        step.name
    ))
}

/// Checks `--shard` and `--run-id` and turns the scenario into this
/// shard's part of it: `stop.events` becomes its share (the shares sum to
/// the total) and, in the open model, `load.rate`, the stages' targets and
/// `load.resolve_rate` are divided by n; in the
/// closed model each runner keeps the scenario's ingesters and resolvers
/// (n runners, n times the workers). Returns the shards' shared namespace,
/// or None when the run is not sharded. Errors (exit 2): those of
/// [`shard_flags`], or fewer events than shards.
///
/// A namespace that already holds rows is not refused: a shard cannot tell
/// a sibling's rows (which may already be there) from an earlier run's.
/// Use a fresh run id per run.
pub fn apply_shard(
    s: &mut Scenario,
    shard: Option<Shard>,
    run_id: Option<&str>,
) -> Result<Option<String>, RunError> {
    let Some((shard, id)) = shard_flags(s, shard, run_id)? else {
        return Ok(None);
    };
    if s.stop.events > 0 {
        let share = shard.share(s.stop.events);
        if share == 0 {
            return Err(RunError::Input(format!(
                "stop.events = {} cannot be split into {} shards (each needs at least one)",
                s.stop.events, shard.count
            )));
        }
        s.stop.events = share;
    }
    if s.load().model == LoadModel::Open {
        let n = shard.count as f64;
        let load = s.load_mut();
        load.rate /= n;
        for stage in &mut load.stages {
            stage.target /= n;
        }
        if let Some(r) = &mut load.resolve_rate {
            *r /= n;
        }
    }
    Ok(Some(namespace_of(id)))
}
