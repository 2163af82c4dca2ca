//! The outbox's live figures ([`OutboxLive`]: the queue's and the
//! handlers' counts so far) and how the watchers show them
//! ([`OutboxLive::to_live`]: the counts panel's title and rows, the
//! watcher line's segment; an outbox run has no stranded events).
//!
//! Layer: engine. May import the modules of its own layer and of the
//! layers below it (core, model and config).

use crate::live::{LiveFigure, Tone, WorkloadLive};

/// The outbox figures a watcher shows (outbox runs only): the queue's
/// and the handlers' counts so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutboxLive {
    /// Deliveries of the queue (messages x deliveries).
    pub deliveries: u64,
    /// Attempts started.
    pub attempts: u64,
    /// Deliveries acked.
    pub acked: u64,
    /// Attempts on a delivery handed out before (redeliveries).
    pub redelivered: u64,
    /// Deliveries given up after their budget.
    pub given_up: u64,
    /// Attempts that lost a compare-and-swap.
    pub cas_lost: u64,
    /// Attempts a crash fault ended.
    pub crashed: u64,
    /// Attempts started while another of the same delivery ran (leases).
    pub overlapping: u64,
}

impl OutboxLive {
    /// What the watchers show of it.
    pub fn to_live(&self) -> WorkloadLive {
        let o = self;
        let queue = vec![
            LiveFigure::new("acked", format!("{}/{}", o.acked, o.deliveries), Tone::Good),
            LiveFigure::new("redelivered", o.redelivered, Tone::Plain),
            LiveFigure::new("given up", o.given_up, Tone::Warn(o.given_up)),
        ];
        let mut attempts = vec![
            LiveFigure::new("attempts", o.attempts, Tone::Plain),
            LiveFigure::new("cas lost", o.cas_lost, Tone::Plain),
            LiveFigure::new("crashed", o.crashed, Tone::Warn(o.crashed)),
        ];
        if o.overlapping > 0 {
            attempts.push(LiveFigure::new("overlapping", o.overlapping, Tone::Plain));
        }
        WorkloadLive {
            title: format!("outbox: {}/{} deliveries acked", o.acked, o.deliveries),
            rows: vec![queue, attempts],
            line: format!(
                "outbox acked {}/{} attempts {} redelivered {} cas lost {} crashed {}{}",
                o.acked,
                o.deliveries,
                o.attempts,
                o.redelivered,
                o.cas_lost,
                o.crashed,
                if o.overlapping > 0 {
                    format!(" overlapping {}", o.overlapping)
                } else {
                    String::new()
                }
            ),
            stranded: false,
        }
    }
}
