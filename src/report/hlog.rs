//! `latency.hlog`: the run's latencies as an HdrHistogram interval log
//! (the format of HdrHistogram's `HistogramLogWriter`, V2 compressed
//! histograms), so that figures of several runs merge exactly: adding the
//! logged histograms of runs gives the histogram of all their ops.
//!
//! Each interval holds the ops of one op kind and completion type that
//! completed within one second of the run (tag `ingest.ok`,
//! `resolve.info`, ...). Values are ns; an interval's start is s after the
//! run's start, which the header's `StartTime` gives as UTC. The log is
//! derived from the history after the load, with the very latencies
//! the summary's figures come from (completion `t` minus the invoke's `t`,
//! or minus its `intended` start in the open model), so that a histogram
//! of the log and the summary never disagree.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::history::{CompletionType, Entry, OpKind};
use anyhow::{bail, Context};
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// File name of the log in a run folder.
pub const FILE: &str = "latency.hlog";

/// Length of one interval, ns.
pub const INTERVAL_NS: u64 = 1_000_000_000;

/// Significant figures of every histogram (as the live stats: 0.1% error).
const SIGFIG: u8 = 3;

/// The ops of one op kind and completion type that completed in one interval.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Start of the interval, ns after the run's start.
    pub start_ns: u64,
    /// Length of the interval, ns.
    pub duration_ns: u64,
    /// Op kind.
    pub kind: OpKind,
    /// Completion type.
    pub completion: CompletionType,
    /// Latencies, ns.
    pub hist: Histogram<u64>,
}

impl Interval {
    /// The log's tag: `<kind>.<completion>`, e.g. `ingest.ok`.
    pub fn tag(&self) -> String {
        format!("{}.{}", self.kind.name(), self.completion.name())
    }
}

/// A whole log: its UTC start and its intervals in time order.
#[derive(Debug, Clone)]
pub struct Log {
    /// The run's UTC start (the log's `StartTime`).
    pub started: SystemTime,
    /// Intervals, ordered by start, then kind, then completion type.
    pub intervals: Vec<Interval>,
}

impl Log {
    /// All intervals of one kind and completion type added into one
    /// histogram (ns). Errors: none; an empty histogram when there is none.
    pub fn total(&self, kind: OpKind, completion: CompletionType) -> Histogram<u64> {
        let mut h = new_hist();
        for i in self
            .intervals
            .iter()
            .filter(|i| i.kind == kind && i.completion == completion)
        {
            h.add(&i.hist).expect("auto-resizing histograms always add");
        }
        h
    }
}

fn new_hist() -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(SIGFIG).expect("valid sigfig");
    h.auto(true);
    h
}

/// Builds the intervals from history entries, fed one at a time in file
/// order (so it can ride along the audit's single pass over the history).
#[derive(Default)]
pub struct Builder {
    /// Open ops: op id -> (kind, latency origin ns).
    open: HashMap<u64, (OpKind, u64)>,
    /// (interval index, kind, completion) -> latencies.
    cells: BTreeMap<(u64, OpKind, CompletionType), Histogram<u64>>,
    /// Last `t` seen, ns (the end of the last interval).
    last_ns: u64,
}

impl Builder {
    /// Feeds one entry: an invoke opens an op, its completion records its
    /// latency (ns, at least 1, as the live stats do) into the interval
    /// of the completion's `t`.
    pub fn feed(&mut self, entry: &Entry) {
        match entry {
            Entry::Invoke(i) => {
                self.open.insert(i.op, (i.f, i.intended.unwrap_or(i.t)));
            }
            Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) => {
                let completion = match entry {
                    Entry::Ok(_) => CompletionType::Ok,
                    Entry::Fail(_) => CompletionType::Fail,
                    _ => CompletionType::Info,
                };
                self.last_ns = self.last_ns.max(c.t);
                if let Some((kind, from)) = self.open.remove(&c.op) {
                    let latency = c.t.saturating_sub(from).max(1);
                    self.cells
                        .entry((c.t / INTERVAL_NS, kind, completion))
                        .or_insert_with(new_hist)
                        .record(latency)
                        .expect("auto-resizing histograms take any value");
                }
            }
            Entry::Footer(f) => self.last_ns = self.last_ns.max(f.t),
            _ => {}
        }
    }

    /// The intervals, in time order; the last one ends at the last `t` seen.
    pub fn finish(self) -> Vec<Interval> {
        let last_ns = self.last_ns;
        self.cells
            .into_iter()
            .map(|((i, kind, completion), hist)| {
                let start_ns = i * INTERVAL_NS;
                Interval {
                    start_ns,
                    duration_ns: INTERVAL_NS.min(last_ns.saturating_sub(start_ns)).max(1),
                    kind,
                    completion,
                    hist,
                }
            })
            .collect()
    }
}

