//! Thresholds that stop the load (`abort_on_fail`): a run whose only way
//! to end is the threshold's breach (no event limit, an hour's duration)
//! ends early, is audited, and exits 1 saying which threshold and when;
//! one that never breaches runs to its end; the loader's refusals of bad
//! tables. No assertion here depends on the machine's speed: what ends
//! each run is its configuration.

use crate::common::run::{load_text, run, run_text, sets, Ran};
use serde_json::Value;

/// Whose only end is the threshold's breach: no event limit, an hour.
const ENDLESS: &[&str] = &["stop.events=0", "stop.duration=1h"];

/// An abort threshold that breaches at the first judgement: a throughput
/// is never below 0, and it is a figure from the load's first instant.
const AT_ONCE: &str =
    "thresholds=[{ threshold = \"throughput_ops_per_s.total < 0\", abort_on_fail = true }]";

fn endless_run(scenario: &str, extra: &[&str]) -> Ran {
    let mut all: Vec<&str> = ENDLESS.to_vec();
    all.push(AT_ONCE);
    all.extend(extra);
    run(scenario, &sets(&all))
}

/// What every run stopped by [`AT_ONCE`] shows: exit 1, the threshold in
/// `aborted_by` and breached, the audit's verdicts, a failing JUnit case.
fn assert_aborted(r: &Ran, invariants: usize) -> Value {
    let s = r.summary();
    let shown = crate::common::bench::exit_and_text(&r.output);
    assert_eq!(r.code(), 1, "{shown}");
    let by = &s["aborted_by"];
    assert_eq!(by["threshold"], "throughput_ops_per_s.total < 0", "{s:#}");
    // The first judgement is one interval (1 s) into the load.
    assert!(by["at_s"].as_f64().unwrap() >= 1.0, "{by}");
    assert!(by["actual"].as_f64().unwrap() >= 0.0, "{by}");
    // Stopped by the threshold, not by the hour's deadline.
    assert!(s["duration_s"].as_f64().unwrap() < 3600.0, "{s:#}");
    assert_eq!(s["partial"], false);
    let t = &s["thresholds"][0];
    assert_eq!(t["passed"], false, "{t}");
    assert_eq!(t["aborted"]["at_s"], by["at_s"]);
    assert!(
        s["exit"]["rule"]
            .as_str()
            .unwrap()
            .contains("throughput_ops_per_s.total < 0"),
        "{}",
        s["exit"]
    );
    // The audit ran on what ran.
    let verdicts = s["invariants"].as_object().unwrap();
    assert_eq!(verdicts.len(), invariants, "{s:#}");
    assert!(verdicts.values().all(|v| v["verdict"].is_string()));
    let junit = std::fs::read_to_string(r.out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("throughput_ops_per_s.total &lt; 0 (actual")
            && junit.contains("and stopped it)</failure>"),
        "{junit}"
    );
    s
}

#[test]
fn an_abort_threshold_stops_the_load_then_the_audit_runs_and_the_run_exits_1() {
    let r = endless_run("scenarios/chaos-lock.toml", &[]);
    assert_aborted(&r, 4);
    // `specstorm audit` of the folder keeps the breach: exit 1 again.
    let audit = crate::common::specstorm(&["audit", r.out.to_str().unwrap()]);
    assert_eq!(
        audit.status.code(),
        Some(1),
        "{}",
        crate::common::bench::exit_and_text(&audit)
    );
}

#[test]
fn an_abort_threshold_stops_a_load_over_http() {
    let r = endless_run(
        "scenarios/chaos-lock.toml",
        &["target.kind=http", "target.spawn=true"],
    );
    assert_aborted(&r, 4);
}

#[test]
fn an_abort_threshold_stops_an_outbox_load() {
    // An outbox run ends when its queue drains: every step of a handler
    // waits 100 ms, so 16 handlers deliver at most 160 a second, and the
    // 60000 deliveries cannot drain before the first judgement.
    let variant = crate::common::root().join("targets/sqlite/outbox-protocol.sql");
    let text = format!(
        "workload = \"outbox\"\nvariant = {:?}\n\
         [outbox]\nmessages = 20000\ndeliveries = 3\nhandlers = 16\n\
         [stop]\nduration = \"1h\"\n\
         [[faults]]\nkind = \"pause\"\nprobability = 1.0\ndelay = \"100ms\"\njitter = \"0s\"\n",
        variant.display().to_string()
    );
    let r = run_text(&text, &sets(&[AT_ONCE]));
    let outbox = specstorm::workload::outbox::config::OUTBOX_INVARIANTS.len();
    let s = assert_aborted(&r, outbox);
    assert_eq!(s["workload"], "outbox");
}

