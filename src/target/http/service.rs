//! A service the scenario starts itself (`target.command`, e.g. `npx
//! wrangler dev ...`): run through `sh -c` in its own process group, its
//! output copied line by line, secrets redacted, into the run folder's
//! `service.log`, and stopped (SIGTERM to the whole group, then SIGKILL)
//! after the final read. Tools such as wrangler start children of their
//! own (workerd); signalling the group stops them all. The group is a
//! [`Watchdog`]'s, so it also dies with a bench that is killed.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::template::Secrets;
use super::watchdog::Watchdog;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a stopped service may take to exit before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A started service.
pub struct Service {
    child: Option<Child>,
    copiers: Vec<std::thread::JoinHandle<()>>,
    /// The group the service runs in.
    watchdog: Watchdog,
}

impl Service {
    /// Starts `command` (already filled in) in `workdir`, its stdout and
    /// stderr into `log` with `secrets` redacted. Errors: the folder does
    /// not exist, the log cannot be created, or `sh` cannot be started.
    pub fn start(
        command: &str,
        workdir: &Path,
        log: &Path,
        secrets: &Secrets,
    ) -> Result<Service, String> {
        if !workdir.is_dir() {
            return Err(format!(
                "target.workdir {} is not a folder",
                workdir.display()
            ));
        }
        let file = std::fs::File::create(log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let file = Arc::new(Mutex::new(file));
        let watchdog = Watchdog::start()?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(watchdog.group())
            .spawn()
            .map_err(|e| format!("cannot start target.command: {e}"))?;
        let mut copiers = Vec::new();
        let out: Option<Box<dyn std::io::Read + Send>> =
            child.stdout.take().map(|s| Box::new(s) as _);
        let err: Option<Box<dyn std::io::Read + Send>> =
            child.stderr.take().map(|s| Box::new(s) as _);
        for stream in [out, err].into_iter().flatten() {
            let file = file.clone();
            let secrets = secrets.clone();
            copiers.push(std::thread::spawn(move || {
                let mut lines = BufReader::new(stream);
                let mut line = Vec::new();
                while lines.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                    let text = secrets.redact(&String::from_utf8_lossy(&line));
                    let _ = file.lock().expect("log").write_all(text.as_bytes());
                    line.clear();
                }
            }));
        }
        Ok(Service {
            child: Some(child),
            copiers,
            watchdog,
        })
    }

    /// Whether the service's shell is still running; Err(how it ended).
    pub fn check(&mut self) -> Result<(), String> {
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) => Ok(()),
            Some(Ok(Some(status))) => Err(format!("target.command exited ({status})")),
            Some(Err(e)) => Err(format!("target.command: {e}")),
            None => Err("target.command was stopped".into()),
        }
    }

    /// Stops the service's whole process group: SIGTERM, then SIGKILL
    /// after a grace; waits for its output to be copied.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            self.watchdog.release();
            return;
        };
        self.watchdog.signal(nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + STOP_GRACE;
        let mut exited = false;
        while Instant::now() < until {
            if !matches!(child.try_wait(), Ok(None)) {
                exited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The shell may be gone while its children (workerd) still run:
        // the watchdog kills the whole group, itself included.
        self.watchdog.release();
        if !exited {
            let _ = child.wait();
        }
        for c in self.copiers.drain(..) {
            let _ = c.join();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop();
    }
}
