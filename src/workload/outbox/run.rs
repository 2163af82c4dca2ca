//! The outbox workload behind the [`Workload`] trait
//! (`workload = "outbox"`): its scenario and statement file checked (the
//! faults' steps against `handle`), its load phase on either target (the
//! queue and the handlers of [`crate::workload::outbox::runtime`] in process, or
//! [`crate::workload::outbox::http`] over HTTP), the canonical tables read as one
//! snapshot, the outbox checkers, and its figures (`summary.json`'s
//! `outbox`: queue, attempts, leases, liveness). A shard of a sharded run
//! ([`crate::workload::outbox::shard`]) sends only its own messages, and `merge`
//! judges the shards together ([`crate::workload::outbox::merge`]); `audit` re-judges
//! a folder with [`crate::workload::outbox::audit`].
//!
//! App layer (the outbox workload's implementation): imports the outbox's
//! runtimes, checkers and the report's summary types.

use super::figures::{OutboxFigures, OutboxSummary};
use super::prepare::{describe, prepare, OutboxPrepared};
use crate::history::{Entry, Header, OpKind};
use crate::live::Live;
use crate::prepare::{RunError, RunOptions};
use crate::scenario::{Scenario, TargetKind};
use crate::statements::StatementFile;
use crate::summary::{self, Summary};
use crate::target::sqlite::SqliteTarget;
use crate::target::{Setup, Target};
use crate::verdict::CheckResult;
use crate::workload::outbox::checker::{self as checks, OutboxFacts};
use crate::workload::outbox::config::OutboxConfig;
use crate::workload::outbox::header::{self, OutboxHeader};
use crate::workload::outbox::runtime::{run_outbox, OutboxOutcome, OutboxPlan};
use crate::workload::parts::{CompareRow, HumanParts};
use crate::workload::traits::{LoadCx, Loaded, Ran, SummaryCx, Workload, WorkloadRun};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// Refuses a `target.path` database that holds rows (exit 2), or that
/// cannot be read (exit 3): an outbox run's versions and message ids are
/// its own.
fn refuse_used_database(s: &Scenario) -> Result<(), RunError> {
    let Some(path) = s.target.path.as_ref().filter(|p| p.exists()) else {
        return Ok(());
    };
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| RunError::Target(format!("{}: {e}", path.display())))?;
    if crate::prepare::holds_rows(&conn)
        .map_err(|e| RunError::Target(format!("{}: {e}", path.display())))?
    {
        return Err(RunError::Input(format!(
            "the database {} already holds rows: an outbox run needs a fresh \
             database (its versions and message ids are the run's own)",
            path.display()
        )));
    }
    Ok(())
}

/// The in-process SQLite phase: the database, the handlers' connections,
/// the load (with the target's lock nemesis and WAL keeper), the snapshot
/// (and the final copy).
fn sqlite_phase(
    p: &OutboxPrepared,
    x: &Setup<'_>,
    live: &Arc<Live>,
) -> Result<Ran<OutboxOutcome, checks::OutboxTables>, RunError> {
    let cfg = x
        .scenario
        .part::<OutboxConfig>()
        .expect("an outbox scenario has [outbox]");
    let mut target =
        SqliteTarget::prepare(x, &p.variant.schema, &p.variant.file, cfg.handlers as usize)?;
    let plan = OutboxPlan {
        scenario: x.scenario,
        variant: &p.variant,
        sink: x.sink.clone(),
        clock: x.clock,
        control: &x.control,
        nemesis: x.nemesis.clone(),
        live: live.clone(),
    };
    let load = target.run(|conns| run_outbox(&plan, conns))?;
    let tables = target.final_read(|conn| {
        checks::tables::read(conn, &p.variant, &|| x.clock.now()).map_err(|e| e.to_string())
    })?;
    Ok(Ran::new(load, tables, target.finish()))
}

/// The outbox workload (exactly_once_none_atomic.tla).
pub struct Outbox;

impl Workload for Outbox {
    fn name(&self) -> &'static str {
        "outbox"
    }

    fn replay(&self, opts: &crate::replay::ReplayOptions) -> crate::exit_code::ExitCode {
        super::replay::main(opts)
    }

    fn invariants(&self) -> &'static [&'static str] {
        &crate::workload::outbox::config::OUTBOX_INVARIANTS
    }

    fn audit(
        &self,
        f: &crate::audit_record::AuditFolder<'_>,
    ) -> Result<crate::audit_record::Rejudged, crate::audit_error::AuditError> {
        crate::workload::outbox::audit::judge(f)
    }

    fn merge(&self) -> Option<&'static dyn crate::merge_parts::ShardMerge> {
        Some(&crate::workload::outbox::merge::OutboxMerge)
    }

    fn prepare(
        &self,
        path: Option<&Path>,
        overrides: &[String],
        offline: bool,
    ) -> Result<Box<dyn WorkloadRun>, RunError> {
        let p = prepare(path, overrides)?;
        if !offline {
            crate::prepare::secrets_present(path, &p.scenario, &p.source.text)?;
        }
        Ok(Box::new(OutboxRun {
            p,
            outcome: None,
            tables: None,
            facts: None,
            liveness: None,
        }))
    }

    fn explore(&self, opts: &crate::explore::ExploreOptions) -> crate::exit_code::ExitCode {
        super::explore_main::main(opts)
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
        Some(crate::workload::outbox::probe::check_target(opts, out))
    }
}

