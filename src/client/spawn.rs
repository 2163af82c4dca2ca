//! A spawned target: the bench starts the reference server (`specstorm
//! serve`, this very binary) with the scenario's variant on a free loopback
//! port, waits until it listens, and stops it (SIGTERM, then SIGKILL after
//! a grace) when the run is over.

use crate::scenario::Target;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a SIGTERM may take before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running reference server; stopped when dropped.
pub struct SpawnedServer {
    child: Option<Child>,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl SpawnedServer {
    /// Starts `specstorm serve --variant VARIANT --db DB --addr 127.0.0.1:0`
    /// with the target's pragmas and worker count; its request log goes to
    /// `log`. Errors: it cannot be started or does not say where it
    /// listens within 20 s (with what it printed).
    pub fn start(variant: &str, db: &Path, target: &Target, log: &Path) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find my own binary: {e}"))?;
        let log_file = std::fs::File::create(log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let mut child = Command::new(exe)
            .arg("serve")
            .arg("--variant")
            .arg(variant)
            .arg("--db")
            .arg(db)
            .args(["--addr", "127.0.0.1:0"])
            .args(["--workers", &target.server_workers.to_string()])
            .args(["--journal-mode", &target.journal_mode])
            .args(["--synchronous", &target.synchronous])
            .args([
                "--busy-timeout",
                &humantime::format_duration(target.busy_timeout).to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            // Its own process group: a Ctrl-C at the terminal stops the run
            // gracefully, and the run still needs the server for the audit.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start the reference server: {e}"))?;
        let stdout = child.stdout.take().expect("piped");
        // Read the first line on a thread, so a silent server cannot hang us.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut server = SpawnedServer {
            child: Some(child),
            url: String::new(),
        };
        let line = rx.recv_timeout(START_TIMEOUT).unwrap_or_default();
        match line.trim().strip_prefix("listening on ") {
            Some(url) => {
                server.url = url.to_string();
                Ok(server)
            }
            None => {
                server.stop();
                let log = std::fs::read_to_string(log).unwrap_or_default();
                Err(format!(
                    "the reference server did not start: {}",
                    crate::client::http::excerpt(log.trim())
                ))
            }
        }
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Stops the server: SIGTERM (it finishes requests in flight), then
    /// SIGKILL if it is still there after a grace.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let until = Instant::now() + STOP_GRACE;
        while Instant::now() < until {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for SpawnedServer {
    fn drop(&mut self) {
        self.stop();
    }
}
