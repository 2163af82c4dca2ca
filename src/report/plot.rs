//! SVG plots of a run (`specstorm report`): `throughput.svg`, ops/s per
//! 1 s interval per op kind with the fault windows shaded and the per-op
//! fault injections beneath, and `latency.svg`, HdrHistogram's classic
//! percentile spectrum of `ok` latencies per op kind. A compare folder gets
//! the same two plots with its variants side by side.
//!
//! Counts and latencies come from `latency.hlog` (exact, as the summary's),
//! fault times from the history's fault entries, streamed. Text is plain
//! SVG `<text>` laid out by plotters' built-in size estimate (no font
//! feature): the viewer renders it with its own sans-serif font.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::hlog::{self, Log, INTERVAL_NS};
use crate::fault_kind::FaultKind;
use crate::history::{reader, CompletionType, Entry, FaultAction, OpKind};
use anyhow::{anyhow, Context};
use hdrhistogram::Histogram;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Width of every plot, px.
/// The op kinds the plots draw a line each for, in their colors' order
/// (groups' kinds; a kind of another workload counts into the first line).
/// Plots of every workload's own kinds are left for later.
const PLOTTED_KINDS: [OpKind; 2] = [OpKind::Ingest, OpKind::Resolve];

const WIDTH: u32 = 1200;
/// The throughput axis reaches this times the highest rate, so that the
/// legend in the upper right stays off the lines.
const HEADROOM: f64 = 1.8;
/// Height of one throughput panel (a run, or a variant of a compare), px.
const PANEL_HEIGHT: u32 = 580;

const KIND_COLORS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(230, 115, 0)];
/// Per variant in the compare latency chart.
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

fn fault_color(kind: FaultKind) -> RGBColor {
    match kind {
        FaultKind::Kill => RGBColor(214, 39, 40),
        FaultKind::Lock => RGBColor(148, 103, 189),
        FaultKind::Crash => RGBColor(140, 86, 75),
        FaultKind::Pause => RGBColor(120, 120, 120),
        FaultKind::Proxy => RGBColor(23, 160, 180),
    }
}

fn window_label(kind: FaultKind) -> String {
    match kind {
        FaultKind::Kill => "kill: server down".into(),
        FaultKind::Lock => "lock: write lock held".into(),
        k => k.name().into(),
    }
}

fn kind_color(kind: OpKind) -> RGBColor {
    KIND_COLORS[PLOTTED_KINDS.iter().position(|k| *k == kind).unwrap_or(0)]
}

fn draw_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("cannot draw the plot: {e:?}")
}

/// A fault with a duration (kill, lock): from its `start` to its `stop`
/// entry, s since the run's start.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultWindow {
    /// kill or lock.
    pub kind: FaultKind,
    /// Start, s.
    pub start_s: f64,
    /// End, s (the run's last instant when the stop entry is missing).
    pub end_s: f64,
}

/// The fault entries of a history, as the plots need them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Kill and lock windows, in start order.
    pub windows: Vec<FaultWindow>,
    /// Per-op injections (crash, pause, proxy): kind -> second of the run
    /// (`t / 1 s`) -> injections in it.
    pub injections: BTreeMap<FaultKind, BTreeMap<u64, u64>>,
    /// Open model: the earliest ingest's intended start, s (op 0's), by
    /// which the target curve is placed.
    pub load_start_s: Option<f64>,
}

