//! `specstorm replay RUN_DIR [--finding N]` on an outbox run of the
//! in-process SQLite target: the recorded `handle` attempts of the
//! finding's message run again on a fresh database built from the run's
//! `variant.sql`, one connection per recorded worker, in an order the
//! steps' intervals allow that gives the run's own answers ([`search`]),
//! and the run's outbox checkers judge what ran ([`judge`]). The replay is
//! then shrunk ([`crate::replay_order`]'s ddmin over the attempts, then
//! the fewest steps of each) and written as a script for the `sqlite3`
//! shell and an explore world ([`script`]), which the explorer is asked
//! to confirm. Deterministic. docs/replay.md ("Outbox runs") says what
//! each answer rests on.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

pub mod judge;
pub mod recording;
pub mod script;
pub mod search;

use crate::exit_code::ExitCode;
pub use crate::replay::{ReplayError, ReplayOptions};
use crate::replay_order::Plan;
use crate::workload::outbox::checker::{check_all, tables, OutboxFacts};
use crate::workload::outbox::statements::OutboxVariant;
use judge::Target;
use recording::Recording;
use search::{DbError, Ran, Searched};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a replay found and wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    /// The finding replayed (1-based).
    pub finding: usize,
    /// How many findings the run has.
    pub findings: usize,
    /// The invariant.
    pub invariant: String,
    /// The message.
    pub msg_id: i64,
    /// Whether an allowed order reproduced it.
    pub reproduced: bool,
    /// Attempts and steps of the replay.
    pub replayed: (usize, usize),
    /// Attempts and steps of the shrunk replay.
    pub shrunk: (usize, usize),
    /// Whether `specstorm explore` on the world written found a violation.
    pub explore_confirms: Option<bool>,
    /// The files written.
    pub files: Vec<String>,
}

