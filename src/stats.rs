//! Load figures: latency histograms (HdrHistogram, ns) and counts per op
//! kind and completion type. Each worker records into its own [`Stats`]
//! (its slot of [`crate::live::Live`], locked by nobody else but a reader
//! a few times a second); slots are merged for snapshots and at the end.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use crate::history::{CompletionType, OpKind, OpResult};
use hdrhistogram::Histogram;

/// Significant figures of every latency histogram (0.1% error).
const SIGFIG: u8 = 3;

/// Latency histograms and counts of one worker, or merged.
#[derive(Debug, Clone)]
pub struct Stats {
    /// [op kind: ingest, resolve, handle][completion type] latency in ns. Auto-resizing, so no value
    /// is ever out of range; failed and indeterminate ops stay apart from ok.
    /// Indexed by [`OpKind::index`]: the built-in kinds always, a
    /// registered kind from its first op on.
    hist: Vec<[Histogram<u64>; 3]>,
    /// Values a histogram refused (none expected with auto-resize; counted
    /// so a refusal is shown, never silently dropped).
    pub saturated: u64,
    /// Open model: ops that started later than `late_after` past their
    /// intended start.
    pub late: u64,
    /// Ingest ops that were duplicates (accepted = false).
    pub duplicates: u64,
    /// Resolves that changed a group to resolved.
    pub resolved: u64,
    /// Refused resolves.
    pub refused: u64,
    /// Refused resolves whose probe read `regressed`.
    pub regressed_seen: u64,
}

impl Default for Stats {
    fn default() -> Self {
        let h = || Histogram::<u64>::new(SIGFIG).expect("valid sigfig");
        Stats {
            hist: (0..3).map(|_| [h(), h(), h()]).collect(),
            saturated: 0,
            late: 0,
            duplicates: 0,
            resolved: 0,
            refused: 0,
            regressed_seen: 0,
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::<u64>::new(SIGFIG).expect("valid sigfig")
}

fn ki(k: OpKind) -> usize {
    k.index()
}

fn ci(c: CompletionType) -> usize {
    match c {
        CompletionType::Ok => 0,
        CompletionType::Fail => 1,
        CompletionType::Info => 2,
    }
}

impl Stats {
    /// Records one completed op's latency (ns).
    pub fn record(&mut self, kind: OpKind, completion: CompletionType, latency_ns: u64) {
        while self.hist.len() <= ki(kind) {
            self.hist
                .push([new_histogram(), new_histogram(), new_histogram()]);
        }
        if self.hist[ki(kind)][ci(completion)]
            .record(latency_ns.max(1))
            .is_err()
        {
            self.saturated += 1;
        }
    }

    /// Records one completed op: its latency (ns) and what its result
    /// says, as the client saw it: a duplicate (`ok`, accepted = false), a
    /// resolve that set the group resolved or was refused (not counted for
    /// `info`: a crashed op's own result was never heard), and a refused
    /// resolve whose probe read `regressed`.
    pub fn record_op(
        &mut self,
        kind: OpKind,
        completion: CompletionType,
        latency_ns: u64,
        result: &OpResult,
    ) {
        self.record(kind, completion, latency_ns);
        if completion == CompletionType::Ok && result.accepted == Some(false) {
            self.duplicates += 1;
        }
        match result
            .resolved
            .filter(|_| completion != CompletionType::Info)
        {
            Some(true) => self.resolved += 1,
            Some(false) => {
                self.refused += 1;
                if result.status.as_deref() == Some("regressed") {
                    self.regressed_seen += 1;
                }
            }
            None => {}
        }
    }

    /// The latency histogram (ns) of one kind and completion type.
    pub fn histogram(&self, kind: OpKind, completion: CompletionType) -> &Histogram<u64> {
        static EMPTY: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
        self.hist
            .get(ki(kind))
            .map(|h| &h[ci(completion)])
            .unwrap_or_else(|| EMPTY.get_or_init(new_histogram))
    }

    /// Ops of one kind and completion type.
    pub fn count(&self, kind: OpKind, completion: CompletionType) -> u64 {
        self.histogram(kind, completion).len()
    }

    /// Adds another worker's figures into these.
    pub fn merge(&mut self, other: &Stats) {
        while self.hist.len() < other.hist.len() {
            self.hist
                .push([new_histogram(), new_histogram(), new_histogram()]);
        }
        for k in 0..other.hist.len() {
            for c in 0..3 {
                if self.hist[k][c].add(&other.hist[k][c]).is_err() {
                    self.saturated += other.hist[k][c].len();
                }
            }
        }
        self.saturated += other.saturated;
        self.late += other.late;
        self.duplicates += other.duplicates;
        self.resolved += other.resolved;
        self.refused += other.refused;
        self.regressed_seen += other.regressed_seen;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_and_zero_latencies_are_kept_and_kinds_stay_apart() {
        let mut s = Stats::default();
        s.record(OpKind::Ingest, CompletionType::Ok, 0);
        s.record(OpKind::Ingest, CompletionType::Ok, u64::MAX / 4);
        s.record(OpKind::Ingest, CompletionType::Info, 5);
        assert_eq!(s.count(OpKind::Ingest, CompletionType::Ok), 2);
        assert_eq!(s.count(OpKind::Ingest, CompletionType::Info), 1);
        assert_eq!(s.count(OpKind::Resolve, CompletionType::Ok), 0);
        assert_eq!(s.saturated, 0);
        let mut t = Stats::default();
        t.merge(&s);
        assert_eq!(t.count(OpKind::Ingest, CompletionType::Ok), 2);
    }
}