#[test]
fn an_abort_threshold_that_never_breaches_lets_the_run_reach_its_end() {
    // Judged at 1 s and 2 s; the deadline is the only other end.
    let r = run(
        "scenarios/chaos-lock.toml",
        &sets(&[
            "stop.events=0",
            "stop.duration=3s",
            "thresholds=[{ threshold = \"latency_us.ingest.p99 < 1e12\", abort_on_fail = true }]",
        ]),
    );
    let s = r.summary();
    // Not 1 (aborted); 4 is fine: how much evidence 3 s give the
    // invariants depends on the machine's speed.
    assert!(
        matches!(r.code(), 0 | 4),
        "{}",
        crate::common::bench::exit_and_text(&r.output)
    );
    assert!(s.get("aborted_by").is_none(), "{s:#}");
    assert!(
        s["duration_s"].as_f64().unwrap() >= 3.0,
        "{}",
        s["duration_s"]
    );
    assert_eq!(s["thresholds"][0]["passed"], true);
    assert!(s["thresholds"][0].get("aborted").is_none());
}

#[test]
fn threshold_tables_are_checked_before_the_run() {
    let refused = |t: &str| load_text(&format!("thresholds = [{t}]\n")).unwrap_err();
    let e = refused("{ threshold = \"latency_us.ingest.p99 < 1\", abort = true }");
    assert!(e.starts_with("t.toml:1: unknown key `abort`"), "{e}");
    let e = refused(
        "{ threshold = \"latency_us.ingest.p99 < 1\", abort_on_fail = true, delay_abort_eval = \"soon\" }",
    );
    assert!(e.contains("invalid duration \"soon\""), "{e}");
    let e = refused("{ threshold = \"latency_us.ingest.p99 < 1\", delay_abort_eval = \"5s\" }");
    assert!(e.contains("set `abort_on_fail = true`"), "{e}");
    let e = refused("{ abort_on_fail = true }");
    assert!(e.contains("needs `threshold"), "{e}");
    let e = refused("{ threshold = \"latency_us.ingest.p99 <\", abort_on_fail = true }");
    assert!(e.contains("is not a finite number"), "{e}");
    // Figures only the audit knows cannot abort a run: the message names
    // those that can.
    for audit_only in [
        "stranded_events.total == 0",
        "invariants.CountExact.first_violation_s > 1",
        "evidence.invariants.CountExact > 1",
        "history.ops > 1",
    ] {
        let e = refused(&format!(
            "{{ threshold = \"{audit_only}\", abort_on_fail = true }}"
        ));
        assert!(
            e.contains("cannot abort the run") && e.contains("`latency_us`"),
            "{e}"
        );
        // As a plain threshold it is fine.
        load_text(&format!("thresholds = [\"{audit_only}\"]\n")).unwrap();
    }
}

#[test]
fn threshold_tables_load_and_save_as_they_were_written() {
    let s = load_text(
        "thresholds = [\"stranded_events.total == 0\", \
         { threshold = \"latency_us.ingest.p99 < 1000\", abort_on_fail = true, delay_abort_eval = \"5s\" }]\n",
    )
    .unwrap();
    let t = &s.thresholds;
    assert!(!t[0].abort_on_fail);
    assert!(t[1].abort_on_fail);
    assert_eq!(t[1].delay_abort_eval, std::time::Duration::from_secs(5));
    assert_eq!(t[1].to_string(), "latency_us.ingest.p99 < 1000");
    // The saved scenario loads again to the same thresholds.
    let again = load_text(&s.to_toml()).unwrap();
    assert_eq!(again.thresholds, s.thresholds);
    // `[[thresholds]]` is a table form too.
    let s =
        load_text("[[thresholds]]\nthreshold = \"ops.ingest.fail < 10\"\nabort_on_fail = true\n")
            .unwrap();
    assert!(s.thresholds[0].abort_on_fail);
    assert_eq!(load_text(&s.to_toml()).unwrap().thresholds, s.thresholds);
}
