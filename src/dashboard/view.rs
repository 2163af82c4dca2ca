//! The pure rendering of one dashboard frame: [`render`] draws a
//! [`Snapshot`] (and the throughput history in [`Rates`]) into a ratatui
//! [`Frame`]. Nothing here reads a clock, the terminal or the environment:
//! the same arguments always give the same buffer.
//!
//! Layout, top to bottom: a header (scenario / variant on target, seed,
//! phase), a progress line, the panels, a footer with the keys. While the
//! load runs the panels are the op counts (ok / fail / info per kind, with
//! duplicates and resolves), the latency percentiles, the throughput
//! sparklines (line charts when tall) and the faults; once the verdicts
//! are in, one verdict panel takes their place. From 120 columns on, counts
//! and latency sit side by side. When rows run short, panels go by priority: header, progress and
//! counts stay longest, then the footer, latency, throughput and faults.
//! Texts too long for their place are truncated (`…`) or wrapped.

use crate::checker::Verdict;
use crate::live::{Phase, Rates, Snapshot, Verdicts};
use crate::report::summary::Latency;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Chart, Clear, Dataset, GraphType, Paragraph, Sparkline,
};
use ratatui::Frame;

/// What the user toggled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UiState {
    /// The help overlay is shown.
    pub help: bool,
    /// Colors are used (false under `NO_COLOR`: plain, bold and reversed
    /// styles only).
    pub color: bool,
}

/// From this width on, counts and latency sit side by side.
const WIDE: u16 = 120;

/// Draws one frame: header (scenario / variant on target, seed, phase), a
/// progress gauge with elapsed and what is left (Snapshot::progress),
/// throughput over time per op kind (a sparkline of Rates::series for each
/// kind, a line chart with axes where a kind has 6 rows or more, with the
/// latest and peak ops/s), a table of latency percentiles per op
/// kind (p50 p90 p99 p99.9 max), ok/fail/info counts per kind, duplicates
/// rejected, resolves (resolved, refused, regressions seen), faults
/// injected per kind and which are active now, and a footer with the keys
/// (q stop, ? help). When `snap.verdicts` is Some, a verdict panel takes
/// the main area: each invariant with its verdict and the first finding's
/// explanation (wrapped), stranded events, the exit code and rule, the run
/// folder, and "press any key to exit". When `ui.help` is true, a help
/// overlay lists the keys.
pub fn render(frame: &mut Frame, snap: &Snapshot, rates: &Rates, ui: &UiState) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let pal = Pal { color: ui.color };
    let mut rest = area;
    let header = take_top(&mut rest, 1);
    frame.render_widget(
        Paragraph::new(header_line(snap, &pal, header.width as usize)),
        header,
    );
    if rest.height > 0 {
        let progress = take_top(&mut rest, 1);
        frame.render_widget(
            Paragraph::new(progress_line(snap, &pal, progress.width as usize)),
            progress,
        );
    }
    if rest.height > 0 {
        match &snap.verdicts {
            Some(v) => verdict_panel(frame, rest, v, &pal),
            None => live_panels(frame, rest, snap, rates, &pal),
        }
    }
    if ui.help {
        help_overlay(frame, area, snap.verdicts.is_some(), &pal);
    }
}

// ---------------------------------------------------------------- styles

/// Styles, or their plain fallbacks without color.
struct Pal {
    color: bool,
}

impl Pal {
    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    fn bold(&self, c: Color) -> Style {
        self.fg(c).add_modifier(Modifier::BOLD)
    }

    fn plain(&self) -> Style {
        Style::default()
    }