/// Runs `specstorm replay` on an outbox run folder; returns the exit code.
pub fn main(opts: &ReplayOptions) -> ExitCode {
    let r = if opts.reruns.is_some() {
        Err(ReplayError::Usage(format!(
            "{}: --reruns sends a groups HTTP run's ops again; an outbox run has no reruns",
            opts.run_dir.display()
        )))
    } else {
        replay(opts)
    };
    match r {
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

/// The run folder's verdicts, as `audit` judges them.
fn original_results(
    dir: &Path,
    v: &OutboxVariant,
    entries: &[crate::history::Entry],
) -> Result<Vec<crate::verdict::CheckResult>, ReplayError> {
    let facts = OutboxFacts::read(entries.iter().cloned().map(Ok::<_, String>))
        .map_err(|e| ReplayError::Unreadable(e.to_string()))?;
    let mut conn = crate::audit_db::open_untrusted(&dir.join("target.db"), Default::default())
        .map_err(|e| ReplayError::Unreadable(e.to_string()))?;
    let mut t = tables::read(&mut conn, v, &|| 0)
        .map_err(|e| ReplayError::Unreadable(conn.error(&e).to_string()))?;
    for e in entries {
        if let crate::history::Entry::Footer(f) = e {
            if let Some([a, b]) = f.tables_read {
                (t.read_start, t.read_end) = (a, b);
            }
        }
    }
    Ok(check_all(&facts, &t).0)
}

/// [`main`] without the exit code.
///
/// # Errors
/// As [`ReplayError`].
pub fn replay(opts: &ReplayOptions) -> Result<Outcome, ReplayError> {
    let usage = ReplayError::Usage;
    let dir = &opts.run_dir;
    let history = crate::history::file::in_folder(dir);
    let p = crate::workload::outbox::prepare::prepare(Some(&dir.join("scenario.toml")), &[])
        .map_err(|e| usage(format!("the saved scenario cannot be used: {e}")))?;
    if p.scenario.target.kind == crate::scenario::TargetKind::Http {
        return Err(usage(format!(
            "{}: an HTTP outbox run: the server's steps are not recorded, so there is nothing \
             to re-execute (replay takes an outbox run of the in-process SQLite target)",
            dir.display()
        )));
    }
    for f in [&history, &dir.join("target.db")] {
        if !f.is_file() {
            return Err(usage(format!(
                "{}: not found (replay takes the folder of an outbox run of the in-process \
                 SQLite target: scenario.toml, variant.sql, its history and target.db)",
                f.display()
            )));
        }
    }
    let entries = crate::history::reader::read(&history)
        .and_then(|it| it.collect::<anyhow::Result<Vec<_>>>())
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e:#}", history.display())))?;
    let rec = recording::of_entries(&entries)
        .map_err(|why| usage(format!("{}: {why}", history.display())))?;
    let results = original_results(dir, &p.variant, &entries)?;
    let found = crate::replay::violations(&results);
    if found.is_empty() {
        return Err(usage(format!(
            "{}: nothing to replay: the run's checkers find no invariant violated",
            dir.display()
        )));
    }
    println!("the run's findings (its checkers, as `audit` judges them):");
    for (k, (inv, f)) in found.iter().enumerate() {
        let m = f
            .msg_id
            .map_or("no message".into(), |m| format!("message {m}"));
        println!("  {}: {inv} on {m}: {}", k + 1, f.found);
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
            "finding {n} ({inv}) names no message: replay re-executes a message's attempts"
        ))
    })?;
    let ops: Vec<usize> = (0..rec.ops.len())
        .filter(|&i| rec.ops[i].delivery.msg_id == target.msg)
        .collect();
    if let Some(why) = ops.iter().find_map(|&i| rec.ops[i].unreplayable.clone()) {
        return Err(ReplayError::Inconclusive(format!(
            "{why}: replay re-executes steps whose effect the history records"
        )));
    }
    let v = &p.variant;
    let plan = search::whole(&rec, ops);
    println!(
        "replaying finding {n}: {inv} on message {}: {} attempts, {} steps",
        target.msg,
        plan.ops.len(),
        plan.steps()
    );
    let out = dir.join("replay").join(format!("finding-{n}"));
    std::fs::create_dir_all(&out)
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", out.display())))?;

    let mut budget = opts.max_steps;
    let mut ok = acceptor(&rec, v, &plan, &target);
    let first = search::search(&rec, v, (&plan, true), None, &mut budget, &mut ok)?;
    let spent = opts.max_steps - budget;
    let ran = match first {
        Searched::Found(r) => r,
        // Not "not reproduced" (exit 1): the run's own checkers found the
        // violation in its final tables, and the replay leaves the other
        // messages' attempts out, which move the state_log head too (an
        // answer that depended on one of them cannot be re-enacted here).
        Searched::Exhausted { leaves } => {
            return Err(ReplayError::Inconclusive(format!(
                "{leaves} order(s) of message {}'s attempts that their intervals allow give                  the run's answers; in none do the checkers find {inv} violated on it ({spent}                  statements run). The replay runs this message's attempts alone: an answer                  that depended on another message's attempt (a compare-and-swap lost to it)                  cannot be re-enacted",
                target.msg
            )))
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
         answer the run got, and the checkers find {inv} violated on message {} again \
         ({spent} statements run in the search); replayed on {} with one connection per \
         worker",
        ran.taken.len(),
        target.msg,
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
    let mut test = |cand: &Plan| -> Result<bool, DbError> {
        tests += 1;
        let mut b = test_budget;
        let mut ok = acceptor(&rec, v, cand, &target);
        Ok(matches!(
            search::search(&rec, v, (cand, false), Some(&prefer), &mut b, &mut ok)?,
            Searched::Found(_)
        ))
    };
    let kept = crate::replay_order::ddmin(plan.ops.clone(), &[], &mut |ops| {
        test(&search::whole(&rec, ops.to_vec()))
    })?;
    let small = crate::replay_order::fewest_steps(search::whole(&rec, kept), &mut test)?;
    let mut b = opts.max_steps;
    let mut ok = acceptor(&rec, v, &small, &target);
    let Searched::Found(sran) =
        search::search(&rec, v, (&small, false), Some(&prefer), &mut b, &mut ok)?
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
        "shrunk ({tests} tests): {} attempts, {} steps (from {} attempts, {} steps)",
        small.ops.len(),
        small.steps(),
        plan.ops.len(),
        plan.steps()
    );

    let title = format!(
        "specstorm replay: finding {n} of {} ({inv} on message {}), shrunk to {} steps of {} \
         attempts",
        dir.display(),
        target.msg,
        small.steps(),
        small.ops.len()
    );
    let conn = rusqlite::Connection::open(&shrunk_db).map_err(DbError::from)?;
    let script_text = script::sqlite3_script(
        &rec,
        v,
        (&small, &sran),
        &conn,
        (&title, "shrunk-replay.db"),
    );
    let world = script::explore_world(&rec, (&small, &sran), "variant.sql", &title);
    let variant_text = std::fs::read_to_string(&v.file.path)
        .map_err(|e| ReplayError::Unreadable(format!("variant.sql: {e}")))?;
    let mut written: Vec<PathBuf> = vec![replay_db.clone(), shrunk_db.clone()];
    for (name, text) in [
        ("shrunk.sql", script_text.as_str()),
        ("world.toml", world.as_str()),
        ("variant.sql", variant_text.as_str()),
    ] {
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
        msg_id: target.msg,
        reproduced: true,
        replayed: (plan.ops.len(), plan.steps()),
        shrunk: (small.ops.len(), small.steps()),
        explore_confirms: Some(confirms),
        files: written
            .iter()
            .map(|f| f.display().to_string())
            .chain([out.join("replay.json").display().to_string()])
            .collect(),
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

/// What a search accepts: an order after which the checkers find the
/// target again.
fn acceptor<'a, 'v>(
    rec: &'a Recording,
    v: &'a OutboxVariant,
    plan: &'a Plan,
    target: &'a Target,
) -> impl FnMut(&Ran<'v>, &rusqlite::Connection) -> Result<bool, DbError> + 'a {
    move |ran, db| Ok(target.reproduced(&judge::check(rec, v, plan, ran, db)?))
}

/// Runs `order` of `plan` on a new database file `path`, one connection
/// per worker, and judges it; the finding must come out again.
fn confirm<'v>(
    rec: &Recording,
    v: &'v OutboxVariant,
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
    let conn = rusqlite::Connection::open(path).map_err(DbError::from)?;
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
    let p = crate::workload::outbox::prepare::prepare(Some(world), &[])
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", world.display())))?;
    let r = crate::workload::outbox::explore_main::explore_outbox(
        &p.variant,
        &p.scenario.explore,
        crate::explore::Bounds {
            max_depth: None,
            max_states: None,
            stop: None,
        },
        crate::explore::Restore::Savepoint,
        |_| {},
    )
    .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", world.display())))?;
    Ok(r.code == ExitCode::NotMet)
}
