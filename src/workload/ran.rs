//! What a workload's load phase produced on its target ([`Ran`]: the
//! load's outcome, the final tables, what the torn-down target said) and
//! what the pipeline takes from it ([`Loaded`]). Each workload implements
//! [`LoadFigures`] for its outcome and [`ReadSpan`] for its tables in its
//! own folder; the pipeline's trait ([`super::traits`]) re-exports them.
//! It sits below the workloads' runtimes and tables, which implement it.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use crate::stats::Stats;
use crate::summary::WalReport;

/// What a load phase hands the pipeline.
pub struct Loaded {
    /// Ops invoked (the history's footer).
    pub ops: u64,
    /// Time from the load's start to the end of its drain, ns.
    pub elapsed_ns: u64,
    /// Latency and counts by op kind and completion type.
    pub stats: Stats,
    /// When the final tables were read (start, end), if they were.
    pub tables_read: Option<[u64; 2]>,
    /// The target, for the summary.
    pub target_desc: String,
    /// The target misbehaved in a way that makes the run exit 3.
    pub target_error: Option<String>,
    /// The target database's WAL, when the bench could watch it.
    pub wal: Option<WalReport>,
}

/// What a workload's load phase produced on its target: the load's
/// outcome, the final tables (None: the target could not give them, and
/// nothing is judged) and what the torn-down target said.
pub struct Ran<O, T> {
    /// The load's outcome (its figures).
    pub load: O,
    /// The final tables, read as one snapshot after the load drained.
    pub tables: Option<T>,
    /// The target's description, error and WAL.
    pub finished: crate::target::Finished,
}

/// The figures every workload's load outcome has.
pub trait LoadFigures {
    /// Ops invoked.
    fn ops(&self) -> u64;
    /// Time from the load's start to the end of its drain, ns.
    fn elapsed_ns(&self) -> u64;
    /// The latency and counts, taken (the pipeline keeps them).
    fn take_stats(&mut self) -> Stats;
}

/// When a workload's final tables were read (start, end: clock ns).
pub trait ReadSpan {
    /// (start, end) of the final read.
    fn read_span(&self) -> [u64; 2];
}

impl<O: LoadFigures, T: ReadSpan> Ran<O, T> {
    /// The phase's parts.
    pub fn new(load: O, tables: Option<T>, finished: crate::target::Finished) -> Self {
        Ran {
            load,
            tables,
            finished,
        }
    }

    /// What the pipeline gets ([`Loaded`]), and what the workload keeps
    /// for its audit and figures (the outcome, its stats taken; the
    /// tables).
    pub fn into_loaded(self) -> (Loaded, O, Option<T>) {
        let Ran {
            mut load,
            tables,
            finished,
        } = self;
        let loaded = Loaded {
            ops: load.ops(),
            elapsed_ns: load.elapsed_ns(),
            stats: load.take_stats(),
            tables_read: tables.as_ref().map(ReadSpan::read_span),
            target_desc: finished.target_desc,
            target_error: finished.target_error,
            wal: finished.wal,
        };
        (loaded, load, tables)
    }
}
