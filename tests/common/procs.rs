//! Child processes: waits bounded only to detect a hang (never a speed),
//! the processes a run started, and killing what a failing test would
//! otherwise leave behind.

use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Long enough for anything here on a loaded machine; only a hang reaches
/// it.
pub const HANG: Duration = Duration::from_secs(300);

/// A process that runs (gone, or a zombie nobody reaped, is not running).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// Its command line, arguments joined by spaces.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Every descendant of `pid`, from /proc.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// `kill -SIG PID`; whether it was delivered.
pub fn signal(pid: u32, sig: &str) -> bool {
    Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// SIGKILL to `child` and to every process it started (a spawned server
/// lives in a process group of its own), by their ids; then reaps it.
pub fn kill_tree(child: &mut Child) {
    for pid in descendants(child.id()) {
        signal(pid, "-KILL");
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Kills the processes still running when dropped (a failing run's
/// orphans).
pub struct Reaper(pub Vec<u32>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if running(pid) {
                signal(pid, "-KILL");
            }
        }
    }
}

/// A child killed (with what it started) when dropped, if still running.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            kill_tree(&mut self.0);
        }
    }
}

/// Waits for `child` to end; kills it and panics with `what` if it still
/// runs after [`HANG`].
pub fn wait_bounded(child: &mut Child, what: &str) -> ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t.elapsed() > HANG {
            kill_tree(child);
            panic!("{what}: still running after {HANG:?} (it hangs)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `ready` holds; kills `child` and panics with `what` if it
/// ended first or after [`HANG`].
pub fn wait_until(child: &mut Child, what: &str, ready: impl Fn() -> bool) {
    let t = Instant::now();
    while !ready() {
        if let Some(s) = child.try_wait().unwrap() {
            panic!("{what} never happened: the process ended first ({s})");
        }
        if t.elapsed() > HANG {
            kill_tree(child);
            panic!("{what} never happened within {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The size of the run folder's history so far (0 before it exists).
pub fn history_len(out: &Path) -> u64 {
    std::fs::metadata(out.join(specstorm::history::file::FILE)).map_or(0, |m| m.len())
}

/// Waits until the run `child` (writing into `out`) has written `bytes`
/// of history: the load is under way.
pub fn wait_for_history(child: &mut Child, out: &Path, bytes: u64) {
    wait_until(child, &format!("{bytes} bytes of history"), || {
        history_len(out) >= bytes
    });
}

/// A loopback port that was free a moment ago (released before use: a
/// small race, retried by nobody; the port range is large).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