/// Reads the fault entries of a history, streaming it.
/// Errors: the file cannot be opened or a line is not a history entry.
pub fn read_faults(history: &Path) -> anyhow::Result<Faults> {
    let mut f = Faults::default();
    let mut open: HashMap<u32, (FaultKind, u64)> = HashMap::new();
    let mut last_ns = 0u64;
    for entry in reader::read(history)? {
        match entry? {
            Entry::Fault(e) => {
                last_ns = last_ns.max(e.t);
                match e.action {
                    FaultAction::Start => {
                        open.insert(e.fault, (e.kind, e.t));
                    }
                    FaultAction::Stop => {
                        if let Some((kind, t0)) = open.remove(&e.fault) {
                            f.windows.push(FaultWindow {
                                kind,
                                start_s: t0 as f64 / 1e9,
                                end_s: e.t as f64 / 1e9,
                            });
                        }
                    }
                    FaultAction::Inject => {
                        *f.injections
                            .entry(e.kind)
                            .or_default()
                            .entry(e.t / INTERVAL_NS)
                            .or_default() += 1;
                    }
                }
            }
            Entry::Invoke(i) => {
                last_ns = last_ns.max(i.t);
                // Ingests only: resolves have a pace of their own.
                if let Some(at) = i.intended.filter(|_| i.f == OpKind::Ingest) {
                    let at = at as f64 / 1e9;
                    f.load_start_s = Some(f.load_start_s.map_or(at, |s| s.min(at)));
                }
            }
            Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) => last_ns = last_ns.max(c.t),
            Entry::Footer(x) => last_ns = last_ns.max(x.t),
            _ => {}
        }
    }
    // A fault still on when the history ends (an interrupted run) lasted
    // to its end; dropping it would hide the very window that matters.
    for (kind, t0) in open.into_values() {
        f.windows.push(FaultWindow {
            kind,
            start_s: t0 as f64 / 1e9,
            end_s: last_ns.max(t0) as f64 / 1e9,
        });
    }
    f.windows.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    Ok(f)
}

/// One 1 s interval of a log: its span (s) and ops/s per op kind, of all
/// completions and of `fail` + `info` only.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Start, s since the run's start.
    pub start_s: f64,
    /// End, s (the last interval may be shorter than 1 s).
    pub end_s: f64,
    /// ops/s of all completions, per kind in [`PLOTTED_KINDS`] order.
    pub all: [f64; 2],
    /// ops/s of `fail` + `info`, per kind in [`PLOTTED_KINDS`] order.
    pub not_ok: [f64; 2],
}

/// ops/s per interval from a log (a histogram's `len()` is its op count),
/// every interval from 0 to the last, empty ones as 0.
pub fn rates(log: &Log) -> Vec<Rate> {
    let last = log.intervals.iter().map(|i| i.start_ns / INTERVAL_NS).max();
    let Some(last) = last else {
        return Vec::new();
    };
    let mut out: Vec<Rate> = (0..=last)
        .map(|i| Rate {
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            all: [0.0; 2],
            not_ok: [0.0; 2],
        })
        .collect();
    let mut counts = vec![([0u64; 2], [0u64; 2]); out.len()];
    for i in &log.intervals {
        let idx = (i.start_ns / INTERVAL_NS) as usize;
        let k = PLOTTED_KINDS.iter().position(|k| *k == i.kind).unwrap_or(0);
        counts[idx].0[k] += i.hist.len();
        if i.completion != CompletionType::Ok {
            counts[idx].1[k] += i.hist.len();
        }
        out[idx].end_s = (i.start_ns + i.duration_ns) as f64 / 1e9;
    }
    for (r, (all, not_ok)) in out.iter_mut().zip(counts) {
        let secs = (r.end_s - r.start_s).max(1e-3);
        for k in 0..2 {
            r.all[k] = all[k] as f64 / secs;
            r.not_ok[k] = not_ok[k] as f64 / secs;
        }
    }
    out
}

/// One throughput panel: a run (or a compare's variant) to draw.
pub struct Panel<'a> {
    /// Title of the panel.
    pub title: String,
    /// The run's latency log; None: no counts to draw (said in the panel).
    pub log: Option<&'a Log>,
    /// The run's faults; None: no history to read them from.
    pub faults: Option<&'a Faults>,
    /// The open model's ingest target (`crate::report::target_curve`),
    /// drawn beside the achieved rate; None: not drawn.
    pub target: Option<Vec<(f64, f64)>>,
}

/// A rate as a step line: each interval a flat segment at its rate.
fn steps(rates: &[Rate], f: impl Fn(&Rate) -> f64) -> Vec<(f64, f64)> {
    rates
        .iter()
        .flat_map(|r| [(r.start_s, f(r)), (r.end_s, f(r))])
        .collect()
}

