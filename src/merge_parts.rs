//! What `specstorm merge` reads and hands on, for every workload: its
//! options ([`MergeOptions`]) and errors ([`MergeError`]), one shard's
//! folder as read ([`Part`]), and a merged run once its files are written
//! ([`Merged`]), with the parts of the summary every workload's merge
//! shares (duration, figures from the merged latency log, provenance, the
//! `merged` record) and the writing of its results; and what a workload
//! brings to a merge ([`ShardMerge`]). [`crate::merge`] reads and joins the
//! shards; each workload's judgement is its own (`merge.rs` in its
//! folder): all import this module, which imports none of them.
//!
//! App layer: imports the history, the reports, the config, the shard
//! model and the whole-file writer.

use crate::exit_code::ExitCode;
use crate::figures::Latency;
use crate::history::{CompletionType, Footer, Header, MergedHeader, OpKind, ShardHeader};
use crate::report::hlog::Log;
use crate::scenario::Scenario;
use crate::shard::{MergeInfo, ShardRef};
use crate::summary::{self, Provenance, Summary};
use crate::whole::WriteError;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What `specstorm merge` was asked.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    /// The shards' run folders, in any order.
    pub runs: Vec<PathBuf>,
    /// The merged run folder (must not exist, or be empty).
    pub out: PathBuf,
    /// Bound on how far two runners' clocks may disagree.
    pub clock_skew: Duration,
}

/// Why a merge was refused or failed; each maps to a cli.md exit code.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Not shards of one run, a folder that is no shard, a missing file,
    /// a non-empty `--out`: exit 2.
    #[error("{0}")]
    Input(String),
    /// The final tables cannot be had after every shard finished, or a
    /// file cannot be read or written: exit 3.
    #[error("{0}")]
    Target(String),
}

impl MergeError {
    /// The exit code (cli.md): 2 for refused inputs, 3 otherwise.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            MergeError::Input(_) => ExitCode::Usage,
            MergeError::Target(_) => ExitCode::Target,
        }
    }
}

impl From<WriteError> for MergeError {
    fn from(e: WriteError) -> Self {
        MergeError::Target(e.to_string())
    }
}

impl From<anyhow::Error> for MergeError {
    fn from(e: anyhow::Error) -> Self {
        // A file over its size cap is a refused input, not a broken one.
        if crate::input::is_too_large(&e) {
            return MergeError::Input(format!("{e:#}"));
        }
        MergeError::Target(format!("{e:#}"))
    }
}

impl From<std::io::Error> for MergeError {
    fn from(e: std::io::Error) -> Self {
        MergeError::Target(e.to_string())
    }
}

/// A workload's part of `specstorm merge`
/// ([`crate::workload::traits::Workload::merge`]): how a shard's saved
/// scenario is read, which shards cannot be judged together, which keys
/// shards split, where the target exports the final tables, and the one
/// judgement of the merged run. [`crate::merge`] does the rest, for every
/// workload.
pub trait ShardMerge: Sync {
    /// A shard's saved `scenario.toml` (with its `variant.sql`), read and
    /// checked as a scenario of this workload. Errors: file, line and
    /// reason.
    fn read_scenario(&self, path: &Path) -> Result<Scenario, crate::prepare::RunError>;

    /// Refuses (exit 2) shards that cannot be judged together, before
    /// anything is written; by default none.
    fn check_parts(&self, _parts: &[Part]) -> Result<(), MergeError> {
        Ok(())
    }

    /// Sets the keys of `s` that shards split (each runs its share) to one
    /// value, so that two shards' scenarios compare equal on the rest; by
    /// default shards split none.
    fn unshare(&self, _s: &mut Scenario) {}

    /// The merged run's scenario: by default the first shard's (every
    /// shard ran it whole).
    fn whole(&self, parts: &[Part]) -> Scenario {
        parts[0].scenario.clone()
    }

    /// The target's endpoint of the final tables' export.
    fn export_endpoint(&self) -> &'static str;

