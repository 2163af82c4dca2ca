//! The `Workload` trait: what a workload tells the one pipeline
//! ([`crate::pipeline`]) so that every workload is run, judged and saved
//! by the same code. Jepsen's decomposition: a workload is its statement
//! file checked against its ops ([`Workload::prepare`]), a load phase that
//! drives its ops on the target and reads the final tables back
//! ([`WorkloadRun::load`]), the facts its checkers read from the history
//! and their verdicts ([`WorkloadRun::judge`]), its own part of the
//! summary ([`WorkloadRun::fill_summary`]), and its lines in the human
//! summary and `compare` ([`Workload::human`], [`Workload::compare_rows`]).
//! Everything else (the run
//! folder, the history's writer and frame, the nemesis's recorder, the
//! dashboard, the latency log, the common figures, thresholds, the exit
//! decision, the saved results) belongs to the pipeline.
//!
//! The trait is object-safe: the registry ([`super::registry`]) holds
//! `&'static dyn Workload`, and each run is one `Box<dyn WorkloadRun>`;
//! the hot path (each workload's own scheduler) stays monomorphic inside
//! `load`.
//!
//! It names what `audit` and `merge` share with every workload
//! ([`crate::audit_record`], [`crate::audit_error`],
//! [`crate::merge_parts`]), which sit in the app layer, so it sits there
//! too.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::clock::Clock;
use crate::control::Control;
use crate::history::writer::HistorySink;
use crate::history::{Entry, Header, OpKind};
use crate::live::Live;
use crate::nemesis::Recorder;
use crate::run_options::{RunError, RunOptions};
use crate::scenario::Scenario;
use crate::statements::StatementFile;
use crate::stats::Stats;
use crate::summary::Summary;
use crate::verdict::CheckResult;
use crate::workload::parts::{CompareRow, HumanParts};
pub use crate::workload::ran::{LoadFigures, Loaded, Ran, ReadSpan};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// One workload: a name the scenario's `workload` key selects, and how a
/// scenario of it is prepared.
pub trait Workload: Send + Sync {
    /// The name in `workload = "..."`, the history's header and the
    /// summary.
    fn name(&self) -> &'static str;

    /// Its invariants, by their spec names, in report order: the names an
    /// `expect` may use, one checker each.
    fn invariants(&self) -> &'static [&'static str];

    /// `specstorm audit`: judges the run folder `f` of this workload again,
    /// offline, from its saved history, scenario and final tables; the
    /// comparison with the run's records and the exit are
    /// [`crate::audit`]'s. By default a workload has no audit: refused
    /// (exit 2), its runs are judged by their own run only.
    fn audit(
        &self,
        f: &crate::audit_record::AuditFolder<'_>,
    ) -> Result<crate::audit_record::Rejudged, crate::audit_error::AuditError> {
        Err(crate::audit_record::refused(f.run_dir, self.name()))
    }

    /// `specstorm merge`: this workload's part of merging the shards of
    /// one run. By default none: its runs have no shards to merge.
    fn merge(&self) -> Option<&'static dyn crate::merge_parts::ShardMerge> {
        None
    }

    /// Loads the scenario at `path` (with `overrides`) and checks its
    /// statement file against this workload, and every key that depends on
    /// the file (fault steps, an `[api]` mapping's secrets unless
    /// `offline`). Nothing runs. Errors: file, line and reason (exit 2).
    fn prepare(
        &self,
        path: Option<&Path>,
        overrides: &[String],
        offline: bool,
    ) -> Result<Box<dyn WorkloadRun>, RunError>;

    /// `specstorm explore`: every interleaving of the scenario's small
    /// world, as TLC does for the spec; returns the exit code.
    fn explore(&self, opts: &crate::explore::options::ExploreOptions)
        -> crate::exit_code::ExitCode;

    /// `specstorm validate`: the run folder checked against the spec by a
    /// model checker; by default refused (exit 2), since a workload needs a
    /// mapping of its steps onto its spec's actions to have one.
    fn validate(&self, opts: &crate::validate::ValidateOptions) -> crate::exit_code::ExitCode {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "specstorm: validate: {}: the {} workload has no trace validation (only groups runs \
             of the in-process SQLite target have one)",
            opts.run_dir.display(),
            self.name()
        );
        crate::exit_code::ExitCode::Usage
    }

    /// `specstorm replay`: the steps behind one finding of a run folder
    /// re-executed, shrunk and written as a script; by default refused
    /// (exit 2): a workload needs its ops' steps recorded with their
    /// parameters, and checkers that judge a replayed history, to have one.
    fn replay(&self, opts: &crate::replay::ReplayOptions) -> crate::exit_code::ExitCode {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "specstorm: replay: {}: the {} workload has no replay (only groups and outbox runs \
             of the in-process SQLite target have one)",
            opts.run_dir.display(),
            self.name()
        );
        crate::exit_code::ExitCode::Usage
    }

    /// Its lines in the human summary of a run of it (`s`: its summary,
    /// as written or read back from `summary.json`); by default none but
    /// the common ones.
    fn human(&self, _s: &Summary) -> HumanParts {
        HumanParts::default()
    }

    /// Its own figures in `compare.json`'s entry of a variant (beside the
    /// common ones), from the variant's summary `s`.
    fn compare_figures(&self, _s: &Summary) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }

    /// Its figure rows in `compare`'s table, between the invariants and
    /// the faults: by default the duration and the throughput in all.
    fn compare_rows(&self) -> Vec<CompareRow> {
        CompareRow::common()
    }

    /// `specstorm check-target URL --workload NAME`: probes a running
    /// service's endpoints of this workload, writing each check's line to
    /// `out` as it is judged; None when the workload has no probe (the
    /// command then says so, exit 2).
    fn check_target(
        &self,
        _opts: &crate::probe_report::ProbeOptions,
        _out: &mut dyn std::io::Write,
    ) -> Option<Result<crate::probe_report::Report, crate::probe_report::ProbeError>> {
        None
    }
}

