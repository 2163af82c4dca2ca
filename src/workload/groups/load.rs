//! The groups workload's load phase on each target
//! ([`crate::target`]: the in-process SQLite database, or an HTTP
//! service, which run the nemeses and the WAL keeper and read the final
//! tables through the workload's reader): its connections or clients
//! handed to its runtime, the final tables as one snapshot of this run's
//! namespace; and the namespace a run takes on a target that holds other
//! runs' rows.
//!
//! App layer (the groups workload's implementation): imports the engine,
//! the targets and the nemesis.

use super::api::GroupIds;
use super::api_compile::GroupsRequests;
use super::config::GroupsScenario;
use super::export::read_export;
use super::prepare::Prepared;
use super::service_db;
use super::statements::GroupsVariant;
use crate::clock::Clock;
use crate::prepare::{holds_rows, RunError};
use crate::scenario::api::{AuditConfig, EventRows};
use crate::scenario::{self};
use crate::target::http::mapping::{Mapping, RequestTemplate};
use crate::target::http::source::{HttpReader, HttpSource};
use crate::target::http::HttpTarget;
use crate::target::sqlite::SqliteTarget;
use crate::target::{Setup, Target};
use crate::workload::groups::checker::Tables;
use crate::workload::groups::config::EventIdShape;
use crate::workload::groups::generator::EventIds;
use crate::workload::groups::http_runtime::{run_load_http, GroupIdSource};
use crate::workload::groups::runtime::LoadOutcome;
use crate::workload::groups::runtime::{run_load, LoadPlan};
use crate::workload::traits::Ran;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// A shard refuses a run id that was used before: a sibling shard never
/// writes this shard's event ids (they carry its `k<i>-` prefix, or with
/// plain ids its keyed tag: see [`EventIds`]), so any row with them at the
/// start is an earlier run's, and would make the merged audit count events
/// nobody sent in this run (a false violation). Ids of either kind count,
/// whatever this run's shape: the earlier run may have had another.
/// Checking only its own ids keeps the check free of races with the
/// siblings. Errors: exit 2 when such rows exist, 3 when the export fails.
fn refuse_used_run_id(
    src: &HttpSource<'_>,
    run_dir: &Path,
    namespace: &str,
    shard: crate::shard::Shard,
    shape: EventIdShape,
) -> Result<(), RunError> {
    let before = run_dir.join("export-before.json");
    src.export_to(&src.client().mapping().export, &before)
        .map_err(|e| {
            RunError::Target(format!("cannot read the target's rows before the run: {e}"))
        })?;
    let mut tables = Tables::default();
    read_export(&before, namespace, &mut tables).map_err(RunError::Target)?;
    let _ = std::fs::remove_file(&before);
    let ids = EventIds::new(shape, namespace, Some(shard));
    let used = tables.event_ids.iter().filter(|id| ids.is_own(id)).count();
    if used > 0 {
        let own = format!("{namespace}{}", crate::shard::Shard::id_prefix(Some(shard)));
        let which = match shape {
            EventIdShape::Namespaced => format!("ids {own}..."),
            EventIdShape::Uuid | EventIdShape::Hex32 => {
                format!(
                    "ids that carry shard {}'s tag in this namespace",
                    shard.index
                )
            }
        };
        return Err(RunError::Input(format!(
            "the run id of namespace {namespace:?} was used before: the target already holds \
             {used} events of shard {}/{} ({which}); give every sharded run a fresh --run-id",
            shard.index, shard.count
        )));
    }
    Ok(())
}

/// What a target's load phase hands to the audit.
pub(super) type Phase = Ran<LoadOutcome, Tables>;

/// The groups' reader of an HTTP target's final tables: the export's or
/// the service database's rows of this run's namespace.
struct Reader<'a> {
    namespace: &'a str,
}

impl HttpReader for Reader<'_> {
    type Tables = Tables;

    fn export<'m>(&self, mapping: &'m Mapping) -> &'m RequestTemplate {
        &mapping.export
    }

    fn parse_export(
        &self,
        path: &Path,
        [read_start, read_end]: [u64; 2],
    ) -> Result<Tables, String> {
        let mut tables = Tables {
            read_start,
            read_end,
            ..Default::default()
        };
        read_export(path, self.namespace, &mut tables).map(|()| tables)
    }

    fn read_database(
        &self,
        db: &Path,
        audit: &AuditConfig,
        now: &dyn Fn() -> u64,
    ) -> Result<Tables, String> {
        service_db::read_final(db, audit, self.namespace, now)
    }
}

