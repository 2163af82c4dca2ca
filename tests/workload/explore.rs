//! `specstorm explore`: its counts against an independent brute force (a
//! pure-Rust model of BacktalkGroups.tla, no SQLite, no step machines),
//! TLC's own figures for the spec's world, and the two acceptance cases
//! through the binary (the atomic file holds everywhere; the naive file's
//! shortest NoMissedRegression counterexample).

use specstorm::explore::{Bounds, Restore, Verdict};
use specstorm::scenario::Explore;
use specstorm::workload::groups::explore_main::explore_groups;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::process::Command;

use crate::common::procs::wait_bounded;
use crate::common::{command, specstorm};

// ------------------------------------------------------------ the model

/// One state of the spec, variable by variable.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct Spec {
    events: BTreeSet<usize>,
    /// fp -> (status: 0 open, 1 resolved, 2 regressed; count)
    groups: BTreeMap<usize, (u8, u32)>,
    idx: Vec<usize>,
    /// 1 s1, 2 s2, 3 s3, 4 s3w
    pc: Vec<u8>,
    /// status read by the naive s3 (255: "none")
    read: Vec<u8>,
    done: BTreeSet<usize>,
    dirty: Vec<bool>,
    left: u32,
}

struct ModelWorld {
    queues: Vec<Vec<usize>>,
    fp_of: Vec<usize>,
    fps: usize,
    resolves: u32,
    naive: bool,
    /// The ingest's steps up to the counting step (atomic) or up to the
    /// status read (naive) run as one transaction block: one move.
    txn: bool,
}

impl ModelWorld {
    fn init(&self) -> Spec {
        let n = self.queues.len();
        Spec {
            events: BTreeSet::new(),
            groups: BTreeMap::new(),
            idx: vec![0; n],
            pc: vec![1; n],
            read: vec![255; n],
            done: BTreeSet::new(),
            dirty: vec![false; self.fps],
            left: self.resolves,
        }
    }

    /// Next, action by action (S1, S2, S3Atomic / S3ReadNaive,
    /// S3WriteNaive per worker, then Resolve per group).
    fn next(&self, s: &Spec) -> Vec<Spec> {
        let mut out = Vec::new();
        for w in 0..self.queues.len() {
            let Some(&e) = self.queues[w].get(s.idx[w]) else {
                continue;
            };
            let f = self.fp_of[e];
            let mut t = s.clone();
            let next_attempt = |t: &mut Spec| {
                t.idx[w] += 1;
                t.pc[w] = 1;
            };
            match s.pc[w] {
                1 if s.events.contains(&e) => next_attempt(&mut t),
                // One block: S1, S2 and S3Atomic (or S3ReadNaive) at once.
                1 if self.txn => {
                    t.events.insert(e);
                    let g = *t.groups.entry(f).or_insert((0, 0));
                    if self.naive {
                        t.read[w] = g.0;
                        t.pc[w] = 4;
                    } else {
                        let g = t.groups.get_mut(&f).unwrap();
                        g.1 += 1;
                        if g.0 == 1 {
                            g.0 = 2;
                        }
                        t.done.insert(e);
                        t.dirty[f] = true;
                        next_attempt(&mut t);
                    }
                }
                1 => {
                    t.events.insert(e);
                    t.pc[w] = 2;
                }
                2 => {
                    t.groups.entry(f).or_insert((0, 0));
                    t.pc[w] = 3;
                }
                3 if self.naive => {
                    t.read[w] = s.groups[&f].0;
                    t.pc[w] = 4;
                }
                3 | 4 => {
                    let g = t.groups.get_mut(&f).unwrap();
                    let was = if s.pc[w] == 3 { g.0 } else { s.read[w] };
                    g.1 += 1;
                    if was == 1 {
                        g.0 = 2;
                    }
                    t.done.insert(e);
                    t.dirty[f] = true;
                    t.read[w] = 255;
                    next_attempt(&mut t);
                }
                _ => unreachable!(),
            }
            out.push(t);
        }
        if s.left > 0 {
            for (&f, &(status, _)) in &s.groups {
                if status != 1 {
                    let mut t = s.clone();
                    t.groups.get_mut(&f).unwrap().0 = 1;
                    t.dirty[f] = false;
                    t.left -= 1;
                    out.push(t);
                }
            }
        }
        out
    }