/// One prepared scenario of a workload: what `check` prints, and, for a
/// run, the load, the audit and the workload's figures, in that order.
/// The run keeps what its load produced (outcome, final tables) and what
/// its audit read (facts) between the calls.
pub trait WorkloadRun {
    /// The resolved scenario.
    fn scenario(&self) -> &Scenario;

    /// The checked statement file (its text and hash go into the run
    /// folder and the provenance).
    fn file(&self) -> &StatementFile;

    /// `specstorm check`'s text after the first line: the resolved
    /// scenario, what the statement file holds, what the run expects.
    fn describe(&self) -> String;

    /// `--shard i/n --run-id ID`: takes this runner's part of the
    /// scenario, or refuses (exit 2) before the run folder is claimed.
    fn take_shard(&mut self, opts: &RunOptions) -> Result<(), RunError>;

    /// After the run folder is claimed, before anything is written: refuses
    /// a target that cannot be used (an `Input` error releases the folder:
    /// nothing ran), and settles what the run needs from it (groups: the
    /// namespace of its ids).
    fn claim_target(&mut self, started: SystemTime) -> Result<(), RunError>;

    /// Fills the workload's fields of the history's header (the pipeline
    /// has filled the common ones).
    fn header(&self, h: &mut Header);

    /// The load's workers (the dashboard's slots).
    fn workers(&self) -> usize;

    /// `stop.events`, when the workload has it (0 otherwise).
    fn stop_events(&self) -> u64 {
        0
    }

    /// The open model's ingest target over the load's time (the
    /// dashboard shows it beside the achieved rate). None: no target.
    fn ingest_target(&self) -> Option<crate::scenario::stages::Curve> {
        None
    }

    /// The workload's op kinds, in report order: the figures, the latency
    /// log and the dashboard list these only.
    fn op_kinds(&self) -> &'static [OpKind];

    /// Runs the load on the target, drains it and reads the final tables
    /// as one snapshot. A target that fails after the load began is
    /// `Loaded::target_error`, not an `Err` (the history still gets its
    /// footer and the run is judged as far as it can be).
    fn load(&mut self, cx: &LoadCx<'_>) -> Result<Loaded, RunError>;

    /// Reads the history back into the workload's facts (handing every
    /// entry to `feed`: the pipeline's latency log) and judges them against
    /// the final tables. Without final tables (`target_error`) every
    /// invariant is `unknown`.
    fn judge(
        &mut self,
        history: &Path,
        feed: &mut dyn FnMut(&Entry),
        target_error: Option<&str>,
    ) -> Result<Vec<CheckResult>, RunError>;

    /// Writes the workload's part of the summary (coverage, its figures,
    /// its history counts) into `s`, whose common part is filled.
    fn fill_summary(&mut self, s: &mut Summary, cx: &SummaryCx<'_>);

    /// The stranded count the dashboard shows with the verdicts.
    fn stranded(&self, s: &Summary) -> Option<u64>;
}

/// What the pipeline hands a workload's load phase.
pub struct LoadCx<'a> {
    /// What `specstorm run` was asked.
    pub opts: &'a RunOptions,
    /// The run folder.
    pub run_dir: &'a Path,
    /// The folder the scenario's relative paths start from.
    pub base: &'a Path,
    /// The history.
    pub sink: HistorySink,
    /// The run's clock.
    pub clock: Clock,
    /// Stop, abort and the target's failure.
    pub control: &'a Arc<Control>,
    /// The fault plan and its recorder.
    pub nemesis: Recorder,
    /// The live figures the watcher reads.
    pub live: Arc<Live>,
}

/// What a workload may read while it fills its part of the summary.
pub struct SummaryCx<'a> {
    /// The load's latency and counts (the ones [`Loaded::stats`] held).
    pub stats: &'a Stats,
    /// The load's duration in seconds (drain included).
    pub duration_s: f64,
    /// The user stopped the run.
    pub interrupted: bool,
    /// The history's size in bytes.
    pub history_bytes: u64,
}

impl LoadCx<'_> {
    /// What a target is made with, for `scenario`'s run.
    pub fn setup<'a>(&'a self, scenario: &'a Scenario) -> crate::target::Setup<'a> {
        crate::target::Setup {
            scenario,
            run_dir: self.run_dir,
            base: self.base,
            sink: self.sink.clone(),
            clock: self.clock,
            control: self.control.clone(),
            nemesis: self.nemesis.clone(),
        }
    }
}
