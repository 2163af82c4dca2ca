//! The kill nemesis: SIGKILL the spawned reference server on the fault's
//! period, wait its down time, and start it again on the same address and
//! database file. Nothing committed may be lost across it (TypeOK checks
//! that every acknowledged event is in the final tables); requests in
//! flight at the kill end `info` (reset) and the client resends them.
//!
//! The history gets `start` once the process is gone (nothing of it runs
//! after that instant: the checkers close indeterminate ops' windows
//! there) and `stop` just before the new process is spawned.

use super::Recorder;
use crate::client::spawn::SpawnedServer;
use crate::history::FaultAction;
use crate::runtime::Control;
use crate::scenario::Fault;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// The running kill nemesis (one thread per kill fault).
pub struct KillNemesis {
    done: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
    /// Why a restart failed, if one did (the run then exits 3).
    pub failure: Arc<Mutex<Option<String>>>,
}

impl KillNemesis {
    /// Starts one thread per `(index, fault)` of kind kill; `load_start` is
    /// the clock ns at which the load started.
    /// The load's `control`: its stop ends the nemesis's waits at once
    /// (a server down is restarted first), and a failed restart stops the
    /// load (the target is gone: the run ends with exit 3).
    pub fn start(
        server: Arc<Mutex<SpawnedServer>>,
        faults: Vec<(u32, Fault)>,
        recorder: Recorder,
        load_start: u64,
        control: Arc<Control>,
    ) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let failure = Arc::new(Mutex::new(None));
        let handles = faults
            .into_iter()
            .map(|(i, f)| {
                let (server, recorder, done, failure, control) = (
                    server.clone(),
                    recorder.clone(),
                    done.clone(),
                    failure.clone(),
                    control.clone(),
                );
                std::thread::Builder::new()
                    .name(format!("nemesis-kill-{i}"))
                    .spawn(move || {
                        let stopping =
                            || done.load(Ordering::Acquire) || control.stop.load(Ordering::Acquire);
                        run(
                            &server, i, &f, &recorder, load_start, &stopping, &failure, &control,
                        )
                    })
                    .expect("spawn the kill nemesis")
            })
            .collect();
        KillNemesis {
            done,
            handles,
            failure,
        }
    }

    /// Stops the nemesis; a server it left down is started again first.
    pub fn stop(mut self) -> Option<String> {
        self.done.store(true, Ordering::Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        self.failure.lock().expect("failure").clone()
    }
}

/// The ticks of a timed fault: one period after `start`, then every
/// period, while the fault's window is open and `done` is not set.
pub(super) struct Ticks<'a> {
    recorder: &'a Recorder,
    load_start: u64,
    next: u64,
    every: u64,
    stop: Option<Duration>,
    stopping: &'a dyn Fn() -> bool,
}

impl<'a> Ticks<'a> {
    /// The ticks of `f` (period `every`), from `load_start` (clock ns).
    pub(super) fn new(
        f: &Fault,
        every: Duration,
        recorder: &'a Recorder,
        load_start: u64,
        stopping: &'a dyn Fn() -> bool,
    ) -> Self {
        let every = ns(every).max(1);
        Ticks {
            recorder,
            load_start,
            next: load_start.saturating_add(ns(f.start)).saturating_add(every),
            every,
            stop: f.stop,
            stopping,
        }
    }

    /// Sleeps until the next tick; false when there is none (the window
    /// closed, or the nemesis is stopping).
    pub(super) fn wait(&mut self) -> bool {
        if !sleep_until(self.recorder, self.next, self.stopping) {
            return false;
        }
        let since = Duration::from_nanos(self.next - self.load_start);
        self.next = self.next.saturating_add(self.every);
        self.stop.is_none_or(|s| since < s)
    }
}

/// A duration in ns, saturating (durations of 584 years and more).
pub fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Sleeps until `until` (clock ns) unless `stopping()` first; false if so.
pub(super) fn sleep_until(recorder: &Recorder, until: u64, stopping: &dyn Fn() -> bool) -> bool {
    loop {
        if stopping() {
            return false;
        }
        let now = recorder.clock.now();
        if now >= until {
            return true;
        }
        std::thread::sleep(Duration::from_nanos((until - now).min(20_000_000)));
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    server: &Mutex<SpawnedServer>,
    index: u32,
    f: &Fault,
    recorder: &Recorder,
    load_start: u64,
    stopping: &dyn Fn() -> bool,
    failure: &Mutex<Option<String>>,
    control: &Control,
) {
    let every = f.every.unwrap_or(Duration::from_secs(5));
    let down = f.delay.unwrap_or(Duration::from_millis(500));
    let mut ticks = Ticks::new(f, every, recorder, load_start, stopping);
    while ticks.wait() {
        let pid = server.lock().expect("server").kill();
        recorder.record(
            index,
            FaultAction::Start,
            None,
            None,
            None,
            Some(format!("SIGKILL pid {}", pid.unwrap_or(0))),
        );
        // A stop cuts the down time short: the audit needs the server
        // back, and it comes back below.
        sleep_until(
            recorder,
            recorder.clock.now().saturating_add(ns(down)),
            stopping,
        );
        recorder.record(
            index,
            FaultAction::Stop,
            None,
            None,
            None,
            Some(format!("restart after {down:?}")),
        );
        if let Err(e) = server.lock().expect("server").restart() {
            *failure.lock().expect("failure") =
                Some(format!("the reference server could not be restarted: {e}"));
            // No target left: end the load now rather than at its duration.
            control.stop.store(true, Ordering::Release);
            return;
        }
    }
}