    fn dim(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    fn title(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    fn key(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    fn kind(&self, i: usize) -> Style {
        const KINDS: [Color; 4] = [Color::Cyan, Color::Magenta, Color::Blue, Color::Green];
        self.fg(KINDS[i % KINDS.len()])
    }

    fn verdict(&self, v: Verdict) -> Style {
        match v {
            Verdict::Holds => self.bold(Color::Green),
            Verdict::Violated => self.bold(Color::Red),
            Verdict::Unknown => self.bold(Color::Yellow),
        }
    }

    fn phase(&self, p: Phase) -> Style {
        match p {
            Phase::Load => self.bold(Color::Green),
            Phase::Draining => self.bold(Color::Yellow),
            Phase::Audit => self.bold(Color::Magenta),
            Phase::Done => self.bold(Color::Cyan),
        }
    }

    /// A count that is bad when non-zero.
    fn alarm(&self, n: u64, c: Color) -> Style {
        if n > 0 {
            self.fg(c)
        } else {
            self.plain()
        }
    }
}

// ---------------------------------------------------------------- text

/// Display width of `s` in cells.
fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// The longest start of `s` at most `w` cells wide.
fn prefix(s: &str, w: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    let mut buf = [0u8; 4];
    for ch in s.chars() {
        let cw = width(ch.encode_utf8(&mut buf));
        if used + cw > w {
            break;
        }
        used += cw;
        out.push(ch);
    }
    out
}

/// `s` cut to `w` cells, ending in `…` when cut.
fn trunc(s: &str, w: usize) -> String {
    if width(s) <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    prefix(s, w - 1) + "…"
}

/// Spans cut to `w` cells in all, the last one ending in `…` when cut.
fn fit(spans: Vec<Span<'static>>, w: usize) -> Line<'static> {
    let total: usize = spans.iter().map(Span::width).sum();
    if total <= w {
        return Line::from(spans);
    }
    let mut out = Vec::new();
    let mut used = 0;
    for s in spans {
        let sw = s.width();
        if used + sw < w {
            used += sw;
            out.push(s);
        } else {
            // Cut here, leaving room for the `…` even when this span
            // would just fit: more follows.
            // (Nothing but blanks would show of it: then nothing.)
            let cut = prefix(&s.content, w - used - 1);
            if !cut.trim().is_empty() {
                out.push(Span::styled(cut + "…", s.style));
            }
            break;
        }
    }
    Line::from(out)
}

/// `text` wrapped at word boundaries to lines of at most `w` cells (words
/// longer than a line are cut across lines).
fn wrap(text: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let sep = usize::from(!cur.is_empty());
            if width(&cur) + sep + width(&word) <= w {
                if sep == 1 {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
                continue;
            }
            // A word longer than a line: cut it.
            let mut head = String::new();
            let mut rest = String::new();
            let mut used = 0;
            let mut buf = [0u8; 4];
            for ch in word.chars() {
                let cw = width(ch.encode_utf8(&mut buf));
                if rest.is_empty() && (used + cw <= w || head.is_empty()) {
                    used += cw;
                    head.push(ch);
                } else {
                    rest.push(ch);
                }
            }
            lines.push(head);
            word = rest;
            if word.is_empty() {
                break;
            }
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Latency in µs as human.rs writes it (`812µs`, `4.5ms`), and seconds
/// from 10 s on (`12.3s`).
fn dur_us(us: f64) -> String {
    if !us.is_finite() {
        "-".into()
    } else if us >= 10_000_000.0 {
        format!("{:.1}s", us / 1e6)
    } else if us >= 1000.0 {
        format!("{:.1}ms", us / 1000.0)
    } else {
        format!("{us:.0}µs")
    }
}

/// A rate, ops/s.
fn per_s(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.0}/s")
    } else {
        "-".into()
    }
}

fn take_top(r: &mut Rect, h: u16) -> Rect {
    let h = h.min(r.height);
    let top = Rect { height: h, ..*r };
    r.y += h;
    r.height -= h;
    top
}

fn take_bottom(r: &mut Rect, h: u16) -> Rect {
    let h = h.min(r.height);
    r.height -= h;
    Rect {
        y: r.y + r.height,
        height: h,
        ..*r
    }
}

/// A panel of `content` rows: bordered and titled when the border fits
/// around all of it, else bare. Returns the content area.
fn panel(frame: &mut Frame, r: Rect, title: &str, content: u16, pal: &Pal) -> Rect {
    if r.height >= content.saturating_add(2) && r.width >= 8 && r.height >= 3 {
        let t = trunc(title, r.width.saturating_sub(4) as usize);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(pal.border())
            .title(Span::styled(format!(" {t} "), pal.title()));
        let inner = block.inner(r);
        frame.render_widget(block, r);
        inner
    } else {
        r
    }
}

/// Lines cut to `w` cells, drawn in `r`.
fn draw_lines(frame: &mut Frame, r: Rect, lines: Vec<Vec<Span<'static>>>) {
    let w = r.width as usize;
    let lines: Vec<Line> = lines
        .into_iter()
        .take(r.height as usize)
        .map(|l| fit(l, w))
        .collect();
    frame.render_widget(Paragraph::new(lines), r);
}

// ---------------------------------------------------------------- header

fn header_line(snap: &Snapshot, pal: &Pal, w: usize) -> Line<'static> {
    let i = &snap.info;
    let name = Span::styled(format!("{} / {}", i.scenario, i.variant), pal.title());
    let brand = Span::styled(" specstorm ", pal.bold(Color::Cyan));
    let seed = Span::styled(format!("  seed {}", i.seed), pal.dim());
    let phase = vec![
        Span::styled("  phase ", pal.dim()),
        Span::styled(snap.phase.name().to_string(), pal.phase(snap.phase)),
        Span::raw(" "),
    ];
    let tail_w = seed.width() + phase.iter().map(Span::width).sum::<usize>();
    // The target gets what is left after everything else: cut first.
    let fixed = brand.width() + name.width() + " on ".len() + tail_w;
    let mut spans = vec![brand.clone(), name.clone()];
    if fixed < w {
        let on = trunc(&i.target, w - fixed);
        spans.push(Span::styled(" on ", pal.dim()));
        spans.push(Span::raw(on));
        spans.push(seed);
        spans.extend(phase);
        return fit(spans, w);
    }
    // No room for the target: name, phase, seed if it fits.
    let mut spans = vec![name];
    spans.extend(phase.clone());
    if spans.iter().map(Span::width).sum::<usize>() + seed.width() <= w {
        spans.insert(1, seed);
    }
    if spans.iter().map(Span::width).sum::<usize>() + brand.width() <= w {
        spans.insert(0, brand);
    } else {
        spans.insert(0, Span::raw(" "));
    }
    // Still too long: the phase first, then the name, cut.
    if spans.iter().map(Span::width).sum::<usize>() > w {
        let mut short = vec![Span::styled(
            format!("{} ", snap.phase.name()),
            pal.phase(snap.phase),
        )];
        short.push(Span::styled(
            format!("{} / {}", i.scenario, i.variant),
            pal.title(),
        ));
        return fit(short, w);
    }
    fit(spans, w)
}

fn progress_line(snap: &Snapshot, pal: &Pal, w: usize) -> Line<'static> {
    let (frac, left) = snap.progress();
    let frac = frac.filter(|f| f.is_finite()).map(|f| f.clamp(0.0, 1.0));
    let ran = if snap.phase == Phase::Load {
        "elapsed"
    } else {
        "load ran"
    };
    let secs = if snap.elapsed_s.is_finite() {
        snap.elapsed_s.max(0.0)
    } else {
        0.0
    };
    let elapsed = Span::raw(format!(" {ran} {secs:.1}s "));
    // What is left while the load runs; what happens after it.
    let left = match snap.phase {
        Phase::Load => match left {
            Some(l) => format!(" · {l}"),
            None => " · no stop limit: q stops".into(),
        },
        Phase::Draining => " · stopping: ops in flight finish".into(),
        Phase::Audit => " · load over, audit runs".into(),
        Phase::Done => " · load over".into(),
    };
    let Some(f) = frac else {
        let left = left.trim_start_matches(" ·").to_string();
        return fit(vec![elapsed, Span::styled(left, pal.dim())], w);
    };
    let pct = format!(" {:>3.0}%", (f * 100.0).floor());
    let fixed = elapsed.width() + pct.len() + width(&left);
    let bar_w = w.saturating_sub(fixed).min(60);
    if bar_w < 5 {
        // No room for a bar: what is left first, the elapsed time after.
        return fit(
            vec![
                Span::styled(pct, pal.title()),
                Span::raw(left),
                Span::styled(format!(" · {ran} {secs:.1}s"), pal.dim()),
            ],
            w,
        );
    }
    let filled = ((bar_w as f64) * f).round() as usize;
    fit(
        vec![
            elapsed,
            Span::styled("█".repeat(filled), pal.fg(Color::Green)),
            Span::styled("░".repeat(bar_w - filled), pal.dim()),
            Span::styled(pct, pal.title()),
            Span::raw(left),
        ],
        w,
    )
}

fn footer_line(pal: &Pal, w: usize) -> Line<'static> {
    fit(
        vec![
            Span::raw(" "),
            Span::styled(" q ", pal.key()),
            Span::raw(" stop  "),
            Span::styled(" ? ", pal.key()),
            Span::raw(" help  "),
            Span::styled(" Ctrl-C ", pal.key()),
            Span::raw(" stop, twice: abort"),
        ],
        w,
    )
}

// ---------------------------------------------------------------- load panels

/// Op kinds shown, in report order (`ingest`, `resolve`).
fn kinds(snap: &Snapshot) -> Vec<String> {
    let mut k: Vec<String> = snap.ops.keys().cloned().collect();
    for l in snap.latency.keys() {
        if !k.contains(l) {
            k.push(l.clone());
        }
    }
    k
}

/// Where each panel of the running load goes.
#[derive(Default)]
struct Plan {
    counts: Option<Rect>,
    latency: Option<Rect>,
    throughput: Option<Rect>,
    faults: Option<Rect>,
    footer: Option<Rect>,
}

fn plan(area: Rect, nk: u16, fault_lines: u16) -> Plan {
    let mut p = Plan::default();
    let table = 2 + 1 + nk; // border, header, one row per kind
    let mut left = area.height;
    let wide = area.width >= WIDE;
    let counts_h = left.min(table);
    left -= counts_h;
    let footer = left >= 1;
    left -= u16::from(footer);
    let latency_h = if wide {
        // Side by side with the counts, when they have all their rows.
        0
    } else if left >= table {
        table
    } else {
        0
    };
    let latency_shown = if wide {
        counts_h == table
    } else {
        latency_h > 0
    };
    left -= latency_h;
    let tp_min = 2 + nk;
    let tp_shown = left >= tp_min;
    if tp_shown {
        left -= tp_min;
    }
    let faults_h = if fault_lines > 0 && left >= 3 {
        (2 + fault_lines).min(left)
    } else {
        0
    };
    left -= faults_h;
    let tp_h = if tp_shown { tp_min + left } else { 0 };

    let mut rest = area;
    if footer {
        p.footer = Some(take_bottom(&mut rest, 1));
    }
    let band = take_top(&mut rest, counts_h);
    if wide && latency_shown {
        let half = band.width / 2;
        p.counts = Some(Rect {
            width: half,
            ..band
        });
        p.latency = Some(Rect {
            x: band.x + half,
            width: band.width - half,
            ..band
        });
    } else {
        p.counts = Some(band);
        if latency_shown {
            p.latency = Some(take_top(&mut rest, latency_h));
        }
    }
    if tp_shown {
        p.throughput = Some(take_top(&mut rest, tp_h));
    }
    if faults_h > 0 {
        p.faults = Some(take_top(&mut rest, faults_h));
    }
    p
}

fn live_panels(frame: &mut Frame, area: Rect, snap: &Snapshot, rates: &Rates, pal: &Pal) {
    let kinds = kinds(snap);
    let nk = kinds.len().clamp(1, 20) as u16;
    // Faults are laid out at the width of the whole area less its border.
    let fault_items = fault_items(snap, pal);
    let fault_lines = pack(&fault_items, area.width.saturating_sub(2) as usize).len() as u16;
    let p = plan(area, nk, fault_lines.min(20));
    if let Some(r) = p.counts {
        counts_panel(frame, r, snap, &kinds, pal);
    }
    if let Some(r) = p.latency {
        latency_panel(frame, r, snap, &kinds, pal);
    }
    if let Some(r) = p.throughput {
        throughput_panel(frame, r, rates, &kinds, pal);
    }
    if let Some(r) = p.faults {
        let inner = panel(frame, r, "faults", fault_lines, pal);
        let lines = pack(&fault_items, inner.width as usize);
        draw_lines(frame, inner, lines);
    }
    if let Some(r) = p.footer {
        frame.render_widget(Paragraph::new(footer_line(pal, r.width as usize)), r);
    }
}

/// Right-aligned columns: `cells[row][col]`, widths from the widest cell;
/// the first column is left-aligned.
fn columns(rows: &[Vec<Span<'static>>]) -> Vec<Vec<Span<'static>>> {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..ncol)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(Span::width)
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            let mut out = vec![Span::raw(" ")];
            for (c, s) in r.iter().enumerate() {
                let pad = widths[c].saturating_sub(s.width());
                let text = if c == 0 {
                    format!("{}{}", s.content, " ".repeat(pad))
                } else {
                    format!("  {}{}", " ".repeat(pad), s.content)
                };
                out.push(Span::styled(text, s.style));
            }
            out
        })
        .collect()
}