/// Writes `throughput.svg` with one panel per entry, stacked, on shared
/// axes so that variants compare at a glance. Errors: the file cannot be
/// written.
pub fn throughput_svg(path: &Path, panels: &[Panel]) -> anyhow::Result<()> {
    let all: Vec<Vec<Rate>> = panels
        .iter()
        .map(|p| p.log.map(rates).unwrap_or_default())
        .collect();
    let x_max = all
        .iter()
        .flat_map(|r| r.last().map(|l| l.end_s))
        .chain(panels.iter().flat_map(|p| {
            p.faults
                .into_iter()
                .flat_map(|f| f.windows.iter().map(|w| w.end_s))
        }))
        .fold(0.0f64, f64::max);
    // A run shorter than a second still gets an axis as long as the run.
    let x_max = if x_max > 0.0 { x_max } else { 1.0 };
    let y_max = all
        .iter()
        .flatten()
        .flat_map(|r| r.all)
        .chain(
            panels
                .iter()
                .flat_map(|p| p.target.iter().flatten().map(|(_, y)| *y)),
        )
        .fold(1.0f64, f64::max);
    let height = PANEL_HEIGHT * panels.len().max(1) as u32;
    // Drawn in memory, then written whole (`crate::whole`).
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let areas = root.split_evenly((panels.len().max(1), 1));
        for ((area, panel), rates) in areas.iter().zip(panels).zip(&all) {
            draw_panel(area, panel, rates, x_max, y_max)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(crate::whole::write_whole(path, svg)?)
}

fn draw_panel(
    area: &DrawingArea<SVGBackend, Shift>,
    panel: &Panel,
    rates: &[Rate],
    x_max: f64,
    y_max: f64,
) -> anyhow::Result<()> {
    let injections = panel
        .faults
        .map(|f| &f.injections)
        .filter(|m| !m.is_empty());
    let (top, bottom) = match injections {
        Some(_) => {
            let (t, b) = area.split_vertically(area.dim_in_pixel().1 * 62 / 100);
            (t, Some(b))
        }
        None => (area.clone(), None),
    };
    let mut title = panel.title.clone();
    if panel.log.is_none() {
        title.push_str(" (no latency.hlog: no counts)");
    }
    // Headroom above the highest line keeps the legend off the data.
    let mut chart = ChartBuilder::on(&top)
        .caption(&title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(if bottom.is_some() { 20 } else { 40 })
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max * HEADROOM)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .y_desc("ops/s (1 s intervals)")
        .x_desc(if bottom.is_some() {
            ""
        } else {
            "s since the run's start"
        })
        .x_label_formatter(&|x| seconds_label(*x, x_max))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_err)?;
    if let Some(f) = panel.faults {
        shade_windows(&mut chart, f, y_max * HEADROOM, true)?;
    }
    for (k, kind) in PLOTTED_KINDS.into_iter().enumerate() {
        let c = kind_color(kind);
        chart
            .draw_series(LineSeries::new(
                steps(rates, |r| r.all[k]),
                c.stroke_width(2),
            ))
            .map_err(draw_err)?
            .label(format!("{} (all completions)", kind.name()))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(DashedLineSeries::new(
                steps(rates, |r| r.not_ok[k]),
                6,
                4,
                c.stroke_width(1),
            ))
            .map_err(draw_err)?
            .label(format!("{} fail+info", kind.name()))
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (7, 0)], c.stroke_width(1))
                    + PathElement::new(vec![(12, 0), (20, 0)], c.stroke_width(1))
            });
    }
    if let Some(target) = &panel.target {
        chart
            .draw_series(DashedLineSeries::new(
                target.iter().copied(),
                10,
                5,
                BLACK.stroke_width(2),
            ))
            .map_err(draw_err)?
            .label("ingest target (ops/s)")
            .legend(|(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], BLACK.stroke_width(2))
                    + PathElement::new(vec![(13, 0), (20, 0)], BLACK.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(draw_err)?;
    if let (Some(bottom), Some(inj), Some(f)) = (bottom, injections, panel.faults) {
        // Injections end where this run ended, not at the shared axis' end.
        let end = rates.last().map(|r| r.end_s).unwrap_or(x_max);
        draw_injections(&bottom, inj, f, x_max, end)?;
    }
    Ok(())
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Kill and lock windows as translucent bands under the lines; `legend`
/// adds one legend entry per kind.
fn shade_windows(chart: &mut Chart, f: &Faults, y_top: f64, legend: bool) -> anyhow::Result<()> {
    for kind in [FaultKind::Kill, FaultKind::Lock] {
        let c = fault_color(kind);
        let bands: Vec<_> = f
            .windows
            .iter()
            .filter(|w| w.kind == kind)
            // A lock held for 100 ms is still a visible band.
            .map(|w| {
                Rectangle::new(
                    [(w.start_s, 0.0), (w.end_s.max(w.start_s + 0.02), y_top)],
                    c.mix(0.18).filled(),
                )
            })
            .collect();
        if bands.is_empty() {
            continue;
        }
        let n = bands.len();
        let s = chart.draw_series(bands).map_err(draw_err)?;
        if legend {
            s.label(format!("{} ({n}x)", window_label(kind)))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 20, y + 6)], c.mix(0.35).filled())
                });
        }
    }
    Ok(())
}

