//! Evidence (`checker::evidence`): what each invariant's evidence counts,
//! on hand-made histories and tables; a `holds` below its minimum becoming
//! `unknown` (never a violation); the evidence gathered while a kill or
//! lock fault was active; and a naive run under a near-constant lock that
//! cannot end "every invariant holds".

use specstorm::fault_kind::FaultKind;
use specstorm::history::{
    Completion, Entry, FaultAction, FaultEntry, Header, Invoke, OpKind, OpResult, Step,
};
use specstorm::verdict::{CheckResult, Verdict};
use specstorm::workload::groups::checker::evidence::{self, EvidenceReport};
use specstorm::workload::groups::checker::{check_all, Facts, GroupRow, Tables};
use specstorm::workload::groups::config::MinEvidence;

use crate::common::run::run_into;
use crate::common::summary;

const P: &str = "p";

fn gid(fp: &str) -> String {
    format!("g:{P}:{fp}")
}

/// A history built op by op; every op is given with its steps (in-process,
/// exact step log) or without (over HTTP).
struct Hist {
    step_log: bool,
    entries: Vec<Entry>,
    next_op: u64,
}

impl Hist {
    fn new(step_log: bool) -> Hist {
        Hist {
            step_log,
            entries: vec![Entry::Header(Header {
                workload_part: Default::default(),
                schema_version: 1,
                workload: "groups".into(),
                scenario: "test".into(),
                variant: "atomic".into(),
                seed: 0,
                started_utc: "2024-01-01T00:00:00Z".into(),
                step_log,
                counting_step: 2,
                event_step: Some(0),
                namespace: String::new(),
                ingest_steps: vec!["s1".into(), "s2".into(), "s3".into()],
                ingest_block: None,
                shard: None,
                merged: None,
            })],
            next_op: 1,
        }
    }

    fn op(
        &mut self,
        f: OpKind,
        ev: Option<&str>,
        fp: &str,
        t: u64,
        steps: &[(&str, u64, u64, u64, u64)],
        end: (bool, u64, OpResult),
    ) {
        let op = self.next_op;
        self.next_op += 1;
        self.entries.push(Entry::Invoke(Invoke {
            delivery: None,
            t,
            op,
            worker: 0,
            f,
            event_id: ev.map(str::to_owned),
            project: P.into(),
            fingerprint: fp.into(),
            group_id: gid(fp),
            attempt: None,
            intended: None,
        }));
        if self.step_log {
            for (idx, &(name, start, end, changes, rows)) in steps.iter().enumerate() {
                self.entries.push(Entry::Step(Step {
                    op,
                    idx: idx as u32,
                    step: name.into(),
                    start,
                    end: Some(end),
                    changes,
                    rows,
                    error: None,
                    error_kind: None,
                    maybe_applied: false,
                    returned: None,
                }));
            }
        }
        let (ok, at, result) = end;
        let c = Completion {
            t: at,
            op,
            worker: 0,
            f,
            result,
        };
        self.entries
            .push(if ok { Entry::Ok(c) } else { Entry::Fail(c) });
    }

    /// An ingest that counted its event: s1, s2, s3 at t+1..t+6, ok at t+7.
    fn counted(&mut self, ev: &str, fp: &str, t: u64) {
        self.op(
            OpKind::Ingest,
            Some(ev),
            fp,
            t,
            &[
                ("s1", t + 1, t + 2, 1, 0),
                ("s2", t + 3, t + 4, 1, 0),
                ("s3", t + 5, t + 6, 1, 0),
            ],
            (
                true,
                t + 7,
                OpResult {
                    accepted: Some(true),
                    ..Default::default()
                },
            ),
        );
    }

    /// A successful resolve: its update at [t+1, t+2] returned `count`.
    fn resolve_ok(&mut self, fp: &str, t: u64, count: i64) {
        self.op(
            OpKind::Resolve,
            None,
            fp,
            t,
            &[("update", t + 1, t + 2, 1, 1)],
            (
                true,
                t + 3,
                OpResult {
                    resolved: Some(true),
                    event_count: Some(count),
                    effect_step: Some(0),
                    ..Default::default()
                },
            ),
        );
    }

