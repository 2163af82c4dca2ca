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
//!
//! Layer: core, the lowest. May import the modules of its own layer only.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The origin of [`Control`]'s stop instants (a `Control` is `Default`, an
/// `Instant` is not).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn since_epoch_ns() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// `d` from now, or None when that is beyond what an `Instant` can hold
/// (a wait of such a length ends only by a stop).
pub fn deadline(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// Why ops in flight are abandoned ([`Control::abort_cause`]); the
/// history records it with the op (`aborted`), next to the words of
/// [`Control::reason`], so that its readers need not read those.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AbortCause {
    /// The user interrupted twice (a second Ctrl-C, SIGTERM).
    ByUser,
    /// Still in flight when `stop.grace` after the stop ran out.
    Grace,
}

/// Stop signals shared by the runtime, the signal handler and the caller.
#[derive(Debug, Default)]
pub struct Control {
    /// Start no new op (ops in flight run to their end). Set through
    /// [`Control::request_stop`] (or [`Control::interrupt`]) only: the
    /// waiters must hear of it.
    stop: AtomicBool,
    /// Abandon ops in flight between two steps (recorded as `info`): the
    /// user's second interrupt. See [`Control::aborted`], which also
    /// counts the end of the grace.
    abort: AtomicBool,
    /// When the stop was first set: nanoseconds since [`epoch`], plus one
    /// (0: not stopped).
    stopped_at: AtomicU64,
    /// How long ops in flight may go on after the stop before they are
    /// abandoned, in nanoseconds plus one (0: no limit, the default).
    grace: AtomicU64,
    /// The stop came from the user (Ctrl-C, SIGTERM): results are partial.
    pub interrupted: AtomicBool,
    /// How many interrupts came (a wait after the load ends at the next).
    interrupts: AtomicU64,
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
            self.note_stop();
            self.wake_all();
        }
    }

    fn note_stop(&self) {
        let now = since_epoch_ns().saturating_add(1);
        let _ = self
            .stopped_at
            .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Ops still in flight `grace` after the stop are abandoned as on a
    /// second interrupt (`stop.grace`): a stop must end the run even when
    /// an op waits on a target that does not answer (a server-side pause,
    /// a request timeout of hours). Unset, ops in flight run to their end.
    pub fn set_grace(&self, grace: Duration) {
        // Stored plus one: 0 is "no grace". A grace past u64 nanoseconds
        // (584 years) is as good as none.
        let ns = u64::try_from(grace.as_nanos()).unwrap_or(u64::MAX - 1);
        self.grace
            .store(ns.saturating_add(1).min(u64::MAX - 1), Ordering::Release);
    }

    /// How long ops in flight may still go on: None before the stop or
    /// without a grace.
    fn grace_left(&self) -> Option<Duration> {
        let grace = self.grace.load(Ordering::Acquire);
        let at = self.stopped_at.load(Ordering::Acquire);
        if grace == 0 || at == 0 {
            return None;
        }
        let waited = since_epoch_ns().saturating_sub(at - 1);
        Some(Duration::from_nanos((grace - 1).saturating_sub(waited)))
    }

    /// Whether ops in flight must be abandoned (between steps, or their
    /// request dropped): the user interrupted twice, or the grace after the
    /// stop is over.
    pub fn aborted(&self) -> bool {
        self.abort_cause().is_some()
    }

    /// Why ops in flight must be abandoned now; None while they may go on.
    pub fn abort_cause(&self) -> Option<AbortCause> {
        if self.abort.load(Ordering::Acquire) {
            Some(AbortCause::ByUser)
        } else if self.stopped() && self.grace_left().is_some_and(|d| d.is_zero()) {
            Some(AbortCause::Grace)
        } else {
            None
        }
    }

    /// Why ops in flight are abandoned, for the op's error (meaningful
    /// once [`Control::aborted`] is true).
    pub fn abort_reason(&self) -> String {
        self.reason(if self.abort.load(Ordering::Acquire) {
            AbortCause::ByUser
        } else {
            AbortCause::Grace
        })
    }

    /// The op's error for an abandonment by `cause`.
    pub fn reason(&self, cause: AbortCause) -> String {
        match cause {
            AbortCause::ByUser => "aborted by the user between steps".to_owned(),
            AbortCause::Grace => {
                let grace =
                    Duration::from_nanos(self.grace.load(Ordering::Acquire).saturating_sub(1));
                format!(
                    "abandoned: still in flight {} after the load stopped (stop.grace)",
                    humantime::format_duration(grace)
                )
            }
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
        self.interrupts.fetch_add(1, Ordering::AcqRel);
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
        self.note_stop();
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
        self.stopped_at.store(0, Ordering::Release);
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
        self.wait_until(d, || self.stopped())
    }

    /// How many interrupts have come so far: the mark
    /// [`Control::wait_unless_interrupted`] counts from.
    pub fn interrupts(&self) -> u64 {
        self.interrupts.load(Ordering::Acquire)
    }

    /// Waits `d`, or less if the user interrupts (Ctrl-C, SIGTERM) after
    /// `mark` (an earlier [`Control::interrupts`]): for waits after the
    /// load, when the stop (and maybe an earlier interrupt) is already set,
    /// such as serving the final metrics a while. The mark is taken before
    /// the user can see that the wait is near, so an interrupt sent on
    /// seeing it is never lost. True when the whole of `d` passed.
    pub fn wait_unless_interrupted(&self, mark: u64, d: Duration) -> bool {
        self.wait_until(d, || self.interrupts.load(Ordering::Acquire) != mark)
    }

    /// Waits `d` on the wake condition (every stop and interrupt notifies
    /// it), ending early once `ended` says so. True when the whole of `d`
    /// passed.
    fn wait_until(&self, d: Duration, ended: impl Fn() -> bool) -> bool {
        // None: further than an Instant reaches; only `ended` ends it.
        let until = deadline(d);
        let mut guard = self
            .wake
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if ended() {
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

    /// Runs `f` until it ends or ops in flight are abandoned (a second
    /// Ctrl-C, or the end of the grace after a stop), whichever is first:
    /// None on an abort (`f` is dropped).
    pub async fn or_abort<F: Future>(&self, f: F) -> Option<F::Output> {
        let mut f = std::pin::pin!(f);
        loop {
            let woken = self.wake.tasks.notified();
            let mut woken = std::pin::pin!(woken);
            woken.as_mut().enable();
            if self.aborted() {
                return None;
            }
            // Before the stop only a wake-up can change the answer; after
            // it, the end of the grace does too.
            let grace_over = async {
                match self.grace_left() {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                out = &mut f => return Some(out),
                () = &mut woken => {}
                () = grace_over => {}
            }
        }
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

    #[test]
    fn a_wait_after_the_stop_ends_at_an_interrupt_after_its_mark_only() {
        let c = std::sync::Arc::new(Control::default());
        c.request_stop();
        // The stop alone does not end it: a zero wait passes whole.
        assert!(c.wait_unless_interrupted(c.interrupts(), Duration::ZERO));
        c.interrupt();
        // An interrupt before the mark does not end it.
        let mark = c.interrupts();
        assert!(c.wait_unless_interrupted(mark, Duration::from_millis(1)));
        // One after the mark does, even when it came before the wait began.
        c.interrupt();
        assert!(!c.wait_unless_interrupted(mark, Duration::from_secs(3600)));
        // And one during the wait: interrupts keep coming until the waiter
        // is done, so that it ends however the threads are scheduled.
        let c2 = c.clone();
        let mark = c.interrupts();
        let t =
            std::thread::spawn(move || c2.wait_unless_interrupted(mark, Duration::from_secs(3600)));
        while !t.is_finished() {
            c.interrupt();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!t.join().unwrap());
    }

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

    /// A thread running a task that never ends by itself under `or_abort`.
    fn waiting_under_or_abort(c: &Arc<Control>) -> std::thread::JoinHandle<Option<()>> {
        let c = c.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(c.or_abort(std::future::pending::<()>()))
        })
    }

    #[test]
    fn an_abort_ends_what_runs_under_or_abort_and_rearm_resets() {
        let c = Arc::new(Control::default());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let waiter = waiting_under_or_abort(&c);
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

    #[test]
    fn the_end_of_the_grace_abandons_ops_in_flight() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Without a grace, a stop never abandons what runs.
        let c = Control::default();
        c.request_stop();
        assert!(!c.aborted());
        // With one, an op in flight at the stop is abandoned once it is
        // over, with its reason; before the stop nothing is.
        let c = Arc::new(Control::default());
        c.set_grace(Duration::from_millis(1));
        assert!(!c.aborted());
        let waiter = waiting_under_or_abort(&c);
        c.request_stop();
        assert_eq!(waiter.join().unwrap(), None);
        assert!(c.aborted());
        assert!(
            c.abort_reason().contains("stop.grace"),
            "{}",
            c.abort_reason()
        );
        assert_eq!(rt.block_on(c.or_abort(async { 7 })), None);
        // The next run of a series starts unstopped, its grace not yet begun.
        assert!(c.rearm());
        assert!(!c.aborted());
        // The user's second interrupt is its own reason.
        c.interrupt();
        c.interrupt();
        assert!(c.abort_reason().contains("by the user"));
    }

    /// The cause the history records is the one the reason's words say.
    #[test]
    fn the_abort_cause_is_the_reason_s() {
        let c = Control::default();
        assert_eq!(c.abort_cause(), None);
        c.set_grace(Duration::from_nanos(1));
        c.request_stop();
        while c.abort_cause().is_none() {
            std::thread::yield_now();
        }
        assert_eq!(c.abort_cause(), Some(AbortCause::Grace));
        assert_eq!(c.reason(AbortCause::Grace), c.abort_reason());
        // The user's second interrupt.
        c.interrupt();
        c.interrupt();
        assert_eq!(c.abort_cause(), Some(AbortCause::ByUser));
        assert_eq!(c.reason(AbortCause::ByUser), c.abort_reason());
    }
}
