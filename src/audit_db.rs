//! Opening a run folder's SQLite database for `audit`, which must not trust
//! the folder: whoever handed it over wrote its `target.db` and the queries
//! the audit runs on it (the saved `variant.sql`'s exports, or the saved
//! scenario's `[audit] export.*`). The audit writes only `audit.json`, so
//! the connection ([`open_untrusted`]):
//!
//! - never writes the folder: the file is opened read-only and immutable
//!   (no lock, no `-shm` or `-wal` created); when a `-wal` or `-journal`
//!   file lies next to it (a run that was killed), SQLite would have to
//!   write to read it, so the files are copied into a private temporary
//!   folder and the copy is read;
//! - runs reads only: an authorizer allows SELECT, reading columns,
//!   recursive queries, the read transaction and functions other than
//!   [`sql_guard::REFUSED_FUNCTIONS`]; every write, `ATTACH`, `DETACH`,
//!   `PRAGMA` and DDL is refused while being prepared, and `query_only`,
//!   defensive mode, `trusted_schema = OFF` and "no attached databases"
//!   hold besides;
//! - is bounded: a database (with its `-wal` and `-journal`) larger than
//!   [`Limits::max_db_bytes`] is refused before it is opened (exit 2, an
//!   input over its cap, as every file a command reads), and all the
//!   audit's queries together may run [`Limits::max_steps`] SQLite
//!   virtual-machine steps, after which the running query is stopped with
//!   an error (exit 3) instead of running forever.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::audit_error::AuditError;
use crate::sql_guard::{self, Budget, Refusals};
use rusqlite::config::DbConfig;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Connection, OpenFlags};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

/// The default of `audit --max-steps`: SQLite virtual-machine steps for all
/// the audit's queries on one database. A 2M-event in-process run's two
/// exports take about 14 million; this leaves room for exports that join
/// and for runs far larger.
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000_000;

/// The default of `audit --max-db-mib`: the largest database (with its
/// `-wal` and `-journal`) an audit reads, in MiB. A 2M-event in-process
/// run leaves about 240 MB.
pub const DEFAULT_MAX_DB_MIB: u64 = 8192;

/// The longest string or blob a query may make or read (SQLite's
/// `SQLITE_LIMIT_LENGTH`): a run's values are ids, names and counts.
const MAX_VALUE_BYTES: i32 = 64 << 20;

/// How much an audit reads and computes (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// SQLite virtual-machine steps for all the queries on one database.
    pub max_steps: u64,
    /// The largest database (with its `-wal` and `-journal`), in bytes.
    pub max_db_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: DEFAULT_MAX_STEPS,
            max_db_bytes: DEFAULT_MAX_DB_MIB << 20,
        }
    }
}

/// A run folder's database opened by [`open_untrusted`]: a connection
/// (through `Deref`) that can only read, on a budget.
pub struct UntrustedDb {
    // Declared first: the connection closes before its copy is removed.
    conn: Connection,
    path: PathBuf,
    budget: Budget,
    refused: Refusals,
    /// The private copy read instead of the folder's file, if one was made.
    _copy: Option<tempfile::TempDir>,
}

impl Deref for UntrustedDb {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl DerefMut for UntrustedDb {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

impl UntrustedDb {
    /// A failed query on this database as the audit reports it (exit 3):
    /// a stop by the step budget and a refused statement are named as such.
    pub fn error(&self, e: &rusqlite::Error) -> AuditError {
        let path = self.path.display();
        AuditError::Unreadable(if self.budget.ran_out() {
            format!(
                "{path}: the audit's queries ran past their budget of {} SQLite steps and were \
                 stopped (a run's exports take about 7 per row: is a query in this folder \
                 endless or crafted? --max-steps raises the budget)",
                self.budget.max()
            )
        } else if let Some(what) = self.refused.take() {
            format!(
                "{path}: {what} refused: an audit runs read-only queries only (no writes, \
                 ATTACH, DETACH, PRAGMA, DDL or load_extension)"
            )
        } else {
            format!("{path}: {e}")
        })
    }

