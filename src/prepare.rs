//! What every runner does before anything runs, and shares: the options
//! of `specstorm run` ([`RunOptions`]) and its errors ([`RunError`]), the
//! groups scenario and statement file loaded and checked ([`prepare`]), a
//! shard's part of the scenario ([`apply_shard`]), the scenario's folder,
//! the run folder's default name, the scenario's timed faults, and the
//! checks of a target database before a run (rows already there, a schema
//! that fits).
//!
//! App layer, below every runner, the audit and the merge: imports the
//! config, the clients' mapping and schema check, the shard model and the
//! watch options, never another command.

use crate::scenario::mapping::Mapping;
use crate::scenario::{self, Scenario, TargetKind};
use crate::shard::{namespace_of, Shard};
use crate::statements::GroupsVariant;
use crate::target::http::start::shell_word;
use crate::variant;
use crate::workload::groups::config::{GroupsScenario, LoadModel};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use crate::run_options::{RunError, RunOptions};

impl From<crate::target::TargetError> for RunError {
    fn from(e: crate::target::TargetError) -> Self {
        use crate::target::TargetError;
        match e {
            TargetError::Input(why) => RunError::Input(why),
            TargetError::Target(why) => RunError::Target(why),
            TargetError::Other(e) => RunError::Other(e),
            TargetError::Interrupted(why) => RunError::Interrupted(why),
        }
    }
}

/// A scenario and its checked variant, before anything runs.
pub struct Prepared {
    /// The resolved scenario (overrides and defaults applied).
    pub scenario: Scenario,
    /// Where the scenario came from, and its text.
    pub source: scenario::Source,
    /// The statement file, checked against the groups workload.
    pub variant: GroupsVariant,
}

/// Loads and checks a scenario and its statement file (`specstorm check`
/// and the first step of a run). Errors: file, line and reason (exit 2).
pub fn prepare(path: Option<&Path>, overrides: &[String]) -> Result<Prepared, RunError> {
    let p = prepare_offline(path, overrides)?;
    let file = || {
        path.map_or("<embedded default>".to_string(), |p| {
            p.display().to_string()
        })
    };
    // Before a run, not in the audit of a saved one (which ran nothing).
    if let Some(reason) = blocks_without_journal(&p.scenario, &p.variant) {
        let line = scenario::key_line(&p.source.text, &["target", "journal_mode"])
            .map_or(String::new(), |l| format!(":{l}"));
        return Err(RunError::Input(format!("{}{line}: {reason}", file())));
    }
    // A mapping's secrets must be in the environment before anything runs.
    if let Err(e) = Mapping::compile(p.scenario.api.as_ref(), p.scenario.audit.as_ref(), true) {
        let file = path.map_or("<embedded default>".to_string(), |p| {
            p.display().to_string()
        });
        let keys: Vec<&str> = e.path.iter().map(String::as_str).collect();
        let line =
            scenario::key_line(&p.source.text, &keys).map_or(String::new(), |l| format!(":{l}"));
        return Err(RunError::Input(format!("{file}{line}: {}", e.reason)));
    }
    Ok(p)
}

/// [`prepare`] without reading a mapping's secrets from the environment:
/// for what sends no request (`audit` of a saved run folder).
pub fn prepare_offline(path: Option<&Path>, overrides: &[String]) -> Result<Prepared, RunError> {
    let (scenario, source) =
        scenario::load(path, overrides).map_err(|e| RunError::Input(e.to_string()))?;
    if scenario.workload.name() == "outbox" {
        // The registry hands outbox scenarios to the outbox workload first.
        return Err(RunError::Input(
            "workload = \"outbox\" is prepared by its own runner (`run`, `check`, `compare`, \
             `audit` and `merge` take it)"
                .into(),
        ));
    }
    let dir = path.map(|p| p.parent().unwrap_or(Path::new(".")).to_path_buf());
    let variant = variant::load_groups(&scenario.variant, dir.as_deref())
        .map_err(|e| RunError::Input(e.to_string()))?;
    // Step names in faults can only be checked against the statement file.
    if let Err((i, reason)) =
        crate::nemesis::check_steps(&scenario.faults, &variant.ingest, &variant.resolve)
    {
        let file = path.map_or("<embedded default>".to_string(), |p| {
            p.display().to_string()
        });
        let line = scenario::fault_line(&source.text, i, Some("step"))
            .map_or(String::new(), |l| format!(":{l}"));
        return Err(RunError::Input(format!("{file}{line}: {reason}")));
    }
    Ok(Prepared {
        scenario,
        source,
        variant,
    })
}

/// Why `variant` cannot run on the target of `s`: it has a transaction
/// block, the bench runs it (in process, or on the reference server it
/// spawns: a service at `target.url` runs its own statements on its own
/// database), and `journal_mode = off` has no rollback journal, so a
/// rolled-back block could leave half its writes. Refused before the run,
/// naming the block's `begin` (the step driver refuses the block at run
/// time too, for `specstorm serve --journal-mode off`).
pub fn blocks_without_journal(s: &Scenario, variant: &GroupsVariant) -> Option<String> {
    let runs_blocks = s.target.kind == TargetKind::Sqlite || s.target.spawn;
    if !runs_blocks || !s.target.journal_mode.eq_ignore_ascii_case("off") {
        return None;
    }
    let (program, txn) = [&variant.ingest, &variant.resolve]
        .into_iter()
        .find_map(|p| p.txns.first().map(|t| (p, t)))?;
    let step = &program.steps[txn.first];
    Some(format!(
        "`target.journal_mode = \"off\"` has no rollback journal, and transaction blocks \
         need one (a rolled-back block could leave half its writes): {}:{} opens one \
         (`-- begin: {}` at step {}.{}); use wal (the default), delete, truncate, persist \
         or memory",
        variant.file.path.display(),
        step.line,
        txn.mode.name(),
        program.op,
        step.name
    ))
}

