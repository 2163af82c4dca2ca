//! Where `specstorm audit` reads a run's final tables (both workloads:
//! [`locate`]): an in-process run's `target.db` through the saved
//! `variant.sql`'s export queries, a service audited from its own database
//! through the scenario's, an HTTP run's `export.json`; and, for a run
//! killed before it read them, the database the kill left, where the
//! folder holds one. Each workload's audit reads its own tables from
//! where [`locate`] finds them.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::audit_error::AuditError;
use crate::scenario::{Scenario, TargetKind};
use std::path::{Path, PathBuf};

/// Where a run folder's final tables are, for either workload: found by
/// [`locate`] from the saved scenario's target, and read by the workload
/// (its own tables, its own export shape).
pub(crate) enum Located {
    /// A SQLite database read through the saved `variant.sql`'s export
    /// statements: its path, and how the audit names it.
    Db(PathBuf, String),
    /// A service's own database, read through the scenario's `[audit]
    /// export.*` queries: its path, and how the audit names it.
    ServiceDb(PathBuf, String),
    /// The service's final export, `export.json`, as the run read it.
    Export(PathBuf),
}

/// Where the final tables of the run folder `run_dir` are, by its saved
/// `scenario`'s target: an in-process run's `target.db`; a service audited
/// from its own database, the copy the run kept; any other HTTP run, the
/// `export.json` the run was judged from. `killed`: the run saved no
/// verdicts, so it may not have read them itself: an in-process run's
/// database is read as the kill left it (its `-wal` included), the spawned
/// reference server's likewise, and a service audited from its own
/// database there. Errors: a file the audit needs is missing (exit 2), or,
/// for a killed run, no final tables can be had (exit 3, saying why).
/// `cut`: the history has no footer (an `export.json` may then be cut
/// short too).
pub(crate) fn locate(
    run_dir: &Path,
    scenario: &Scenario,
    killed: bool,
    cut: bool,
) -> Result<Located, AuditError> {
    let need = |name: &str, what: &str| {
        crate::run_dir::folder_file(run_dir, name).map_err(|is| {
            AuditError::Input(format!(
                "{} is not a run folder the audit can use: {name} {is} ({what})",
                run_dir.display()
            ))
        })
    };
    let target = &scenario.target;
    let in_folder = run_dir.join("target.db");
    // Kept elsewhere (`target.path`) and killed before the copy.
    let kept_elsewhere = |what: &str| match &target.path {
        Some(path) if killed && !in_folder.is_file() => Err(AuditError::Unreadable(format!(
            "the run was killed before it copied {what} ({}) into {}: copy it there as \
             target.db to audit it",
            path.display(),
            run_dir.display()
        ))),
        _ => Ok(()),
    };
    let audit_db = scenario.audit.as_ref().and_then(|a| a.sqlite.clone());
    match target.kind {
        TargetKind::Sqlite => {
            kept_elsewhere("its database")?;
            let db = need(
                "target.db",
                "the final database of an in-process SQLite run",
            )?;
            Ok(Located::Db(db, "target.db".into()))
        }
        // A service audited from its own database: the copy the run kept,
        // through the scenario's export queries; a killed run made no copy,
        // so the service's database itself (the saved scenario names it).
        TargetKind::Http if audit_db.is_some() => {
            if killed && !in_folder.is_file() {
                let abs = std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.into());
                let pattern = audit_db.unwrap_or_default();
                let db =
                    crate::target::http::service_db::locate(&pattern, &abs, &abs).map_err(|e| {
                        AuditError::Unreadable(format!(
                            "the run was killed before it copied the service's database: {e}"
                        ))
                    })?;
                let source = format!("{} (the service's database)", db.display());
                Ok(Located::ServiceDb(db, source))
            } else {
                let db = need(
                    "target.db",
                    "the copy of the service's database the run audited",
                )?;
                Ok(Located::ServiceDb(db, "target.db".into()))
            }
        }
        // The spawned reference server's own database, killed with the
        // bench before (or while) the run read its export: its export
        // queries are the saved variant's.
        TargetKind::Http
            if killed
                && target.url.is_none()
                && (cut || !run_dir.join("export.json").is_file()) =>
        {
            kept_elsewhere("the reference server's database")?;
            let db = need("target.db", "the spawned reference server's database")?;
            Ok(Located::Db(
                db,
                "target.db (the spawned reference server's database)".into(),
            ))
        }
        TargetKind::Http => {
            let export = run_dir.join("export.json");
            if killed && !export.is_file() {
                return Err(AuditError::Unreadable(format!(
                    "the run was killed before it read the service's final tables (export.json \
                     is missing), and nothing else in {} holds them: nothing can be judged",
                    run_dir.display()
                )));
            }
            Ok(Located::Export(need(
                "export.json",
                "the final tables of an HTTP run",
            )?))
        }
    }
}
