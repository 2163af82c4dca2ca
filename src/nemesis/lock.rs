//! The lock nemesis: a connection of its own that takes SQLite's write
//! lock (`BEGIN IMMEDIATE`) on the fault's period and holds it for `hold`,
//! so that the workers' statements meet `SQLITE_BUSY` once their
//! busy_timeout runs out (set it small to get storms). Such steps fail
//! without applying anything, and their ops end `fail` or `info` by the
//! usual rule; the history gets `start` when the lock is taken and `stop`
//! when it is released.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::timed::{sleep_until, Ticks, Timed};
use super::Recorder;
use crate::control::Control;
use crate::draws::ns;
use crate::history::FaultAction;
use crate::scenario::{Fault, SqliteTarget};
use crate::target::sqlite::client as sqlite;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The running lock nemesis (one thread per lock fault).
pub struct LockNemesis {
    timed: Timed,
}

impl LockNemesis {
    /// Starts one thread per `(index, fault)` of kind lock on the database
    /// at `db`; `load_start` is the clock ns at which the load started.
    /// The load's `control`: its stop releases a lock held at once (the
    /// workers' statements may be waiting for it).
    pub fn start(
        db: PathBuf,
        target: SqliteTarget,
        faults: Vec<(u32, Fault)>,
        recorder: Recorder,
        load_start: u64,
        control: Arc<Control>,
    ) -> Self {
        let body = move |i: u32, f: &Fault, stopping: &dyn Fn() -> bool| {
            run(&db, &target, i, f, &recorder, load_start, stopping)
        };
        LockNemesis {
            timed: Timed::spawn("nemesis-lock", faults, control, body),
        }
    }

    /// Stops the nemesis (a lock it holds is released first).
    pub fn stop(mut self) {
        self.timed.stop();
    }
}

fn run(
    db: &std::path::Path,
    target: &SqliteTarget,
    index: u32,
    f: &Fault,
    recorder: &Recorder,
    load_start: u64,
    stopping: &dyn Fn() -> bool,
) {
    let every = f.every.unwrap_or(Duration::from_secs(2));
    let hold = f.hold.unwrap_or(Duration::from_millis(200));
    // The nemesis waits as long as it would hold the lock to get it.
    let mut mine = target.clone();
    mine.busy_timeout = hold.max(Duration::from_millis(100));
    let conn = match sqlite::open(db, &mine) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("lock nemesis: cannot open {}: {e}", db.display());
            return;
        }
    };
    tracing::info!(
        "lock nemesis: fault {index} on {}, the write lock every {every:?} for {hold:?}",
        db.display()
    );
    let mut ticks = Ticks::new(f, every, recorder, load_start, stopping);
    let mut missed: u64 = 0;
    while ticks.wait() {
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            missed += 1;
            // A missed window means fewer lock faults than the scenario
            // asks for; the user should hear it, but not once per tick.
            if worth_a_warning(missed) {
                tracing::warn!(
                    "lock nemesis: fault {index} could not take the write lock \
                     ({missed} time(s) so far, last: {e}): it holds fewer lock \
                     windows than asked (another lock fault or the load holds it \
                     longer than {:?})",
                    mine.busy_timeout
                );
            }
            continue;
        }
        recorder.record(
            index,
            FaultAction::Start,
            None,
            None,
            None,
            Some(format!("write lock held for {hold:?}")),
        );
        let until = recorder.clock.now().saturating_add(ns(hold));
        sleep_until(recorder, until, stopping);
        let _ = conn.execute_batch("COMMIT");
        recorder.record(index, FaultAction::Stop, None, None, None, None);
    }
}

/// Whether the `n`th missed lock window is worth a warning: the first,
/// then each power of ten, so a storm of misses logs a few lines.
fn worth_a_warning(n: u64) -> bool {
    n > 0 && 10u64.pow(n.ilog10()) == n
}

#[cfg(test)]
mod tests {
    use super::worth_a_warning;

    #[test]
    fn missed_windows_warn_at_the_first_and_at_each_power_of_ten() {
        let warned: Vec<u64> = (0..=2000).filter(|&n| worth_a_warning(n)).collect();
        assert_eq!(warned, [1, 10, 100, 1000]);
    }
}
