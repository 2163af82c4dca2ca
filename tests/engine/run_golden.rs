//! Goldens through real runs, for what the generators' goldens
//! (`op_plan_golden.rs`) cannot reach from outside the runtimes:
//!
//! - each shipped outbox scenario's attempts, as its runtime hands the
//!   deliveries out (the queue, with the failed attempts it takes back),
//!   with the faults its runtime draws for each attempt (salted apart from
//!   the groups' draws: `(1<<30)|step` for pauses, `u32::MAX` for a per-op
//!   crash, the step for a per-step crash in process and a salt the
//!   reference server draws from over HTTP), on the scenario's own target,
//!   for each of its variants;
//! - the outbox fault draws no shipped scenario makes (a crash per
//!   attempt, at a random or a named step; pauses with jitter), on each
//!   target;
//! - each workload's history header on each target (its first line, the
//!   start time redacted), so that a schema change shows.
//!
//! One handler makes an outbox run deterministic: attempts run one after
//! the other, so no compare-and-swap is lost to a concurrent attempt and
//! no lease runs out while its attempt runs; every draw is keyed by
//! (seed, fault, delivery, attempt, step), never by time. Each case is
//! written as its attempt count, a sha256 of every attempt's line, and its
//! first attempts and first faulted attempts literally (so a diff says
//! what moved).
//!
//! A deliberate change of plans updates the snapshots
//! (`INSTA_UPDATE=always cargo test --release --test engine run_golden`)
//! and says so in its commit: every saved seed then replays other faults.

use crate::common::root;
use crate::common::run::{run, run_text, Ran};
use serde_json::Value;
use sha2::{Digest, Sha256};
use specstorm::scenario::load;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Seeds of the outbox cases (each scenario's own seed is 1).
const SEEDS: [u64; 2] = [1, 42];
/// Messages per outbox case (deliveries and budget as shipped).
const MESSAGES: u32 = 60;
/// Attempts written out literally per case, and faulted ones.
const SHOWN: usize = 5;

/// Every shipped outbox scenario, with each variant it names (its own
/// `variant`, or each of its `[[variants]]`).
fn outbox_cases() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let s = load(Some(&path), &[])
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .0;
        if s.workload.name() != "outbox" {
            continue;
        }
        let file = format!("scenarios/{}", path.file_name().unwrap().to_string_lossy());
        if s.variants.is_empty() {
            cases.push((file.clone(), s.variant.clone()));
        }
        for v in &s.variants {
            cases.push((file.clone(), v.variant.clone()));
        }
    }
    cases
}

/// Each attempt of an outbox history, in op order: its delivery, the
/// faults injected into it, and how it ended.
fn attempts(history: &[Value]) -> Vec<String> {
    #[derive(Default)]
    struct Attempt {
        delivery: String,
        faults: Vec<String>,
        end: String,
    }
    let mut ops: BTreeMap<u64, Attempt> = BTreeMap::new();
    for e in history {
        let Some(op) = e["op"].as_u64() else { continue };
        let a = ops.entry(op).or_default();
        match e["type"].as_str().unwrap_or_default() {
            "invoke" => {
                let d = &e["delivery"];
                a.delivery = format!("m{} d{} a{}", d["msg_id"], d["dup_id"], d["attempt"]);
            }
            // The detail names the step and, for a pause, its drawn delay.
            "fault" => a.faults.push(
                e["detail"]
                    .as_str()
                    .or(e["kind"].as_str())
                    .unwrap_or_default()
                    .to_owned(),
            ),
            "step" => {}
            end => {
                a.end = end.to_owned();
                if let Some(step) = e["crashed_after"].as_str() {
                    write!(a.end, " crashed after {step}").unwrap();
                }
            }
        }
    }
    ops.into_values()
        .map(|a| {
            let mut l = format!("{} {}", a.delivery, a.end);
            for f in a.faults {
                write!(l, "; {f}").unwrap();
            }
            l
        })
        .collect()
}

/// One case's attempts, summarised.
fn summarise(out: &mut String, name: &str, lines: &[String]) {
    let mut h = Sha256::new();
    for l in lines {
        h.update(l.as_bytes());
        h.update(b"\n");
    }
    let digest: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let faulted = lines.iter().filter(|l| l.contains("; ")).count();
    writeln!(
        out,
        "## {name}: {} attempts, {faulted} with faults, sha256 {digest}",
        lines.len()
    )
    .unwrap();
    for l in lines.iter().take(SHOWN) {
        writeln!(out, "  {l}").unwrap();
    }
    let later = lines.iter().skip(SHOWN);
    for l in later.filter(|l| l.contains("; ")).take(SHOWN) {
        writeln!(out, "  {l}").unwrap();
    }
}

