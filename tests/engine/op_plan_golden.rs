//! Golden op plans: what the generators hand out for every shipped
//! scenario under a few seeds, pinned so that a change to the generator
//! (or to what it draws from) that alters any existing seed's plan fails
//! here. Each case is written as its op count, a sha256 of the canonical
//! text of every op, and its first ops literally (so a diff says what
//! moved). Covered: the groups workload's ingest sequence (fresh events,
//! duplicate-id retries, crash requeues), each resolver's sequence and
//! the per-op fault plan; the outbox workload's delivery queue. Besides
//! the shipped files, a few overrides stress what those leave at their
//! defaults: many retries per event, the open model's intended times,
//! shards and namespaces. The outbox's fault draws live inside its
//! runtimes, so `run_golden.rs` pins them through real runs.
//!
//! A deliberate change of plans updates the snapshot (`INSTA_UPDATE=always
//! cargo test --release --test engine op_plan_golden`) and says so in its
//! commit: every saved seed then replays other ops.

use sha2::{Digest, Sha256};
use specstorm::draws::op_key;
use specstorm::nemesis::FaultPlan;
use specstorm::scenario::{load, Scenario};
use specstorm::shard::Shard;
use specstorm::workload::groups::config::GroupsScenario;
use specstorm::workload::groups::generator::{IngestGenerator, ResolveGenerator};
use specstorm::workload::outbox::config::OutboxConfig;
use specstorm::workload::outbox::runtime::Queue;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SEEDS: [u64; 3] = [1, 2, 42];
/// Ingest ops (and outbox deliveries) per case.
const INGEST_OPS: usize = 2000;
/// Ops per resolver.
const RESOLVE_OPS: usize = 300;
/// Ops written out literally per case.
const SHOWN: usize = 5;

/// One case's plan: its canonical lines, summarised.
fn summarise(out: &mut String, name: &str, lines: &[String]) {
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    let digest: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    writeln!(out, "## {name}: {} ops, sha256 {digest}", lines.len()).unwrap();
    for l in lines.iter().take(SHOWN) {
        writeln!(out, "  {l}").unwrap();
    }
}

fn scenario(path: &Path, sets: &[String]) -> Scenario {
    load(Some(path), sets)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .0
}

/// The first `n` ingest ops; every op whose key is a multiple of
/// `requeue_every` (0: none) is requeued as a crashed op's client does.
fn ingest_plan(g: &mut IngestGenerator, n: usize, requeue_every: u64) -> Vec<String> {
    let mut lines = Vec::with_capacity(n);
    while lines.len() < n {
        let Some(op) = g.next_op() else { break };
        if requeue_every > 0 && op.key % requeue_every == 0 {
            g.requeue(&op);
        }
        lines.push(format!(
            "{} a{} g{} {}/{} {} {:?} k{:x} t{:?}",
            op.event_id,
            op.attempt,
            op.group,
            op.project,
            op.fingerprint,
            op.group_id,
            op.message,
            op.key,
            op.intended_ns
        ));
    }
    lines
}

fn resolve_plan(g: &mut ResolveGenerator, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let op = g.next_op();
            format!(
                "g{} {}/{} {} k{:x}",
                op.group, op.project, op.fingerprint, op.group_id, op.key
            )
        })
        .collect()
}

/// The crash, pause and proxy decisions for the first ingest and resolve
/// op keys, at the load's start and 30 s in (fault windows).
fn fault_plan(s: &Scenario, dir: &Path) -> Vec<String> {
    let plan = FaultPlan::new(s.seed, &s.faults);
    let names = |ingest: bool| -> Vec<String> {
        match specstorm::workload::groups::statements::load_groups(&s.variant, Some(dir)) {
            Ok(v) => {
                let p = if ingest { v.ingest } else { v.resolve };
                p.steps.into_iter().map(|s| s.name).collect()
            }
            Err(_) => vec!["s1".into(), "s2".into(), "s3".into()],
        }
    };
    let mut lines = Vec::new();
    for ingest in [true, false] {
        let steps = names(ingest);
        let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
        let stream = u32::from(!ingest);
        for since in [Duration::ZERO, Duration::from_secs(30)] {
            for i in 0..INGEST_OPS as u64 {
                let key = op_key(stream, i, 0);
                let f = plan.for_op(key, ingest, &steps, since);
                let (proxy, pf) = plan.proxy_action(key, ingest, since);
                if !f.is_empty() || pf.is_some() {
                    lines.push(format!(
                        "{} {since:?} k{key:x} crash {:?} pauses {:?} proxy {proxy:?} {pf:?}",
                        if ingest { "ingest" } else { "resolve" },
                        f.crash_after,
                        f.pauses
                    ));
                }
            }
        }
    }
    lines
}

