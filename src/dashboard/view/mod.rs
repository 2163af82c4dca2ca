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
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::figures::Latency;
use crate::live::{Phase, Rates, Snapshot, Tone, Verdicts, WorkloadLive};
use crate::verdict::Verdict;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Chart, Clear, Dataset, GraphType, Paragraph, Sparkline,
};
use ratatui::Frame;

mod draw;
mod panels;
mod verdict;

use draw::*;
use panels::*;
use verdict::*;

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
            Some(v) => verdict_panel(
                frame,
                rest,
                v,
                snap.workload.as_ref().is_none_or(|w| w.stranded),
                &pal,
            ),
            None => live_panels(frame, rest, snap, rates, &pal),
        }
    }
    if ui.help {
        help_overlay(frame, area, snap.verdicts.is_some(), &pal);
    }
}

// ---------------------------------------------------------------- styles

/// Styles, or their plain fallbacks without color.
pub(super) struct Pal {
    pub(super) color: bool,
}

impl Pal {
    pub(super) fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    pub(super) fn bold(&self, c: Color) -> Style {
        self.fg(c).add_modifier(Modifier::BOLD)
    }

    pub(super) fn plain(&self) -> Style {
        Style::default()
    }

    pub(super) fn dim(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub(super) fn title(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    pub(super) fn border(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    pub(super) fn key(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }

    pub(super) fn kind(&self, i: usize) -> Style {
        const KINDS: [Color; 4] = [Color::Cyan, Color::Magenta, Color::Blue, Color::Green];
        self.fg(KINDS[i % KINDS.len()])
    }

    pub(super) fn verdict(&self, v: Verdict) -> Style {
        match v {
            Verdict::Holds => self.bold(Color::Green),
            Verdict::Violated => self.bold(Color::Red),
            Verdict::Unknown => self.bold(Color::Yellow),
        }
    }

    pub(super) fn phase(&self, p: Phase) -> Style {
        match p {
            Phase::Load => self.bold(Color::Green),
            Phase::Draining => self.bold(Color::Yellow),
            Phase::Audit => self.bold(Color::Magenta),
            Phase::Done => self.bold(Color::Cyan),
        }
    }

    /// A count that is bad when non-zero.
    pub(super) fn alarm(&self, n: u64, c: Color) -> Style {
        if n > 0 {
            self.fg(c)
        } else {
            self.plain()
        }
    }
}

// ---------------------------------------------------------------- text
