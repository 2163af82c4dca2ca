//! The in-process SQLite target: the run's database (`target.path`, or
//! the run folder's `target.db`) with the workload's schema applied and
//! checked against its statement file, one connection per worker, the
//! lock nemesis and the WAL keeper beside the load (which runs the WAL's
//! checkpoints in the workers' stead: [`crate::wal`]), the final tables read
//! on a connection of their own (and, for a database that lives
//! elsewhere, copied into the run folder as audited).
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

pub mod client;
pub mod schema_fit;
pub mod tables;

use super::{Caps, Finished, Setup, Target, TargetError};
use crate::clock::Clock;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::history::writer::HistorySink;
use crate::nemesis::lock::LockNemesis;
use crate::nemesis::Recorder;
use crate::scenario::{self, SqliteTarget as Pragmas};
use crate::statements::StatementFile;
use crate::wal::{WalKeeper, WalReport};
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::Arc;

/// The database, ready for the load.
pub struct SqliteTarget {
    db: PathBuf,
    pragmas: Pragmas,
    run_dir: PathBuf,
    workers: usize,
    locks: Vec<(u32, scenario::Fault)>,
    sink: HistorySink,
    clock: Clock,
    control: Arc<Control>,
    nemesis: Recorder,
    wal: Option<WalReport>,
}

impl SqliteTarget {
    /// Applies `schema` to the run's database, then checks that it fits
    /// `file` (a table already there keeps its shape); `workers`
    /// connections are opened for the load. Errors: the database cannot
    /// be opened, refuses the schema, or does not fit (exit 3, before any
    /// op).
    pub fn prepare(
        x: &Setup<'_>,
        schema: &str,
        file: &StatementFile,
        workers: usize,
    ) -> Result<Self, TargetError> {
        let pragmas = x.scenario.target.sqlite();
        let db = pragmas
            .path
            .clone()
            .unwrap_or_else(|| x.run_dir.join("target.db"));
        let conn = client::open(&db, &pragmas)
            .map_err(|e| TargetError::Target(format!("{}: {e}", db.display())))?;
        conn.execute_batch(schema)
            .map_err(|e| TargetError::Target(format!("schema failed on {}: {e}", db.display())))?;
        schema_fit::check(&conn, file)
            .map_err(|e| TargetError::Target(format!("{}: {e}", db.display())))?;
        Ok(SqliteTarget {
            locks: x.faults(FaultKind::Lock, Caps::SQLITE),
            db,
            pragmas,
            run_dir: x.run_dir.to_path_buf(),
            workers,
            sink: x.sink.clone(),
            clock: x.clock,
            control: x.control.clone(),
            nemesis: x.nemesis.clone(),
            wal: None,
        })
    }

    /// A failure after the load as the run's error: a database that could
    /// not be written (a full disk) says so first.
    fn after(&self, what: String) -> TargetError {
        match self.control.take_failure() {
            Some(why) => TargetError::Target(format!("{why}; then {what}")),
            None => TargetError::Target(what),
        }
    }
}

impl Target for SqliteTarget {
    type Clients = Vec<Connection>;
    type Source<'a> = &'a mut Connection;

    fn caps(&self) -> Caps {
        Caps::SQLITE
    }

    fn describe(&self) -> String {
        format!("sqlite {}", self.db.display())
    }

    fn run<O>(&mut self, load: impl FnOnce(Vec<Connection>) -> O) -> Result<O, TargetError> {
        let mut conns = Vec::with_capacity(self.workers);
        for _ in 0..self.workers {
            conns.push(client::open(&self.db, &self.pragmas).map_err(|e| {
                TargetError::Target(format!("cannot open {}: {e}", self.db.display()))
            })?);
        }
        let keeper = WalKeeper::start_checkpointing(
            self.db.clone(),
            &self.pragmas,
            self.sink.clone(),
            self.clock,
        );
        if keeper.checkpoints() {
            for c in &conns {
                crate::wal::leave_checkpoints_to_keeper(c)
                    .map_err(|e| TargetError::Target(format!("{}: {e}", self.db.display())))?;
            }
        }
        let locks = LockNemesis::start(
            self.db.clone(),
            self.pragmas.clone(),
            std::mem::take(&mut self.locks),
            self.nemesis.clone(),
            self.clock.now(),
            self.control.clone(),
        );
        let out = load(conns);
        locks.stop();
        self.wal = keeper.stop();
        Ok(out)
    }

    fn final_read<T>(
        &mut self,
        read: impl FnOnce(&mut Connection) -> Result<T, String>,
    ) -> Result<Option<T>, TargetError> {
        let mut conn = client::open(&self.db, &self.pragmas)
            .map_err(|e| self.after(format!("cannot reopen {}: {e}", self.db.display())))?;
        let tables = read(&mut conn)
            .map_err(|e| self.after(format!("cannot read the final tables: {e}")))?;
        if self.pragmas.path.is_some() {
            // The database lives elsewhere: keep a copy of it as audited.
            let copy = self.run_dir.join("target.db");
            crate::whole::produce(&copy, |tmp| {
                conn.execute("VACUUM INTO ?1", [tmp.to_string_lossy()])
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| {
                self.after(format!(
                    "cannot copy the final database to {}: {e}",
                    copy.display()
                ))
            })?;
        }
        Ok(Some(tables))
    }

    fn finish(self) -> Finished {
        Finished {
            target_desc: self.describe(),
            target_error: self.control.take_failure(),
            wal: self.wal,
        }
    }
}
