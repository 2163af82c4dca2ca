//! What every runner does before anything runs, and shares: the options
//! of `specstorm run` ([`RunOptions`]) and its errors ([`RunError`]), the
//! command line that reproduces a run, the scenario's folder, the run
//! folder's default name, the checks of `--shard` and `--run-id`
//! ([`shard_flags`]), and whether a target database holds rows already.
//! Each workload loads and checks its own scenario and statement file in
//! its folder.
//!
//! App layer, below every runner, the audit and the merge: imports the
//! config, the shard model and the HTTP target's shell quoting, never
//! another command.

use crate::scenario::mapping::Mapping;
use crate::scenario::{Scenario, TargetKind};
use crate::shard::Shard;
use crate::target::http::start::shell_word;
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

/// A mapping's secrets must be in the environment before anything runs
/// (`check`, and the first step of a run of any workload; not the audit
/// of a saved run, which sends nothing): the first key whose `${NAME}` is
/// not set, as `FILE:LINE: reason` (exit 2).
pub fn secrets_present(
    path: Option<&Path>,
    scenario: &Scenario,
    text: &str,
) -> Result<(), RunError> {
    let Err(e) = Mapping::compile_for(
        scenario.workload,
        scenario.api.as_ref(),
        scenario.audit.as_ref(),
        true,
    ) else {
        return Ok(());
    };
    let file = path.map_or("<embedded default>".to_string(), |p| {
        p.display().to_string()
    });
    let keys: Vec<&str> = e.path.iter().map(String::as_str).collect();
    let line = crate::scenario::key_line(text, &keys).map_or(String::new(), |l| format!(":{l}"));
    Err(RunError::Input(format!("{file}{line}: {}", e.reason)))
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
