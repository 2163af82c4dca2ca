//! `specstorm replay RUN_DIR [--finding N]`: one finding of a groups run
//! of the in-process SQLite target, re-executed. The recorded steps of
//! the ops of the finding's group run again on a fresh database built
//! from the run's `variant.sql`, one connection per recorded worker, in an
//! order the steps' intervals allow that reproduces the run's own answers
//! ([`search`]), and the run's checkers judge what ran ([`judge`]). The
//! replay is then shrunk to a minimal set of ops and steps that still
//! reproduces the finding ([`crate::replay_order`]'s ddmin), and written as a script for the
//! `sqlite3` shell and an explore world ([`script`]), which the explorer
//! is asked to confirm. Deterministic: the same folder replays the same
//! way every time. docs/replay.md says what each answer rests on.
//!
//! Reached through the registry (`Workload::replay`); its options are
//! [`crate::replay`]'s.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

pub mod judge;
pub mod recording;
pub mod rerun;
pub mod script;
pub mod search;

use crate::exit_code::ExitCode;
use crate::explore::Restore;
pub use crate::replay::{ReplayError, ReplayOptions};
use crate::workload::groups::checker::{check_all, Tables};
use crate::workload::groups::validate::design;
use judge::Target;
use recording::{NotReplayable, Recording};
use search::{Plan, Ran, Searched};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a replay found and wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The finding replayed (1-based) and how many the run has.
    pub finding: usize,
    /// How many findings the run has.
    pub findings: usize,
    /// The invariant.
    pub invariant: String,
    /// The group's project and fingerprint.
    pub group: (String, String),
    /// Whether an allowed order reproduced it.
    pub reproduced: bool,
    /// Ops and steps of the replay.
    pub replayed: (usize, usize),
    /// Ops and steps of the shrunk replay.
    pub shrunk: (usize, usize),
    /// Whether `specstorm explore` on the world written found a violation.
    pub explore_confirms: Option<bool>,
    /// The files written.
    pub files: Vec<String>,
}

/// Runs `specstorm replay` and prints what it found; returns the exit code.
pub fn main(opts: &ReplayOptions) -> ExitCode {
    if let Some(n) = opts.reruns {
        return match reruns(opts, n) {
            Ok(r) => r.exit(),
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "specstorm: replay: {e}");
                e.exit_code()
            }
        };
    }
    match replay(opts) {
        Ok(o) => match (o.reproduced, o.explore_confirms) {
            (true, Some(true)) => ExitCode::Met,
            (true, _) => ExitCode::Inconclusive,
            (false, _) => ExitCode::NotMet,
        },
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "specstorm: replay: {e}");
            e.exit_code()
        }
    }
}

/// The run folder's verdicts, as `audit` judges them (its history and
/// final tables, the run's checkers).
fn original_results(
    dir: &Path,
    p: &crate::workload::groups::prepare::Prepared,
    history: &Path,
) -> Result<Vec<crate::verdict::CheckResult>, ReplayError> {
    let read = crate::workload::groups::audit::read_history(history)
        .map_err(|e| ReplayError::Unreadable(e.to_string()))?;
    let namespace = read
        .facts
        .header
        .as_ref()
        .map(|h| h.namespace.clone())
        .unwrap_or_default();
    let mut tables = Tables::default();
    let mut conn = crate::audit_db::open_untrusted(&dir.join("target.db"), Default::default())
        .map_err(|e| ReplayError::Unreadable(e.to_string()))?;
    crate::workload::groups::tables_read::read_rows_with(
        &mut conn,
        (&p.variant.export_events, &p.variant.export_groups),
        &namespace,
        &|| 0,
        &mut tables,
    )
    .map_err(|e| ReplayError::Unreadable(conn.error(&e).to_string()))?;
    [tables.read_start, tables.read_end] = read.tables_read();
    Ok(check_all(&read.facts, &tables).0)
}

