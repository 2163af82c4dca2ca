//! Fitting text into cells (width, truncation, wrapping), figures as
//! short text, and carving panels out of the frame.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::*;

/// Display width of `s` in cells.
pub(super) fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// The longest start of `s` at most `w` cells wide.
pub(super) fn prefix(s: &str, w: usize) -> String {
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
pub(super) fn trunc(s: &str, w: usize) -> String {
    if width(s) <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    prefix(s, w - 1) + "…"
}

/// Spans cut to `w` cells in all, the last one ending in `…` when cut.
pub(super) fn fit(spans: Vec<Span<'static>>, w: usize) -> Line<'static> {
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
pub(super) fn wrap(text: &str, w: usize) -> Vec<String> {
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
pub(super) fn dur_us(us: f64) -> String {
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
pub(super) fn per_s(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.0}/s")
    } else {
        "-".into()
    }
}

pub(super) fn take_top(r: &mut Rect, h: u16) -> Rect {
    let h = h.min(r.height);
    let top = Rect { height: h, ..*r };
    r.y += h;
    r.height -= h;
    top
}

pub(super) fn take_bottom(r: &mut Rect, h: u16) -> Rect {
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
pub(super) fn panel(frame: &mut Frame, r: Rect, title: &str, content: u16, pal: &Pal) -> Rect {
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
pub(super) fn draw_lines(frame: &mut Frame, r: Rect, lines: Vec<Vec<Span<'static>>>) {
    let w = r.width as usize;
    let lines: Vec<Line> = lines
        .into_iter()
        .take(r.height as usize)
        .map(|l| fit(l, w))
        .collect();
    frame.render_widget(Paragraph::new(lines), r);
}

// ---------------------------------------------------------------- header