    /// A refused resolve whose probe at [t+3, t+4] read (resolved, count).
    fn resolve_refused(&mut self, fp: &str, t: u64, count: i64) {
        self.op(
            OpKind::Resolve,
            None,
            fp,
            t,
            &[
                ("update", t + 1, t + 2, 0, 0),
                ("probe", t + 3, t + 4, 0, 1),
            ],
            (
                false,
                t + 5,
                OpResult {
                    resolved: Some(false),
                    status: Some("resolved".into()),
                    event_count: Some(count),
                    effect_step: Some(1),
                    ..Default::default()
                },
            ),
        );
    }

    fn fault(&mut self, fault: u32, kind: FaultKind, action: FaultAction, t: u64) {
        self.entries.push(Entry::Fault(FaultEntry {
            t,
            fault,
            kind,
            action,
            op: None,
            step: None,
            forwarded: None,
            detail: None,
            dropped: None,
        }));
    }

    fn facts(&self) -> Facts {
        Facts::from_entries(self.entries.clone().into_iter().map(Ok)).expect("a valid history")
    }
}

/// Final tables: events as (id, fingerprint), groups as (fingerprint,
/// status, count), read at 1000.
fn tables(events: &[(&str, &str)], groups: &[(&str, &str, i64)]) -> Tables {
    let ev: Vec<(&str, &str, &str)> = events.iter().map(|(id, fp)| (*id, P, *fp)).collect();
    let rows = groups
        .iter()
        .map(|(fp, status, c)| GroupRow::new(&gid(fp), P, fp, status, *c))
        .collect();
    Tables::from_rows(&ev, rows, 1000)
}

fn figure(e: &EvidenceReport, invariant: &str) -> u64 {
    e.invariants[invariant]
}

/// Group f1: a counting step before any resolve, a resolve (returned 1),
/// two counting steps after it, a second resolve (returned 3); its final
/// row reads (resolved, 3). Group f2: one counted event, then a resolve
/// and a refused resolve that probed it; its final row reads (resolved, 1).
/// Every invariant holds.
fn two_groups(step_log: bool) -> (Facts, Tables) {
    let mut h = Hist::new(step_log);
    h.counted("e1", "f1", 10); // s3 at [15, 16]: before every resolve
    h.resolve_ok("f1", 20, 1); // [21, 22]
    h.counted("e2", "f1", 30); // s3 at [35, 36]: follows the resolve
    h.counted("e3", "f1", 40); // s3 at [45, 46]
    h.resolve_ok("f1", 50, 3); // [51, 52]: no step follows it
    h.counted("e4", "f2", 60);
    h.resolve_ok("f2", 70, 1);
    h.resolve_refused("f2", 80, 1);
    let t = tables(
        &[("e1", "f1"), ("e2", "f1"), ("e3", "f1"), ("e4", "f2")],
        &[("f1", "resolved", 3), ("f2", "resolved", 1)],
    );
    (h.facts(), t)
}

#[test]
fn each_invariant_counts_its_own_chances() {
    let (f, t) = two_groups(true);
    let e = evidence::gather(&f, &t);
    // Two group rows read, four acknowledged events looked up.
    assert_eq!(figure(&e, "TypeOK"), 6);
    // f1 was counted three times: twice it had a row to find already.
    assert_eq!(figure(&e, "OneGroupPerFingerprint"), 2);
    assert_eq!(figure(&e, "CountExact"), 4);
    // f1's steps after its first resolve, before its final row (read
    // resolved at 1000); e1's step came before every resolve, and f2's
    // only step before its resolve.
    assert_eq!(figure(&e, "NoMissedRegression"), 2);
    assert!(e.faults.is_empty());
}

#[test]
fn a_step_no_probe_follows_is_no_chance() {
    // The same history, but f1's final row reads regressed and nothing
    // probed it after its steps: its steps could not show a missed flip.
    let (f, _) = two_groups(true);
    let t = tables(
        &[("e1", "f1"), ("e2", "f1"), ("e3", "f1"), ("e4", "f2")],
        &[("f1", "regressed", 3), ("f2", "resolved", 1)],
    );
    assert_eq!(figure(&evidence::gather(&f, &t), "NoMissedRegression"), 0);
}