/// A run that must have left its history (whatever its verdicts).
fn ran(scenario: &str, sets: &[String]) -> Ran {
    let mut args = Vec::new();
    for s in sets {
        args.extend(["--set", s.as_str()]);
    }
    let r = run(scenario, &args);
    assert!(
        r.out.join("history.bin").is_file() && r.out.join("summary.json").is_file(),
        "{scenario} {sets:?}: {}",
        crate::common::bench::exit_and_text(&r.output)
    );
    r
}

#[test]
fn every_shipped_outbox_scenario_keeps_its_attempts_and_their_faults() {
    let cases = outbox_cases();
    assert!(cases.len() >= 7, "the shipped outbox cases: {cases:?}");
    let mut out = String::new();
    for (scenario, variant) in &cases {
        for seed in SEEDS {
            let r = ran(
                scenario,
                &[
                    format!("seed={seed}"),
                    format!("variant={variant:?}"),
                    format!("outbox.messages={MESSAGES}"),
                    "outbox.handlers=1".into(),
                ],
            );
            let history = r.history();
            let stem = Path::new(variant).file_stem().unwrap().to_string_lossy();
            assert_eq!(history[0]["variant"], *stem, "{scenario}: {}", history[0]);
            let lines = attempts(&history);
            assert!(!lines.is_empty(), "{scenario} {variant}: no attempt");
            summarise(
                &mut out,
                &format!("{} {stem} seed {seed}", &scenario["scenarios/".len()..]),
                &lines,
            );
        }
    }
    insta::assert_snapshot!("outbox_attempts", out);
}

/// The fault draws no shipped outbox scenario makes: a crash per attempt
/// (after a random step, or a named one) and pauses with jitter, on each
/// target.
#[test]
fn outbox_faults_the_shipped_files_leave_out_keep_their_draws() {
    let variant = root().join("targets/sqlite/outbox-protocol.sql");
    let faults = "[[faults]]\nkind = \"crash\"\nops = \"handle\"\nprobability = 0.1\n\n\
                  [[faults]]\nkind = \"crash\"\nops = \"handle\"\nstep = \"publish\"\n\
                  probability = 0.05\n\n\
                  [[faults]]\nkind = \"pause\"\nops = \"handle\"\nprobability = 0.02\n\
                  delay = \"1ms\"\njitter = \"2ms\"\n";
    let mut out = String::new();
    for (name, target) in [
        ("sqlite", "[target]\nkind = \"sqlite\"\n"),
        ("http", "[target]\nkind = \"http\"\nspawn = true\n"),
    ] {
        let text = format!(
            "workload = \"outbox\"\nvariant = \"{}\"\n{target}\n\
             [outbox]\nmessages = {MESSAGES}\ndeliveries = 3\nhandlers = 1\nmax_attempts = 1000\n\n\
             {faults}",
            variant.display()
        );
        for seed in SEEDS {
            let r = run_text(&text, &["--seed", &seed.to_string()]);
            assert!(
                r.out.join("summary.json").is_file(),
                "{name}: {}",
                crate::common::bench::exit_and_text(&r.output)
            );
            let lines = attempts(&r.history());
            summarise(&mut out, &format!("{name} seed {seed}"), &lines);
        }
    }
    insta::assert_snapshot!("outbox_attempts_other_faults", out);
}

/// The first line of a run's history, with the fields a clock or a
/// machine gives redacted.
fn header(r: &Ran) -> String {
    let text = crate::common::folder::history_text(&r.out).unwrap();
    let first = text.lines().next().unwrap().to_owned();
    let parsed: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(parsed["type"], "header", "{first}");
    let mut line = first;
    for key in ["started_utc", "clock_utc_ns", "host", "hostname", "pid"] {
        let Some(v) = parsed.get(key) else { continue };
        let old = format!("\"{key}\":{v}");
        assert!(line.contains(&old), "{key} in {line}");
        line = line.replace(&old, &format!("\"{key}\":\"[{key}]\""));
    }
    line
}

#[test]
fn each_workload_keeps_its_history_header_on_each_target() {
    let mut out = String::new();
    for (scenario, set) in [
        ("scenarios/groups-atomic.toml", "stop.events=200"),
        ("scenarios/http-atomic.toml", "stop.events=200"),
        ("scenarios/outbox-protocol.toml", "outbox.messages=20"),
        ("scenarios/outbox-http.toml", "outbox.messages=20"),
    ] {
        let r = ran(scenario, &[set.to_owned()]);
        writeln!(out, "## {scenario}\n{}", header(&r)).unwrap();
    }
    insta::assert_snapshot!("history_headers", out);
}