    fn no_missed_regression(&self, s: &Spec) -> bool {
        s.groups
            .iter()
            .all(|(&f, &(st, _))| !(s.dirty[f] && st == 1))
    }

    /// (generated, distinct, depth, states in the shortest violation) as
    /// TLC counts them, exploring the whole space.
    fn brute_force(&self) -> (u64, u64, u64, Option<u64>) {
        let init = self.init();
        let mut seen = HashSet::from([init.clone()]);
        let mut level = vec![init];
        let (mut generated, mut depth, mut shortest) = (1u64, 1u64, None);
        while !level.is_empty() {
            let mut next = Vec::new();
            for s in &level {
                for t in self.next(s) {
                    generated += 1;
                    if seen.insert(t.clone()) {
                        if shortest.is_none() && !self.no_missed_regression(&t) {
                            shortest = Some(depth + 1);
                        }
                        next.push(t);
                    }
                }
            }
            if !next.is_empty() {
                depth += 1;
            }
            level = next;
        }
        (generated, seen.len() as u64, depth, shortest)
    }
}

/// The model and the scenario section of one world.
fn world(
    queues: &[&[&str]],
    fps: &[(&str, &str)],
    resolves: u32,
    naive: bool,
) -> (ModelWorld, Explore) {
    let x = Explore {
        queues: queues
            .iter()
            .map(|q| q.iter().map(|e| e.to_string()).collect())
            .collect(),
        fingerprints: fps
            .iter()
            .map(|(e, f)| (e.to_string(), f.to_string()))
            .collect(),
        resolves,
        ..Explore::default()
    };
    let events: Vec<&str> = fps
        .iter()
        .map(|p| p.0)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let fp_names: Vec<&str> = fps
        .iter()
        .map(|p| p.1)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let fp_of = events
        .iter()
        .map(|e| {
            fp_names
                .iter()
                .position(|f| *f == fps.iter().find(|p| p.0 == *e).unwrap().1)
                .unwrap()
        })
        .collect();
    let queues = queues
        .iter()
        .map(|q| {
            q.iter()
                .map(|e| events.iter().position(|x| x == e).unwrap())
                .collect()
        })
        .collect();
    let m = ModelWorld {
        queues,
        fp_of,
        fps: fp_names.len(),
        resolves,
        naive,
        txn: false,
    };
    (m, x)
}

const SPEC_FPS: &[(&str, &str)] = &[("e1", "f1"), ("e2", "f1"), ("e3", "f2")];

fn explorer(
    x: &Explore,
    naive: bool,
    restore: Restore,
) -> specstorm::explore::Report<specstorm::workload::groups::explore::Choice> {
    let name = if naive {
        "groups-naive"
    } else {
        "groups-atomic"
    };
    let v = specstorm::workload::groups::statements::load_groups(name, None).unwrap();
    explore_groups(&v, x, Bounds::default(), restore, |_| {}).unwrap()
}

/// The explorer's figures equal the brute force's over the whole space.
fn assert_same_counts(queues: &[&[&str]], fps: &[(&str, &str)], resolves: u32, naive: bool) {
    let (m, x) = world(queues, fps, resolves, naive);
    let (generated, distinct, depth, shortest) = m.brute_force();
    assert_eq!(shortest, None, "a world with no violation");
    for restore in [Restore::Savepoint, Restore::Serialize, Restore::Replay] {
        let r = explorer(&x, naive, restore);
        assert!(matches!(r.outcome.verdict, Verdict::Holds), "{}", r.text);
        let f = r.outcome.figures;
        assert_eq!(
            (f.generated, f.distinct, f.depth),
            (generated, distinct, depth),
            "{queues:?} resolves={resolves} naive={naive} {restore:?}"
        );
        assert_eq!(r.code, 0);
    }
}

#[test]
fn spec_world_atomic_matches_tlc_and_the_brute_force() {
    let (m, x) = world(&[&["e1", "e2"], &["e1", "e3"]], SPEC_FPS, 2, false);
    // TLC on BacktalkGroups.tla, Variant = "atomic", MaxResolves = 2.
    assert_eq!(m.brute_force(), (412, 199, 13, None));
    assert_eq!(x, Explore::default(), "the default world is the spec's");
    assert_same_counts(&[&["e1", "e2"], &["e1", "e3"]], SPEC_FPS, 2, false);
}

