//! Breadth-first search over the scheduling choices of a [`World`], as
//! TLC searches a spec: states are visited level by level, so the first
//! violation found is one of the shortest. Every successor is computed by
//! restoring the parent's database and running one real statement.
//!
//! Counting follows TLC: "states generated" is the initial state plus
//! every successor computed from every distinct state (repeats included);
//! "distinct states" is the number of distinct keys (rows + world key);
//! "depth" is the number of states on the longest shortest path, the
//! initial state being depth 1.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use super::cursor::Cursor;
use super::db::{Db, Restore};
use super::world::{ExploreError, Violation, World};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Bounds of one search (None: none).
#[derive(Debug, Clone, Copy, Default)]
pub struct Bounds {
    /// Expand no state reached after this many steps from the initial one.
    pub max_depth: Option<u64>,
    /// Keep at most this many distinct states (the initial one included).
    pub max_states: Option<u64>,
    /// Stop before the next state is expanded once this is set (Ctrl-C):
    /// the search ends [`Verdict::Interrupted`] with its figures so far.
    pub stop: Option<&'static AtomicBool>,
}

/// The figures TLC reports, and the time taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// States generated: the initial state plus every successor computed.
    pub generated: u64,
    /// Distinct states (the initial state included).
    pub distinct: u64,
    /// States on the longest shortest path from the initial state (1: only it).
    pub depth: u64,
    /// States found but not yet expanded (TLC's "left on queue").
    pub queued: u64,
}

/// A shortest path to a state that breaks an invariant.
#[derive(Debug, Clone)]
pub struct Counterexample<C> {
    /// The choices from the initial state, in order.
    pub path: Vec<C>,
    /// The broken invariants in the last state.
    pub violations: Vec<Violation>,
}

