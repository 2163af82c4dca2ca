//! End-to-end tests of the nemesis: each fault kind's effect on the
//! history (its fault entries, the completions of the ops it hit) and on
//! the verdicts (the atomic variant is never judged violated under any
//! fault; only indeterminate resolves may make a verdict `unknown`).

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::common::run::run_text;

/// A run of `scenario` (TOML text) in a fresh folder: (exit code, summary,
/// history entries, run folder owner, run folder).
fn run(scenario: &str, extra: &[&str]) -> (i32, Value, Vec<Value>, tempfile::TempDir, PathBuf) {
    let r = run_text(scenario, extra);
    let (code, summary, history) = (r.code(), r.summary(), r.history());
    (code, summary, history, r.tmp, r.out)
}

fn faults<'a>(h: &'a [Value], kind: &str) -> Vec<&'a Value> {
    h.iter()
        .filter(|e| e["type"] == "fault" && e["kind"] == kind)
        .collect()
}

/// Exit 0 or 4, never 1 or 3: the atomic variant is correct, and a fault
/// may only make a verdict unknown: NoMissedRegression's (an indeterminate
/// resolve), or any invariant's when the fault left it too little evidence.
fn assert_sound(code: i32, s: &Value) {
    assert!(code == 0 || code == 4, "exit {code}: {}", s["exit"]);
    for (name, inv) in s["invariants"].as_object().unwrap() {
        assert_ne!(inv["verdict"], "violated", "{name}: {inv}");
        if inv["verdict"] == "unknown" && name != "NoMissedRegression" {
            let first = inv["first"].as_str().unwrap_or_default();
            assert!(first.starts_with("too little evidence:"), "{name}: {inv}");
        }
    }
}

const KEYS: &str = r#"
[keys]
projects = 2
fingerprints = 20
skew = "hot"
hot_groups = 2
hot_fraction = 0.5

[resolve]
interval = "0s"
"#;

fn sqlite(load: &str, faults: &str) -> String {
    format!(
        "variant = \"groups-atomic\"\n[target]\nbusy_timeout = \"5s\"\n{load}\n{KEYS}\n{faults}"
    )
}

fn http(load: &str, faults: &str) -> String {
    format!(
        "variant = \"groups-atomic\"\n[target]\nkind = \"http\"\nspawn = true\nrequest_timeout = \"5s\"\n{load}\n{KEYS}\n{faults}"
    )
}

#[test]
fn crash_abandons_ops_after_a_step_and_strands_events_by_cause() {
    let sc = sqlite(
        "[load]\ningesters = 8\nresolvers = 2\n[stop]\nevents = 5000",
        "[[faults]]\nkind = \"crash\"\nops = \"all\"\nprobability = 0.05",
    );
    let (code, s, h, _tmp, _) = run(&sc, &[]);
    assert_sound(code, &s);
    let injected = faults(&h, "crash");
    assert!(injected.len() > 100, "{} crashes", injected.len());
    assert_eq!(s["faults_injected"]["crash"], injected.len() as u64);
    // Every crashed op ends `info` with the step it died after.
    let completions: std::collections::HashMap<u64, &Value> = h
        .iter()
        .filter(|e| ["ok", "fail", "info"].contains(&e["type"].as_str().unwrap()))
        .map(|e| (e["op"].as_u64().unwrap(), e))
        .collect();
    for f in &injected {
        let c = completions[&f["op"].as_u64().unwrap()];
        assert_eq!(c["type"], "info", "{c}");
        assert_eq!(c["crashed_after"], f["step"], "{c}");
    }
    // Stranded only by crashes between s1 and the counting step.
    let causes = s["stranded_events"]["by_cause"].as_object().unwrap();
    assert!(!causes.is_empty(), "{s}");
    for cause in causes.keys() {
        assert!(
            cause == "crash after step s1" || cause == "crash after step s2",
            "{cause}"
        );
    }
    // The crashed events were sent again with the same id.
    let retried = h
        .iter()
        .filter(|e| e["type"] == "invoke" && e["attempt"].as_u64() > Some(0))
        .count();
    assert!(retried > 0);
}