/// The in-process SQLite target: connections, load, snapshot.
pub(super) fn sqlite_phase(
    p: &Prepared,
    x: &Setup<'_>,
    plan: &LoadPlan<'_>,
) -> Result<Phase, RunError> {
    let l = &p.scenario.load();
    let workers = l.ingesters as usize + l.resolvers as usize;
    let mut target = SqliteTarget::prepare(x, &p.variant.schema, &p.variant.file, workers)?;
    let load = target.run(|mut conns| {
        let resolve_conns = conns.split_off(l.ingesters as usize);
        run_load(plan, conns, resolve_conns)
    })?;
    let tables = target.final_read(|conn| {
        snapshot(conn, &p.variant, plan.namespace, &plan.clock).map_err(|e| e.to_string())
    })?;
    Ok(Ran::new(load, tables, target.finish()))
}

/// An HTTP target: run the load, then read `GET /v1/export` (or the
/// service's own database) into the run folder and audit it.
pub(super) fn http_phase(
    p: &Prepared,
    x: &Setup<'_>,
    plan: &LoadPlan<'_>,
) -> Result<Phase, RunError> {
    let mut target = HttpTarget::start(x)?;
    if let Some(shard) = plan.shard.filter(|s| s.count > 1) {
        let shape = p.scenario.keys().event_id();
        target.before_load(|src| {
            refuse_used_run_id(src, x.run_dir, plan.namespace, shard, shape)
        })??;
    }
    let group_ids = GroupsRequests::of(target.mapping()).group_ids;
    let (load, gone) = target.run(|c| {
        let ids = match group_ids {
            GroupIds::Answer => GroupIdSource::Answers,
            GroupIds::Lookup => GroupIdSource::Lookup,
            GroupIds::Audit => {
                let db = c.service_db;
                GroupIdSource::Database(Arc::new(move || {
                    service_db::group_ids(&db.locate()?, db.audit())
                }))
            }
        };
        run_load_http(plan, x.control.clone(), c.client, c.nonconforming, ids)
    })?;
    let pruned = p
        .scenario
        .audit
        .as_ref()
        .is_some_and(|a| a.events == EventRows::Pruned);
    let reader = Reader {
        namespace: plan.namespace,
    };
    let tables = target.final_read(|src| src.read(&reader))?.map(|mut t| {
        t.events_pruned = pruned;
        t
    });
    // Why the load ended early is said after whatever else went wrong
    // (an export that then failed, a service that exited).
    target.ended_early(gone);
    Ok(Ran::new(load, tables, target.finish()))
}

/// Refuses a database that holds rows unless the scenario reuses it; then
/// returns the run's own project namespace (empty for a fresh database).
pub(super) fn namespace_for(
    path: &Path,
    target: &scenario::SqliteTarget,
    started: SystemTime,
) -> Result<String, RunError> {
    if !path.exists() {
        return Ok(String::new());
    }
    let terr = |e: rusqlite::Error| RunError::Target(format!("{}: {e}", path.display()));
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(terr)?;
    if !holds_rows(&conn).map_err(terr)? {
        return Ok(String::new());
    }
    if !target.reuse {
        return Err(RunError::Input(format!(
            "the database {} already holds rows: refusing to mix runs. Set \
             target.reuse = true to run in a namespace of its own, or choose a fresh path",
            path.display()
        )));
    }
    Ok(run_namespace(started))
}

/// The project prefix of a run that shares its target:
/// `r<unix ms>-<random>.`. The random part keeps two runs started in the
/// same millisecond apart (their ids and projects would otherwise mix).
pub(super) fn run_namespace(started: SystemTime) -> String {
    let since = started
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    // Two runs at once on one machine differ in pid; elsewhere, in ns.
    let tag = (since.subsec_nanos() as u64 ^ ((std::process::id() as u64) << 32))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("r{}-{:08x}.", since.as_millis(), tag >> 32)
}

/// Reads the canonical tables (the variant's `export.*` queries) in one
/// read transaction, keeping only this run's namespace; times on `clock`
/// (see [`super::tables_read::read_tables`]).
pub(super) fn snapshot(
    conn: &mut Connection,
    variant: &GroupsVariant,
    namespace: &str,
    clock: &Clock,
) -> rusqlite::Result<Tables> {
    super::tables_read::read_tables(conn, variant, namespace, &|| clock.now())
}