/// [`main`] without the exit code.
///
/// # Errors
/// As [`ReplayError`].
pub fn replay(opts: &ReplayOptions) -> Result<Outcome, ReplayError> {
    let usage = ReplayError::Usage;
    let dir = &opts.run_dir;
    let scenario = dir.join("scenario.toml");
    let history = crate::history::file::in_folder(dir);
    let p = crate::workload::groups::prepare::prepare_offline(Some(&scenario), &[])
        .map_err(|e| usage(format!("the saved scenario cannot be used: {e}")))?;
    if p.scenario.target.kind == crate::scenario::TargetKind::Http {
        return Err(usage(format!(
            "{}: an HTTP run: the server's steps are not recorded (its history holds each \
             op's request and answer, not the statements the server ran), so there is \
             nothing to re-execute. The next best: `specstorm replay {} --reruns N` sends the \
             run's ops again to the reference server N times and reports how often each \
             finding recurs",
            dir.display(),
            dir.display()
        )));
    }
    for f in [&history, &dir.join("target.db")] {
        if !f.is_file() {
            return Err(usage(format!(
                "{}: not found (replay takes the folder of a groups run of the in-process \
                 SQLite target: scenario.toml, variant.sql, its history and target.db)",
                f.display()
            )));
        }
    }
    let d = design::map(&p.variant).map_err(|r| {
        usage(format!(
            "design refused: {r}. replay gives each recorded step the role validate gives it \
             (docs/validate.md, \"Roles\")"
        ))
    })?;
    let entries = crate::history::reader::read(&history)
        .and_then(|it| it.collect::<anyhow::Result<Vec<_>>>())
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e:#}", history.display())))?;
    let rec = recording::of_entries(entries, &d)
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e:#}", history.display())))?
        .map_err(|e| match e {
            NotReplayable::NoSteps(why) => usage(format!("{}: {why}", history.display())),
            NotReplayable::Outside(o) => ReplayError::Inconclusive(format!(
                "{o}: replay re-executes the steps the spec has actions for"
            )),
        })?;

    let results = original_results(dir, &p, &history)?;
    let found = crate::replay::violations(&results);
    if found.is_empty() {
        return Err(usage(format!(
            "{}: nothing to replay: the run's checkers find no invariant violated",
            dir.display()
        )));
    }
    println!("the run's findings (its checkers, as `audit` judges them):");
    for (k, (inv, f)) in found.iter().enumerate() {
        let g = f.group.as_ref().map_or("no group".to_string(), |g| {
            format!("group {} ({}, {})", g.id, g.project, g.fingerprint)
        });
        println!("  {}: {inv} on {g}: {}", k + 1, f.found);
    }
    let n = opts.finding;
    let Some((inv, finding)) = found.get(n.wrapping_sub(1)) else {
        return Err(usage(format!(
            "--finding {n}: the run has {} finding(s), numbered from 1",
            found.len()
        )));
    };
    let target = Target::of(inv, finding).ok_or_else(|| {
        usage(format!(
            "finding {n} ({inv}) names no group: replay re-executes a group's ops"
        ))
    })?;
    let ops: Vec<usize> = (0..rec.ops.len())
        .filter(|&i| {
            let (p, f) = rec.ops[i].key();
            (p, f) == (target.key.0.as_str(), target.key.1.as_str())
        })
        .collect();
    let plan = search::whole(&rec, ops);
    println!(
        "replaying finding {n}: {inv} on ({}, {}): {} ops, {} steps",
        target.key.0,
        target.key.1,
        plan.ops.len(),
        plan.steps()
    );
    let v = &p.variant;
    let out = dir.join("replay").join(format!("finding-{n}"));
    std::fs::create_dir_all(&out)
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", out.display())))?;

    // The replay: the run's own answers, an order that reproduces.
    let mut budget = opts.max_steps;
    let mut ok = acceptor(&rec, v, &plan, &target);
    let first = search::search(&rec, v, &plan, true, None, &mut budget, &mut ok)?;
    let spent = opts.max_steps - budget;
    let ran = match first {
        Searched::Found(r) => r,
        Searched::Exhausted { leaves } => {
            println!(
                "not reproduced: {leaves} order(s) the intervals allow give the run's answers; \
                 in none are the checkers' findings on the group this one ({spent} statements \
                 run)"
            );
            return Ok(Outcome {
                finding: n,
                findings: found.len(),
                invariant: inv.clone(),
                group: target.key.clone(),
                reproduced: false,
                replayed: (plan.ops.len(), plan.steps()),
                shrunk: (0, 0),
                explore_confirms: None,
                files: vec![],
            });
        }
        Searched::Cut => {
            return Err(ReplayError::Inconclusive(format!(
                "--max-steps {}: the search ran out before an order that gives the run's \
                 answers reproduced the finding",
                opts.max_steps
            )))
        }
    };
    let order: Vec<(usize, usize)> = ran.taken.iter().map(|t| (t.op, t.pos)).collect();
    let replay_db = out.join("replay.db");
    let ran = confirm(&rec, v, &plan, &order, &replay_db, &target)?;
    println!(
        "reproduced: an order of the {} recorded steps that their intervals allow gives every \
         answer the run got, and the checkers find {inv} violated on the group again \
         ({spent} statements run in the search); replayed on {} with one connection per \
         worker",
        ran.taken.len(),
        replay_db.display()
    );

    // Shrinking: relaxed searches, the replay's order first.
    let prefer: HashMap<(u64, u32), usize> = ran
        .taken
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let o = &rec.ops[plan.ops[t.op]];
            ((o.invoke.op, o.steps[t.pos].idx), k)
        })
        .collect();
    let test_budget = (opts.max_steps / 10).max(1);
    let mut tests = 0u64;
    let mut test = |cand: &Plan| -> Result<bool, search::DbError> {
        tests += 1;
        let mut b = test_budget;
        let mut ok = acceptor(&rec, v, cand, &target);
        Ok(matches!(
            search::search(&rec, v, cand, false, Some(&prefer), &mut b, &mut ok)?,
            Searched::Found(_)
        ))
    };
    let pinned: Vec<usize> = plan
        .ops
        .iter()
        .copied()
        .filter(|&i| target.event.is_some() && rec.ops[i].invoke.event_id == target.event)
        .collect();
    let free: Vec<usize> = plan
        .ops
        .iter()
        .copied()
        .filter(|i| !pinned.contains(i))
        .collect();
    let kept = crate::replay_order::ddmin(free, &pinned, &mut |ops| {
        test(&search::whole(&rec, ops.to_vec()))
    })?;
    let mut ops: Vec<usize> = kept.into_iter().chain(pinned.iter().copied()).collect();
    ops.sort_unstable();
    let small = crate::replay_order::fewest_steps(search::whole(&rec, ops), &mut test)?;
    let mut b = opts.max_steps;
    let mut ok = acceptor(&rec, v, &small, &target);
    let Searched::Found(sran) =
        search::search(&rec, v, &small, false, Some(&prefer), &mut b, &mut ok)?
    else {
        return Err(ReplayError::Unreadable(
            "the shrunk replay no longer reproduces (a bug: every step of the shrinking kept \
             a reproducing plan)"
                .into(),
        ));
    };
    let sorder: Vec<(usize, usize)> = sran.taken.iter().map(|t| (t.op, t.pos)).collect();
    let shrunk_db = out.join("shrunk.db");
    let sran = confirm(&rec, v, &small, &sorder, &shrunk_db, &target)?;
    println!(
        "shrunk ({tests} tests): {} ops, {} steps (from {} ops, {} steps)",
        small.ops.len(),
        small.steps(),
        plan.ops.len(),
        plan.steps()
    );

    // The script and the world.
    let title = format!(
        "specstorm replay: finding {n} of {} ({inv} on project {}, fingerprint {}), shrunk to \
         {} steps of {} ops",
        dir.display(),
        target.key.0,
        target.key.1,
        small.steps(),
        small.ops.len()
    );
    let conn = rusqlite::Connection::open(&shrunk_db).map_err(search::DbError::from)?;
    let script =
        script::sqlite3_script(&rec, v, &small, &sran, &conn, (&title, "shrunk-replay.db"));
    let world = script::explore_world(&rec, &small, "variant.sql", &title);
    let variant_text = std::fs::read_to_string(&v.file.path)
        .map_err(|e| ReplayError::Unreadable(format!("variant.sql: {e}")))?;
    let files = [
        ("shrunk.sql", script.as_str()),
        ("world.toml", world.as_str()),
        ("variant.sql", variant_text.as_str()),
    ];
    let mut written: Vec<PathBuf> = vec![replay_db.clone(), shrunk_db.clone()];
    for (name, text) in files {
        let f = out.join(name);
        std::fs::write(&f, text)
            .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", f.display())))?;
        written.push(f);
    }
    let confirms = explore_confirms(&out.join("world.toml"))?;
    println!(
        "explore on {}: {}",
        out.join("world.toml").display(),
        if confirms {
            "an invariant is violated (the counterexample is the world's own)"
        } else {
            "no violation: the world does not confirm the finding"
        }
    );
    let outcome = Outcome {
        finding: n,
        findings: found.len(),
        invariant: inv.clone(),
        group: target.key.clone(),
        reproduced: true,
        replayed: (plan.ops.len(), plan.steps()),
        shrunk: (small.ops.len(), small.steps()),
        explore_confirms: Some(confirms),
        files: written.iter().map(|p| p.display().to_string()).collect(),
    };
    let json = out.join("replay.json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&outcome).unwrap_or_default() + "\n",
    )
    .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", json.display())))?;
    println!("wrote {}", out.display());
    Ok(outcome)
}

