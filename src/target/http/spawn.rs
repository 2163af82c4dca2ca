//! A spawned target: the bench starts the reference server (`specstorm
//! serve`, this very binary) with the scenario's variant on a free loopback
//! port, waits until it listens, and stops it (SIGTERM, then SIGKILL after
//! a grace) when the run is over. The server runs in the process group of
//! a [`Watchdog`], so it dies with a bench that is killed.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::watchdog::Watchdog;
use crate::control::Control;
use crate::scenario::Target;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a SIGTERM may take before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why the reference server is not running.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// It could not be started, or did not say where it listens in time.
    #[error("{0}")]
    Failed(String),
    /// The run was stopped (Ctrl-C, SIGTERM) while it started.
    #[error("interrupted while the reference server started")]
    Interrupted,
}

/// A running reference server; stopped when dropped.
pub struct SpawnedServer {
    child: Option<Child>,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    launch: Launch,
    /// The group every start of the server runs in (dropped last).
    watchdog: Watchdog,
}

/// How the server was started, to start it again after a kill.
struct Launch {
    variant: String,
    db: PathBuf,
    target: Target,
    log: PathBuf,
    fault_hooks: bool,
}

impl SpawnedServer {
    /// Starts `specstorm serve --variant VARIANT --db DB --addr 127.0.0.1:0`
    /// with the target's pragmas and worker count (and `--fault-hooks`
    /// when the nemesis drives crash or pause faults through it); its
    /// request log goes to `log`. Errors: it cannot be started or does not
    /// say where it listens within 20 s (with what it printed); or the
    /// run's `control` stopped while it started (the server is killed).
    pub fn start(
        variant: &str,
        db: &Path,
        target: &Target,
        log: &Path,
        fault_hooks: bool,
        control: &Control,
    ) -> Result<Self, StartError> {
        let launch = Launch {
            variant: variant.to_string(),
            db: db.to_path_buf(),
            target: target.clone(),
            log: log.to_path_buf(),
            fault_hooks,
        };
        let watchdog = Watchdog::start().map_err(StartError::Failed)?;
        let (child, url) = launch.spawn("127.0.0.1:0", false, Some(control), watchdog.group())?;
        Ok(SpawnedServer {
            child: Some(child),
            url,
            launch,
            watchdog,
        })
    }

    /// SIGKILL: the server dies at once, mid-request, as a crashed process
    /// does (the kill nemesis). Returns its pid; waits until it is gone.
    pub fn kill(&mut self) -> Option<u32> {
        let mut child = self.child.take()?;
        let pid = child.id();
        let _ = child.kill();
        let _ = child.wait();
        Some(pid)
    }

    /// Starts the server again on the same address and database (after
    /// [`SpawnedServer::kill`]). Errors: as for [`SpawnedServer::start`],
    /// after a few tries (the port may take a moment to be free).
    pub fn restart(&mut self) -> Result<u32, String> {
        self.kill();
        let addr = self
            .url
            .strip_prefix("http://")
            .unwrap_or(&self.url)
            .to_string();
        let mut last = String::new();
        for _ in 0..20 {
            // A restart is not cut short by a stop: the audit needs the
            // server back.
            match self.launch.spawn(&addr, true, None, self.watchdog.group()) {
                Ok((child, _)) => {
                    let pid = child.id();
                    self.child = Some(child);
                    return Ok(pid);
                }
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(last)
    }
    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Stops the server: SIGTERM (it finishes requests in flight), then
    /// SIGKILL if it is still there after a grace; then its watchdog kills
    /// whatever else is left in its group.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            self.watchdog.release();
            return;
        };
        // A system call, not the `kill` program: a container without it
        // would never deliver the SIGTERM and wait out the grace.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let until = Instant::now() + STOP_GRACE;
        while Instant::now() < until {
            if !matches!(child.try_wait(), Ok(None)) {
                self.watchdog.release();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        self.watchdog.release();
    }
}

impl Drop for SpawnedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Launch {
    /// Spawns the server on `addr`, in process group `group` (its
    /// watchdog's); returns it and the URL it printed. A stop of `control`
    /// ends the wait for that line (and the server).
    fn spawn(
        &self,
        addr: &str,
        append: bool,
        control: Option<&Control>,
        group: i32,
    ) -> Result<(Child, String), StartError> {
        let failed = StartError::Failed;
        let exe = std::env::current_exe()
            .map_err(|e| failed(format!("cannot find my own binary: {e}")))?;
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(&self.log)
            .map_err(|e| failed(format!("cannot create {}: {e}", self.log.display())))?;
        let t = &self.target;
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .arg("--variant")
            .arg(&self.variant)
            .arg("--db")
            .arg(&self.db)
            .args(["--addr", addr])
            .args(["--workers", &t.server_workers.to_string()])
            .args(["--journal-mode", &t.journal_mode])
            .args(["--synchronous", &t.synchronous])
            .args([
                "--busy-timeout",
                &humantime::format_duration(t.busy_timeout).to_string(),
            ])
            .args(["--txn-retries", &t.txn_retries.to_string()])
            .args([
                "--txn-backoff",
                &humantime::format_duration(t.txn_backoff).to_string(),
            ])
            .args([
                "--txn-backoff-max",
                &humantime::format_duration(t.txn_backoff_max).to_string(),
            ]);
        if self.fault_hooks {
            cmd.arg("--fault-hooks");
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            // Not the terminal's process group: a Ctrl-C at the terminal
            // stops the run gracefully, and the run still needs the server
            // for the audit. Its watchdog's: it dies with a killed bench.
            .process_group(group)
            .spawn()
            .map_err(|e| failed(format!("cannot start the reference server: {e}")))?;
        let stdout = child.stdout.take().expect("piped");
        // Read the first line on a thread, so a silent server cannot hang us.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match first_line(&rx, control) {
            Some(line) => line,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(StartError::Interrupted);
            }
        };
        match line.trim().strip_prefix("listening on ") {
            Some(url) => Ok((child, url.to_string())),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                // The log is appended to across restarts: its last line
                // is this start's.
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                let last = log
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                Err(failed(format!(
                    "the reference server did not start: {}",
                    crate::target::http::client::excerpt(last.trim())
                )))
            }
        }
    }
}

/// The server's first line ("" if none came within [`START_TIMEOUT`]), or
/// None if `control` stopped first. The line comes from a reader thread:
/// the wait re-checks the stop every 20 ms (startup only, never the load).
fn first_line(rx: &std::sync::mpsc::Receiver<String>, control: Option<&Control>) -> Option<String> {
    use std::sync::mpsc::RecvTimeoutError;
    let until = Instant::now() + START_TIMEOUT;
    loop {
        if control.is_some_and(Control::stopped) {
            return None;
        }
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(Duration::from_millis(20))) {
            Ok(line) => return Some(line),
            Err(RecvTimeoutError::Timeout) if !left.is_zero() => {}
            Err(_) => return Some(String::new()),
        }
    }
}
