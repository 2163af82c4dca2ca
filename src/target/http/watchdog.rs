//! A process group that dies with the bench. A service the bench starts
//! (the spawned reference server, a `target.command` such as `npx wrangler
//! dev`, which starts node and workerd under a shell) must not outlive a
//! bench that is killed (SIGKILL, out of memory), when nothing of the
//! bench's own runs to stop it. `PR_SET_PDEATHSIG` reaches only a direct
//! child, and fires when the *thread* that spawned it ends (the kill
//! nemesis restarts the server from a thread of its own), so it is not
//! used.
//!
//! Instead the group's first member is a watchdog: a tiny `sh` that
//! ignores the terminal's signals and blocks reading a socket whose other
//! end only the bench holds. Every process of the service is started into
//! the watchdog's group. When the bench is gone, however it died, the
//! kernel closes its end, the watchdog reads end-of-file, and kills its
//! whole group (itself included) with SIGKILL. The bench's end is created
//! close-on-exec (`UnixStream::pair`), so no process the bench starts holds
//! it, or the end-of-file would never come. The watchdog leads the group,
//! so the group's id stays in use (and cannot be reused by an unrelated
//! process) until the watchdog kills it.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// The watchdog's program: wait for end-of-file on stdin, then kill the
/// process group (`kill -9 0`: the caller's group).
const PROGRAM: &str = "trap '' INT TERM HUP QUIT; while read -r _; do :; done; kill -9 0";

/// A running watchdog: the process group services are started into.
pub struct Watchdog {
    child: Child,
    /// The bench's end: dropping it (or the bench's death) kills the group.
    bench_end: Option<UnixStream>,
}

impl Watchdog {
    /// Starts a watchdog leading a new process group. Errors: `sh` cannot
    /// be started, or the socket cannot be made.
    pub fn start() -> Result<Watchdog, String> {
        let (bench_end, dog_end) =
            UnixStream::pair().map_err(|e| format!("cannot make the watchdog's socket: {e}"))?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(PROGRAM)
            .stdin(Stdio::from(OwnedFd::from(dog_end)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start the service's watchdog (sh): {e}"))?;
        Ok(Watchdog {
            child,
            bench_end: Some(bench_end),
        })
    }

    /// The process group's id, to start a service's processes into
    /// (`Command::process_group`) and to signal them all.
    pub fn group(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends `signal` to every process of the group but the watchdog,
    /// which ignores the terminal's signals (SIGKILL kills it too: the
    /// group is then gone). A system call, not the `kill` program, which a
    /// slim container may not have.
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.group()), signal);
    }

    /// Kills the whole group, the watchdog included, and reaps the
    /// watchdog.
    pub fn release(&mut self) {
        if self.bench_end.take().is_some() {
            // End-of-file: the watchdog kills its group (itself included).
            let _ = self.child.wait();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn alive(pid: i32) -> bool {
        // Gone, or a zombie nobody reaped yet.
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

    #[test]
    fn releasing_the_watchdog_kills_its_group_and_nothing_else() {
        let mut dog = Watchdog::start().unwrap();
        let mut member = Command::new("sleep")
            .arg("1000")
            .process_group(dog.group())
            .spawn()
            .unwrap();
        let pid = member.id() as i32;
        // A process the bench starts afterwards holds no copy of the
        // bench's end (close-on-exec): the group dies all the same.
        let mut other = Command::new("sleep").arg("1000").spawn().unwrap();
        assert!(alive(pid));
        dog.release();
        let _ = member.wait();
        let until = Instant::now() + Duration::from_secs(60);
        while alive(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(pid), "the group outlived its watchdog");
        assert!(alive(other.id() as i32), "only the group is killed");
        let _ = other.kill();
        let _ = other.wait();
    }
}