    /// Reads the final tables from the target through `client` (on `rt`)
    /// into `to`. Errors: in words.
    fn export(
        &self,
        client: &crate::target::http::client::HttpClient,
        rt: &tokio::runtime::Runtime,
        to: &Path,
    ) -> Result<(), String>;

    /// Judges the merged run `m` (its files are in `m.opts.out`) with this
    /// workload's checkers, writes `checks.json`, `junit.xml` and
    /// `summary.json` ([`Merged::save`]), and returns the summary (its
    /// `exit.code` is the process's). Errors: the merged history or the
    /// final tables cannot be read, a file cannot be written (exit 3).
    fn judge(&self, m: &Merged<'_>) -> Result<Summary, MergeError>;
}

/// One shard's folder, read.
pub struct Part {
    /// Its run folder.
    pub dir: PathBuf,
    /// Its history's header.
    pub header: Header,
    /// The header's shard record.
    pub shard: ShardHeader,
    /// Its summary.
    pub summary: Summary,
    /// Its saved scenario, resolved.
    pub scenario: Scenario,
    /// Largest op id and worker number in its history.
    pub max_op: u64,
    /// See `max_op`.
    pub max_worker: u32,
    /// Its history's footer (None: the history was cut).
    pub footer: Option<Footer>,
}

/// A merged run, once its history, latency log, final tables, scenario
/// and statement file are in the merged folder: what the workload's
/// judgement of it ([`ShardMerge::judge`]) reads, and the parts of the
/// summary every workload's merge shares.
pub struct Merged<'a> {
    /// The shards, by index.
    pub parts: &'a [Part],
    /// The merged run's scenario ([`ShardMerge::whole`]).
    pub scenario: &'a Scenario,
    /// What `specstorm merge` was asked.
    pub opts: &'a MergeOptions,
    /// The merged history's header record.
    pub header: &'a MergedHeader,
    /// Where the final tables (`export.json`) came from.
    pub tables_source: String,
    /// The merged latency log.
    pub log: &'a Log,
    /// The merged history (`history.bin`).
    pub history: &'a Path,
    /// Its size.
    pub history_bytes: u64,
    /// The earliest shard's clock origin, UTC ns.
    pub t0: u64,
}

