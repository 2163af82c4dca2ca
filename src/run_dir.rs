//! Claiming a run folder: one run (or compare, or merge) per folder.
//!
//! Checking that a folder is empty and then writing into it leaves a
//! window in which two runs started at once both find it empty and mix
//! their histories and databases. The claim closes it: the folder is
//! created with `mkdir` (which fails when it exists), and a claim file is
//! created in it with `O_EXCL` (`create_new`), which exactly one process
//! can do. A folder the user made for `--out` and left empty is accepted
//! the same way: whoever creates its claim file owns it. The claim file
//! stays after the run: it says which process ran there, and a later run
//! finds the folder taken.
//!
//! Layer: core, the lowest. May import the modules of its own layer only.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The claim file in every run, compare and merge folder (docs/cli.md's
/// run-folder table).
pub const CLAIM_FILE: &str = ".specstorm-claim";

/// Why a folder cannot be claimed; every case is a usage error (exit 2):
/// nothing ran, and nothing was written into the folder.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// Another run holds the folder (or held it: the claim file stays).
    #[error(
        "{} {}: choose another --out, so that runs never mix",
        .dir.display(),
        .holder.describe()
    )]
    Claimed {
        /// The folder.
        dir: PathBuf,
        /// Who claimed it, as its claim file says.
        holder: Holder,
    },
    /// The folder holds files no claim accounts for.
    #[error(
        "{} exists and is not an empty folder: choose another --out, so that runs never mix",
        .0.display()
    )]
    NotEmpty(PathBuf),
    /// The folder or its claim file cannot be created (a file in the way,
    /// no permission).
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        /// What could not be created.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Who claimed a folder, read back from its claim file.
#[derive(Debug)]
pub struct Holder {
    /// The claim file's line ("claimed by specstorm V (pid N) at T"), empty
    /// when it holds none (a claim made on a full disk, or a moment ago).
    pub line: String,
    /// Whether the process it names still runs (None: no pid to ask about).
    pub running: Option<bool>,
}