/// `--reruns N`: an HTTP run's ops sent again N times ([`rerun`]).
///
/// # Errors
/// Not an HTTP groups run, no history, a rerun that could not be made.
pub fn reruns(opts: &ReplayOptions, n: u32) -> Result<rerun::Reruns, ReplayError> {
    let usage = ReplayError::Usage;
    let dir = &opts.run_dir;
    let scenario = dir.join("scenario.toml");
    let history = crate::history::file::in_folder(dir);
    let p = crate::workload::groups::prepare::prepare_offline(Some(&scenario), &[])
        .map_err(|e| usage(format!("the saved scenario cannot be used: {e}")))?;
    let t = &p.scenario.target;
    if t.kind != crate::scenario::TargetKind::Http {
        return Err(usage(format!(
            "{}: --reruns takes an HTTP run; this run's target is in-process SQLite, whose \
             steps are recorded: `specstorm replay {}` re-executes them",
            dir.display(),
            dir.display()
        )));
    }
    if !history.is_file() {
        return Err(usage(format!(
            "{}: not found (--reruns sends the ops of the run's history again)",
            history.display()
        )));
    }
    let entries = crate::history::reader::read(&history)
        .and_then(|it| it.collect::<anyhow::Result<Vec<_>>>())
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e:#}", history.display())))?;
    let plan = rerun::plan_of(entries, &p.scenario)?;
    let judged = crate::workload::groups::audit::judge(&crate::audit_record::AuditFolder {
        run_dir: dir,
        history: &history,
        scenario: &scenario,
        killed: !dir.join("checks.json").is_file(),
        limits: Default::default(),
    })
    .map_err(|e| match e.exit_code() {
        ExitCode::Usage => usage(format!("{}: {e}", dir.display())),
        _ => ReplayError::Unreadable(format!("{}: {e}", dir.display())),
    })?;
    println!(
        "{}: an HTTP run: the server's steps are not recorded (its history holds each op's \
         request and answer, not the statements the server ran), so they cannot be \
         re-executed. The next best: its {} ops sent again, {n} time(s), to the reference \
         server (`specstorm serve`, the folder's variant.sql) on a fresh database, each \
         worker's ops in their recorded order at their recorded offsets, with the crash and \
         pause the fault hook injected into each op",
        dir.display(),
        plan.ops()
    );
    if !t.spawn {
        println!(
            "note: the run's service was not started by the run (target.spawn is off): its \
             code is not known here; the reruns run the folder's variant.sql (`{}`)",
            plan.header.variant
        );
    }
    if plan.header.shard.is_some() {
        println!(
            "note: a shard's folder: its ops alone are sent again, and each rerun is judged \
             as a whole run"
        );
    }
    for why in &plan.not_reproduced {
        println!("not reproduced: {why}");
    }
    let mut runs = Vec::new();
    for k in 1..=n {
        let out = dir.join("replay").join(format!("rerun-{k}"));
        let results = rerun::rerun(dir, &p.scenario, &plan, &out)?;
        let violated: Vec<&str> = results
            .iter()
            .filter(|r| r.verdict == crate::verdict::Verdict::Violated)
            .map(|r| r.invariant.as_str())
            .collect();
        println!(
            "rerun {k} of {n}: {}: {}",
            out.display(),
            if violated.is_empty() {
                "no invariant violated".to_string()
            } else {
                format!("violated: {}", violated.join(", "))
            }
        );
        runs.push((out, results));
    }
    let invariants = rerun::count(&judged.results, &runs);
    for c in &invariants {
        let also = if c.unknown > 0 {
            format!(" ({} unknown)", c.unknown)
        } else {
            String::new()
        };
        if c.run == "violated" {
            println!(
                "{} (violated in the run): recurred in {} of {n} reruns{also}",
                c.invariant, c.violated
            );
        } else {
            println!(
                "{} ({} in the run): violated in {} of {n} reruns{also}",
                c.invariant, c.run, c.violated
            );
        }
    }
    let r = rerun::Reruns {
        reruns: n,
        ops: plan.ops(),
        invariants,
        not_reproduced: plan.not_reproduced.clone(),
        runs: runs
            .iter()
            .map(|(d, rs)| rerun::Rerun {
                dir: d.display().to_string(),
                verdicts: rs
                    .iter()
                    .map(|x| (x.invariant.clone(), x.verdict.to_string()))
                    .collect(),
            })
            .collect(),
    };
    let json = dir.join("replay").join("reruns.json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&r).unwrap_or_default() + "\n",
    )
    .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", json.display())))?;
    println!("wrote {}", json.display());
    Ok(r)
}