/// The per-op injections beneath the throughput: injections per 1 s of
/// the run per fault kind, with the same windows shaded.
fn draw_injections(
    area: &DrawingArea<SVGBackend, Shift>,
    inj: &BTreeMap<FaultKind, BTreeMap<u64, u64>>,
    f: &Faults,
    x_max: f64,
    end_s: f64,
) -> anyhow::Result<()> {
    let y_max = inj
        .values()
        .flat_map(|m| m.values())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .margin_top(0)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max * 1.9)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .y_desc("injections/s")
        .x_desc("s since the run's start")
        .x_label_formatter(&|x| seconds_label(*x, x_max))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .y_labels(4)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_err)?;
    shade_windows(&mut chart, f, y_max * 1.9, false)?;
    for (kind, per_s) in inj {
        let c = fault_color(*kind);
        let last = per_s.keys().next_back().map_or(0, |s| s + 1);
        let end = end_s.max(last as f64 - 1.0);
        let pts: Vec<_> = (0..last.max(end.ceil() as u64))
            .flat_map(|s| {
                let n = per_s.get(&s).copied().unwrap_or(0) as f64;
                [(s as f64, n), (((s + 1) as f64).min(end), n)]
            })
            .collect();
        let total: u64 = per_s.values().sum();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(draw_err)?
            .label(format!("{} injections ({total})", kind.name()))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(draw_err)?;
    Ok(())
}

/// A time axis label with as many decimals as the axis' length needs.
fn seconds_label(x: f64, x_max: f64) -> String {
    let decimals = match x_max {
        m if m >= 10.0 => 0,
        m if m >= 1.0 => 1,
        _ => 2,
    };
    format!("{x:.decimals$}")
}

/// One latency spectrum to draw: its legend label, color and dash.
pub struct Spectrum {
    /// Legend label, e.g. `ingest ok (129133 ops)`.
    pub label: String,
    /// Points `(x, ms)`: x = log10(1 / (1 - percentile)), ms the latency.
    pub points: Vec<(f64, f64)>,
    /// Line color.
    pub color: RGBColor,
    /// Dashed (the second op kind of a compare chart).
    pub dashed: bool,
}

/// HdrHistogram's percentile spectrum of a histogram of ns values: points
/// `(log10(1 / (1 - p)), ms)`, x capped at log10(count) (past it the
/// percentile names fewer than one op). Empty for an empty histogram.
pub fn spectrum(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let cap = (h.len() as f64).log10().max(1.0);
    let mut pts: Vec<(f64, f64)> = h
        .iter_quantiles(5)
        .map(|v| {
            let q = v.quantile_iterated_to();
            let x = if q >= 1.0 {
                cap
            } else {
                (-(1.0 - q).log10()).min(cap)
            };
            (x, v.value_iterated_to().max(1) as f64 / 1e6)
        })
        .collect();
    // The spectrum always reaches the maximum at the right edge.
    pts.push((cap, h.max().max(1) as f64 / 1e6));
    pts
}

/// A percentile axis label: 0 -> `0%`, 1 -> `90%`, 3 -> `99.9%`; none
/// between the decades.
fn percentile_label(x: f64) -> String {
    if (x - x.round()).abs() > 1e-6 || x < 0.0 {
        return String::new();
    }
    match x.round() as u32 {
        0 => "0%".into(),
        1 => "90%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)).replace("99.%", "99%"),
    }
}

