//! A service's own SQLite database (`[audit] sqlite`): where it is (a glob
//! that must name exactly one file, e.g. the hashed file name of a local
//! D1 database), a read-only connection to it ([`open`]), and its copy
//! into the run folder ([`copy`]). Each workload reads its own final
//! tables from it, through the scenario's `export.*` queries, in its
//! folder.
//!
//! The bench only reads it (read-only connections); the service may keep
//! writing while the bench reads, which SQLite's locking allows.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

/// The database file of `pattern` (`{run_dir}` filled in, relative to
/// `base`, the scenario file's folder). Errors: no file or several match,
/// or a bad pattern.
pub fn locate(pattern: &str, run_dir: &Path, base: &Path) -> Result<PathBuf, String> {
    // The folders are literal: a `[` or `*` in their names is no pattern.
    let esc = |p: &Path| glob::Pattern::escape(&p.display().to_string());
    let filled = pattern.replace("{run_dir}", &esc(run_dir));
    let text = if Path::new(&filled).is_absolute() {
        filled
    } else {
        format!("{}/{filled}", esc(base))
    };
    let found: Vec<PathBuf> = glob::glob(&text)
        .map_err(|e| format!("audit.sqlite {pattern:?}: {e}"))?
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!("audit.sqlite: no file matches {text}")),
        many => Err(format!(
            "audit.sqlite: {} files match {text} ({}): make the pattern name one",
            many.len(),
            many.iter()
                .take(4)
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A read-only connection to the database at `path` that waits for the
/// service's locks. Errors: it cannot be opened.
pub fn open(path: &Path) -> Result<Connection, String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // The service may be writing: wait for its locks rather than fail.
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

/// Copies the database as read into `to` (`VACUUM INTO`), so that the run
/// folder keeps what was audited. Errors: SQLite's.
pub fn copy(path: &Path, to: &Path) -> Result<(), String> {
    let conn = open(path)?;
    crate::whole::produce(to, |tmp| {
        conn.execute("VACUUM INTO ?1", [tmp.to_string_lossy()])
            .map(|_| ())
            .map_err(|e| format!("cannot copy {} to {}: {e}", path.display(), to.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_exactly_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d1");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("metadata.sqlite"), "").unwrap();
        let pat = "{run_dir}/d1/[0-9a-f]*.sqlite";
        assert!(locate(pat, dir.path(), Path::new("/"))
            .unwrap_err()
            .contains("no file matches"));
        std::fs::write(d.join("9ba2.sqlite"), "").unwrap();
        assert_eq!(
            locate(pat, dir.path(), Path::new("/")).unwrap(),
            d.join("9ba2.sqlite")
        );
        // A folder whose name looks like a pattern is taken literally.
        let odd = dir.path().join("glob[1] *");
        std::fs::create_dir_all(odd.join("d1")).unwrap();
        std::fs::write(odd.join("d1/9ba2.sqlite"), "").unwrap();
        assert_eq!(
            locate(pat, &odd, Path::new("/")).unwrap(),
            odd.join("d1/9ba2.sqlite")
        );
        std::fs::write(d.join("abcd.sqlite"), "").unwrap();
        assert!(locate(pat, dir.path(), Path::new("/"))
            .unwrap_err()
            .contains("2 files match"));
        assert_eq!(
            locate("d1/meta*.sqlite", Path::new("/x"), dir.path()).unwrap(),
            d.join("metadata.sqlite")
        );
    }
}