/// What a search accepts: an order after which the checkers find the
/// target again.
fn acceptor<'a, 'v>(
    rec: &'a Recording,
    v: &'a crate::workload::groups::statements::GroupsVariant,
    plan: &'a Plan,
    target: &'a Target,
) -> impl FnMut(&Ran<'v>, &rusqlite::Connection) -> Result<bool, search::DbError> + 'a {
    move |ran, db| Ok(target.reproduced(&judge::check(rec, v, plan, ran, db)?))
}

/// Runs `order` of `plan` on a new database file `path`, one connection
/// per worker, and judges it; the finding must come out again (the search
/// ran the same statements on the same rows).
fn confirm<'v>(
    rec: &Recording,
    v: &'v crate::workload::groups::statements::GroupsVariant,
    plan: &Plan,
    order: &[(usize, usize)],
    path: &Path,
    target: &Target,
) -> Result<Ran<'v>, ReplayError> {
    let ran = search::execute(rec, v, plan, order, path)?.ok_or_else(|| {
        ReplayError::Unreadable(format!(
            "{}: the replay on one connection per worker left the recorded path where the \
             search's did not",
            path.display()
        ))
    })?;
    let conn = rusqlite::Connection::open(path).map_err(search::DbError::from)?;
    if !target.reproduced(&judge::check(rec, v, plan, &ran, &conn)?) {
        return Err(ReplayError::Unreadable(format!(
            "{}: the replay on one connection per worker did not reproduce what the search's \
             did",
            path.display()
        )));
    }
    Ok(ran)
}

/// Whether `specstorm explore` on the world file finds a violation.
fn explore_confirms(world: &Path) -> Result<bool, ReplayError> {
    let p = crate::workload::groups::prepare::prepare_offline(Some(world), &[])
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", world.display())))?;
    let r = crate::workload::groups::explore_main::explore_groups(
        &p.variant,
        &p.scenario.explore,
        crate::explore::Bounds {
            max_depth: None,
            max_states: None,
            stop: None,
        },
        Restore::Savepoint,
        |_| {},
    )
    .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", world.display())))?;
    Ok(r.code == ExitCode::NotMet)
}
