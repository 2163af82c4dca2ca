//! The stop signals of a run ([`Control`]) and the one way the bench
//! waits: a wait that a stop (or an abort) ends at once, for threads
//! ([`Control::sleep`]) and for tasks ([`Control::sleep_async`],
//! [`Control::or_stop`], [`Control::or_abort`]).
//!
//! Every path that sets the stop or the abort goes through
//! [`Control::request_stop`] or [`Control::interrupt`], which wake the
//! waiters: a condition variable for threads, a tokio `Notify` for tasks.
//! A wait therefore costs nothing while it waits (no polling), ends within
//! a wake-up of the stop, and a duration of any size (a resolver interval
//! of a million hours) is fine: it is never added to an `Instant` that
//! could overflow.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// `d` from now, or None when that is beyond what an `Instant` can hold
/// (a wait of such a length ends only by a stop).
pub fn deadline(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// Stop signals shared by the runtime, the signal handler and the caller.
#[derive(Debug, Default)]
pub struct Control {
    /// Start no new op (ops in flight run to their end). Set through
    /// [`Control::request_stop`] (or [`Control::interrupt`]) only: the
    /// waiters must hear of it.
    stop: AtomicBool,
    /// Abandon ops in flight between two steps (recorded as `info`).
    pub abort: AtomicBool,
    /// The stop came from the user (Ctrl-C, SIGTERM): results are partial.
    pub interrupted: AtomicBool,
    /// Signals are handled without a message on stderr (the dashboard
    /// owns the screen).
    pub quiet_signals: AtomicBool,
    /// A signal (SIGTERM, or SIGINT from outside) stopped the run: nobody
    /// may be at the keyboard, so nothing waits for a key.
    pub by_signal: AtomicBool,
    /// Why the target could no longer be used (its database could not be
    /// written: a full disk), set by [`Control::fail`]; the run exits 3.
    failure: Mutex<Option<String>>,
    /// Wakes the waiters when the stop or the abort is set.
    wake: Wake,
}

#[derive(Debug, Default)]
struct Wake {
    /// Held by a thread between reading the stop and parking on `threads`,
    /// and by the setter before notifying: no wake-up falls between.
    lock: Mutex<()>,
    threads: Condvar,
    tasks: tokio::sync::Notify,
}

impl Control {
    /// Whether the load must start no new op.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Stops the load (the deadline passed, the ops ran out, the target
    /// is gone): no new op starts, and every wait of [`Control::sleep`]
    /// and its kin ends now.
    pub fn request_stop(&self) {
        if !self.stop.swap(true, Ordering::AcqRel) {
            self.wake_all();
        }
    }

    /// The target can no longer be used (`why`): the load stops as on
    /// [`Control::request_stop`], and the run's phase takes `why` as its
    /// target error. The first reason is kept.
    pub fn fail(&self, why: String) {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(why);
        self.request_stop();
    }

    /// Takes the reason [`Control::fail`] recorded, if any.
    pub fn take_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn wake_all(&self) {
        drop(
            self.wake
                .lock
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        self.wake.threads.notify_all();
        self.wake.tasks.notify_waiters();
    }

    /// The user asked to stop (Ctrl-C, SIGTERM, `q`): the first time the
    /// load stops gracefully (ops in flight finish, the audit runs, results
    /// are saved, exit 130); the second time ops in flight are abandoned
    /// between steps (recorded as indeterminate). Returns what happens, for
    /// the user.
    pub fn interrupt(&self) -> &'static str {
        let msg = if !self.interrupted.swap(true, Ordering::AcqRel) {
            "interrupted: stopping the load, then auditing what ran"
        } else if !self.abort.swap(true, Ordering::AcqRel) {
            "interrupted again: abandoning ops in flight between steps"
        } else {
            "already abandoning ops in flight; the audit follows"
        };
        // Woken every time: the second interrupt wakes what waits on
        // the abort.
        self.stop.store(true, Ordering::Release);
        self.wake_all();
        msg
    }

    /// Makes the control ready for the next run of a series (`compare`):
    /// false when the user interrupted, so that no further run starts.
    pub fn rearm(&self) -> bool {
        if self.interrupted.load(Ordering::Acquire) {
            return false;
        }
        self.take_failure();
        self.stop.store(false, Ordering::Release);
        self.abort.store(false, Ordering::Release);
        // A signal between the check and the reset must still stop the run.
        !self.interrupted.load(Ordering::Acquire) || {
            self.request_stop();
            false
        }
    }

    /// Waits `d`, or less if the load stops first. Returns true when the
    /// whole of `d` passed, false on a stop (also one set before the call).
    /// A zero `d` returns at once.
    pub fn sleep(&self, d: Duration) -> bool {
        if self.stopped() {
            return false;
        }
        if d.is_zero() {
            return true;
        }
        // None: further than an Instant reaches; only a stop ends it.
        let until = deadline(d);
        let mut guard = self
            .wake
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.stopped() {
                return false;
            }
            let left = match until {
                Some(t) => t.saturating_duration_since(Instant::now()),
                None => d,
            };
            if left.is_zero() {
                return true;
            }
            guard = self
                .wake
                .threads
                .wait_timeout(guard, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// [`Control::sleep`] for a task: true when the whole of `d` passed,
    /// false on a stop.
    pub async fn sleep_async(&self, d: Duration) -> bool {
        if self.stopped() {
            return false;
        }
        if d.is_zero() {
            return true;
        }
        self.or_stop(tokio::time::sleep(d)).await.is_some()
    }

    /// Runs `f` until it ends or the load stops, whichever is first: None
    /// on a stop (`f` is dropped).
    pub async fn or_stop<F: Future>(&self, f: F) -> Option<F::Output> {
        self.or_flag(&self.stop, f).await
    }

    /// Runs `f` until it ends or the user aborts ops in flight (a second
    /// Ctrl-C), whichever is first: None on an abort (`f` is dropped).
    pub async fn or_abort<F: Future>(&self, f: F) -> Option<F::Output> {
        self.or_flag(&self.abort, f).await
    }

    async fn or_flag<F: Future>(&self, flag: &AtomicBool, f: F) -> Option<F::Output> {
        let mut f = std::pin::pin!(f);
        loop {
            // Registered before the flag is read: a wake-up in between
            // is not lost.
            let woken = self.wake.tasks.notified();
            let mut woken = std::pin::pin!(woken);
            woken.as_mut().enable();
            if flag.load(Ordering::Acquire) {
                return None;
            }
            tokio::select! {
                out = &mut f => return Some(out),
                () = &mut woken => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_stop_ends_a_sleep_of_a_million_hours() {
        let c = Arc::new(Control::default());
        let sleeper = {
            let c = c.clone();
            std::thread::spawn(move || c.sleep(Duration::from_secs(3_600_000_000)))
        };
        let task = {
            let c = c.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(c.sleep_async(Duration::MAX))
            })
        };
        c.request_stop();
        assert!(!sleeper.join().unwrap(), "stopped, not slept out");
        assert!(!task.join().unwrap());
        // Once stopped, no wait starts.
        assert!(!c.sleep(Duration::from_secs(1)));
    }

    #[test]
    fn a_sleep_without_a_stop_runs_its_course() {
        let c = Control::default();
        assert!(c.sleep(Duration::from_millis(1)));
        assert!(c.sleep(Duration::ZERO));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        assert!(rt.block_on(c.sleep_async(Duration::from_millis(1))));
        assert_eq!(rt.block_on(c.or_stop(async { 7 })), Some(7));
    }

    #[test]
    fn an_abort_ends_what_runs_under_or_abort_and_rearm_resets() {
        let c = Arc::new(Control::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let waiter = {
            let c = c.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(c.or_abort(std::future::pending::<()>()))
            })
        };
        c.interrupt();
        assert!(c.stopped());
        assert_eq!(rt.block_on(c.or_stop(std::future::pending::<()>())), None);
        c.interrupt();
        assert_eq!(waiter.join().unwrap(), None);
        // A series stops after an interrupt; without one it goes on.
        assert!(!c.rearm());
        let fresh = Control::default();
        fresh.request_stop();
        assert!(fresh.rearm());
        assert!(!fresh.stopped());
    }
}