/// One outbox scenario, from its check to its figures.
struct OutboxRun {
    p: OutboxPrepared,
    /// The load's figures, its latency taken by the pipeline.
    outcome: Option<OutboxOutcome>,
    /// The final tables, when they could be read.
    tables: Option<checks::OutboxTables>,
    /// The attempts the audit read from the history.
    facts: Option<OutboxFacts>,
    /// The liveness report (deliveries acked, given up, left).
    liveness: Option<checks::liveness::Liveness>,
}

impl WorkloadRun for OutboxRun {
    fn scenario(&self) -> &Scenario {
        &self.p.scenario
    }

    fn file(&self) -> &StatementFile {
        &self.p.variant.file
    }

    fn describe(&self) -> String {
        describe(&self.p)
    }

    fn take_shard(&mut self, opts: &RunOptions) -> Result<(), RunError> {
        crate::workload::outbox::shard::check(&self.p.scenario, opts.shard, opts.run_id.as_deref())
    }

    fn claim_target(&mut self, _started: SystemTime) -> Result<(), RunError> {
        refuse_used_database(&self.p.scenario)
    }

    fn header(&self, h: &mut Header) {
        let cfg = self.config();
        header::put(
            h,
            OutboxHeader {
                messages: cfg.messages,
                deliveries: cfg.deliveries,
                max_attempts: cfg.max_attempts,
            },
        );
    }

    fn workers(&self) -> usize {
        self.config().handlers as usize
    }

    fn op_kinds(&self) -> &'static [OpKind] {
        &crate::workload::outbox::figures::OP_KINDS
    }

    fn load(&mut self, cx: &LoadCx<'_>) -> Result<Loaded, RunError> {
        let x = cx.setup(&self.p.scenario);
        let phase = if self.p.scenario.target.kind == TargetKind::Http {
            crate::workload::outbox::http::phase(&x, &self.p.variant, &cx.live, cx.opts.shard)
        } else {
            sqlite_phase(&self.p, &x, &cx.live)
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
        let facts = OutboxFacts::read(crate::history::reader::read(history)?.inspect(|e| {
            if let Ok(e) = e {
                feed(e);
            }
        }))?;
        let (results, liveness) = match &self.tables {
            Some(t) => checks::check_all(&facts, t),
            // No final tables (the target failed): nothing is judged.
            None => (
                checks::all_unknown(target_error.unwrap_or("the final tables could not be read")),
                checks::liveness::report(&facts, &checks::OutboxTables::default()),
            ),
        };
        self.facts = Some(facts);
        self.liveness = Some(liveness);
        Ok(results)
    }

    fn fill_summary(&mut self, s: &mut Summary, cx: &SummaryCx<'_>) {
        let liveness = self.liveness.take().expect("filled after the audit");
        let cfg = self.config();
        let load = self.outcome.as_ref().expect("judged after the load");
        let facts = self.facts.as_ref().expect("filled after the audit");
        let unfinished = facts.attempts.iter().filter(|a| a.t1.is_none()).count();
        s.coverage = super::coverage::of(&liveness);
        s.history.extend([
            ("ops".to_string(), serde_json::json!(facts.attempts.len())),
            ("unfinished_ops".to_string(), serde_json::json!(unfinished)),
        ]);
        s.put(&OutboxFigures {
            outbox: OutboxSummary {
                messages: cfg.messages,
                deliveries: cfg.deliveries,
                handlers: cfg.handlers,
                max_attempts: cfg.max_attempts,
                attempts: load.ops,
                acked_deliveries: load.acked,
                given_up_deliveries: load.given_up.len() as u64,
                given_up: load.given_up.iter().take(50).copied().collect(),
                cas_lost: load.cas_lost,
                crashed: load.crashed,
                errors: load.errors,
                redelivered_attempts: load.redelivered,
                overlapping_attempts: load.overlapping_attempts,
                lease_expired: load.lease_expired,
                late_acks: load.late_acks,
                acked_per_s: summary::rate(load.acked, cx.duration_s),
                liveness,
            },
        });
    }

    fn stranded(&self, _s: &Summary) -> Option<u64> {
        Some(0)
    }
}

impl OutboxRun {
    /// `[outbox]`, present (with its defaults) in every outbox scenario.
    fn config(&self) -> &OutboxConfig {
        self.p
            .scenario
            .part::<OutboxConfig>()
            .expect("an outbox scenario has [outbox]")
    }
}