fn ms_label(y: f64) -> String {
    if y >= 1.0 {
        format!("{y:.0}")
    } else {
        let s = format!("{y:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Writes `latency.svg`: the spectra on one chart, x the percentile (log
/// scale of 1 / (1 - p)), y the latency in ms (log scale). Errors: the file
/// cannot be written.
pub fn latency_svg(path: &Path, title: &str, series: &[Spectrum]) -> anyhow::Result<()> {
    let pts = series.iter().flat_map(|s| s.points.iter());
    let x_max = pts.clone().map(|p| p.0).fold(1.0f64, f64::max).ceil();
    let (lo, hi) = pts.fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    let (lo, hi) = if lo > hi { (0.001, 1.0) } else { (lo, hi) };
    // Drawn in memory, then written whole (`crate::whole`).
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 700)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            // Room for the last percentile label at the right edge.
            .margin_right(45)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(0.0..x_max, (lo * 0.7..hi * 4.0).log_scale())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("percentile (log scale of 1/(1-p))")
            .y_desc("latency, ms (log scale)")
            .x_labels(x_max as usize + 1)
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|y| ms_label(*y))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(draw_err)?;
        if series.iter().all(|s| s.points.is_empty()) {
            root.draw(&Text::new(
                "no ok op in the latency log",
                (WIDTH as i32 / 2 - 120, 340),
                ("sans-serif", 18),
            ))
            .map_err(draw_err)?;
        }
        for s in series.iter().filter(|s| !s.points.is_empty()) {
            let c = s.color;
            let drawn = if s.dashed {
                chart
                    .draw_series(DashedLineSeries::new(
                        s.points.clone(),
                        8,
                        4,
                        c.stroke_width(2),
                    ))
                    .map_err(draw_err)?
            } else {
                chart
                    .draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2)))
                    .map_err(draw_err)?
            };
            let dashed = s.dashed;
            drawn.label(&s.label).legend(move |(x, y)| {
                if dashed {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (8, 0)], c.stroke_width(2))
                        + PathElement::new(vec![(12, 0), (20, 0)], c.stroke_width(2))
                } else {
                    EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (20, 0)], c.stroke_width(2))
                    // Both arms must build the same element type.
                    + PathElement::new(vec![(0, 0), (0, 0)], c.stroke_width(0))
                }
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(crate::whole::write_whole(path, svg)?)
}

/// What [`run_plots`] and [`compare_plots`] made, and what they could not.
#[derive(Debug, Default)]
pub struct Made {
    /// The SVG files written.
    pub files: Vec<PathBuf>,
    /// What was missing, and what was left out for it.
    pub notes: Vec<String>,
}

/// The inputs of a run folder's plots: its log and faults, each None when
/// its file is missing (said in `notes`). Errors: a file that exists but
/// cannot be read.
fn inputs(dir: &Path, notes: &mut Vec<String>) -> anyhow::Result<(Option<Log>, Option<Faults>)> {
    let log_path = dir.join(hlog::FILE);
    let log = if log_path.exists() {
        Some(hlog::read(&log_path)?)
    } else {
        notes.push(format!(
            "{}: no {}: no throughput counts, no latency spectrum",
            dir.display(),
            hlog::FILE
        ));
        None
    };
    let hist_path = crate::history::file::in_folder(dir);
    let faults = if hist_path.exists() {
        Some(read_faults(&hist_path)?)
    } else {
        notes.push(format!(
            "{}: no history ({} or {}): fault windows and injections not shown",
            dir.display(),
            crate::history::file::FILE,
            crate::history::file::JSON_LINES_FILE
        ));
        None
    };
    Ok((log, faults))
}

fn ok_spectra(
    log: &Log,
    prefix: &str,
    color: impl Fn(OpKind) -> RGBColor,
    dash: bool,
) -> Vec<Spectrum> {
    PLOTTED_KINDS
        .into_iter()
        .enumerate()
        .map(|(k, kind)| {
            let h = log.total(kind, CompletionType::Ok);
            Spectrum {
                label: format!("{prefix}{} ok ({} ops)", kind.name(), h.len()),
                points: spectrum(&h),
                color: color(kind),
                dashed: dash && k == 1,
            }
        })
        .collect()
}

