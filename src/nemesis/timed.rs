//! What the timed faults (kill, lock) share: one thread per fault, woken
//! on the fault's period while its window is open, and stopped at once when
//! the load stops or the nemesis is told to.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::Recorder;
use crate::control::Control;
use crate::draws::ns;
use crate::scenario::Fault;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The threads of the timed faults of one kind.
pub(super) struct Timed {
    done: Arc<AtomicBool>,
    handles: Vec<JoinHandle<()>>,
}

impl Timed {
    /// One thread `name-INDEX` per `(index, fault)`, running
    /// `body(index, fault, stopping)`; `stopping()` turns true when the
    /// load stops (`control.stop`) or [`Timed::stop`] is called.
    pub(super) fn spawn<F>(
        name: &str,
        faults: Vec<(u32, Fault)>,
        control: Arc<Control>,
        body: F,
    ) -> Self
    where
        F: Fn(u32, &Fault, &dyn Fn() -> bool) + Send + Clone + 'static,
    {
        let done = Arc::new(AtomicBool::new(false));
        let handles = faults
            .into_iter()
            .map(|(i, f)| {
                let (done, control, body) = (done.clone(), control.clone(), body.clone());
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn(move || {
                        let stopping = || done.load(Ordering::Acquire) || control.stopped();
                        body(i, &f, &stopping)
                    })
                    .expect("spawn a nemesis thread")
            })
            .collect();
        Timed { done, handles }
    }

    /// Tells every thread to stop, and waits for them.
    pub(super) fn stop(&mut self) {
        self.done.store(true, Ordering::Release);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
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