fn counts_panel(frame: &mut Frame, r: Rect, snap: &Snapshot, kinds: &[String], pal: &Pal) {
    let head = |s: &str| Span::styled(s.to_string(), pal.title());
    let mut rows = vec![vec![head("kind"), head("ok"), head("fail"), head("info")]];
    for (i, k) in kinds.iter().enumerate() {
        let c = snap.ops.get(k).cloned().unwrap_or_default();
        rows.push(vec![
            Span::styled(k.clone(), pal.kind(i)),
            Span::styled(c.ok.to_string(), pal.fg(Color::Green)),
            Span::styled(c.fail.to_string(), pal.alarm(c.fail, Color::Red)),
            Span::styled(c.info.to_string(), pal.alarm(c.info, Color::Yellow)),
        ]);
    }
    let mut lines = columns(&rows);
    // Each kind's own figures after its row.
    let table_w = lines
        .first()
        .map(|l| l.iter().map(Span::width).sum::<usize>())
        .unwrap_or(0);
    let inner_w = if r.height >= kinds.len() as u16 + 3 && r.width >= 8 {
        r.width.saturating_sub(2) as usize
    } else {
        r.width as usize
    };
    let room = inner_w.saturating_sub(table_w + 3);
    for (i, k) in kinds.iter().enumerate() {
        let extra = match k.as_str() {
            "ingest" => vec![
                Span::styled("duplicates rejected ", pal.dim()),
                Span::raw(snap.duplicates.to_string()),
            ],
            "resolve" => resolves(snap, room, pal),
            _ => Vec::new(),
        };
        if !extra.is_empty() {
            lines[i + 1].push(Span::raw("   "));
            lines[i + 1].extend(extra);
        }
    }
    let title = format!("ops · {} events generated", snap.generated);
    let inner = panel(frame, r, &title, lines.len() as u16, pal);
    draw_lines(frame, inner, lines);
}