/// The outbox queue's hand-outs: every fourth attempt fails (and comes
/// back), the rest are acked; all at one instant (leases never run out).
fn queue_plan(s: &Scenario) -> Vec<String> {
    let cfg = s
        .part::<OutboxConfig>()
        .cloned()
        .expect("an outbox scenario");
    let mut q = Queue::new(&cfg, s.seed);
    let now = Instant::now();
    let mut lines = Vec::new();
    while lines.len() < INGEST_OPS {
        let Some((key, attempt)) = q.take_at(now) else {
            break;
        };
        let n = lines.len();
        q.settle(key, attempt, n % 4 != 0);
        lines.push(format!("m{} d{} a{attempt}", key.0, key.1));
    }
    lines
}

fn groups_cases(out: &mut String, name: &str, s: &Scenario, dir: &Path) {
    summarise(
        out,
        &format!("{name} ingest"),
        &ingest_plan(&mut IngestGenerator::new(s, ""), INGEST_OPS, 0),
    );
    for r in 0..s.load().resolvers.max(1) {
        summarise(
            out,
            &format!("{name} resolver {r}"),
            &resolve_plan(&mut ResolveGenerator::new(s, "", r), RESOLVE_OPS),
        );
    }
    // Timed faults (kill, lock) decide nothing per op.
    let faults = fault_plan(s, dir);
    if !faults.is_empty() {
        summarise(out, &format!("{name} faults"), &faults);
    }
}

fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_scenario_keeps_its_op_plans() {
    let mut out = String::new();
    let files = shipped();
    assert!(files.len() >= 20, "the shipped scenarios: {files:?}");
    for path in &files {
        let dir = path.parent().unwrap();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for seed in SEEDS {
            let s = scenario(path, &[format!("seed={seed}")]);
            let name = format!("{file} seed {seed}");
            match s.workload.name() {
                "groups" => groups_cases(&mut out, &name, &s, dir),
                "outbox" => summarise(&mut out, &format!("{name} queue"), &queue_plan(&s)),
                w => panic!("{name}: a shipped scenario of workload {w:?}"),
            }
        }
    }
    insta::assert_snapshot!("shipped", out);
}

/// Overrides of the default scenario that reach what the shipped files
/// leave alone.
#[test]
fn stressed_generators_keep_their_op_plans() {
    let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/default.toml");
    let cases: &[(&str, &[&str])] = &[
        (
            "many retries",
            &[
                "retry.probability=1",
                "retry.max_retries=40",
                "retry.soon_fraction=0.3",
            ],
        ),
        (
            "hundred retries",
            &[
                "retry.probability=0.7",
                "retry.max_retries=100",
                "load.ingesters=64",
            ],
        ),
        ("no retries", &["retry.probability=0"]),
        (
            "open model",
            &[
                "load.model=\"open\"",
                "load.rate=2500",
                "retry.max_retries=5",
            ],
        ),
        (
            "uniform keys",
            &[
                "keys.skew=\"uniform\"",
                "keys.projects=7",
                "keys.fingerprints=13",
            ],
        ),
        ("few events", &["stop.events=300", "retry.max_retries=9"]),
    ];
    let mut out = String::new();
    for (label, sets) in cases {
        for seed in SEEDS {
            let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            all.push(format!("seed={seed}"));
            let s = scenario(&default, &all);
            let name = format!("{label} seed {seed}");
            summarise(
                &mut out,
                &format!("{name} ingest"),
                &ingest_plan(&mut IngestGenerator::new(&s, ""), 4 * INGEST_OPS, 0),
            );
        }
    }
    for seed in SEEDS {
        let s = scenario(
            &default,
            &[format!("seed={seed}"), "retry.max_retries=6".into()],
        );
        // Crash faults requeue ops: the retry lands by the op's key.
        summarise(
            &mut out,
            &format!("requeue seed {seed} ingest"),
            &ingest_plan(&mut IngestGenerator::new(&s, ""), 4 * INGEST_OPS, 3),
        );
        for (i, n) in [(0, 3), (2, 3)] {
            let shard = Some(Shard { index: i, count: n });
            summarise(
                &mut out,
                &format!("shard {i}/{n} seed {seed} ingest"),
                &ingest_plan(
                    &mut IngestGenerator::sharded(&s, "r17.", shard),
                    INGEST_OPS,
                    0,
                ),
            );
            summarise(
                &mut out,
                &format!("shard {i}/{n} seed {seed} resolver 1"),
                &resolve_plan(
                    &mut ResolveGenerator::sharded(&s, "r17.", 1, shard),
                    RESOLVE_OPS,
                ),
            );
        }
    }
    insta::assert_snapshot!("stressed", out);
}
