//! How the dashboard's verdict panel ends ([`EndWait`]): by itself once its
//! close-after time is over (so `specstorm run && next-step` goes on, as
//! k6 and oha do), or at once on a key; with `--keep-open`, on a key only.
//! Kept apart from the terminal loop so that the decision is tested on
//! instants a test picks, not on a real clock.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use std::time::{Duration, Instant};

/// The verdict panel's end: when it was first shown, and for how long it
/// stays.
#[derive(Debug, Clone)]
pub struct EndWait {
    close_after: Option<Duration>,
    shown_at: Option<Instant>,
}

impl EndWait {
    /// A panel that closes `close_after` after it was first shown (None:
    /// only a key closes it).
    pub fn new(close_after: Option<Duration>) -> EndWait {
        EndWait {
            close_after,
            shown_at: None,
        }
    }

    /// Whether the panel, drawn at `now` (its first call is when it was
    /// first shown), ends: a key was pressed, or its time is over.
    pub fn over(&mut self, now: Instant, key_pressed: bool) -> bool {
        let shown_at = *self.shown_at.get_or_insert(now);
        key_pressed
            || self
                .close_after
                .is_some_and(|d| now.saturating_duration_since(shown_at) >= d)
    }

    /// How long to wait for a key before drawing again at `now`: at most
    /// `frame`, and no longer than the panel has left.
    pub fn poll_for(&self, now: Instant, frame: Duration) -> Duration {
        match (self.shown_at, self.close_after) {
            (Some(at), Some(d)) => frame.min(d.saturating_sub(now.saturating_duration_since(at))),
            _ => frame,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn it_closes_by_itself_once_its_time_is_over() {
        let t0 = Instant::now();
        let mut w = EndWait::new(Some(5 * S));
        assert!(!w.over(t0, false));
        assert!(!w.over(t0 + 4 * S, false));
        assert_eq!(w.poll_for(t0 + 4 * S, 2 * S), S);
        assert!(w.over(t0 + 5 * S, false));
        assert_eq!(w.poll_for(t0 + 6 * S, 2 * S), Duration::ZERO);
    }

    #[test]
    fn its_time_counts_from_when_it_was_first_shown() {
        let t0 = Instant::now();
        let mut w = EndWait::new(Some(5 * S));
        assert!(!w.over(t0 + 100 * S, false));
        assert!(!w.over(t0 + 104 * S, false));
        assert!(w.over(t0 + 105 * S, false));
    }

    #[test]
    fn a_key_ends_it_at_once() {
        let t0 = Instant::now();
        assert!(EndWait::new(Some(5 * S)).over(t0, true));
        assert!(EndWait::new(None).over(t0, true));
    }

    #[test]
    fn keep_open_changes_the_dashboard_only() {
        use crate::run_options::{Watch, DASHBOARD_CLOSE_AFTER};
        let dash = Watch::Dashboard {
            color: true,
            close_after: Some(DASHBOARD_CLOSE_AFTER),
        };
        assert_eq!(
            dash.keep_open(true),
            Watch::Dashboard {
                color: true,
                close_after: None
            }
        );
        assert_eq!(dash.keep_open(false), dash);
        let lines = Watch::Lines(2 * S);
        assert_eq!(lines.keep_open(true), lines);
    }

    #[test]
    fn kept_open_it_waits_for_a_key_only() {
        let t0 = Instant::now();
        let mut w = EndWait::new(None);
        assert!(!w.over(t0, false));
        assert!(!w.over(t0 + 86_400 * S, false));
        assert_eq!(w.poll_for(t0 + 86_400 * S, S / 4), S / 4);
        assert!(w.over(t0 + 86_400 * S, true));
    }
}