/// Writes `DIR/plots/throughput.svg` and `DIR/plots/latency.svg` for a run
/// folder; `title` heads them (scenario / variant, seed). A missing log or
/// history leaves out what needs it, with a note; with neither, nothing is
/// drawn. Errors: an unreadable log or history, or an unwritable plot.
pub fn run_plots(dir: &Path, title: &str) -> anyhow::Result<Made> {
    let mut made = Made::default();
    let (log, faults) = inputs(dir, &mut made.notes)?;
    if log.is_none() && faults.is_none() {
        made.notes.push(format!("{}: no plot drawn", dir.display()));
        return Ok(made);
    }
    let out = dir.join("plots");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let p = out.join("throughput.svg");
    throughput_svg(
        &p,
        &[Panel {
            title: format!("throughput: {title}"),
            log: log.as_ref(),
            faults: faults.as_ref(),
            target: run_target(dir, log.as_ref(), faults.as_ref()),
        }],
    )?;
    made.files.push(p);
    if let Some(log) = &log {
        let p = out.join("latency.svg");
        latency_svg(
            &p,
            &format!("latency of ok ops by percentile: {title}"),
            &ok_spectra(log, "", kind_color, false),
        )?;
        made.files.push(p);
    }
    Ok(made)
}

/// The open model's target of the run in `dir`, from its resolved
/// scenario, drawn from the load's start to the last interval's end.
/// None: no summary, no open model, or no intended start in the history.
fn run_target(dir: &Path, log: Option<&Log>, faults: Option<&Faults>) -> Option<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(dir.join("summary.json")).ok()?;
    let summary: serde_json::Value = serde_json::from_str(&text).ok()?;
    let start = faults?.load_start_s?;
    let end = log
        .map(rates)
        .and_then(|r| r.last().map(|l| l.end_s))
        .unwrap_or(start);
    super::target_curve::target_points(summary.get("resolved_scenario")?, start, end)
}

/// Writes `DIR/plots/throughput.svg` (one panel per variant, shared axes)
/// and `DIR/plots/latency.svg` (one spectrum per variant and op kind: a
/// color per variant, resolve dashed) for a compare folder; `variants` are
/// `(name, run folder)`. A variant without its files is left out with a
/// note. Errors: an unreadable log or history, or an unwritable plot.
pub fn compare_plots(dir: &Path, variants: &[(String, PathBuf)]) -> anyhow::Result<Made> {
    let mut made = Made::default();
    let mut data = Vec::new();
    for (name, vdir) in variants {
        if !vdir.is_dir() {
            made.notes.push(format!(
                "variant {name}: no folder {}: left out",
                vdir.display()
            ));
            continue;
        }
        let (log, faults) = inputs(vdir, &mut made.notes)?;
        data.push((name.clone(), log, faults));
    }
    if data.iter().all(|(_, l, f)| l.is_none() && f.is_none()) {
        made.notes.push(format!("{}: no plot drawn", dir.display()));
        return Ok(made);
    }
    let out = dir.join("plots");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let panels: Vec<Panel> = data
        .iter()
        .map(|(name, log, faults)| Panel {
            target: None,
            title: format!("throughput: {name}"),
            log: log.as_ref(),
            faults: faults.as_ref(),
        })
        .collect();
    let p = out.join("throughput.svg");
    throughput_svg(&p, &panels)?;
    made.files.push(p);
    let spectra: Vec<Spectrum> = data
        .iter()
        .enumerate()
        .filter_map(|(i, (name, log, _))| {
            let c = PALETTE[i % PALETTE.len()];
            log.as_ref()
                .map(|l| ok_spectra(l, &format!("{name}: "), |_| c, true))
        })
        .flatten()
        .collect();
    if !spectra.is_empty() {
        let p = out.join("latency.svg");
        latency_svg(&p, "latency of ok ops by percentile, per variant", &spectra)?;
        made.files.push(p);
    }
    Ok(made)
}
