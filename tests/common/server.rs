//! The reference server (`specstorm serve`) on a free loopback port, killed
//! when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running reference server; killed on drop if still running.
pub struct Server {
    /// The `specstorm serve` process.
    pub child: Child,
    /// Its base URL, `http://127.0.0.1:PORT`.
    pub url: String,
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    /// A server for `variant` on a fresh temp database.
    pub fn start(variant: &str) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Server::start_on(variant, &dir.path().join("target.db"));
        s._dir = Some(dir);
        s
    }

    /// A server for `variant` on the database `db`.
    pub fn start_on(variant: &str, db: &Path) -> Server {
        Server::start_with(variant, db, &[])
    }

    /// A server for `variant` on the database `db`, with more `serve` flags.
    pub fn start_with(variant: &str, db: &Path, flags: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_specstorm"))
            .args(["serve", "--variant", variant, "--db"])
            .arg(db)
            .args(["--addr", "127.0.0.1:0"])
            .args(flags)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start specstorm serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim_end()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        assert!(!url.ends_with(":0"), "the real port is printed: {url}");
        Server {
            child,
            url,
            _dir: None,
        }
    }

    /// SIGTERM, then the exit status (within 10 s).
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let t = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "no exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