#[test]
fn small_worlds_match_the_brute_force() {
    assert_same_counts(&[&["e1"], &["e1"]], &[("e1", "f1")], 1, false);
    assert_same_counts(&[&["e1", "e2"], &["e2"], &["e3"]], SPEC_FPS, 1, false);
    // The naive file with no resolve: no violation, and its read values
    // are part of the state (s3w splits states as the spec's readSt does).
    assert_same_counts(&[&["e1", "e2"], &["e1", "e3"]], SPEC_FPS, 0, true);
}

/// The explorer over a shipped file by its name in targets/sqlite/.
fn explore_file(
    file: &str,
    x: &Explore,
) -> specstorm::explore::Report<specstorm::workload::groups::explore::Choice> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("targets/sqlite")
        .join(file);
    let v =
        specstorm::workload::groups::statements::load_groups(path.to_str().unwrap(), None).unwrap();
    explore_groups(&v, x, Bounds::default(), Restore::default(), |_| {}).unwrap()
}

#[test]
fn a_one_block_ingest_holds_with_fewer_states_than_autocommit() {
    for (queues, resolves) in [
        (&[&["e1", "e2"][..], &["e1", "e3"][..]][..], 2),
        (&[&["e1"][..], &["e1"][..]][..], 1),
        (&[&["e1", "e2"][..], &["e2"][..], &["e3"][..]][..], 1),
    ] {
        let (mut m, x) = world(queues, SPEC_FPS, resolves, false);
        let autocommit = m.brute_force();
        m.txn = true;
        let (generated, distinct, depth, shortest) = m.brute_force();
        assert_eq!(shortest, None, "the one-block ingest holds");
        let r = explore_file("groups-txn.sql", &x);
        assert!(matches!(r.outcome.verdict, Verdict::Holds), "{}", r.text);
        let f = r.outcome.figures;
        assert_eq!(
            (f.generated, f.distinct, f.depth),
            (generated, distinct, depth),
            "{queues:?}"
        );
        assert!(distinct < autocommit.1, "{distinct} vs {}", autocommit.1);
    }
    let (_, x) = world(&[&["e1", "e2"], &["e1", "e3"]], SPEC_FPS, 2, false);
    let (mut m, _) = world(&[&["e1", "e2"], &["e1", "e3"]], SPEC_FPS, 2, false);
    m.txn = true;
    // The spec's world: 199 distinct states in autocommit (TLC's count),
    // 30 with the block.
    assert_eq!(m.brute_force().1, 30);
    assert_eq!(
        explore_file("groups-txn.sql", &x).outcome.figures.distinct,
        30
    );
    assert_eq!(
        explore_file("groups-atomic.sql", &x)
            .outcome
            .figures
            .distinct,
        199
    );
}

#[test]
fn the_naive_txn_violation_is_a_shortest_one() {
    for (queues, resolves) in [
        (&[&["e1", "e2"][..], &["e1", "e3"][..]][..], 2),
        (&[&["e1"][..], &["e1"][..]][..], 1),
    ] {
        let (mut m, x) = world(queues, SPEC_FPS, resolves, true);
        m.txn = true;
        let shortest = m.brute_force().3.expect("the naive block design violates");
        let r = explore_file("groups-naive-txn.sql", &x);
        let Verdict::Violated(cx) = &r.outcome.verdict else {
            panic!("no violation: {}", r.text)
        };
        assert_eq!(cx.path.len() as u64 + 1, shortest);
        assert_eq!(cx.violations[0].invariant, "NoMissedRegression");
    }
}

#[test]
fn naive_violation_is_a_shortest_one() {
    for (queues, resolves) in [
        (&[&["e1", "e2"][..], &["e1", "e3"][..]][..], 2),
        (&[&["e1"][..], &["e1"][..]][..], 1),
    ] {
        let (m, x) = world(queues, SPEC_FPS, resolves, true);
        let shortest = m.brute_force().3.expect("the naive spec violates");
        let mut seen = Vec::new();
        for restore in [Restore::Savepoint, Restore::Serialize] {
            let r = explorer(&x, true, restore);
            let Verdict::Violated(cx) = &r.outcome.verdict else {
                panic!("no violation: {}", r.text)
            };
            assert_eq!(cx.path.len() as u64 + 1, shortest);
            assert_eq!(cx.violations[0].invariant, "NoMissedRegression");
            assert_eq!(r.code, 1);
            seen.push((r.outcome.figures, format!("{:?}", cx.path)));
        }
        // The figures at the violation depend on the search order: both
        // ways of restoring a state search in the same order.
        assert_eq!(seen[0], seen[1]);
    }
}