/// Resolves: resolved, refused, regressions seen, as long as fits `room`.
fn resolves(snap: &Snapshot, room: usize, pal: &Pal) -> Vec<Span<'static>> {
    let reg = pal.alarm(snap.regressed_seen, Color::Red);
    let reg = if snap.regressed_seen > 0 {
        reg.add_modifier(Modifier::BOLD)
    } else {
        reg
    };
    let forms = [
        ["resolved ", "  refused ", "  regressions seen "],
        ["resolved ", " refused ", " regressed "],
        ["res ", " ref ", " reg "],
    ];
    let nums = [snap.resolved, snap.refused, snap.regressed_seen];
    let build = |f: &[&str; 3]| -> Vec<Span<'static>> {
        vec![
            Span::styled(f[0].to_string(), pal.dim()),
            Span::raw(nums[0].to_string()),
            Span::styled(f[1].to_string(), pal.dim()),
            Span::raw(nums[1].to_string()),
            Span::styled(f[2].to_string(), pal.dim()),
            Span::styled(nums[2].to_string(), reg),
        ]
    };
    for f in &forms[..2] {
        let s = build(f);
        if s.iter().map(Span::width).sum::<usize>() <= room {
            return s;
        }
    }
    build(&forms[2])
}

fn latency_cells(l: Option<&Latency>) -> Vec<String> {
    match l {
        Some(l) if l.count > 0 => [l.p50, l.p90, l.p99, l.p999, l.max]
            .into_iter()
            .map(dur_us)
            .collect(),
        _ => vec!["-".into(); 5],
    }
}