/// How a search ended.
#[derive(Debug, Clone)]
pub enum Verdict<C> {
    /// Every reachable state was visited and every invariant held.
    Holds,
    /// A state broke an invariant (the search stopped there, as TLC does).
    Violated(Counterexample<C>),
    /// A bound cut the search short with no violation found: inconclusive.
    Cut(&'static str),
    /// Stopped by the user ([`Bounds::stop`]) with no violation found in
    /// the states explored so far: nothing concluded.
    Interrupted,
}

/// The result of a search.
#[derive(Debug, Clone)]
pub struct Outcome<C> {
    /// What TLC would report.
    pub figures: Figures,
    /// How it ended.
    pub verdict: Verdict<C>,
    /// Wall time of the search.
    pub elapsed: Duration,
}

struct Node<C> {
    parent: u32,
    choice: Option<C>,
}

struct Pending<S, C> {
    node: u32,
    depth: u64,
    state: S,
    choices: Vec<C>,
    /// The database ([`Restore::Serialize`] only).
    snapshot: Option<Vec<u8>>,
}

/// Searches every interleaving of `world` breadth-first within `bounds`;
/// `progress(figures, elapsed)` is called about once a second.
///
/// # Errors
/// The schema or an export statement failed.
pub fn search<W: World>(
    world: &W,
    bounds: Bounds,
    restore: Restore,
    mut progress: impl FnMut(&Figures, Duration),
) -> Result<Outcome<W::Choice>, ExploreError> {
    let started = Instant::now();
    let mut db = Db::new(world.schema())?;
    let restore = match restore {
        Restore::Savepoint if db.foreign_keys()? => Restore::Serialize,
        r => r,
    };
    let mut seen: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut nodes: Vec<Node<W::Choice>> = vec![Node {
        parent: u32::MAX,
        choice: None,
    }];
    let mut f = Figures {
        generated: 1,
        distinct: 1,
        depth: 1,
        queued: 0,
    };
    let init = world.init();
    seen.insert(key(world, &db, &init)?, 0);
    let view = world.view(&db.conn)?;
    let done = |f: Figures, verdict| Outcome {
        figures: f,
        verdict,
        elapsed: started.elapsed(),
    };
    let broken = world.check(&init, &view);
    if !broken.is_empty() {
        let cx = Counterexample {
            path: Vec::new(),
            violations: broken,
        };
        return Ok(done(f, Verdict::Violated(cx)));
    }
    let mut queue = VecDeque::from([Pending {
        node: 0,
        depth: 1,
        choices: world.choices(&init, &view),
        state: init,
        snapshot: (restore == Restore::Serialize)
            .then(|| db.snapshot())
            .transpose()?,
    }]);
    let mut cursor = Cursor::new(world.init());
    let mut cut: Option<&'static str> = None;
    let mut last_report = Instant::now();
    while let Some(p) = queue.pop_front() {
        if bounds.stop.is_some_and(|s| s.load(Ordering::Acquire)) {
            f.queued = queue.len() as u64 + 1;
            return Ok(done(f, Verdict::Interrupted));
        }
        if p.choices.is_empty() {
            continue;
        }
        if bounds.max_depth.is_some_and(|d| p.depth > d) {
            // A state at the bound with a step left: unexplored successors.
            cut.get_or_insert("--max-depth");
            continue;
        }
        if restore == Restore::Savepoint {
            cursor.goto(world, &db, &steps(&nodes, p.node))?;
        }
        for choice in &p.choices {
            let state = match (&p.snapshot, restore) {
                (_, Restore::Savepoint) => cursor.child(world, &db, choice)?,
                (Some(bytes), _) => {
                    db.restore(bytes)?;
                    take(world, &db, &p.state, choice)
                }
                (None, _) => {
                    replay(world, &mut db, &nodes, p.node)?;
                    take(world, &db, &p.state, choice)
                }
            };
            f.generated += 1;
            let k = key(world, &db, &state)?;
            if seen.contains_key(&k) {
                if restore == Restore::Savepoint {
                    db.undo(1)?;
                }
                continue;
            }
            if bounds.max_states.is_some_and(|m| f.distinct >= m) {
                f.queued = queue.len() as u64 + 1;
                return Ok(done(f, Verdict::Cut("--max-states")));
            }
            let id = nodes.len() as u32;
            nodes.push(Node {
                parent: p.node,
                choice: Some(choice.clone()),
            });
            seen.insert(k, id);
            f.distinct += 1;
            f.depth = f.depth.max(p.depth + 1);
            let view = world.view(&db.conn)?;
            let broken = world.check(&state, &view);
            if !broken.is_empty() {
                f.queued = queue.len() as u64 + 1;
                let cx = Counterexample {
                    path: path(&nodes, id),
                    violations: broken,
                };
                return Ok(done(f, Verdict::Violated(cx)));
            }
            queue.push_back(Pending {
                node: id,
                depth: p.depth + 1,
                choices: world.choices(&state, &view),
                state,
                snapshot: (restore == Restore::Serialize)
                    .then(|| db.snapshot())
                    .transpose()?,
            });
            if restore == Restore::Savepoint {
                db.undo(1)?;
            }
        }
        if last_report.elapsed() >= Duration::from_secs(1) {
            last_report = Instant::now();
            f.queued = queue.len() as u64;
            progress(&f, started.elapsed());
        }
    }
    f.queued = 0;
    Ok(done(f, cut.map_or(Verdict::Holds, Verdict::Cut)))
}

/// The state key: the rows of every table, then the world's own part.
fn key<W: World>(world: &W, db: &Db, state: &W::State) -> Result<Vec<u8>, ExploreError> {
    let mut k = Vec::with_capacity(256);
    db.encode_rows(&mut k)?;
    world.key(state, &mut k);
    Ok(k)
}

/// The successor of `state` by `choice`, run on `db`.
fn take<W: World>(world: &W, db: &Db, state: &W::State, choice: &W::Choice) -> W::State {
    let mut state = state.clone();
    world.take(&mut state, choice, &db.conn);
    state
}

/// The choices from the initial state to `node`.
fn path<C: Clone>(nodes: &[Node<C>], node: u32) -> Vec<C> {
    steps(nodes, node).into_iter().map(|(_, c)| c).collect()
}

/// Each step from the initial state to `node`: the node it reaches and
/// its choice.
fn steps<C: Clone>(nodes: &[Node<C>], mut node: u32) -> Vec<(u32, C)> {
    let mut out = Vec::new();
    while let Some(c) = &nodes[node as usize].choice {
        out.push((node, c.clone()));
        node = nodes[node as usize].parent;
    }
    out.reverse();
    out
}

/// Rebuilds `node`'s database: the empty schema, then its path again.
fn replay<W: World>(
    world: &W,
    db: &mut Db,
    nodes: &[Node<W::Choice>],
    node: u32,
) -> Result<(), ExploreError> {
    db.reset()?;
    let mut state = world.init();
    for c in path(nodes, node) {
        world.take(&mut state, &c, &db.conn);
    }
    Ok(())
}