/// The atomic design with group ids of its own, computed from :project
/// and :fingerprint in every step (resolve included): the explorer knows a
/// group by (project, fingerprint), as groups.md does, not by the bench's
/// `:group_id`.
const OWN_IDS: &str = "\
-- name: schema
CREATE TABLE error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, group_id TEXT, received_at INTEGER);
CREATE TABLE error_groups (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, status TEXT, event_count INTEGER);

-- name: ingest.s1
-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, 'grp-' || :project || ':' || :fingerprint, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES ('grp-' || :project || ':' || :fingerprint, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
-- counts: true
UPDATE error_groups SET event_count = event_count + 1,
  status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = 'grp-' || :project || ':' || :fingerprint;

-- name: resolve.update
-- stop-if: rows > 0
UPDATE error_groups SET status = 'resolved'
WHERE id = 'grp-' || :project || ':' || :fingerprint AND status IN ('open', 'regressed')
RETURNING event_count;

-- name: resolve.probe
SELECT status, event_count FROM error_groups WHERE id = 'grp-' || :project || ':' || :fingerprint;

-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
";

#[test]
fn own_group_ids_hold_over_the_spec_world() {
    let f = specstorm::statements::parse(std::path::Path::new("own-ids.sql"), OWN_IDS).unwrap();
    let v = specstorm::workload::groups::statements::compile_groups(&f).unwrap();
    let (m, x) = world(&[&["e1", "e2"], &["e1", "e3"]], SPEC_FPS, 2, false);
    let (generated, distinct, depth, shortest) = m.brute_force();
    assert_eq!(shortest, None);
    let r = explore_groups(&v, &x, Bounds::default(), Restore::default(), |_| {}).unwrap();
    assert!(matches!(r.outcome.verdict, Verdict::Holds), "{}", r.text);
    // The same space as the bench-id design: resolves are enabled by
    // (project, fingerprint), not by the bench's id.
    let f = r.outcome.figures;
    assert_eq!(
        (f.generated, f.distinct, f.depth),
        (generated, distinct, depth)
    );
    assert_eq!(r.code, 0);
}

/// The figures and verdict of `text` (a groups file) over a 3-worker
/// world, by each way of restoring a state.
fn figures_by_restore(text: &str) -> Vec<(specstorm::explore::Figures, String)> {
    let f = specstorm::statements::parse(std::path::Path::new("x.sql"), text).unwrap();
    let v = specstorm::workload::groups::statements::compile_groups(&f).unwrap();
    let (_, x) = world(&[&["e1", "e2"], &["e1", "e3"], &["e3"]], SPEC_FPS, 2, false);
    [Restore::Savepoint, Restore::Serialize, Restore::Replay]
        .into_iter()
        .map(|restore| {
            let r = explore_groups(&v, &x, Bounds::default(), restore, |_| {}).unwrap();
            let verdict = match &r.outcome.verdict {
                Verdict::Violated(cx) => format!("{:?} {:?}", cx.path, cx.violations),
                v => format!("{v:?}"),
            };
            (r.outcome.figures, verdict)
        })
        .collect()
}

#[test]
fn a_conflict_that_rolls_back_is_undone_as_in_autocommit() {
    // A retry's insert fails with ROLLBACK, which ends every savepoint of
    // the savepoint restore: the path is run again, and the figures are
    // those of autocommit (where it undoes the statement alone).
    let text = OWN_IDS.replace(
        "-- stop-if: changes = 0\nINSERT OR IGNORE INTO error_events",
        "INSERT OR ROLLBACK INTO error_events",
    );
    assert_ne!(text, OWN_IDS);
    let by = figures_by_restore(&text);
    assert!(by[0].0.distinct > 1, "{by:?}");
    assert_eq!(by[0], by[1]);
    assert_eq!(by[1], by[2]);
}

#[test]
fn a_deferred_foreign_key_is_searched_as_in_autocommit() {
    // The event row points at a group row its s2 creates later: in
    // autocommit the deferred key fails s1 at its commit. The savepoint
    // restore never commits, so it gives way to snapshots.
    let text = OWN_IDS.replace(
        "CREATE TABLE error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, group_id TEXT,",
        "CREATE TABLE error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, \
         group_id TEXT REFERENCES error_groups(id) DEFERRABLE INITIALLY DEFERRED,",
    );
    assert_ne!(text, OWN_IDS);
    let by = figures_by_restore(&text);
    assert_eq!(by[0], by[1]);
    assert_eq!(by[1], by[2]);
}

// ------------------------------------------------------------ the binary

#[test]
fn cli_atomic_holds_over_the_whole_space() {
    let o = specstorm(&["explore", "scenarios/groups-atomic.toml", "-q"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("states generated: 412, distinct states: 199, depth: 13, violations: 0"),
        "{out}"
    );
}

#[test]
fn cli_naive_prints_the_shortest_counterexample() {
    let o = specstorm(&["explore", "scenarios/groups-naive.toml", "-q"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    for line in [
        "a shortest counterexample of 6 states",
        "State 2: w1 ingest.s1 (e1)",
        "+ error_events(id='e1'",
        "State 3: w1 ingest.s2 (e1)",
        "+ error_groups(id='g:p1:f1', project='p1', fingerprint='f1', status='open', event_count=0)",
        "State 4: w1 ingest.s3_read (e1): changes=0, returned read_status='open'",
        "State 5: resolver resolve.update (g:p1:f1)",
        "~ error_groups['g:p1:f1']: status 'open' -> 'resolved'",
        "State 6: w1 ingest.s3_write (e1)",
        "~ error_groups['g:p1:f1']: event_count 0 -> 1",
        "NoMissedRegression violated: group g:p1:f1 reads 'resolved'",
        "violations: 1",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
}

#[test]
fn cli_bounds_make_it_inconclusive() {
    let o = specstorm(&["explore", "-q", "--max-states", "50"]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = specstorm(&["explore", "-q", "--max-depth", "5"]);
    assert_eq!(o.status.code(), Some(4));
    // A bound the space fits in cuts nothing.
    let o = specstorm(&["explore", "-q", "--max-depth", "12"]);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn cli_bad_world_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.toml");
    std::fs::write(
        &p,
        "[explore]\nresolves = 1\nqueues = [[\"e1\"], [\"e9\"]]\n",
    )
    .unwrap();
    let o = specstorm(&["explore", p.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("x.toml:3: event \"e9\" of `explore.queues[1]` has no fingerprint"),
        "{err}"
    );
}

#[test]
fn a_stopped_search_reports_what_it_explored_as_interrupted() {
    static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
    let v = specstorm::workload::groups::statements::load_groups("groups-atomic", None).unwrap();
    let bounds = Bounds {
        stop: Some(&STOPPED),
        ..Bounds::default()
    };
    let r = explore_groups(&v, &Explore::default(), bounds, Restore::Serialize, |_| {}).unwrap();
    assert!(
        matches!(r.outcome.verdict, Verdict::Interrupted),
        "{}",
        r.text
    );
    assert_eq!(r.code, 130);
    assert!(
        r.text
            .contains("states generated: 1, distinct states: 1, depth: 1, violations: 0"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("verdict: interrupted with 1 state(s) left to expand"),
        "{}",
        r.text
    );
}

#[cfg(unix)]
#[test]
fn cli_ctrl_c_prints_what_was_explored_and_exits_130() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    // A world far too large to finish: three workers of four events and
    // six resolves (replay keeps the memory to the states' keys).
    let mut child = command()
        .args([
            "explore",
            "--restore",
            "replay",
            "--set",
            r#"explore.queues=[["e1","e2","e3","e4"],["e2","e3","e4","e1"],["e3","e4","e1","e2"]]"#,
            "--set",
            "explore.fingerprints.e4=f2",
            "--set",
            "explore.resolves=6",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Started: its first progress line (after a second of search).
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("explore: ") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "no progress line");
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    // Only a hang is caught here, never a slow stop.
    let status = wait_bounded(&mut child, "explore did not stop on SIGINT");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert_eq!(status.code(), Some(130), "{out}{rest}");
    assert!(out.contains("states generated: "), "{out}");
    assert!(out.contains(", depth: "), "{out}");
    assert!(out.contains("verdict: interrupted with "), "{out}");
    assert!(out.contains("(exit 130)"), "{out}");
    assert!(rest.contains("specstorm: interrupted"), "{rest}");
}

// ------------------------------------------------------- the outbox world
//
// An independent brute force of the outbox world over the protocol file
// (targets/sqlite/outbox-protocol.sql): a pure-Rust model of its ten
// `handle` steps on plain collections, no SQLite and no step machine, with
// the explorer's choices (the first idle handler takes any queued delivery;
// every running handler steps, or steps then dies while Fail() budget is
// left) and its state equivalence (rows as multisets, handlers sorted).

use specstorm::workload::outbox::explore_main::explore_outbox;

/// A handler's attempt: delivery, tx, position (the file's step index) and
/// the values its steps read (load_state's, process's).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct OAttempt {
    msg: i64,
    dup: u32,
    tx: i64,
    pos: u8,
    /// base_ver, head_msg, head_tx (load_state).
    load: (i64, Option<i64>, Option<i64>),
    /// done_ver (process).
    done: Option<i64>,
}

impl OAttempt {
    /// What the state key holds of it: the values of the steps before its
    /// position (a value read by a later step is not yet part of it).
    fn keyed(
        &self,
    ) -> (
        i64,
        u32,
        i64,
        u8,
        Option<(i64, Option<i64>, Option<i64>)>,
        Option<Option<i64>>,
    ) {
        (
            self.msg,
            self.dup,
            self.tx,
            self.pos,
            (self.pos > 0).then_some(self.load),
            (self.pos > 3).then_some(self.done),
        )
    }
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct OState {
    /// ver -> (msg, tx, kind: 0 init, 1 change, 2 cleanup)
    log: BTreeMap<i64, (Option<i64>, Option<i64>, u8)>,
    staging: BTreeMap<i64, (i64, i64)>,
    outbox: BTreeMap<i64, i64>,
    out_queue: BTreeMap<(i64, i64), u32>,
    processed: BTreeMap<(i64, u32), u32>,
    handlers: Vec<Option<OAttempt>>,
    queue: BTreeSet<(i64, u32)>,
    acked: BTreeSet<(i64, u32)>,
    given_up: BTreeSet<(i64, u32)>,
    fails: u32,
    redeliveries: u32,
}

type OKey = (
    Vec<(i64, Option<i64>, Option<i64>, u8)>,
    Vec<(i64, (i64, i64))>,
    Vec<(i64, i64)>,
    Vec<((i64, i64), u32)>,
    Vec<((i64, u32), u32)>,
    Vec<
        Option<(
            i64,
            u32,
            i64,
            u8,
            Option<(i64, Option<i64>, Option<i64>)>,
            Option<Option<i64>>,
        )>,
    >,
    Vec<BTreeSet<(i64, u32)>>,
    (u32, u32),
);

impl OState {
    fn key(&self) -> OKey {
        let mut hs: Vec<_> = self
            .handlers
            .iter()
            .map(|h| h.as_ref().map(OAttempt::keyed))
            .collect();
        hs.sort();
        (
            self.log.iter().map(|(v, r)| (*v, r.0, r.1, r.2)).collect(),
            self.staging.iter().map(|(t, r)| (*t, *r)).collect(),
            self.outbox.iter().map(|(m, v)| (*m, *v)).collect(),
            self.out_queue.iter().map(|(k, n)| (*k, *n)).collect(),
            self.processed.iter().map(|(k, n)| (*k, *n)).collect(),
            hs,
            vec![
                self.queue.clone(),
                self.acked.clone(),
                self.given_up.clone(),
            ],
            (self.fails, self.redeliveries),
        )
    }

    fn settle_failed(&mut self, d: (i64, u32)) {
        if self.redeliveries > 0 {
            self.redeliveries -= 1;
            self.queue.insert(d);
        } else {
            self.given_up.insert(d);
        }
    }

    /// Runs handler `h`'s step; true: the attempt goes on (or finished:
    /// `Some(true)`), false: it ended as a failure. Returns None while it
    /// continues, Some(acked) when it ended.
    fn step(&mut self, h: usize) -> Option<bool> {
        let mut a = self.handlers[h].clone().expect("running");
        let ended = match a.pos {
            0 => {
                let (&ver, &(msg, tx, _)) = self.log.iter().next_back().expect("head");
                a.load = (ver, msg, tx);
                a.pos = if tx.is_none() { 3 } else { 1 };
                None
            }
            1 => {
                if let Some(&(m, v)) = self.staging.get(&a.load.2.expect("redo")) {
                    self.outbox.entry(m).or_insert(v);
                }
                a.pos = 2;
                None
            }
            2 => {
                let ver = a.load.0 + 1;
                if self.log.contains_key(&ver) {
                    Some(false)
                } else {
                    self.log.insert(ver, (a.load.1, None, 2));
                    a.pos = 0;
                    None
                }
            }
            3 => {
                a.done = self.outbox.get(&a.msg).copied();
                a.pos = if a.done.is_some() { 8 } else { 4 };
                None
            }
            4 => {
                self.staging.insert(a.tx, (a.msg, a.load.0));
                a.pos = 5;
                None
            }
            5 | 7 => {
                let (ver, tx, kind) = if a.pos == 5 {
                    (a.load.0 + 1, Some(a.tx), 1)
                } else {
                    (a.load.0 + 2, None, 2)
                };
                if self.log.contains_key(&ver) {
                    Some(false)
                } else {
                    self.log.insert(ver, (Some(a.msg), tx, kind));
                    a.pos += 1;
                    None
                }
            }
            6 => {
                if let Some(&(m, v)) = self.staging.get(&a.tx) {
                    self.outbox.entry(m).or_insert(v);
                }
                a.pos = 7;
                None
            }
            8 => {
                if let Some(&v) = self.outbox.get(&a.msg) {
                    *self.out_queue.entry((a.msg, v)).or_default() += 1;
                }
                a.pos = 9;
                None
            }
            _ => {
                *self.processed.entry((a.msg, a.dup)).or_default() += 1;
                Some(true)
            }
        };
        self.handlers[h] = Some(a);
        ended
    }

    fn next(&self) -> Vec<OState> {
        let mut out = Vec::new();
        for h in 0..self.handlers.len() {
            let Some(a) = &self.handlers[h] else { continue };
            let d = (a.msg, a.dup);
            for fail in [false, true] {
                if fail && self.fails == 0 {
                    continue;
                }
                let mut t = self.clone();
                match t.step(h) {
                    None if fail => {
                        t.fails -= 1;
                        t.handlers[h] = None;
                        t.settle_failed(d);
                    }
                    None => {}
                    Some(true) if fail => {
                        t.fails -= 1;
                        t.handlers[h] = None;
                        t.settle_failed(d);
                    }
                    Some(true) => {
                        t.handlers[h] = None;
                        t.acked.insert(d);
                    }
                    Some(false) => {
                        t.handlers[h] = None;
                        t.settle_failed(d);
                    }
                }
                out.push(t);
            }
        }
        if let Some(h) = self.handlers.iter().position(Option::is_none) {
            for &d in &self.queue {
                let mut t = self.clone();
                let used: BTreeSet<i64> = self
                    .log
                    .values()
                    .filter_map(|r| r.1)
                    .chain(self.staging.keys().copied())
                    .chain(self.handlers.iter().flatten().map(|a| a.tx))
                    .collect();
                let tx = (1..)
                    .map(|k| d.0 * 10_000 + i64::from(d.1) * 100 + k)
                    .find(|t| !used.contains(t))
                    .unwrap();
                t.queue.remove(&d);
                t.handlers[h] = Some(OAttempt {
                    msg: d.0,
                    dup: d.1,
                    tx,
                    pos: 0,
                    load: (0, None, None),
                    done: None,
                });
                out.push(t);
            }
        }
        out
    }
}

/// (generated, distinct, depth) of the outbox world, breadth-first.
fn outbox_brute_force(m: i64, d: u32, h: usize, fails: u32, redeliveries: u32) -> (u64, u64, u64) {
    let init = OState {
        log: BTreeMap::from([(0, (None, None, 0))]),
        staging: BTreeMap::new(),
        outbox: BTreeMap::new(),
        out_queue: BTreeMap::new(),
        processed: BTreeMap::new(),
        handlers: vec![None; h],
        queue: (1..=m).flat_map(|m| (1..=d).map(move |d| (m, d))).collect(),
        acked: BTreeSet::new(),
        given_up: BTreeSet::new(),
        fails,
        redeliveries,
    };
    let mut seen = HashSet::from([init.key()]);
    let (mut generated, mut depth) = (1u64, 1u64);
    let mut level = vec![init];
    while !level.is_empty() {
        let mut next_level = Vec::new();
        for s in &level {
            for t in s.next() {
                generated += 1;
                if seen.insert(t.key()) {
                    next_level.push(t);
                }
            }
        }
        if !next_level.is_empty() {
            depth += 1;
        }
        level = next_level;
    }
    (generated, seen.len() as u64, depth)
}

fn outbox_world(m: u32, d: u32, h: u32, fails: u32, redeliveries: u32) -> Explore {
    Explore {
        messages: m,
        deliveries: d,
        handlers: h,
        fails,
        redeliveries,
        ..Explore::default()
    }
}

fn outbox_explorer(
    file: &str,
    x: &Explore,
) -> specstorm::explore::Report<specstorm::workload::outbox::explore::Choice> {
    outbox_explorer_by(file, x, Restore::default())
}

fn outbox_explorer_by(
    file: &str,
    x: &Explore,
    restore: Restore,
) -> specstorm::explore::Report<specstorm::workload::outbox::explore::Choice> {
    let v = specstorm::workload::outbox::statements::load_outbox(file, None).unwrap();
    explore_outbox(&v, x, Bounds::default(), restore, |_| {}).unwrap()
}

#[test]
fn outbox_tiny_worlds_match_the_brute_force() {
    for (m, d, h, fails, redeliveries) in [(1, 2, 2, 0, 0), (1, 2, 2, 1, 1), (2, 1, 2, 1, 0)] {
        let x = outbox_world(m, d, h, fails, redeliveries);
        let want = outbox_brute_force(i64::from(m), d, h as usize, fails, redeliveries);
        for restore in [Restore::Savepoint, Restore::Serialize] {
            let r = outbox_explorer_by("outbox-protocol", &x, restore);
            assert!(matches!(r.outcome.verdict, Verdict::Holds), "{}", r.text);
            let f = r.outcome.figures;
            assert_eq!(
                (f.generated, f.distinct, f.depth),
                want,
                "M={m} D={d} H={h} fails={fails} redeliveries={redeliveries} {restore:?}"
            );
        }
    }
}

#[test]
fn outbox_protocol_holds() {
    // The default world with no Fail() (the default world itself, with a
    // Fail() budget of 1, is the README's acceptance run: ~89k states).
    let r = outbox_explorer("outbox-protocol", &outbox_world(2, 2, 2, 0, 0));
    assert!(matches!(r.outcome.verdict, Verdict::Holds), "{}", r.text);
    assert_eq!(r.code, 0);
    let r = outbox_explorer("outbox-protocol", &outbox_world(1, 2, 2, 2, 2));
    assert!(matches!(r.outcome.verdict, Verdict::Holds), "{}", r.text);
}

#[test]
fn outbox_naive_counterexamples_are_found() {
    let x = outbox_world(2, 2, 2, 1, 0);
    for (file, invariant, steps) in [
        ("outbox-naive-no-outbox", "AtMostOneStateChange", 6),
        ("outbox-naive-no-redo", "AtMostOneStateChange", 10),
    ] {
        let r = outbox_explorer(file, &x);
        let Verdict::Violated(cx) = &r.outcome.verdict else {
            panic!("{file}: no violation: {}", r.text)
        };
        assert_eq!(cx.violations[0].invariant, invariant, "{}", r.text);
        assert_eq!(cx.path.len(), steps, "{}", r.text);
        assert_eq!(r.code, 1);
    }
}

#[test]
fn cli_outbox_naive_no_redo_prints_its_trace() {
    let o = specstorm(&["explore", "scenarios/outbox-naive-no-redo.toml", "-q"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    for line in [
        "outbox world: 2 message(s) x 2 delivery(ies), 2 handler(s), Fail() budget 1",
        "Invariant AtMostOneStateChange is violated after 10 step(s)",
        "h1 LockInMsg (the bench's queue) (msg 1 dup 1): takes the delivery; tx_id = 10101",
        "+ state_log(ver=1, msg_id=1, tx_id=10101, kind='change')",
        "+ state_log(ver=2, msg_id=1, tx_id=10201, kind='change')",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
}