/// The command line that reproduces a run (seed made explicit).
pub fn reproduce_command(opts: &RunOptions, seed: u64) -> String {
    let mut parts = vec!["specstorm".to_string(), "run".to_string()];
    if let Some(p) = &opts.scenario {
        parts.push(shell_word(&p.display().to_string()));
    }
    for o in opts.overrides.iter().filter(|o| !o.starts_with("seed=")) {
        parts.push("--set".into());
        parts.push(shell_word(o));
    }
    parts.push("--seed".into());
    parts.push(seed.to_string());
    if let (Some(sh), Some(id)) = (opts.shard, &opts.run_id) {
        parts.push("--shard".into());
        parts.push(format!("{}/{}", sh.index, sh.count));
        parts.push("--run-id".into());
        parts.push(shell_word(id));
    }
    parts.join(" ")
}

/// The scenario file's folder (what `target.workdir` and a relative
/// `audit.sqlite` are relative to); `.` for the embedded default.
pub(crate) fn scenario_base(opts: &RunOptions) -> PathBuf {
    opts.scenario
        .as_deref()
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// The run folder's default name: `<UTC time>-<scenario>-<variant>`.
pub(crate) fn default_run_dir(started: SystemTime, scenario: &str, variant: &str) -> PathBuf {
    let t = humantime::format_rfc3339_millis(started)
        .to_string()
        .replace([':', '-'], "")
        .replace('.', "-");
    PathBuf::from("results").join(format!(
        "{t}-{}-{}",
        file_safe(scenario),
        file_safe(variant)
    ))
}

/// A name as one safe path component: no separators, no leading dots.
pub(crate) fn file_safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_start_matches('.');
    if s.is_empty() {
        "_".into()
    } else {
        s.to_string()
    }
}

/// Checks `--shard` and `--run-id` and turns the scenario into this
/// shard's part of it: `stop.events` becomes its share (the shares sum to
/// the total) and, in the open model, `load.rate` is divided by n; in the
/// closed model each runner keeps the scenario's ingesters and resolvers
/// (n runners, n times the workers). Returns the shards' shared namespace,
/// or None when the run is not sharded. Errors (exit 2): those of
/// [`shard_flags`], or fewer events than shards.
///
/// A namespace that already holds rows is not refused: a shard cannot tell
/// a sibling's rows (which may already be there) from an earlier run's.
/// Use a fresh run id per run.
pub fn apply_shard(
    s: &mut Scenario,
    shard: Option<Shard>,
    run_id: Option<&str>,
) -> Result<Option<String>, RunError> {
    let Some((shard, id)) = shard_flags(s, shard, run_id)? else {
        return Ok(None);
    };
    if s.stop.events > 0 {
        let share = shard.share(s.stop.events);
        if share == 0 {
            return Err(RunError::Input(format!(
                "stop.events = {} cannot be split into {} shards (each needs at least one)",
                s.stop.events, shard.count
            )));
        }
        s.stop.events = share;
    }
    if s.load().model == LoadModel::Open {
        s.load_mut().rate /= shard.count as f64;
    }
    Ok(Some(namespace_of(id)))
}

/// Checks `--shard` and `--run-id` for either workload: both or neither,
/// a run id of 1 to 40 of `A-Z a-z 0-9 _ -`, and an external HTTP service
/// (`target.url`) every runner reaches. Returns the shard and its run id,
/// or None when the run is not sharded. Errors (exit 2): one flag without
/// the other, a bad run id, another target.
pub fn shard_flags<'a>(
    s: &Scenario,
    shard: Option<Shard>,
    run_id: Option<&'a str>,
) -> Result<Option<(Shard, &'a str)>, RunError> {
    let (shard, id) = match (shard, run_id) {
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(RunError::Input(
                "--shard needs --run-id ID, the same on every shard of the run (the runners \
                 share the target's namespace through it)"
                    .into(),
            ))
        }
        (None, Some(_)) => {
            return Err(RunError::Input(
                "--run-id is for sharded runs: give --shard i/n too".into(),
            ))
        }
        (Some(sh), Some(id)) => (sh, id),
    };
    if id.is_empty()
        || id.len() > 40
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(RunError::Input(format!(
            "--run-id {id:?}: use 1 to 40 letters, digits, '-' or '_'"
        )));
    }
    if s.target.kind != TargetKind::Http || s.target.url.is_none() {
        return Err(RunError::Input(
            "--shard needs an HTTP target given by target.url, one service every runner \
             reaches: a spawned server (target.spawn) or an in-process SQLite target would \
             give each runner a target of its own"
                .into(),
        ));
    }
    Ok(Some((shard, id)))
}

pub(crate) fn holds_rows(conn: &Connection) -> rusqlite::Result<bool> {
    let mut st = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
    )?;
    let tables: Vec<String> = st.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    for t in tables {
        let q = format!(
            "SELECT EXISTS (SELECT 1 FROM \"{}\")",
            t.replace('"', "\"\"")
        );
        if conn.query_row(&q, [], |r| r.get::<_, bool>(0))? {
            return Ok(true);
        }
    }
    Ok(false)
}