    /// SQLite steps the queries took so far (to the nearest 10,000 below).
    pub fn steps_spent(&self) -> u64 {
        self.budget.spent()
    }
}

/// Opens `path`, a run folder's database, for an audit that trusts neither
/// it nor the queries it will run (see the module's doc). Errors: it is
/// larger than `limits.max_db_bytes` (exit 2); it is not a regular file,
/// cannot be copied or opened, or SQLite refuses a setting (exit 3).
pub fn open_untrusted(path: &Path, limits: Limits) -> Result<UntrustedDb, AuditError> {
    let bad = |what: String| AuditError::Unreadable(format!("{}: {what}", path.display()));
    let side = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let mut files = vec![(path.to_path_buf(), "")];
    for suffix in ["-wal", "-journal"] {
        if side(suffix).exists() {
            files.push((side(suffix), suffix));
        }
    }
    let mut total = 0u64;
    for (file, _) in &files {
        let meta = std::fs::metadata(file).map_err(|e| bad(format!("{}: {e}", file.display())))?;
        if !meta.is_file() {
            return Err(bad(format!("{} is not a regular file", file.display())));
        }
        total = total.saturating_add(meta.len());
    }
    if total > limits.max_db_bytes {
        return Err(AuditError::Input(format!(
            "{}: {total} bytes (with its -wal and -journal files), larger than {} MiB, the \
             cap of an audited database: refused (--max-db-mib raises it)",
            path.display(),
            limits.max_db_bytes >> 20
        )));
    }
    let opened = |e: rusqlite::Error| bad(format!("cannot open: {e}"));
    let (conn, copy) = if files.len() == 1 {
        let uri = immutable_uri(path).map_err(|e| bad(e.to_string()))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        (
            Connection::open_with_flags(uri, flags).map_err(opened)?,
            None,
        )
    } else {
        // Reading a WAL or a hot journal takes writing (a `-shm` index, a
        // rollback): that happens to a private copy, never to the folder.
        let dir = tempfile::Builder::new()
            .prefix("specstorm-audit-")
            .tempdir()
            .map_err(|e| bad(format!("cannot make a private copy: {e}")))?;
        let copy = dir.path().join("target.db");
        let mut left = limits.max_db_bytes;
        for (file, suffix) in &files {
            let mut to = copy.as_os_str().to_owned();
            to.push(suffix);
            left = left
                .checked_sub(copy_at_most(file, Path::new(&to), left)?)
                .ok_or_else(|| bad("grew while it was copied".into()))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        (
            Connection::open_with_flags(&copy, flags).map_err(opened)?,
            Some(dir),
        )
    };
    let mut conn = conn;
    let refused = Refusals::default();
    let budget = secure(&mut conn, limits.max_steps, refused.clone())
        .map_err(|e| bad(format!("cannot make the connection read-only: {e}")))?;
    Ok(UntrustedDb {
        conn,
        path: path.to_path_buf(),
        budget,
        refused,
        _copy: copy,
    })
}

/// Copies `from` to `to`, at most `max` bytes. Errors: the copy fails, or
/// `from` holds more (it grew since it was measured).
fn copy_at_most(from: &Path, to: &Path, max: u64) -> Result<u64, AuditError> {
    let bad = |e: String| {
        AuditError::Unreadable(format!(
            "{}: cannot make a private copy: {e}",
            from.display()
        ))
    };
    let src = std::fs::File::open(from).map_err(|e| bad(e.to_string()))?;
    let mut dst = std::fs::File::create(to).map_err(|e| bad(e.to_string()))?;
    let n = std::io::copy(&mut std::io::Read::take(src, max + 1), &mut dst)
        .map_err(|e| bad(e.to_string()))?;
    if n > max {
        return Err(bad("it grew while it was copied".into()));
    }
    Ok(n)
}

/// Makes `conn` read-only and bounded (see the module's doc); returns its
/// step budget. Errors: SQLite's.
fn secure(conn: &mut Connection, max_steps: u64, refused: Refusals) -> rusqlite::Result<Budget> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    // A copy's WAL needs no checkpoint: the copy is removed.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    sql_guard::no_attach(conn)?;
    conn.set_limit(
        rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
        MAX_VALUE_BYTES,
    )?;
    conn.execute_batch("PRAGMA query_only = ON")?;
    let budget = Budget::install(conn, max_steps)?;
    conn.authorizer(Some(move |ctx: AuthContext<'_>| match ctx.action {
        AuthAction::Select
        | AuthAction::Read { .. }
        | AuthAction::Recursive
        | AuthAction::Transaction { .. } => Authorization::Allow,
        AuthAction::Function { function_name } if !sql_guard::refused_function(function_name) => {
            Authorization::Allow
        }
        other => refused.refuse(&other),
    }))?;
    Ok(budget)
}

/// `file:` URI of `path` opened immutable (SQLite then takes no lock and
/// creates no file). Errors: the path cannot be made absolute.
fn immutable_uri(path: &Path) -> std::io::Result<String> {
    let abs = std::fs::canonicalize(path)?;
    let mut uri = String::from("file:");
    for b in abs.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(b) {
            uri.push(*b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_with_rows(path: &Path) {
        let c = Connection::open(path).unwrap();
        c.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);")
            .unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn reads_in_place_and_refuses_everything_but_reads() {
        let tmp = tempfile::tempdir().unwrap();
        // A name a URI would misread unless encoded.
        let dir = tmp.path().join("a?b#c %d");
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("target.db");
        db_with_rows(&path);
        let db = open_untrusted(&path, Limits::default()).unwrap();
        let n: i64 = db
            .query_row("SELECT sum(x) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
        let elsewhere = tmp.path().join("x.db");
        for sql in [
            "INSERT INTO t VALUES (3)".to_string(),
            "DELETE FROM t".into(),
            "UPDATE t SET x = 0".into(),
            "CREATE TABLE u (y)".into(),
            "PRAGMA query_only = OFF".into(),
            format!("ATTACH '{}' AS x", elsewhere.display()),
            "SELECT load_extension('/nonexistent')".into(),
        ] {
            let e = db.prepare(&sql).map(drop).unwrap_err();
            let AuditError::Unreadable(m) = db.error(&e) else {
                panic!()
            };
            assert!(
                m.contains(" refused: an audit runs read-only"),
                "{sql}: {m}"
            );
        }
        drop(db);
        assert!(!elsewhere.exists());
        assert_eq!(names(&dir), ["target.db"]);
    }

    #[test]
    fn a_killed_runs_wal_is_read_from_a_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("target.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; \
                 CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);",
            )
            .unwrap();
        // The writer is forgotten, as a killed process leaves it: the
        // rows are in the -wal only.
        std::mem::forget(writer);
        let before = names(tmp.path());
        assert!(before.contains(&"target.db-wal".to_string()), "{before:?}");
        std::fs::remove_file(tmp.path().join("target.db-shm")).unwrap();
        let before = names(tmp.path());
        let db = open_untrusted(&path, Limits::default()).unwrap();
        let n: i64 = db
            .query_row("SELECT sum(x) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
        drop(db);
        assert_eq!(names(tmp.path()), before, "the folder is left as it was");
    }

    #[test]
    fn a_hot_journal_is_rolled_back_in_a_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let live = tmp.path().join("live");
        std::fs::create_dir(&live).unwrap();
        let path = live.join("target.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 1; \
                 CREATE TABLE t (x); \
                 WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000) \
                 INSERT INTO t SELECT 1 FROM c; \
                 BEGIN; UPDATE t SET x = 2;",
            )
            .unwrap();
        // What a process killed inside that transaction leaves: pages of
        // the uncommitted update in the file (the cache is too small to
        // hold them), the old ones in the hot journal.
        let folder = tmp.path().join("folder");
        std::fs::create_dir(&folder).unwrap();
        for name in ["target.db", "target.db-journal"] {
            std::fs::copy(live.join(name), folder.join(name)).unwrap();
        }
        drop(writer);
        // Read as it lies, the file holds the uncommitted update.
        let alone = tmp.path().join("alone.db");
        std::fs::copy(folder.join("target.db"), &alone).unwrap();
        let torn: i64 = Connection::open(&alone)
            .unwrap()
            .query_row("SELECT sum(x) FROM t", [], |r| r.get(0))
            .unwrap();
        assert!(torn > 2000, "the update reached the file: {torn}");
        let before = names(&folder);
        let db = open_untrusted(&folder.join("target.db"), Limits::default()).unwrap();
        let n: i64 = db
            .query_row("SELECT sum(x) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2000, "only committed rows are read");
        drop(db);
        assert_eq!(names(&folder), before, "the folder is left as it was");
    }

    #[test]
    fn a_database_over_the_limit_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("target.db");
        db_with_rows(&path);
        let limits = Limits {
            max_db_bytes: 100,
            ..Limits::default()
        };
        let Err(AuditError::Input(m)) = open_untrusted(&path, limits) else {
            panic!("opened")
        };
        assert!(m.contains("the cap of an audited database: refused"), "{m}");
    }

    #[test]
    fn an_endless_query_is_stopped_by_the_budget() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("target.db");
        db_with_rows(&path);
        let limits = Limits {
            max_steps: 5_000_000,
            ..Limits::default()
        };
        let db = open_untrusted(&path, limits).unwrap();
        let e = db
            .query_row(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
                 SELECT count(*) FROM c",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_err();
        let AuditError::Unreadable(m) = db.error(&e) else {
            panic!()
        };
        assert!(m.contains("budget of 5000000 SQLite steps"), "{m}");
    }
}
