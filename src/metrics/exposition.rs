//! A live snapshot as OpenMetrics text (which Prometheus scrapes): the
//! metric families, their names and labels, and the latency histograms'
//! buckets. The encoder is the Prometheus project's own client
//! (`prometheus-client`), given the snapshot's values at scrape time
//! through a collector.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::history::CompletionType;
use crate::live::{Live, Phase, Snapshot};
use crate::stats::Stats;
use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::fmt::Error;
use std::sync::Arc;

/// The latency histograms' bucket bounds, seconds: 100 µs to 10 s in
/// 1-2.5-5 steps, then +Inf (an op of a loaded SQLite file takes tens of
/// µs to a few ms; a busy-timeout or a fault's wait, seconds).
pub const BUCKETS_S: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

const PHASES: [Phase; 4] = [Phase::Load, Phase::Draining, Phase::Audit, Phase::Done];

/// The text of one scrape of `live`: every family, then `# EOF`.
pub fn render(live: &Arc<Live>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(LiveCollector(live.clone())));
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

struct LiveCollector(Arc<Live>);

// The collector trait asks for Debug; the live figures have none to give.
impl std::fmt::Debug for LiveCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveCollector").finish_non_exhaustive()
    }
}

impl Collector for LiveCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), Error> {
        let (snap, stats) = self.0.snapshot_and_stats();
        info(&mut e, &snap)?;
        ops(&mut e, &snap)?;
        latency(&mut e, &self.0, &stats)?;
        pace(&mut e, &snap, &stats)?;
        faults(&mut e, &snap)?;
        progress(&mut e, &snap)
    }
}

/// A label value as the text format needs it: backslash, double quote and
/// newline escaped (the encoder writes values as given, and scenario and
/// target names are the user's).
fn escaped(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn info(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let labels = [
        ("scenario", escaped(&s.info.scenario)),
        ("variant", escaped(&s.info.variant)),
        ("target", escaped(&s.info.target)),
        ("seed", s.info.seed.to_string()),
    ];
    e.encode_descriptor("specstorm_run", "What the run is", None, MetricType::Info)?
        .encode_info(&labels)
}

fn completion_types() -> [(CompletionType, &'static str); 3] {
    [
        (CompletionType::Ok, "ok"),
        (CompletionType::Fail, "fail"),
        (CompletionType::Info, "info"),
    ]
}

fn ops(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let mut m = e.encode_descriptor(
        "specstorm_ops",
        "Ops completed, by op kind and completion type (ok: happened, fail: did not, info: unknown)",
        None,
        MetricType::Counter,
    )?;
    for (kind, c) in &s.ops {
        for (value, (_, ty)) in [c.ok, c.fail, c.info].into_iter().zip(completion_types()) {
            let labels = [("kind", kind.as_str()), ("type", ty)];
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
        }
    }
    Ok(())
}

/// Per-bucket counts (not cumulative; the encoder sums them) of `h`, ns,
/// against [`BUCKETS_S`], and the sum in seconds. A value counts in the
/// first bucket whose bound is at least the highest value it stands for
/// in the histogram (3 significant figures): a value within 0.1% of a
/// bound may land one bucket up.
fn buckets(h: &Histogram<u64>) -> (Vec<(f64, u64)>, f64) {
    let mut out: Vec<(f64, u64)> = BUCKETS_S.iter().map(|&b| (b, 0)).collect();
    out.push((f64::MAX, 0));
    let mut sum = 0.0;
    for v in h.iter_recorded() {
        let s = v.value_iterated_to() as f64 / 1e9;
        sum += s * v.count_at_value() as f64;
        let i = BUCKETS_S
            .iter()
            .position(|&b| s <= b)
            .unwrap_or(BUCKETS_S.len());
        out[i].1 += v.count_at_value();
    }
    (out, sum)
}

fn latency(e: &mut DescriptorEncoder, live: &Live, stats: &Stats) -> Result<(), Error> {
    let mut m = e.encode_descriptor(
        "specstorm_op_latency",
        "Op latency from its start (open model: its intended start) to its completion, by op kind and completion type",
        Some(&Unit::Seconds),
        MetricType::Histogram,
    )?;
    for &k in live.kinds() {
        for (ct, ty) in completion_types() {
            let h = stats.histogram(k, ct);
            let (b, sum) = buckets(h);
            let labels = [("kind", k.name()), ("type", ty)];
            m.encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(sum, h.len(), &b, None)?;
        }
    }
    Ok(())
}

fn faults(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let mut m = e.encode_descriptor(
        "specstorm_faults_injected",
        "Faults the nemesis injected, by fault kind",
        None,
        MetricType::Counter,
    )?;
    for (kind, n) in &s.faults_injected {
        m.encode_family(&[("kind", kind.as_str())])?
            .encode_counter::<NoLabelSet, _, u64>(n, None)?;
    }
    let mut m = e.encode_descriptor(
        "specstorm_faults_active",
        "1 while a timed fault of this kind is in force",
        None,
        MetricType::Gauge,
    )?;
    for kind in s.faults_injected.keys() {
        let on = i64::from(s.faults_active.contains(kind));
        m.encode_family(&[("kind", kind.as_str())])?
            .encode_gauge(&on)?;
    }
    Ok(())
}

/// The open model's pace: its ingest target now (`load.rate` or the
/// stages' curve at the load's elapsed time), for a dashboard to draw
/// beside the achieved rate, and the ops that started late.
fn pace(e: &mut DescriptorEncoder, s: &Snapshot, stats: &Stats) -> Result<(), Error> {
    let Some(curve) = &s.info.ingest_target else {
        return Ok(());
    };
    e.encode_descriptor(
        "specstorm_ingest_target_ops_per_second",
        "Open model: the ingest rate the load aims at now (load.rate or [[load.stages]])",
        None,
        MetricType::Gauge,
    )?
    .encode_gauge(&curve.target_at(s.elapsed_s))?;
    e.encode_descriptor(
        "specstorm_late_ops",
        "Open model: ops that started more than load.late_after past their intended start",
        None,
        MetricType::Counter,
    )?
    .encode_counter::<NoLabelSet, _, u64>(&stats.late, None)?;
    Ok(())
}

fn progress(e: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    e.encode_descriptor(
        "specstorm_events_generated",
        "Fresh events (or messages) the generator made",
        None,
        MetricType::Counter,
    )?
    .encode_counter::<NoLabelSet, _, u64>(&s.generated, None)?;
    e.encode_descriptor(
        "specstorm_elapsed",
        "Time since the load started (draining included once it ends)",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?
    .encode_gauge(&s.elapsed_s)?;
    if let (Some(f), _) = s.progress() {
        e.encode_descriptor(
            "specstorm_progress_ratio",
            "How far the load is toward its nearer stop limit (events or time), 0 to 1",
            None,
            MetricType::Gauge,
        )?
        .encode_gauge(&f)?;
    }
    let mut m = e.encode_descriptor(
        "specstorm_phase",
        "1 for the phase the run is in: load, draining, audit, done",
        None,
        MetricType::Gauge,
    )?;
    for p in PHASES {
        m.encode_family(&[("phase", p.name())])?
            .encode_gauge(&i64::from(s.phase == p))?;
    }
    Ok(())
}
