//! The bench's two clocks: a run's monotonic [`Clock`] (ns since its
//! start, the time of every history entry) and [`wall_ms`], the wall time
//! an op passes as `:now_ms`.
//!
//! Core layer: imports nothing of the crate.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Monotonic clock of a run: ns since its start.
#[derive(Debug, Clone, Copy)]
pub struct Clock(Instant);

impl Clock {
    /// Starts the clock: now() is 0 here.
    pub fn start() -> Self {
        Clock(Instant::now())
    }

    /// ns since the run started.
    pub fn now(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// Wall-clock time in unix ms (the `:now_ms` parameter of an op).
pub fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