impl Holder {
    fn read(file: &Path) -> Holder {
        let head = crate::input::head(file, 4096).unwrap_or_default();
        let line = String::from_utf8_lossy(&head)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        let pid = line
            .split("(pid ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|p| p.parse::<i32>().ok());
        // /proc/PID exists while the process does (Linux; elsewhere the
        // answer is unknown and the folder reads as taken).
        let running = pid
            .filter(|_| Path::new("/proc/self").exists())
            .map(|p| Path::new(&format!("/proc/{p}")).exists());
        Holder { line, running }
    }

    fn describe(&self) -> String {
        let said = if self.line.is_empty() {
            format!("its {CLAIM_FILE} exists")
        } else {
            format!("its {CLAIM_FILE}: {}", self.line)
        };
        match self.running {
            // A run that ended (or was killed) keeps its claim: its files
            // are still there and never mixed with another run's.
            Some(false) => format!(
                "was used by an earlier run, which has ended ({said}); its results stay there"
            ),
            _ => format!("is taken by another run ({said})"),
        }
    }
}

/// A folder this process owns: it created the claim file in it.
#[derive(Debug)]
pub struct Claim {
    dir: PathBuf,
    /// The claim made the folder (so giving it up removes the folder).
    created: bool,
}

impl Claim {
    /// The claimed folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Gives the folder up before anything was written into it (a refusal
    /// found after the claim): removes the claim file, and the folder if
    /// the claim made it, so that a refused run leaves the disk as it was.
    pub fn release(self) {
        let _ = std::fs::remove_file(self.dir.join(CLAIM_FILE));
        if self.created {
            // Fails, leaving it, if anything else appeared in it.
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// `name` in the run folder `dir` when it is a regular file (a symlink to
/// one is fine); otherwise what it is instead, to finish "NAME ...":
/// "is missing", or "is not a regular file" (a device such as
/// `/dev/zero`, a folder, a socket: never read).
pub fn folder_file(dir: &Path, name: &str) -> Result<PathBuf, &'static str> {
    let p = dir.join(name);
    match std::fs::metadata(&p) {
        Ok(m) if m.is_file() => Ok(p),
        Ok(_) => Err("is not a regular file"),
        Err(_) => Err("is missing"),
    }
}

/// Claims `dir` for one run: creates it (and its parents) if it does not
/// exist, then creates its claim file with `O_EXCL`, which only one
/// process can. Errors: another process holds the claim, the folder holds
/// other files, or it cannot be created (see [`ClaimError`]).
pub fn claim(dir: &Path) -> Result<Claim, ClaimError> {
    let create = |path: &Path, source| ClaimError::Create {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| create(parent, e))?;
    }
    let created = match std::fs::create_dir(dir) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(create(dir, e)),
    };
    let file = dir.join(CLAIM_FILE);
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(ClaimError::Claimed {
                dir: dir.to_path_buf(),
                holder: Holder::read(&file),
            })
        }
        Err(e) if !dir.is_dir() => return Err(create(dir, e)),
        Err(e) => return Err(create(&file, e)),
    };
    let claim = Claim {
        dir: dir.to_path_buf(),
        created,
    };
    // An existing folder is claimed only if it held nothing: files of an
    // earlier run (or anything else) are never mixed with this one's.
    let others = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .any(|e| e.file_name() != CLAIM_FILE)
        })
        .unwrap_or(true);
    if others {
        claim.release();
        return Err(ClaimError::NotEmpty(dir.to_path_buf()));
    }
    // Who holds it, for a user who finds the folder taken.
    let _ = writeln!(
        f,
        "claimed by specstorm {} (pid {}) at {}",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now())
    );
    Ok(claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_claimed_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/run");
        let first = claim(&dir).unwrap();
        assert!(dir.join(CLAIM_FILE).is_file());
        // The second claim comes before the first run wrote anything: the
        // folder still looks empty but for the claim, and is refused.
        assert!(matches!(claim(&dir), Err(ClaimError::Claimed { .. })));
        drop(first);
        assert!(matches!(claim(&dir), Err(ClaimError::Claimed { .. })));
    }

    #[test]
    fn an_existing_empty_folder_is_claimed_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("made-by-the-user");
        std::fs::create_dir(&dir).unwrap();
        let c = claim(&dir).unwrap();
        assert!(matches!(claim(&dir), Err(ClaimError::Claimed { .. })));
        // Given up, an existing folder stays, empty as it was.
        c.release();
        assert!(dir.is_dir());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        claim(&dir).unwrap();
    }

    #[test]
    fn a_folder_with_files_is_refused_and_left_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("old-run");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("history.jsonl"), "x").unwrap();
        assert!(matches!(claim(&dir), Err(ClaimError::NotEmpty(_))));
        assert!(!dir.join(CLAIM_FILE).exists());
        // A file in the way of the folder.
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(claim(&file), Err(ClaimError::Create { .. })));
    }

    #[test]
    fn a_released_new_folder_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        claim(&dir).unwrap().release();
        assert!(!dir.exists());
    }

    #[test]
    fn a_claim_says_whether_its_run_has_ended() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        drop(claim(&dir).unwrap());
        // This process holds it: still going.
        let e = claim(&dir).unwrap_err().to_string();
        assert!(e.contains("is taken by another run"), "{e}");
        assert!(e.contains(&format!("(pid {})", std::process::id())), "{e}");
        if Path::new("/proc/self").exists() {
            // A pid beyond any kernel's limit: a run that has ended (killed).
            std::fs::write(
                dir.join(CLAIM_FILE),
                "claimed by specstorm 0.1.0 (pid 999999999) at 2026-12-01T00:00:00Z\n",
            )
            .unwrap();
            let e = claim(&dir).unwrap_err().to_string();
            assert!(e.contains("earlier run, which has ended"), "{e}");
            assert!(e.contains("pid 999999999"), "{e}");
        }
    }
}
