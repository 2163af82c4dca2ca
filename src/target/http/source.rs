//! Where an HTTP target's tables are read from, before the load (an
//! earlier run's rows) and after it (the final tables): the export
//! request (the contract's, or `[audit] request`) saved into the run
//! folder, or the service's own database (`[audit] sqlite`, through its
//! `export.*` queries, copied into the run folder as `target.db`). What
//! the rows mean is the workload's: its [`HttpReader`] parses them.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::client::HttpClient;
use super::mapping::{Mapping, RequestTemplate};
use super::service_db;
use crate::clock::Clock;
use crate::scenario::api::AuditConfig;
use std::path::{Path, PathBuf};

/// A workload's reader of an HTTP target's tables.
pub trait HttpReader {
    /// The tables it reads.
    type Tables;

    /// The request of the export that holds them (one of `mapping`'s).
    fn export<'m>(&self, mapping: &'m Mapping) -> &'m RequestTemplate;

    /// The tables of the saved export at `path`, read during `read`
    /// (start, end: clock ns).
    fn parse_export(&self, path: &Path, read: [u64; 2]) -> Result<Self::Tables, String>;

    /// The tables of the service's database at `db`, through `audit`'s
    /// queries, in one read transaction timed on `now`.
    fn read_database(
        &self,
        db: &Path,
        audit: &AuditConfig,
        now: &dyn Fn() -> u64,
    ) -> Result<Self::Tables, String>;
}

/// The service's own database, where `[audit] sqlite` says it is.
#[derive(Debug, Clone)]
pub struct ServiceDb {
    audit: AuditConfig,
    /// The run folder, absolute (`{run_dir}` in `audit.sqlite`).
    run_dir: PathBuf,
    /// The scenario file's folder (`audit.sqlite` is relative to it).
    base: PathBuf,
}

impl ServiceDb {
    pub(super) fn new(audit: AuditConfig, run_dir: &Path, base: &Path) -> Self {
        ServiceDb {
            audit,
            run_dir: std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf()),
            base: base.to_path_buf(),
        }
    }

    /// `[audit]` (its defaults when the scenario has none).
    pub fn audit(&self) -> &AuditConfig {
        &self.audit
    }

    /// The database's path. Errors: `audit.sqlite` matches no file, or
    /// several.
    pub fn locate(&self) -> Result<PathBuf, String> {
        service_db::locate(
            self.audit.sqlite.as_deref().unwrap_or(""),
            &self.run_dir,
            &self.base,
        )
    }
}

/// An HTTP target's tables, for a workload's reader: its runtime, a
/// client of the service itself (never through the fault proxy), the run
/// folder and the service's database.
pub struct HttpSource<'a> {
    pub(super) rt: &'a tokio::runtime::Runtime,
    pub(super) client: HttpClient,
    pub(super) url: &'a str,
    pub(super) run_dir: &'a Path,
    pub(super) db: &'a ServiceDb,
    pub(super) clock: Clock,
}

impl HttpSource<'_> {
    /// The runtime the client belongs to.
    pub fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt
    }

    /// A client of the service (its mapping included).
    pub fn client(&self) -> &HttpClient {
        &self.client
    }

    /// The service's URL.
    pub fn url(&self) -> &str {
        self.url
    }

    /// The service's database, when `[audit] sqlite` names one.
    pub fn service_db(&self) -> Option<&ServiceDb> {
        self.db.audit.sqlite.is_some().then_some(self.db)
    }

    /// The final tables: the service's database, read and then copied
    /// into the run folder as `target.db`; else the export, saved as
    /// `export.json` there. Errors: what could not be read, and why.
    pub fn read<R: HttpReader>(&self, reader: &R) -> Result<R::Tables, String> {
        let clock = self.clock;
        if self.service_db().is_some() {
            let path = self.db.locate()?;
            let tables = reader.read_database(&path, &self.db.audit, &|| clock.now())?;
            service_db::copy(&path, &self.run_dir.join("target.db"))?;
            return Ok(tables);
        }
        let export = self.run_dir.join("export.json");
        let read_start = clock.now();
        let exported = self.export_to(reader.export(self.client.mapping()), &export);
        let read_end = clock.now();
        exported
            .map_err(|e| format!("the export could not be read: {e}"))
            .and_then(|_| reader.parse_export(&export, [read_start, read_end]))
    }

    /// The tables as they are before the load: None when the service's
    /// database is not there yet (a service may create it on its first
    /// write; the final read says so if it never does). The export is
    /// saved as `export-before.json` while it is read.
    pub fn read_before<R: HttpReader>(&self, reader: &R) -> Result<Option<R::Tables>, String> {
        if self.service_db().is_some() {
            let Ok(path) = self.db.locate() else {
                return Ok(None);
            };
            return reader.read_database(&path, &self.db.audit, &|| 0).map(Some);
        }
        let before = self.run_dir.join("export-before.json");
        let read = self
            .export_to(reader.export(self.client.mapping()), &before)
            .and_then(|_| reader.parse_export(&before, [0, 0]));
        let _ = std::fs::remove_file(&before);
        read.map(Some)
    }

    /// Sends the export request `req` and saves the answer to `to`.
    pub fn export_to(&self, req: &RequestTemplate, to: &Path) -> Result<u64, String> {
        self.rt.block_on(self.client.export_to(req, to))
    }
}