#[test]
fn without_a_step_log_acknowledged_ingests_stand_for_their_counting_steps() {
    // Over HTTP the op's interval holds its counting step: e2 and e3
    // ([30, 37] and [40, 47]) end after f1's first resolve began (20).
    let (f, t) = two_groups(false);
    let e = evidence::gather(&f, &t);
    assert_eq!(figure(&e, "NoMissedRegression"), 2);
    assert_eq!(figure(&e, "CountExact"), 4);
}

#[test]
fn pruned_event_rows_leave_typeok_the_group_rows() {
    let (f, mut t) = two_groups(true);
    t.events_pruned = true;
    assert_eq!(figure(&evidence::gather(&f, &t), "TypeOK"), 2);
}

#[test]
fn too_little_evidence_turns_holds_unknown_and_never_touches_a_violation() {
    let (f, t) = two_groups(true);
    let (mut results, _) = check_all(&f, &t);
    assert!(
        results.iter().all(|r| r.verdict == Verdict::Holds),
        "{results:?}"
    );
    let e = evidence::gather(&f, &t);
    // Enough for all but NoMissedRegression (2 of 3 needed).
    let min = MinEvidence {
        type_ok: 6,
        one_group_per_fingerprint: 2,
        count_exact: 4,
        no_missed_regression: 3,
    };
    evidence::require(&mut results, &e, &min);
    let nmr = find(&results, "NoMissedRegression");
    assert_eq!(nmr.verdict, Verdict::Unknown);
    assert_eq!(nmr.unknowns, 1);
    let why = &nmr.unknown_examples[0].explanation;
    assert!(
        why.starts_with("too little evidence: 2, minimum 3"),
        "{why}"
    );
    for name in ["TypeOK", "OneGroupPerFingerprint", "CountExact"] {
        assert_eq!(find(&results, name).verdict, Verdict::Holds, "{name}");
    }
    // A violation stands however little the evidence.
    let mut broken = vec![CheckResult::new("CountExact")];
    broken[0].violation(specstorm::verdict::Finding {
        group: None,
        event_id: None,
        msg_id: None,
        expected: "x".into(),
        found: "y".into(),
        explanation: "lost".into(),
        evidence: vec![],
    });
    let none = EvidenceReport {
        invariants: [("CountExact".to_string(), 0)].into(),
        faults: Default::default(),
    };
    evidence::require(&mut broken, &none, &MinEvidence::default());
    assert_eq!(broken[0].verdict, Verdict::Violated);
    assert_eq!(broken[0].unknowns, 0);
    // A minimum of 0 accepts a holds over nothing.
    let mut r = vec![CheckResult::new("NoMissedRegression")];
    let zero = MinEvidence {
        no_missed_regression: 0,
        ..MinEvidence::default()
    };
    let none = EvidenceReport {
        invariants: [("NoMissedRegression".to_string(), 0)].into(),
        faults: Default::default(),
    };
    evidence::require(&mut r, &none, &zero);
    assert_eq!(r[0].verdict, Verdict::Holds);
}

fn find<'a>(results: &'a [CheckResult], name: &str) -> &'a CheckResult {
    results.iter().find(|r| r.invariant == name).unwrap()
}