fn latency_panel(frame: &mut Frame, r: Rect, snap: &Snapshot, kinds: &[String], pal: &Pal) {
    let head = |s: &str| Span::styled(s.to_string(), pal.title());
    let mut rows = vec![["kind", "p50", "p90", "p99", "p99.9", "max"]
        .into_iter()
        .map(head)
        .collect::<Vec<_>>()];
    for (i, k) in kinds.iter().enumerate() {
        let mut row = vec![Span::styled(k.clone(), pal.kind(i))];
        row.extend(
            latency_cells(snap.latency.get(k))
                .into_iter()
                .map(Span::raw),
        );
        rows.push(row);
    }
    let lines = columns(&rows);
    let inner = panel(frame, r, "latency of ok ops", lines.len() as u16, pal);
    draw_lines(frame, inner, lines);
}

fn throughput_panel(frame: &mut Frame, r: Rect, rates: &Rates, kinds: &[String], pal: &Pal) {
    let nk = kinds.len().max(1) as u16;
    let n = rates.series(kinds.first().map_or("", String::as_str)).len();
    let title = if n > 0 {
        format!("throughput, ops/s, last {n} s")
    } else {
        "throughput, ops/s".to_string()
    };
    let inner = panel(frame, r, &title, nk, pal);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let label_w = if inner.width >= 40 {
        kinds.iter().map(|k| width(k)).max().unwrap_or(0).max(10) as u16 + 3
    } else {
        0
    };
    let mut rest = inner;
    for (i, k) in kinds.iter().enumerate() {
        if rest.height == 0 {
            break;
        }
        let left = (kinds.len() - i) as u16;
        let h = (rest.height / left).max(1);
        let band = take_top(&mut rest, h);
        let series = rates.series(k);
        let latest = rates.latest(k);
        let peak = series.iter().copied().fold(0.0f64, f64::max);
        let (label, spark) = if label_w > 0 {
            (
                Rect {
                    width: label_w,
                    ..band
                },
                Rect {
                    x: band.x + label_w,
                    width: band.width - label_w,
                    ..band
                },
            )
        } else {
            // Narrow: name and rate on the band's first row, the
            // sparkline under it when there is a row to spare.
            let mut b = band;
            let top = take_top(&mut b, 1);
            (top, if b.height > 0 { b } else { Rect::default() })
        };
        let name = Span::styled(format!(" {k}"), pal.kind(i).add_modifier(Modifier::BOLD));
        let mut lines = vec![vec![name.clone()]];
        if label_w > 0 {
            lines.push(vec![Span::raw(format!(" {}", per_s(latest)))]);
            lines.push(vec![Span::styled(
                format!(" peak {}", per_s(peak)),
                pal.dim(),
            )]);
            if band.height == 1 {
                lines = vec![vec![name, Span::raw(" "), Span::raw(per_s(latest))]];
            }
        } else {
            lines[0].push(Span::raw(" "));
            lines[0].push(Span::raw(per_s(latest)));
        }
        draw_lines(frame, label, lines);
        if spark.width == 0 || spark.height == 0 {
            continue;
        }
        if spark.height >= 6 && spark.width >= 30 {
            throughput_chart(frame, spark, &series, peak, pal.kind(i), pal);
            continue;
        }
        // The latest samples, each stretched over the same number of
        // columns when they are fewer than the columns.
        let vals: Vec<u64> = series
            .iter()
            .map(|v| {
                if v.is_finite() {
                    v.round().max(0.0) as u64
                } else {
                    0
                }
            })
            .collect();
        let cols = spark.width as usize;
        let stretch = if vals.is_empty() {
            1
        } else {
            (cols / vals.len()).max(1)
        };
        let mut data: Vec<u64> = vals
            .iter()
            .flat_map(|v| std::iter::repeat_n(*v, stretch))
            .collect();
        if data.len() > cols {
            data.drain(..data.len() - cols);
        }
        let max = data.iter().copied().max().unwrap_or(0).max(1);
        // Right-aligned: the latest sample at the right edge.
        let shift = (cols - data.len()) as u16;
        let spark = Rect {
            x: spark.x + shift,
            width: spark.width - shift,
            ..spark
        };
        frame.render_widget(
            Sparkline::default().data(&data).max(max).style(pal.kind(i)),
            spark,
        );
    }
}