impl Merged<'_> {
    /// The merged run's wall time, s: from the earliest shard's start to
    /// the latest shard's end.
    pub fn duration_s(&self) -> f64 {
        let end_ns = self
            .parts
            .iter()
            .map(|p| p.shard.clock_utc_ns + (p.summary.duration_s * 1e9) as u64)
            .max()
            .unwrap_or(self.t0);
        (end_ns.saturating_sub(self.t0)) as f64 / 1e9
    }

    /// Carries the first shard's `abort_on_fail` breach (by shard index)
    /// into the merged `summary`, its thresholds judged: each shard judged
    /// its own live figures and stopped itself, the others ran on; the
    /// merged run counts the threshold breached, at that shard's time.
    pub fn carry_abort(&self, summary: &mut Summary) {
        let breach = self.parts.iter().find_map(|p| {
            let by = p.summary.aborted_by.clone()?;
            let index = p
                .summary
                .thresholds
                .iter()
                .position(|t| t.aborted.is_some())?;
            Some((index, by))
        });
        if let Some((index, by)) = breach {
            summary.mark_aborted(index, by);
        }
    }

    /// Counts, throughputs and latencies of `kinds` from the merged
    /// latency log (exactly the sums of the shards' histograms).
    pub fn figures(&self, kinds: &[OpKind], duration_s: f64) -> summary::Figures {
        let mut f = summary::Figures {
            ops: BTreeMap::new(),
            throughput: BTreeMap::new(),
            latency_ok: BTreeMap::new(),
            latency_not_ok: BTreeMap::new(),
        };
        let mut total = 0;
        for &k in kinds {
            let hist = |c| self.log.total(k, c);
            let (okh, failh, infoh) = (
                hist(CompletionType::Ok),
                hist(CompletionType::Fail),
                hist(CompletionType::Info),
            );
            let c = crate::figures::Counts {
                ok: okh.len(),
                fail: failh.len(),
                info: infoh.len(),
            };
            let n = c.ok + c.fail + c.info;
            total += n;
            let name = k.name().to_string();
            f.throughput
                .insert(name.clone(), summary::rate(n, duration_s));
            f.ops.insert(name.clone(), c);
            f.latency_ok.insert(name.clone(), Latency::of(&okh));
            f.latency_not_ok.insert(
                name,
                BTreeMap::from([
                    ("fail".to_string(), Latency::of(&failh)),
                    ("info".to_string(), Latency::of(&infoh)),
                ]),
            );
        }
        f.throughput
            .insert("total".into(), summary::rate(total, duration_s));
        f
    }

    /// The shards' maps of counts (faults injected, ...), added key by key.
    pub fn sum_maps(
        &self,
        f: &dyn Fn(&Summary) -> Option<&BTreeMap<String, u64>>,
    ) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::<String, u64>::new();
        for p in self.parts {
            for (k, v) in f(&p.summary).into_iter().flatten() {
                *m.entry(k.clone()).or_default() += v;
            }
        }
        m
    }

    /// The merged run's provenance: shard 0's, with the merge's start,
    /// command and checkers.
    pub fn provenance(&self) -> Provenance {
        let started = SystemTime::UNIX_EPOCH + Duration::from_nanos(self.t0);
        let command = {
            let mut c = vec!["specstorm".to_string(), "merge".to_string()];
            c.extend(self.parts.iter().map(|p| p.dir.display().to_string()));
            c.push("--out".into());
            c.push(self.opts.out.display().to_string());
            c.push("--clock-skew".into());
            c.push(humantime::format_duration(self.opts.clock_skew).to_string());
            c.join(" ")
        };
        Provenance {
            started_utc: humantime::format_rfc3339_millis(started).to_string(),
            command,
            // The merge judges with the checkers of this binary.
            checker_version: crate::summary::CHECKER_VERSION,
            ..self.parts[0].summary.provenance.clone()
        }
    }

    /// The summary's `merged` record.
    pub fn info(&self) -> MergeInfo {
        MergeInfo {
            run_id: self.header.run_id.clone(),
            shards: self
                .parts
                .iter()
                .map(|p| ShardRef {
                    index: p.shard.index,
                    run_dir: p.dir.display().to_string(),
                    started_utc: p.header.started_utc.clone(),
                    // The shard's `events` figure (0 for a workload
                    // without one).
                    events: p
                        .summary
                        .workload_figures
                        .get("events")
                        .and_then(serde_json::Value::as_u64)
                        .unwrap_or(0),
                    exit_code: p.summary.exit.code,
                })
                .collect(),
            clock_skew_ms: self.opts.clock_skew.as_nanos() as f64 / 1e6,
            tables: self.tables_source.clone(),
        }
    }

    /// Writes `checks.json`, `junit.xml` and, last, `summary.json`, as a
    /// run writes them (`crate::report::export`), and prints the summary
    /// with the workload's lines (`human`).
    pub fn save(
        &self,
        summary: &Summary,
        results: &[crate::verdict::CheckResult],
        human: &crate::workload::parts::HumanParts,
    ) -> Result<(), MergeError> {
        use crate::report::export::{write_all, ExportError, RunResults};
        use crate::report::results::RESULTS;
        let out = &self.opts.out;
        let run = RunResults {
            summary,
            results,
            junit_name: "specstorm merge",
        };
        write_all(out, &RESULTS, &run).map_err(|e| match e {
            ExportError::Write(w) => MergeError::from(w),
            e @ ExportError::Serialize { .. } => MergeError::from(anyhow::Error::from(e)),
        })?;
        let _ = writeln!(
            std::io::stdout(),
            "{}",
            crate::report::human::render(summary, results, &out.display().to_string(), human)
        );
        Ok(())
    }
}
