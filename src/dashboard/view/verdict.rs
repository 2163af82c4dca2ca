//! The verdict panel shown after the audit, and the help overlay.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::*;
use crate::exit_code::ExitCode;

/// `stranded`: the run's workload has stranded events to show.
pub(super) fn verdict_panel(
    frame: &mut Frame,
    area: Rect,
    v: &Verdicts,
    stranded: bool,
    pal: &Pal,
) {
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
    if stranded {
        lines.push((
            2,
            vec![
                Span::styled(" stranded events ", pal.dim()),
                match v.stranded {
                    Some(n) => Span::styled(n.to_string(), pal.alarm(n, Color::Yellow)),
                    None => Span::styled("cannot tell", pal.alarm(1, Color::Yellow)),
                },
            ],
        ));
    }
    let code_style = match ExitCode::from_code(v.exit.0) {
        Some(ExitCode::Met) => pal.bold(Color::Green),
        Some(ExitCode::Inconclusive | ExitCode::Interrupted) => pal.bold(Color::Yellow),
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
        let title = match ExitCode::from_code(v.exit.0) {
            Some(ExitCode::Met) => "verdicts · expectation met",
            Some(ExitCode::NotMet) => "verdicts · expectation not met",
            Some(ExitCode::Target) => "verdicts · target unusable",
            Some(ExitCode::Inconclusive) => "verdicts · inconclusive",
            Some(ExitCode::Interrupted) => "verdicts · interrupted, partial",
            Some(ExitCode::Usage) | None => "verdicts",
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

pub(super) fn help_overlay(frame: &mut Frame, area: Rect, done: bool, pal: &Pal) {
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