/// A tall band's throughput: a line chart with axes (sample index = about
/// a second; the last one is now).
fn throughput_chart(
    frame: &mut Frame,
    r: Rect,
    series: &[f64],
    peak: f64,
    style: Style,
    pal: &Pal,
) {
    let pts: Vec<(f64, f64)> = series
        .iter()
        .enumerate()
        .map(|(j, v)| (j as f64, if v.is_finite() { v.max(0.0) } else { 0.0 }))
        .collect();
    let n = pts.len();
    let x_max = n.saturating_sub(1).max(1) as f64;
    let top = if peak.is_finite() && peak >= 1.0 {
        (peak * 1.1).ceil()
    } else {
        1.0
    };
    let chart = Chart::new(vec![Dataset::default()
        .data(&pts)
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(style)])
    .x_axis(
        Axis::default()
            .bounds([0.0, x_max])
            .style(pal.dim())
            .labels([format!("-{}s", n.saturating_sub(1)), "now".to_string()]),
    )
    .y_axis(
        Axis::default()
            .bounds([0.0, top])
            .style(pal.dim())
            .labels_alignment(Alignment::Right)
            .labels([
                "0".to_string(),
                format!("{:.0}", top / 2.0),
                format!("{top:.0}"),
            ]),
    )
    .legend_position(None);
    frame.render_widget(chart, r);
}