/// Writes a log to `path`, whole. Errors: the file cannot be written.
pub fn write(path: &Path, log: &Log) -> anyhow::Result<()> {
    Ok(crate::whole::write_whole(path, serialize(log)?)?)
}

/// The `latency.hlog` exporter of one log (made while the history was
/// read, apart from the summary).
pub struct LatencyLog<'a>(pub &'a Log);

impl super::export::Exporter for LatencyLog<'_> {
    fn file_name(&self) -> &str {
        FILE
    }

    fn serialize(&self, _run: &super::export::RunResults<'_>) -> anyhow::Result<Vec<u8>> {
        serialize(self.0)
    }
}

/// The format version this log follows (HdrHistogram's interval log
/// format; its readers check this line: HdrHistogram_c refuses a log
/// without it).
pub const FORMAT_VERSION: &str = "1.3";

/// The legend line the format's writers put after the header.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// A log's bytes: the interval log format (V2, deflated). The header is
/// written as the format's own writer writes it (a comment, the format
/// version, `StartTime` with the date, `BaseTime`, then the legend); the
/// `hdrhistogram` crate writes neither the version nor the legend, so
/// the header is ours and the crate writes the intervals.
fn serialize(log: &Log) -> anyhow::Result<Vec<u8>> {
    let started = log
        .started
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let mut out = format!(
        "#specstorm latency log: values are ns; tags are <op kind>.<completion type>\n\
         #[Histogram log format version {FORMAT_VERSION}]\n\
         #[StartTime: {started:.3} (seconds since epoch), {}]\n\
         #[BaseTime: {started:.3} (seconds since epoch)]\n",
        humantime::format_rfc3339_millis(log.started),
    )
    .into_bytes();
    let mut body = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(1e6)
            .begin_log_with(&mut body, &mut serializer)
            .context("cannot start the interval log")?;
        for i in &log.intervals {
            let tag = i.tag();
            w.write_histogram(
                &i.hist,
                Duration::from_nanos(i.start_ns),
                Duration::from_nanos(i.duration_ns),
                Tag::new(&tag),
            )
            .map_err(|e| anyhow::anyhow!("cannot write interval {tag}: {e:?}"))?;
        }
    }
    // The crate's only header line (`#[MaxValueDivisor: ...]`: interval
    // maxima in ms) belongs before the legend, as every header line does.
    let header_end = match body.iter().position(|b| *b == b'\n') {
        Some(n) if body.starts_with(b"#[") => n + 1,
        _ => 0,
    };
    out.extend_from_slice(&body[..header_end]);
    out.extend_from_slice(LEGEND.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&body[header_end..]);
    Ok(out)
}

/// Reads a log written by [`write`]. Errors: the file cannot be read, is
/// not an interval log, or holds a tag that is not `<kind>.<completion>`.
pub fn read(path: &Path) -> anyhow::Result<Log> {
    let bytes = crate::input::read(path, crate::input::LATENCY_LOG)
        .map_err(|e| e.in_file(format!("cannot read {}", path.display())))?;
    let mut started = None;
    let mut intervals = Vec::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let entry = entry.map_err(|e| anyhow::anyhow!("{}: {e:?}", path.display()))?;
        match entry {
            LogEntry::StartTime(d) => started = Some(SystemTime::UNIX_EPOCH + d),
            LogEntry::BaseTime(_) => {}
            LogEntry::Interval(ilh) => {
                let tag = ilh.tag().map(|t| t.as_str()).unwrap_or("");
                let Some((kind, completion)) = parse_tag(tag) else {
                    bail!("{}: unknown interval tag {tag:?}", path.display());
                };
                let raw = base64_decode(ilh.encoded_histogram())
                    .with_context(|| format!("{}: bad histogram encoding", path.display()))?;
                let mut hist: Histogram<u64> = de
                    .deserialize(&mut raw.as_slice())
                    .map_err(|e| anyhow::anyhow!("{}: bad histogram: {e:?}", path.display()))?;
                hist.auto(true);
                intervals.push(Interval {
                    start_ns: ilh.start_timestamp().as_nanos() as u64,
                    duration_ns: ilh.duration().as_nanos() as u64,
                    kind,
                    completion,
                    hist,
                });
            }
        }
    }
    let Some(started) = started else {
        bail!("{}: no StartTime in the interval log", path.display());
    };
    Ok(Log { started, intervals })
}

fn parse_tag(tag: &str) -> Option<(OpKind, CompletionType)> {
    let (k, c) = tag.split_once('.')?;
    let kind = OpKind::named(k).filter(|x| x.is_built_in())?;
    let completion = CompletionType::ALL.into_iter().find(|x| x.name() == c)?;
    Some((kind, completion))
}

fn base64_decode(s: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine;
    Ok(base64::engine::general_purpose::STANDARD.decode(s.trim())?)
}
