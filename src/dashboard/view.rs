//! (stub until the view lands) Rendering of one dashboard frame.

use crate::live::{Rates, Snapshot};

/// What the user toggled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UiState {
    /// The help overlay is shown.
    pub help: bool,
    /// Colors on.
    pub color: bool,
}

/// Draws one frame.
pub fn render(frame: &mut ratatui::Frame, snap: &Snapshot, _rates: &Rates, _ui: &UiState) {
    let p =
        ratatui::widgets::Paragraph::new(format!("{} {:.1}s", snap.info.scenario, snap.elapsed_s));
    frame.render_widget(p, frame.area());
}