/// Faults injected per kind, the active ones marked.
fn fault_items(snap: &Snapshot, pal: &Pal) -> Vec<Vec<Span<'static>>> {
    let mut items: Vec<Vec<Span<'static>>> = Vec::new();
    let mut names: Vec<&String> = snap.faults_injected.keys().collect();
    for a in &snap.faults_active {
        if !names.contains(&a) {
            names.push(a);
        }
    }
    for k in names {
        let n = snap.faults_injected.get(k).copied().unwrap_or(0);
        let mut item = vec![
            Span::styled(k.clone(), pal.title()),
            Span::raw(format!(" {n}")),
        ];
        if snap.faults_active.contains(k) {
            item.push(Span::raw(" "));
            item.push(Span::styled(
                " ACTIVE NOW ".to_string(),
                pal.bold(Color::Red).add_modifier(Modifier::REVERSED),
            ));
        }
        items.push(item);
    }
    items
}

/// Items packed greedily into lines of `w` cells, two spaces apart.
fn pack(items: &[Vec<Span<'static>>], w: usize) -> Vec<Vec<Span<'static>>> {
    let mut lines: Vec<Vec<Span<'static>>> = Vec::new();
    let mut used = 0;
    for it in items {
        let iw: usize = it.iter().map(Span::width).sum();
        match lines.last_mut() {
            Some(l) if used + 3 + iw <= w => {
                l.push(Span::raw("   "));
                l.extend(it.iter().cloned());
                used += 3 + iw;
            }
            _ => {
                let mut l = vec![Span::raw(" ")];
                l.extend(it.iter().cloned());
                lines.push(l);
                used = 1 + iw;
            }
        }
    }
    lines
}

// ---------------------------------------------------------------- verdicts

fn verdict_panel(frame: &mut Frame, area: Rect, v: &Verdicts, pal: &Pal) {
    // Content at the width inside a border; whether the border fits is
    // decided once the lines are counted.
    let bordered = area.width >= 20 && area.height >= 5;
    let w = if bordered {
        area.width as usize - 2
    } else {
        area.width as usize
    };
    // (priority, line): lower priorities stay longest.
    let mut lines: Vec<(u8, Vec<Span<'static>>)> = Vec::new();
    let name_w = v
        .invariants
        .iter()
        .map(|i| width(&i.0))
        .max()
        .unwrap_or(0)
        .min(24);
    for (name, verdict, n, first) in &v.invariants {
        let text = match verdict {
            Verdict::Holds => "holds".to_string(),
            Verdict::Violated => format!("VIOLATED {n}"),
            Verdict::Unknown => format!("unknown {n}"),
        };
        let name = trunc(name, name_w);
        let pad = name_w.saturating_sub(width(&name));
        lines.push((
            0,
            vec![
                Span::styled(format!(" {name}{}  ", " ".repeat(pad)), pal.title()),
                Span::styled(text, pal.verdict(*verdict)),
            ],
        ));
        if let Some(e) = first.as_deref().filter(|_| *verdict != Verdict::Holds) {
            for (j, l) in wrap(e, w.saturating_sub(5)).into_iter().enumerate() {
                lines.push((
                    if j == 0 { 2 } else { 4 },
                    vec![Span::raw(format!("    {l}"))],
                ));
            }
        }
    }
    lines.push((5, Vec::new()));
    lines.push((
        2,
        vec![
            Span::styled(" stranded events ", pal.dim()),
            Span::styled(v.stranded.to_string(), pal.alarm(v.stranded, Color::Yellow)),
        ],
    ));
    let code_style = match v.exit.0 {
        0 => pal.bold(Color::Green),
        4 | 130 => pal.bold(Color::Yellow),
        _ => pal.bold(Color::Red),
    };
    let exit = format!("exit {}", v.exit.0);
    let rule_w = w.saturating_sub(width(&exit) + 4);
    for (j, l) in wrap(&v.exit.1, rule_w).into_iter().enumerate() {
        let lead = if j == 0 {
            Span::styled(format!(" {exit}: "), code_style)
        } else {
            Span::raw(" ".repeat(width(&exit) + 3))
        };
        lines.push((if j == 0 { 1 } else { 3 }, vec![lead, Span::raw(l)]));
    }
    lines.push((
        1,
        vec![
            Span::styled(" results ", pal.dim()),
            Span::raw(v.run_dir.clone()),
        ],
    ));

    let inner_h = if bordered {
        area.height - 2
    } else {
        area.height
    } as usize;
    // The last row says how to leave; the rest shows what fits, by
    // priority.
    let room = inner_h.saturating_sub(1);
    let keep = (0..=5u8)
        .rev()
        .find(|p| lines.iter().filter(|l| l.0 <= *p).count() <= room)
        .unwrap_or(0);
    let shown: Vec<Vec<Span<'static>>> = lines
        .into_iter()
        .filter(|l| l.0 <= keep)
        .map(|l| l.1)
        .take(room)
        .collect();
    let inner = if bordered {
        // The exit code's meaning (cli.md), not a blanket "failed".
        let title = match v.exit.0 {
            0 => "verdicts · expectation met",
            1 => "verdicts · expectation not met",
            3 => "verdicts · target unusable",
            4 => "verdicts · inconclusive",
            130 => "verdicts · interrupted, partial",
            _ => "verdicts",
        };
        panel(frame, area, title, area.height - 2, pal)
    } else {
        area
    };
    let mut body = inner;
    let bottom = take_bottom(&mut body, 1);
    draw_lines(frame, body, shown);
    frame.render_widget(
        Paragraph::new(fit(
            vec![Span::styled(
                " press any key to exit ".to_string(),
                pal.key(),
            )],
            bottom.width as usize,
        )),
        bottom,
    );
}

// ---------------------------------------------------------------- help

fn help_overlay(frame: &mut Frame, area: Rect, done: bool, pal: &Pal) {
    let mut keys: Vec<(&str, &str)> = vec![
        (
            "q, Ctrl-C",
            "stop gracefully (the audit still runs, results are saved)",
        ),
        ("Ctrl-C again", "abort at once"),
        ("?", "toggle this help"),
    ];
    if done {
        keys.push(("any key", "exit (the run is over)"));
    }
    let w = area.width.min(76);
    let bordered = w >= 24 && area.height >= 5;
    let inner_w = if bordered { w - 2 } else { w } as usize;
    let key_w = keys.iter().map(|k| width(k.0)).max().unwrap_or(0);
    let text_w = inner_w.saturating_sub(key_w + 3).max(1);
    let mut lines: Vec<Vec<Span<'static>>> = Vec::new();
    for (k, what) in &keys {
        for (j, l) in wrap(what, text_w).into_iter().enumerate() {
            let lead = if j == 0 {
                Span::styled(format!(" {k:<key_w$}  "), pal.bold(Color::Cyan))
            } else {
                Span::raw(" ".repeat(key_w + 3))
            };
            lines.push(vec![lead, Span::raw(l)]);
        }
    }
    let h = (lines.len() as u16 + if bordered { 2 } else { 0 }).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    frame.render_widget(Clear, r);
    let inner = if bordered {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(pal.fg(Color::Cyan))
            .title(Span::styled(" keys ", pal.title()));
        let inner = block.inner(r);
        frame.render_widget(block, r);
        inner
    } else {
        r
    };
    draw_lines(frame, inner, lines);
}
