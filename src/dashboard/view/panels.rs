//! The panels of a running load: header, progress, footer, the layout
//! plan by priority, op counts, latency, throughput and faults.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::*;

pub(super) fn header_line(snap: &Snapshot, pal: &Pal, w: usize) -> Line<'static> {
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

pub(super) fn progress_line(snap: &Snapshot, pal: &Pal, w: usize) -> Line<'static> {
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

pub(super) fn footer_line(pal: &Pal, w: usize) -> Line<'static> {
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
pub(super) fn kinds(snap: &Snapshot) -> Vec<String> {
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
pub(super) struct Plan {
    pub(super) counts: Option<Rect>,
    pub(super) latency: Option<Rect>,
    pub(super) throughput: Option<Rect>,
    pub(super) faults: Option<Rect>,
    pub(super) footer: Option<Rect>,
}

pub(super) fn plan(area: Rect, nk: u16, fault_lines: u16) -> Plan {
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

pub(super) fn live_panels(
    frame: &mut Frame,
    area: Rect,
    snap: &Snapshot,
    rates: &Rates,
    pal: &Pal,
) {
    let kinds = kinds(snap);
    let nk = kinds.len().clamp(1, 20) as u16;
    // Faults are laid out at the width of the whole area less its border.
    let fault_items = fault_items(snap, pal);
    let fault_lines = pack(&fault_items, area.width.saturating_sub(2) as usize).len() as u16;
    // The workload's own rows under the kinds table.
    let extra = snap.workload.as_ref().map_or(0, |w| w.rows.len() as u16);
    let p = plan(area, nk + extra, fault_lines.min(20));
    if let Some(r) = p.counts {
        counts_panel(frame, r, snap, &kinds, pal);
    }
    if let Some(r) = p.latency {
        latency_panel(frame, r, snap, &kinds, pal);
    }
    if let Some(r) = p.throughput {
        // The open model's ingest target now (the load's elapsed time).
        let target = snap
            .info
            .ingest_target
            .as_ref()
            .map(|c| c.target_at(snap.elapsed_s));
        throughput_panel(frame, r, rates, &kinds, target, pal);
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
pub(super) fn columns(rows: &[Vec<Span<'static>>]) -> Vec<Vec<Span<'static>>> {
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

pub(super) fn counts_panel(
    frame: &mut Frame,
    r: Rect,
    snap: &Snapshot,
    kinds: &[String],
    pal: &Pal,
) {
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
    if let Some(w) = &snap.workload {
        lines.extend(workload_lines(w, pal));
    }
    let title = match &snap.workload {
        Some(w) => format!("ops · {}", w.title),
        None => format!("ops · {} events generated", snap.generated),
    };
    let inner = panel(frame, r, &title, lines.len() as u16, pal);
    draw_lines(frame, inner, lines);
}

/// Resolves: resolved, refused, regressions seen, as long as fits `room`.
pub(super) fn resolves(snap: &Snapshot, room: usize, pal: &Pal) -> Vec<Span<'static>> {
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

/// The workload's own rows under the kinds table (a kind's row has no
/// room for them beside it).
pub(super) fn workload_lines(w: &WorkloadLive, pal: &Pal) -> Vec<Vec<Span<'static>>> {
    w.rows
        .iter()
        .map(|row| {
            let mut out = Vec::new();
            for (i, f) in row.iter().enumerate() {
                let lead = if i == 0 { " " } else { "  " };
                let style = match f.tone {
                    Tone::Plain => Style::default(),
                    Tone::Good => pal.fg(Color::Green),
                    Tone::Warn(n) => pal.alarm(n, Color::Yellow),
                };
                out.push(Span::styled(format!("{lead}{} ", f.name), pal.dim()));
                out.push(Span::styled(f.value.clone(), style));
            }
            out
        })
        .collect()
}

pub(super) fn latency_cells(l: Option<&Latency>) -> Vec<String> {
    match l {
        Some(l) if l.count > 0 => [l.p50, l.p90, l.p99, l.p999, l.max]
            .into_iter()
            .map(dur_us)
            .collect(),
        _ => vec!["-".into(); 5],
    }
}

pub(super) fn latency_panel(
    frame: &mut Frame,
    r: Rect,
    snap: &Snapshot,
    kinds: &[String],
    pal: &Pal,
) {
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

pub(super) fn throughput_panel(
    frame: &mut Frame,
    r: Rect,
    rates: &Rates,
    kinds: &[String],
    target: Option<f64>,
    pal: &Pal,
) {
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
            // The ingest target beside the achieved rate (the first kind
            // is the one the target paces).
            if let Some(t) = target.filter(|_| i == 0) {
                lines.push(vec![Span::styled(
                    format!(" target {}", per_s(t)),
                    pal.dim(),
                )]);
            }
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
pub(super) fn throughput_chart(
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
pub(super) fn fault_items(snap: &Snapshot, pal: &Pal) -> Vec<Vec<Span<'static>>> {
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
pub(super) fn pack(items: &[Vec<Span<'static>>], w: usize) -> Vec<Vec<Span<'static>>> {
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