#[test]
fn the_same_seed_gives_the_same_fault_plan() {
    // One ingester and no resolver: op ids follow the generator, so the
    // crashed and paused ops must be the same in both runs.
    let sc = sqlite(
        "[load]\ningesters = 1\nresolvers = 0\n[stop]\nevents = 2000",
        "[[faults]]\nkind = \"crash\"\nprobability = 0.05\n\n[[faults]]\nkind = \"pause\"\nprobability = 0.01\ndelay = \"0s\"\njitter = \"0s\"",
    );
    let plan = |h: &[Value]| -> BTreeSet<String> {
        h.iter()
            .filter(|e| e["type"] == "fault")
            .map(|e| format!("{} {} {}", e["kind"], e["op"], e["step"]))
            .collect()
    };
    let (_, _, a, _t1, _) = run(&sc, &["--seed", "5"]);
    let (_, _, b, _t2, _) = run(&sc, &["--seed", "5"]);
    let (_, _, c, _t3, _) = run(&sc, &["--seed", "6"]);
    assert!(plan(&a).len() > 50);
    assert_eq!(plan(&a), plan(&b));
    assert_ne!(plan(&a), plan(&c));
}

#[test]
fn pause_delays_steps_and_changes_no_outcome() {
    let sc = sqlite(
        "[load]\ningesters = 4\nresolvers = 1\n[stop]\nevents = 2000",
        "[[faults]]\nkind = \"pause\"\nstep = \"s3\"\nprobability = 0.2\n\
         [min_evidence]\nNoMissedRegression = 0",
    );
    let (code, s, h, _tmp, _) = run(&sc, &[]);
    assert_eq!(code, 0, "{}", s["exit"]);
    let injected = faults(&h, "pause");
    assert!(injected.len() > 50);
    assert!(injected.iter().all(|f| f["step"] == "s3"));
    assert!(h.iter().all(|e| e["type"] != "info"));
}

#[test]
fn lock_pressure_turns_busy_steps_into_fail_or_info() {
    let sc = sqlite(
        "[load]\ningesters = 4\nresolvers = 1\n[stop]\nevents = 0\nduration = \"1500ms\"",
        "[[faults]]\nkind = \"lock\"\nevery = \"300ms\"\nhold = \"100ms\"",
    )
    .replace("busy_timeout = \"5s\"", "busy_timeout = \"1ms\"");
    let (code, s, h, _tmp, _) = run(&sc, &[]);
    assert_sound(code, &s);
    let locks = faults(&h, "lock");
    assert!(locks.iter().any(|f| f["action"] == "start"), "{locks:?}");
    assert!(locks.iter().any(|f| f["action"] == "stop"), "{locks:?}");
    // Ops with a busy step: `fail` if no step changed rows, else `info`.
    let steps = |pred: &dyn Fn(&Value) -> bool| -> BTreeSet<u64> {
        h.iter()
            .filter(|e| e["type"] == "step" && pred(e))
            .map(|e| e["op"].as_u64().unwrap())
            .collect()
    };
    let busy = steps(&|e| {
        e["error"]
            .as_str()
            .is_some_and(|x| x.contains("locked") || x.contains("busy"))
    });
    let changed = steps(&|e| e["changes"].as_u64() > Some(0));
    assert!(!busy.is_empty(), "no SQLITE_BUSY under lock pressure");
    let mut checked = 0;
    for c in h
        .iter()
        .filter(|e| ["ok", "fail", "info"].contains(&e["type"].as_str().unwrap()))
    {
        let op = c["op"].as_u64().unwrap();
        if busy.contains(&op) {
            let want = if changed.contains(&op) {
                "info"
            } else {
                "fail"
            };
            assert_eq!(c["type"], want, "{c}");
            checked += 1;
        }
    }
    assert_eq!(checked, busy.len());
}

#[test]
fn proxy_toxics_are_recorded_and_judged_soundly() {
    let sc = http(
        "[load]\ningesters = 16\nresolvers = 4\n[stop]\nevents = 3000",
        r#"[[faults]]
kind = "proxy"
toxic = "drop_response"
probability = 0.05

[[faults]]
kind = "proxy"
toxic = "reset"
probability = 0.05

[[faults]]
kind = "proxy"
toxic = "error"
probability = 0.05

[[faults]]
kind = "proxy"
toxic = "latency"
probability = 0.1
delay = "1ms"
"#,
    );
    let (code, s, h, _tmp, _) = run(&sc, &[]);
    assert_sound(code, &s);
    let injected = faults(&h, "proxy");
    for toxic in ["drop_response", "reset", "error", "latency"] {
        assert!(
            injected
                .iter()
                .any(|f| f["detail"].as_str().unwrap().starts_with(toxic)),
            "no {toxic}"
        );
    }
    // Not forwarded: the client saw `info`, yet the op had no effect.
    assert!(injected.iter().any(|f| f["forwarded"] == false));
    assert!(s["ops"]["ingest"]["info"].as_u64().unwrap() > 0);
    assert_eq!(s["invariants"]["CountExact"]["verdict"], "holds");
}