#[test]
fn evidence_while_a_fault_was_active_is_what_overlaps_its_windows() {
    let mut h = Hist::new(true);
    h.counted("e1", "f1", 10); // s3 [15, 16]
    h.resolve_ok("f1", 20, 1);
    // Lock fault 1 active over [33, 38] and [44, 100]: e2's step [35, 36]
    // and e3's [45, 46] overlap; kill fault 0 over [200, never stopped]:
    // nothing ran then.
    h.fault(1, FaultKind::Lock, FaultAction::Start, 33);
    h.counted("e2", "f1", 30);
    h.fault(1, FaultKind::Lock, FaultAction::Stop, 38);
    h.fault(1, FaultKind::Lock, FaultAction::Start, 44);
    h.counted("e3", "f1", 40);
    h.fault(1, FaultKind::Lock, FaultAction::Stop, 100);
    h.fault(0, FaultKind::Kill, FaultAction::Start, 200);
    let t = tables(
        &[("e1", "f1"), ("e2", "f1"), ("e3", "f1")],
        &[("f1", "resolved", 3)],
    );
    let e = evidence::gather(&h.facts(), &t);
    let lock = &e.faults["1"];
    assert_eq!((lock.kind.as_str(), lock.windows), ("lock", 2));
    assert_eq!(lock.active_s, 0.0, "61 ns, rounded to ms");
    assert_eq!(lock.invariants["CountExact"], 2);
    assert_eq!(lock.invariants["NoMissedRegression"], 2);
    // f1's earliest counting step (e1's) was outside: both are beyond it.
    assert_eq!(lock.invariants["OneGroupPerFingerprint"], 2);
    // e2's op [30, 37] and e3's [40, 47] were acknowledged during it.
    assert_eq!(lock.invariants["TypeOK"], 2);
    let kill = &e.faults["0"];
    assert_eq!((kill.kind.as_str(), kill.windows), ("kill", 1));
    assert!(kill.invariants.values().all(|&n| n == 0), "{kill:?}");
}

/// A naive variant under a lock held 99% of the time (990 µs of every
/// millisecond, as 990 ms of every second but from the first millisecond
/// on), workers' busy_timeout 1 ms, two of them (more starve the lock's
/// own connection): most ops fail. The run stops on a count of events,
/// and the scenario asks NoMissedRegression for more evidence than that:
/// its evidence counts counting steps, never more than the events counted,
/// so whatever the lock lets through in its gaps, its `holds` cannot
/// stand. The run ends 1 (the race was seen anyway) or 4, never 0, and
/// summary.json carries the evidence and what was gathered while the lock
/// was held.
#[test]
fn a_naive_run_under_a_near_constant_lock_never_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let scenario = format!(
        "variant = \"{root}/targets/sqlite/groups-naive.sql\"\n\
         [target]\nbusy_timeout = \"1ms\"\n\
         [load]\ningesters = 2\nresolvers = 1\n\
         [stop]\nevents = 2000\n\
         [keys]\nprojects = 2\nfingerprints = 20\nskew = \"hot\"\nhot_groups = 2\nhot_fraction = 0.5\n\
         [resolve]\ninterval = \"0s\"\n\
         [min_evidence]\nNoMissedRegression = 2001\n\
         [[faults]]\nkind = \"lock\"\nevery = \"1ms\"\nhold = \"990us\"\n"
    );
    let file = tmp.path().join("lock.toml");
    std::fs::write(&file, scenario).unwrap();
    let out = tmp.path().join("run");
    let o = run_into(file.to_str().unwrap(), &out, &[]);
    let s = summary(&out);
    let code = o.status.code();
    assert!(matches!(code, Some(1 | 4)), "exit {code:?}: {}", s["exit"]);
    let nmr = &s["invariants"]["NoMissedRegression"];
    assert_ne!(nmr["verdict"], "holds", "{nmr}");
    let n = s["evidence"]["invariants"]["NoMissedRegression"]
        .as_u64()
        .unwrap();
    assert!(n <= 2000, "no more chances than counted events: {n}");
    if nmr["verdict"] == "unknown" {
        let first = nmr["first"].as_str().unwrap();
        assert!(
            first.starts_with(&format!("too little evidence: {n}, minimum 2001")),
            "{first}"
        );
    }
    for name in specstorm::workload::groups::checker::GROUPS_INVARIANTS {
        assert!(
            s["evidence"]["invariants"][name].is_u64(),
            "{name}: {}",
            s["evidence"]
        );
    }
    // Each window of the lock that opened has its evidence.
    if let Some(lock) = s["evidence"]["faults"].get("0") {
        assert_eq!(lock["kind"], "lock");
        assert!(lock["windows"].as_u64().unwrap() > 0);
        assert!(lock["invariants"]["NoMissedRegression"].is_u64());
    }
}
