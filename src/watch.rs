//! Who watches a run while it goes: nobody (`-q`), plain progress lines on
//! stderr (no terminal, `CI=true`, `--no-tui`), or the live dashboard. Each
//! runs on its own thread and only reads [`Live`] snapshots, so watching
//! never slows the load.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::control::Control;
use crate::live::{Live, Phase, Rates, Snapshot};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::run_options::Watch;

/// A running watcher; [`Watcher::finish`] ends it (the dashboard first
/// shows the verdicts for a few seconds, or until a key is pressed).
/// Dropping it ends it too, without waiting, and gives the terminal back.
pub struct Watcher {
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    control: Arc<Control>,
}

impl Watcher {
    /// Starts watching `live` as `mode` says; the dashboard's keys act on
    /// `control` (q and Ctrl-C stop, a second Ctrl-C aborts).
    pub fn start(mode: Watch, live: Arc<Live>, control: Arc<Control>) -> Watcher {
        let done = Arc::new(AtomicBool::new(false));
        let ctl = control.clone();
        let handle = match mode {
            Watch::Quiet => None,
            Watch::Lines(every) => {
                let done = done.clone();
                Some(
                    std::thread::Builder::new()
                        .name("progress".into())
                        .spawn(move || lines(&live, every, &done))
                        .expect("spawn the progress thread"),
                )
            }
            Watch::Dashboard { color, close_after } => {
                control.quiet_signals.store(true, Ordering::Release);
                let done = done.clone();
                Some(
                    std::thread::Builder::new()
                        .name("dashboard".into())
                        .spawn(move || {
                            let end = crate::dashboard::end::EndWait::new(close_after);
                            crate::dashboard::run(&live, &control, color, &done, end)
                        })
                        .expect("spawn the dashboard thread"),
                )
            }
        };
        Watcher {
            done,
            handle,
            control: ctl,
        }
    }

    /// Joins the watcher thread; after a signal (the terminal may be gone:
    /// SIGHUP) at most for a couple of seconds, as a thread stuck on a dead
    /// terminal must not keep the run from ending.
    fn join(&mut self) {
        let Some(h) = self.handle.take() else { return };
        let mut waited = Duration::ZERO;
        let step = Duration::from_millis(20);
        while !h.is_finished() {
            if self.control.by_signal.load(Ordering::Acquire) && waited > Duration::from_secs(2) {
                return;
            }
            std::thread::sleep(step);
            waited += step;
        }
        let _ = h.join();
    }

    /// Waits for the watcher to end: plain lines stop at once; the
    /// dashboard shows the verdicts (when the run has them) until its
    /// close-after time is over or a key is pressed.
    pub fn finish(mut self) {
        self.join();
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        self.join();
    }
}

/// Plain progress lines until the load is over.
fn lines(live: &Live, every: Duration, done: &AtomicBool) {
    let mut rates = Rates::new(4);
    // A first sample at the start, so the first line has a rate.
    rates.push(&live.snapshot());
    let mut next = Instant::now() + every;
    loop {
        if done.load(Ordering::Acquire) {
            return;
        }
        if live.phase() != Phase::Load {
            // Silence during a long audit would look like a hang.
            let why = live.abort_breach().map_or(String::new(), |b| {
                format!(
                    " (abort_on_fail: {} breached at {}s, value {})",
                    b.by.threshold, b.by.at_s, b.by.actual
                )
            });
            let _ = writeln!(
                std::io::stderr(),
                "[{:>7.1}s] load stopped{why}; ops in flight finish, then the audit runs",
                live.snapshot().elapsed_s
            );
            return;
        }
        if Instant::now() >= next {
            next += every;
            let snap = live.snapshot();
            rates.push(&snap);
            // A closed stderr must not stop the run.
            let _ = writeln!(std::io::stderr(), "{}", line(&snap, &rates));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One progress line: elapsed, ops/s and p99 per op kind, counts, faults.
pub fn line(s: &Snapshot, rates: &Rates) -> String {
    let mut out = format!("[{:>7.1}s]", s.elapsed_s);
    for (kind, c) in &s.ops {
        let p99 = s.latency.get(kind).map_or(0.0, |l| l.p99);
        // The open model's ingest target now, beside what was achieved.
        let target = match &s.info.ingest_target {
            Some(curve) if kind == "ingest" => {
                format!(" (target {:.0})", curve.target_at(s.elapsed_s))
            }
            _ => String::new(),
        };
        out.push_str(&format!(
            " {kind} {:.0}{target} ops/s p99 {} ok {} fail {} info {} |",
            rates.latest(kind),
            crate::report::human::duration_us(p99),
            c.ok,
            c.fail,
            c.info
        ));
    }
    if let (Some(f), Some(left)) = s.progress() {
        out.push_str(&format!(" {:.0}% ({left})", f * 100.0));
    }
    if let Some(w) = &s.workload {
        out.push_str(&format!(" {} |", w.line));
    }
    if !s.faults_injected.is_empty() {
        out.push_str(&format!(
            " | faults {}",
            crate::report::human::per_kind(&s.faults_injected)
        ));
        if !s.faults_active.is_empty() {
            out.push_str(&format!(" (active: {})", s.faults_active.join(", ")));
        }
    }
    out
}
