//! The schedule fuzzer's choices are in the history (`bench` entries with
//! `action = "fuzz"`), and a run with the same seed makes the same choice
//! at every point of every op: compared op by op (an op named by what it
//! is, never by its id or when it ran), not as an interleaving. A point
//! is performed before an executed step, so two runs are compared at the
//! points both runs of the op reached (the step a point came before may
//! differ: an outbox attempt's path depends on what it reads); over HTTP
//! the bench records every point it asks of the spawned server, so those
//! are compared whole.

use crate::common::run::{run_text, sets};
use serde_json::Value;
use std::collections::BTreeMap;

/// An op's identity across runs: an ingest by its event and attempt, a
/// resolve by its worker and its rank among that worker's ops (in
/// process, where a resolver runs every op its generator gives), an
/// outbox attempt by its delivery and attempt number.
type OpName = String;

/// Per op: the fuzzer's choices (executed step -> ns, 0 a yield), and how
/// many steps it executed (None over HTTP: the server ran them).
#[derive(Debug, Default, PartialEq)]
struct Op {
    choices: BTreeMap<u64, u64>,
    executed: Option<u64>,
    /// Over HTTP: sent more than once (its resends draw as other ops).
    resent: bool,
}

/// The ops of `history`; with `resolves` false, without the resolves
/// (over HTTP a resolver skips its generator's ops on groups the service
/// has not named yet, a timing matter, so a resolve has no timing-free
/// name there; its points are drawn as an ingest's).
fn ops(history: &[Value], resolves: bool) -> BTreeMap<OpName, Op> {
    let mut names = BTreeMap::new();
    let mut rank: BTreeMap<u64, u64> = BTreeMap::new();
    for e in history.iter().filter(|e| e["type"] == "invoke") {
        let name = if let Some(d) = e.get("delivery") {
            format!("handle {} {} {}", d["msg_id"], d["dup_id"], d["attempt"])
        } else if e["f"] == "ingest" {
            format!("ingest {} {}", e["event_id"], e["attempt"])
        } else {
            let w = e["worker"].as_u64().unwrap();
            let k = rank.entry(w).or_default();
            *k += 1;
            format!("{} {w} {k}", e["f"].as_str().unwrap())
        };
        names.insert(e["op"].as_u64().unwrap(), name);
    }
    let mut out: BTreeMap<OpName, Op> = BTreeMap::new();
    for e in history {
        let Some(op) = e["op"].as_u64() else { continue };
        if !resolves && names[&op].starts_with("resolve") {
            continue;
        }
        let o = out.entry(names[&op].clone()).or_default();
        match e["type"].as_str().unwrap() {
            "step" => *o.executed.get_or_insert(0) += 1,
            "bench" if e["action"] == "fuzz" => {
                let c = &e["fuzz"];
                assert!(c["step"].is_string() || o.executed.is_none(), "{e}");
                let prev = o
                    .choices
                    .insert(c["n"].as_u64().unwrap(), c["ns"].as_u64().unwrap());
                // In process a point comes once per executed step; over
                // HTTP a resent request (a timing matter) asks again.
                o.resent |= prev.is_some();
            }
            _ => {}
        }
    }
    out
}

/// Runs `text` with the fuzzer on under `seed`; its ops.
fn fuzzed(text: &str, seed: &str, resolves: bool) -> BTreeMap<OpName, Op> {
    let seed = format!("seed={seed}");
    let ran = run_text(
        text,
        &sets(&["fuzz.enabled=true", "fuzz.probability=0.5", &seed]),
    );
    assert!(
        ran.out.join("history.bin").exists(),
        "{:?}",
        String::from_utf8_lossy(&ran.output.stderr)
    );
    ops(&ran.history(), resolves)
}

/// Counts the ops both runs have and whose choices were compared; fails
/// on a choice that differs at a point both runs of an op reached.
fn same_choices(a: &BTreeMap<OpName, Op>, b: &BTreeMap<OpName, Op>) -> (usize, usize) {
    let (mut compared, mut with_choices) = (0, 0);
    for (name, x) in a {
        let Some(y) = b.get(name) else { continue };
        assert!(
            x.executed.is_none() || !x.resent,
            "{name}: two points before one step"
        );
        if x.resent || y.resent {
            continue;
        }
        compared += 1;
        with_choices += usize::from(!x.choices.is_empty());
        // A point is performed before an executed step: in process, each
        // run reached the points before the steps it executed.
        let reached = match (x.executed, y.executed) {
            (Some(m), Some(n)) => m.min(n),
            _ => u64::MAX,
        };
        for (&n, c) in &x.choices {
            assert!(
                x.executed.is_none_or(|m| n < m),
                "{name}: point {n} after its last step"
            );
            if n < reached {
                assert_eq!(y.choices.get(&n), Some(c), "{name}: point {n}");
            }
        }
        for (&n, c) in &y.choices {
            if n < reached {
                assert_eq!(x.choices.get(&n), Some(c), "{name}: point {n}");
            }
        }
    }
    (compared, with_choices)
}

fn check(text: &str, resolves: bool) {
    let a = fuzzed(text, "5", resolves);
    let b = fuzzed(text, "5", resolves);
    let (compared, with_choices) = same_choices(&a, &b);
    assert!(compared >= 40, "only {compared} ops in both runs");
    assert!(with_choices >= 10, "only {with_choices} ops with a choice");
    // Another seed draws other choices (its ops are others too: compare
    // the sleeps drawn, each one of 500,000 lengths).
    let sleeps = |ops: &BTreeMap<OpName, Op>| -> std::collections::BTreeSet<u64> {
        ops.values()
            .flat_map(|o| o.choices.values().copied())
            .filter(|ns| *ns > 0)
            .collect()
    };
    let c = fuzzed(text, "6", resolves);
    assert!(!sleeps(&a).is_empty());
    assert!(sleeps(&a) != sleeps(&c), "seed 6 drew seed 5's sleeps");
}

const GROUPS: &str = r#"
variant = "groups-naive"
[load]
ingesters = 4
resolvers = 1
[stop]
events = 300
[resolve]
interval = "0s"
"#;

#[test]
fn groups_in_process_same_seed_same_choices() {
    check(GROUPS, true);
}

#[test]
fn groups_over_the_spawned_server_same_seed_same_choices() {
    check(
        &format!("{GROUPS}[target]\nkind = \"http\"\nspawn = true\n"),
        false,
    );
}

#[test]
fn outbox_in_process_same_seed_same_choices() {
    check(
        r#"
workload = "outbox"
[outbox]
messages = 40
deliveries = 2
handlers = 4
"#,
        true,
    );
}