#[test]
fn kill_and_restart_loses_nothing_acknowledged() {
    let sc = http(
        "[load]\ningesters = 16\nresolvers = 2\n[stop]\nevents = 0\nduration = \"2500ms\"",
        "[[faults]]\nkind = \"kill\"\nevery = \"800ms\"\ndelay = \"200ms\"",
    );
    let (code, s, h, _tmp, dir) = run(&sc, &[]);
    assert_sound(code, &s);
    let kills = faults(&h, "kill");
    let starts = kills.iter().filter(|f| f["action"] == "start").count();
    assert!(starts >= 2, "{kills:?}");
    assert_eq!(
        starts,
        kills.iter().filter(|f| f["action"] == "stop").count()
    );
    // TypeOK includes "every acknowledged event is in the final tables".
    assert_eq!(s["invariants"]["TypeOK"]["verdict"], "holds");
    let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    assert!(!log.contains("panicked"), "{log}");
}

#[test]
fn crash_through_the_servers_fault_hook_strands_events_by_cause() {
    let sc = http(
        "[load]\ningesters = 16\nresolvers = 2\n[stop]\nevents = 3000",
        "[[faults]]\nkind = \"crash\"\nprobability = 0.1",
    );
    let (code, s, h, _tmp, _) = run(&sc, &[]);
    assert_sound(code, &s);
    let injected = faults(&h, "crash");
    assert!(injected.len() > 50);
    assert!(injected
        .iter()
        .all(|f| f["detail"].as_str().unwrap().ends_with("(fault hook)")));
    let causes = s["stranded_events"]["by_cause"].as_object().unwrap();
    assert!(!causes.is_empty(), "{s}");
    for cause in causes.keys() {
        assert!(cause.ends_with("(fault hook)"), "{cause}");
    }
}

#[test]
fn a_crash_on_every_attempt_resends_each_event_a_bounded_number_of_times() {
    // Every attempt dies after s1 (its resends stop at s1 as duplicates and
    // die there too): each event is resent a bounded number of times, so
    // a run that stops on events ends, all of them stranded.
    let sc = sqlite(
        "[load]\ningesters = 2\nresolvers = 0\n[stop]\nevents = 10\n[retry]\nprobability = 0.0",
        "[[faults]]\nkind = \"crash\"\nstep = \"s1\"\nprobability = 1.0",
    );
    let (code, s, h, _tmp, _) = run(&sc, &[]);
    assert_eq!(code, 4, "{}", s["exit"]);
    assert_eq!(s["stranded_events"]["total"], 10);
    let max_attempt = h
        .iter()
        .filter(|e| e["type"] == "invoke")
        .filter_map(|e| e["attempt"].as_u64())
        .max()
        .unwrap();
    assert_eq!(
        max_attempt as u32,
        specstorm::workload::groups::runtime::CRASH_RESENDS
    );
    assert_eq!(s["duplicates"], 0, "crashed duplicates are no answers");
}

#[test]
fn a_stop_cuts_long_pauses_and_kill_down_times_short() {
    // An hour of down time and of pause: the runs still end by themselves
    // at their duration and save their results (the hang guard is far
    // above any duration here).
    let guard = std::time::Duration::from_secs(120);
    let cases = [
        sqlite(
            "[load]\ningesters = 2\nresolvers = 1\n[stop]\nevents = 0\nduration = \"1s\"",
            "[[faults]]\nkind = \"pause\"\nprobability = 0.01\ndelay = \"1h\"",
        ),
        http(
            "[load]\ningesters = 4\nresolvers = 1\n[stop]\nevents = 0\nduration = \"1500ms\"",
            "[[faults]]\nkind = \"kill\"\nevery = \"500ms\"\ndelay = \"1h\"",
        ),
    ];
    for sc in cases {
        let t = std::time::Instant::now();
        let (code, s, _, _tmp, _) = run(&sc, &[]);
        assert!(t.elapsed() < guard, "took {:?}", t.elapsed());
        assert_sound(code, &s);
        assert_eq!(s["partial"], false);
    }
}
