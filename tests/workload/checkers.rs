//! Tests of the checkers (`src/checker`) against the rules of
//! `docs/groups.md`: hand-made histories for every rule and
//! clause, then a small in-memory simulation of the system (atomic and
//! naive) whose histories the checkers must judge soundly.
//!
//! Tests marked `` show a checker that disagrees with
//! groups.md; they fail today.

use specstorm::history::{Completion, Entry, Header, Invoke, OpKind, OpResult, Step};
use specstorm::verdict::{CheckResult, Verdict};
use specstorm::workload::groups::checker::{
    check_all, count_exact, no_missed_regression, one_group, stranded, type_ok, Facts, GroupRow,
    Tables,
};
use specstorm::workload::Value;
use std::collections::{BTreeMap, HashSet};

// ---------------------------------------------------------------------------
// History builder
// ---------------------------------------------------------------------------

const P: &str = "p";
/// Default instant of the final snapshot (read_start; read_end is +1).
const READ_AT: u64 = 1000;

fn gid(fp: &str) -> String {
    format!("g:{P}:{fp}")
}

/// One step as the builder takes it.
#[derive(Clone)]
struct St {
    name: &'static str,
    start: u64,
    end: Option<u64>,
    changes: u64,
    rows: u64,
    error: Option<&'static str>,
    maybe_applied: bool,
}

/// A step that ended without error, changing `changes` rows.
fn st(name: &'static str, start: u64, end: u64, changes: u64) -> St {
    St {
        name,
        start,
        end: Some(end),
        changes,
        rows: 0,
        error: None,
        maybe_applied: false,
    }
}

/// A read step that returned one row.
fn rd(name: &'static str, start: u64, end: u64) -> St {
    St {
        rows: 1,
        ..st(name, start, end, 0)
    }
}

/// A step that started and has no recorded end.
fn open_st(name: &'static str, start: u64) -> St {
    St {
        end: None,
        ..st(name, start, start, 0)
    }
}

/// A step that failed.
fn err_st(name: &'static str, start: u64, end: u64, error: &'static str, maybe: bool) -> St {
    St {
        error: Some(error),
        maybe_applied: maybe,
        ..st(name, start, end, 0)
    }
}

/// How an op ends: completion type and time, or never.
enum End {
    Ok(u64, OpResult),
    Fail(u64, OpResult),
    Info(u64, OpResult),
    Never,
}

fn accepted(a: Option<bool>) -> OpResult {
    OpResult {
        accepted: a,
        ..Default::default()
    }
}

fn err_res(e: &str) -> OpResult {
    OpResult {
        error: Some(e.into()),
        ..Default::default()
    }
}

fn resolved_res(count: i64) -> OpResult {
    OpResult {
        resolved: Some(true),
        event_count: Some(count),
        effect_step: Some(0),
        ..Default::default()
    }
}

fn refused_res(status: Option<&str>, count: Option<i64>) -> OpResult {
    OpResult {
        resolved: Some(false),
        status: status.map(str::to_owned),
        event_count: count,
        effect_step: Some(1),
        ..Default::default()
    }
}

struct Hist {
    step_log: bool,
    entries: Vec<Entry>,
    next_op: u64,
}

impl Hist {
    fn new(step_log: bool, counting_step: u32) -> Hist {
        Hist {
            step_log,
            entries: vec![Entry::Header(Header {
                workload_part: Default::default(),
                schema_version: 3,
                workload: "groups".into(),
                scenario: "test".into(),
                variant: "atomic".into(),
                seed: 0,
                started_utc: "2024-01-01T00:00:00Z".into(),
                step_log,
                counting_step,
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

    /// Any op: invoke at `t`, the steps as given, then the completion.
    fn op(
        &mut self,
        f: OpKind,
        ev: Option<&str>,
        fp: &str,
        t: u64,
        steps: Vec<St>,
        end: End,
    ) -> u64 {
        let op = self.next_op;
        self.next_op += 1;
        self.entries.push(Entry::Invoke(Invoke {
            delivery: None,
            t,
            op,
            worker: (op % 7) as u32,
            f,
            event_id: ev.map(str::to_owned),
            project: P.into(),
            fingerprint: fp.into(),
            group_id: gid(fp),
            attempt: None,
            intended: None,
        }));
        for (idx, s) in steps.into_iter().enumerate() {
            self.entries.push(Entry::Step(Step {
                op,
                idx: idx as u32,
                step: s.name.into(),
                start: s.start,
                end: s.end,
                changes: s.changes,
                rows: s.rows,
                error: s.error.map(str::to_owned),
                error_kind: None,
                maybe_applied: s.maybe_applied,
                returned: None,
            }));
        }
        let c = |t: u64, result: OpResult| Completion {
            t,
            op,
            worker: (op % 7) as u32,
            f,
            result,
        };
        match end {
            End::Ok(t, r) => self.entries.push(Entry::Ok(c(t, r))),
            End::Fail(t, r) => self.entries.push(Entry::Fail(c(t, r))),
            End::Info(t, r) => self.entries.push(Entry::Info(c(t, r))),
            End::Never => {}
        }
        op
    }

    /// An ingest attempt with explicit steps (dropped without a step log).
    fn ingest(&mut self, ev: &str, fp: &str, t: u64, steps: Vec<St>, end: End) -> u64 {
        let steps = if self.step_log { steps } else { vec![] };
        self.op(OpKind::Ingest, Some(ev), fp, t, steps, end)
    }

    /// An atomic ingest that inserted the event, created/found the group and
    /// counted it: s1 [t+1,t+2], s2 [t+3,t+4], s3 [t+5,t+6], ok at t+7.
    fn ingest_counted(&mut self, ev: &str, fp: &str, t: u64) -> u64 {
        let steps = vec![
            st("s1", t + 1, t + 2, 1),
            st("s2", t + 3, t + 4, 1),
            st("s3", t + 5, t + 6, 1),
        ];
        self.ingest(ev, fp, t, steps, End::Ok(t + 7, accepted(Some(true))))
    }

    /// A duplicate retry: s1 changed nothing, ok accepted = false at t+3.
    fn ingest_duplicate(&mut self, ev: &str, fp: &str, t: u64) -> u64 {
        let steps = vec![st("s1", t + 1, t + 2, 0)];
        self.ingest(ev, fp, t, steps, End::Ok(t + 3, accepted(Some(false))))
    }

    /// A successful resolve: update [t+1,t+2] returning `count`, ok at t+3.
    fn resolve_ok(&mut self, fp: &str, t: u64, count: i64) -> u64 {
        let steps = if self.step_log {
            vec![St {
                rows: 1,
                ..st("update", t + 1, t + 2, 1)
            }]
        } else {
            vec![]
        };
        self.op(
            OpKind::Resolve,
            None,
            fp,
            t,
            steps,
            End::Ok(t + 3, resolved_res(count)),
        )
    }

    /// A refused resolve: update [t+1,t+2] changed nothing, probe [t+3,t+4]
    /// read (status, count), fail at t+5.
    fn resolve_refused(&mut self, fp: &str, t: u64, status: &str, count: i64) -> u64 {
        let steps = if self.step_log {
            vec![st("update", t + 1, t + 2, 0), rd("probe", t + 3, t + 4)]
        } else {
            vec![]
        };
        let r = refused_res(Some(status), Some(count));
        self.op(OpKind::Resolve, None, fp, t, steps, End::Fail(t + 5, r))
    }

    /// An indeterminate resolve invoked at t: its update started at t+1 and
    /// has no end; `info` at `end`, or never completed.
    fn resolve_info(&mut self, fp: &str, t: u64, end: Option<u64>) -> u64 {
        let steps = if self.step_log {
            vec![open_st("update", t + 1)]
        } else {
            vec![]
        };
        let end = match end {
            Some(e) => End::Info(e, err_res("timeout")),
            None => End::Never,
        };
        self.op(OpKind::Resolve, None, fp, t, steps, end)
    }

    fn facts(&self) -> Facts {
        Facts::from_entries(self.entries.clone().into_iter().map(Ok)).expect("a valid history")
    }
}

/// Final tables: events as (id, fingerprint), groups as (fingerprint,
/// status, count), all in project P, read at READ_AT.
fn tables(events: &[(&str, &str)], groups: &[(&str, &str, i64)]) -> Tables {
    let ev: Vec<(&str, &str, &str)> = events.iter().map(|(id, fp)| (*id, P, *fp)).collect();
    let rows = groups
        .iter()
        .map(|(fp, status, c)| GroupRow::new(&gid(fp), P, fp, status, *c))
        .collect();
    Tables::from_rows(&ev, rows, READ_AT)
}

fn all(h: &Hist, t: &Tables) -> (Vec<CheckResult>, stranded::Stranded) {
    check_all(&h.facts(), t)
}

fn count_exact(h: &Hist, t: &Tables) -> CheckResult {
    count_exact::check(&h.facts(), t).0
}

/// NoMissedRegression as check_all runs it (with CountExact's premise).
fn nmr(h: &Hist, t: &Tables) -> CheckResult {
    let (results, _) = all(h, t);
    let r = results[3].clone();
    assert_eq!(r.invariant, no_missed_regression::NAME);
    r
}

fn expls(r: &CheckResult) -> String {
    r.examples
        .iter()
        .chain(&r.unknown_examples)
        .map(|f| format!("{} | {} | {}", f.expected, f.found, f.explanation))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------
// TypeOK
// ---------------------------------------------------------------------------

#[test]
fn type_ok_holds() {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f2", 20);
    let t = tables(
        &[("e1", "f1"), ("e2", "f2")],
        &[("f1", "open", 1), ("f2", "regressed", 1)],
    );
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert_eq!(r.violations, 0);
}

#[test]
fn type_ok_bad_status_closed() {
    let h = Hist::new(true, 2);
    let t = tables(&[], &[("f1", "closed", 0), ("f2", "resolved", 0)]);
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    assert!(r.examples[0].found.contains("closed"), "{r:?}");
    assert_eq!(r.examples[0].group.as_ref().unwrap().id, gid("f1"));
}

#[test]
fn type_ok_null_status() {
    let h = Hist::new(true, 2);
    let mut t = tables(&[], &[("f1", "open", 0)]);
    t.groups[0].status = Value::Null;
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    assert!(r.examples[0].found.contains("null"), "{r:?}");
}

#[test]
fn type_ok_negative_count() {
    let h = Hist::new(true, 2);
    let t = tables(&[], &[("f1", "open", -1)]);
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    assert!(r.examples[0].found.contains("-1"), "{r:?}");
}

#[test]
fn type_ok_text_count() {
    let h = Hist::new(true, 2);
    let mut t = tables(&[], &[("f1", "open", 0)]);
    t.groups[0].event_count = Value::Text("3".into());
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    assert!(r.examples[0].expected.contains("integer"), "{r:?}");
    assert!(r.examples[0].found.contains("\"3\""), "{r:?}");
}

#[test]
fn type_ok_acknowledged_event_missing() {
    // Without a step log: the target answered accepted for e1 and e2, but
    // only e2 is in error_events.
    let mut h = Hist::new(false, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f1", 20);
    // An unacknowledged (info) event that is missing is no violation.
    h.ingest("e3", "f1", 30, vec![], End::Info(40, err_res("timeout")));
    let t = tables(&[("e2", "f1")], &[("f1", "open", 2)]);
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    assert_eq!(r.examples[0].event_id.as_deref(), Some("e1"));
    assert!(r.examples[0].found.contains("missing"), "{r:?}");
}

#[test]
fn type_ok_pruned_rows_leave_presence_unjudged_but_statuses_judged() {
    // The service deletes event rows itself (audit.events = "pruned"): e1,
    // acknowledged and missing, proves nothing; the verdict says so in a
    // note and never claims the clause held.
    let mut h = Hist::new(false, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f1", 20);
    let mut t = tables(&[("e2", "f1")], &[("f1", "open", 2)]);
    t.events_pruned = true;
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert!(r.notes.iter().any(|n| n.contains("not judged")), "{r:?}");
    // The other clauses still bite.
    let mut t = tables(&[("e2", "f1")], &[("f1", "closed", 2)]);
    t.events_pruned = true;
    assert_eq!(type_ok::check(&h.facts(), &t).verdict, Verdict::Violated);
}

#[test]
fn type_ok_a_row_no_op_sent() {
    // The spec's events ⊆ Events: "ghost" is in error_events, no op sent
    // it, and its group's count even agrees with the rows. Every other
    // clause holds; TypeOK alone names the row.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    let t = tables(&[("e1", "f1"), ("ghost", "f1")], &[("f1", "open", 2)]);
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!(r.violations, 1);
    assert_eq!(r.examples[0].event_id.as_deref(), Some("ghost"));
    assert!(
        r.examples[0].explanation.contains("a row no op sent"),
        "{r:?}"
    );
    // Judged where the service prunes rows: an extra row is no missing one.
    let mut pruned = t.clone();
    pruned.events_pruned = true;
    assert_eq!(type_ok::check(&h.facts(), &pruned).violations, 1);
    // A cut history may lack the op that sent it: not judged, and said so.
    let mut cut = h.facts();
    cut.completeness = specstorm::history::completeness::Completeness::Cut;
    let r = type_ok::check(&cut, &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("\"a row no op sent\" not judged")),
        "{r:?}"
    );
}

#[test]
fn type_ok_event_without_group_is_legal() {
    // e2's ingest stopped after s1: its row exists, its group does not.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest(
        "e2",
        "f2",
        20,
        vec![st("s1", 21, 22, 1)],
        End::Info(23, err_res("aborted between steps")),
    );
    let t = tables(&[("e1", "f1"), ("e2", "f2")], &[("f1", "open", 1)]);
    let r = type_ok::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert_eq!(r.violations, 0);
    // And nothing else complains either: no group, nothing counted.
    let (results, s) = all(&h, &t);
    for r in &results {
        assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    }
    assert_eq!(s.total, Some(1));
}

// ---------------------------------------------------------------------------
// OneGroupPerFingerprint
// ---------------------------------------------------------------------------

#[test]
fn one_group_holds() {
    let t = tables(&[], &[("f1", "open", 0), ("f2", "open", 0)]);
    let r = one_group::check(&t);
    assert_eq!(r.verdict, Verdict::Holds);
    assert_eq!(r.violations, 0);
}

#[test]
fn one_group_violated_by_two_rows_for_one_fingerprint() {
    let mut t = tables(&[], &[("f1", "open", 0), ("f2", "open", 0)]);
    t.groups.push(GroupRow::new("other-id", P, "f1", "open", 0));
    let r = one_group::check(&t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    let f = &r.examples[0];
    assert_eq!(f.group.as_ref().unwrap().fingerprint, "f1");
    assert!(f.found.contains("2 group rows"), "{f:?}");
    assert!(f.found.contains("other-id"), "{f:?}");
}

// ---------------------------------------------------------------------------
// CountExact
// ---------------------------------------------------------------------------

#[test]
fn count_exact_equality_holds() {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f1", 20);
    h.ingest_duplicate("e1", "f1", 30);
    h.ingest_counted("e3", "f2", 40);
    let t = tables(
        &[("e1", "f1"), ("e2", "f1"), ("e3", "f2")],
        &[("f1", "open", 2), ("f2", "open", 1)],
    );
    let r = count_exact(&h, &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert_eq!(r.violations, 0);
    assert!(r.notes.is_empty(), "no bounds needed: {r:?}");
    // Off by one either way is a violation when nothing is indeterminate.
    for c in [1, 3] {
        let t = tables(
            &[("e1", "f1"), ("e2", "f1"), ("e3", "f2")],
            &[("f1", "open", c), ("f2", "open", 1)],
        );
        assert_eq!(count_exact(&h, &t).verdict, Verdict::Violated, "count {c}");
    }
}

#[test]
fn count_exact_lost_increment() {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f1", 20);
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 1)]);
    let (r, failed) = count_exact::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    let f = &r.examples[0];
    assert_eq!(f.group.as_ref().unwrap().id, gid("f1"));
    assert!(f.explanation.contains("lost"), "{f:?}");
    assert!(f.expected.contains("= 2"), "{f:?}");
    assert!(failed.contains(&(P.to_string(), "f1".to_string())));
}

#[test]
fn count_exact_double_count() {
    // No step log: e1 answered accepted twice (a retry counted it again);
    // e2's row exists (stranded), so |A(G)| = 2 does not mask the cause.
    let mut h = Hist::new(false, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e1", "f1", 20);
    h.ingest("e2", "f1", 30, vec![], End::Fail(40, err_res("busy")));
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 2)]);
    let r = count_exact(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    let f = &r.examples[0];
    assert!(f.explanation.contains("double count"), "{f:?}");
    assert!(
        f.explanation.contains("event e1 was counted by 2 attempts"),
        "{f:?}"
    );
    assert!(
        f.evidence.iter().any(|e| e.what.contains("counted by 2")),
        "{f:?}"
    );
    // With one count it holds.
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 1)]);
    assert_eq!(count_exact(&h, &t).verdict, Verdict::Holds);
}

#[test]
fn count_exact_count_above_event_rows() {
    // Two maybes allow a count of 2, but only one event row exists.
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Info(20, err_res("timeout")));
    h.ingest("e2", "f1", 30, vec![], End::Info(40, err_res("timeout")));
    let t = tables(&[("e1", "f1")], &[("f1", "open", 2)]);
    let r = count_exact(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
    assert!(r.examples[0].expected.contains("|A(G)| = 1"), "{r:?}");
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 2)]);
    assert_eq!(count_exact(&h, &t).verdict, Verdict::Holds);
}

#[test]
fn count_exact_pruned_rows_bound_nothing_but_the_history_still_does() {
    // Two events counted, one row left after pruning: no violation of
    // count <= |A(G)|, since rows were deleted by the service itself.
    let mut h = Hist::new(false, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f1", 20);
    let mut t = tables(&[("e1", "f1")], &[("f1", "open", 2)]);
    t.events_pruned = true;
    let r = count_exact(&h, &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert!(r.notes.iter().any(|n| n.contains("history alone")), "{r:?}");
    // The history's bounds are still judged: a lost increment is caught.
    let mut t = tables(&[("e1", "f1")], &[("f1", "open", 1)]);
    t.events_pruned = true;
    assert_eq!(count_exact(&h, &t).verdict, Verdict::Violated);
    // And without pruning the same rows are a violation of count <= |A(G)|.
    let mut h2 = Hist::new(false, 2);
    h2.ingest("e1", "f1", 10, vec![], End::Info(20, err_res("timeout")));
    h2.ingest("e2", "f1", 30, vec![], End::Info(40, err_res("timeout")));
    let t = tables(&[("e1", "f1")], &[("f1", "open", 2)]);
    assert_eq!(count_exact(&h2, &t).verdict, Verdict::Violated);
    let mut t = tables(&[("e1", "f1")], &[("f1", "open", 2)]);
    t.events_pruned = true;
    assert_eq!(count_exact(&h2, &t).verdict, Verdict::Holds);
}

/// With a step log: e1 counted, e2's counting step started and has no end
/// (Maybe), e3 stranded after s1 (neither).
fn open_counting_step_history() -> Hist {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest(
        "e2",
        "f1",
        20,
        vec![st("s1", 21, 22, 1), st("s2", 23, 24, 0), open_st("s3", 25)],
        End::Info(30, err_res("crashed")),
    );
    h.ingest(
        "e3",
        "f1",
        40,
        vec![st("s1", 41, 42, 1)],
        End::Info(43, err_res("aborted between steps")),
    );
    h
}

#[test]
fn count_exact_step_log_open_counting_step_is_maybe() {
    let h = open_counting_step_history();
    let ev = [("e1", "f1"), ("e2", "f1"), ("e3", "f1")];
    for c in [1, 2] {
        let r = count_exact(&h, &tables(&ev, &[("f1", "open", c)]));
        assert_eq!(r.verdict, Verdict::Holds, "count {c}: {r:?}");
        assert!(r.notes.iter().any(|n| n.contains("bounds")), "{r:?}");
    }
    for c in [0, 3] {
        let r = count_exact(&h, &tables(&ev, &[("f1", "open", c)]));
        assert_eq!(r.verdict, Verdict::Violated, "count {c}");
        assert_eq!(r.violations, 1);
        assert!(
            r.examples[0].expected.contains("1 <= event_count <= 2"),
            "{r:?}"
        );
    }
}

#[test]
fn count_exact_no_step_log_info_is_maybe() {
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Info(20, err_res("timeout")));
    let ev = [("e1", "f1")];
    for c in [0, 1] {
        let r = count_exact(&h, &tables(&ev, &[("f1", "open", c)]));
        assert_eq!(r.verdict, Verdict::Holds, "count {c}: {r:?}");
    }
    let t = tables(&[("e1", "f1"), ("x", "f1")], &[("f1", "open", 2)]);
    let r = count_exact(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert!(
        r.examples[0].expected.contains("0 <= event_count <= 1"),
        "{r:?}"
    );
}

#[test]
fn count_exact_no_step_log_ok_without_accepted_is_maybe() {
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Ok(20, accepted(None)));
    let ev = [("e1", "f1"), ("x", "f1")];
    for c in [0, 1] {
        let r = count_exact(&h, &tables(&ev, &[("f1", "open", c)]));
        assert_eq!(r.verdict, Verdict::Holds, "count {c}: {r:?}");
    }
    let r = count_exact(&h, &tables(&ev, &[("f1", "open", 2)]));
    assert_eq!(r.verdict, Verdict::Violated);
    // And an ok with accepted = false (duplicate) is no maybe at all.
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Ok(20, accepted(Some(false))));
    let r = count_exact(&h, &tables(&ev, &[("f1", "open", 1)]));
    assert_eq!(r.verdict, Verdict::Violated);
}

#[test]
fn count_exact_never_completed_op_is_maybe() {
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Never);
    let f = h.facts();
    assert_eq!(f.unfinished, 1);
    let ev = [("e1", "f1"), ("x", "f1")];
    for c in [0, 1] {
        let r = count_exact::check(&f, &tables(&ev, &[("f1", "open", c)])).0;
        assert_eq!(r.verdict, Verdict::Holds, "count {c}: {r:?}");
    }
    let r = count_exact::check(&f, &tables(&ev, &[("f1", "open", 2)])).0;
    assert_eq!(r.verdict, Verdict::Violated);
    // With a step log, a never-completed op whose counting step started
    // (no end) is a maybe too.
    let mut h = Hist::new(true, 2);
    h.ingest(
        "e1",
        "f1",
        10,
        vec![st("s1", 11, 12, 1), st("s2", 13, 14, 1), open_st("s3", 15)],
        End::Never,
    );
    for c in [0, 1] {
        let r = count_exact(&h, &tables(&ev, &[("f1", "open", c)]));
        assert_eq!(r.verdict, Verdict::Holds, "step log, count {c}: {r:?}");
    }
}

#[test]
fn count_exact_info_then_duplicate_without_step_log_is_maybe() {
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Info(20, err_res("timeout")));
    h.ingest_duplicate("e1", "f1", 30);
    let ev = [("e1", "f1"), ("x", "f1")];
    for c in [0, 1] {
        let r = count_exact(&h, &tables(&ev, &[("f1", "open", c)]));
        assert_eq!(r.verdict, Verdict::Holds, "count {c}: {r:?}");
    }
    let r = count_exact(&h, &tables(&ev, &[("f1", "open", 2)]));
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.violations, 1);
}

#[test]
fn count_exact_info_then_duplicate_with_step_log_is_done() {
    // The first attempt's counting step applied, then the op crashed before
    // answering (info); the retry answered duplicate.
    let mut h = Hist::new(true, 2);
    h.ingest(
        "e1",
        "f1",
        10,
        vec![
            st("s1", 11, 12, 1),
            st("s2", 13, 14, 1),
            st("s3", 15, 16, 1),
        ],
        End::Info(20, err_res("crashed after s3")),
    );
    h.ingest_duplicate("e1", "f1", 30);
    let ev = [("e1", "f1"), ("x", "f1")];
    let r = count_exact(&h, &tables(&ev, &[("f1", "open", 1)]));
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    for c in [0, 2] {
        let r = count_exact(&h, &tables(&ev, &[("f1", "open", c)]));
        assert_eq!(r.verdict, Verdict::Violated, "count {c}");
        assert!(r.examples[0].expected.contains("= 1"), "{r:?}");
    }
}

#[test]
fn count_exact_negative_count_is_violated() {
    let h = Hist::new(true, 2);
    let t = tables(&[], &[("f1", "open", -1)]);
    let (r, failed) = count_exact::check(&h.facts(), &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert!(failed.contains(&(P.to_string(), "f1".to_string())));
}

// ---------------------------------------------------------------------------
// NoMissedRegression
// ---------------------------------------------------------------------------

#[test]
fn nmr_holds_when_a_resolve_returned_the_final_count() {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.resolve_ok("f1", 20, 1);
    h.resolve_refused("f1", 30, "resolved", 1);
    let t = tables(&[("e1", "f1")], &[("f1", "resolved", 1)]);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (0, 0));
    assert!(r.notes.iter().any(|n| n.starts_with("2 probes")), "{r:?}");
}

#[test]
fn nmr_count_rule_catches_the_naive_bug() {
    // Without a step log only the count rule applies: the only resolve
    // returned 1, an ingest counted after it, the final row reads
    // (resolved, 2).
    let mut h = Hist::new(false, 2);
    h.ingest_counted("e1", "f1", 10);
    let r1 = h.resolve_ok("f1", 20, 1);
    h.ingest_counted("e2", "f1", 30);
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)]);
    let (results, _) = all(&h, &t);
    assert_eq!(
        results[2].verdict,
        Verdict::Holds,
        "CountExact: {:?}",
        results[2]
    );
    let r = &results[3];
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!(r.violations, 1);
    let f = &r.examples[0];
    assert_eq!(f.group.as_ref().unwrap().id, gid("f1"));
    assert!(f.found.contains("final row"), "{f:?}");
    assert!(f.explanation.contains(&format!("op {r1}")), "{f:?}");
    assert!(f.explanation.contains("returned 1"), "{f:?}");
    assert!(f.expected.contains("event_count = 2"), "{f:?}");
    assert!(r.notes.iter().any(|n| n.contains("no step log")), "{r:?}");
}

#[test]
fn nmr_resolve_after_the_probe_explains_nothing() {
    // The refused resolve's probe (op span [40, 45], no step log) read
    // (resolved, 2); the only resolve that returned 2 started at 60, after
    // the probe ended, so it cannot explain it (it explains the final row).
    let mut h = Hist::new(false, 2);
    h.ingest_counted("e1", "f1", 10);
    h.resolve_ok("f1", 20, 1);
    h.ingest_counted("e2", "f1", 30);
    let p = h.resolve_refused("f1", 40, "resolved", 2);
    h.resolve_ok("f1", 60, 2);
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)]);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!(r.violations, 1);
    assert!(
        r.examples[0]
            .found
            .contains(&format!("refused resolve op {p}")),
        "{r:?}"
    );
}

/// Naive variant (counting step 3 = s3_write): e2 reads `open` before R1
/// resolves and writes after it: (resolved, 2), dirty. `probe` adds a
/// refused resolve that reads that; then e3 heals it to (regressed, 3).
fn healed_history(probe: bool) -> (Hist, Option<u64>) {
    let mut h = Hist::new(true, 3);
    let naive = |t: u64| {
        vec![
            st("s1", t + 1, t + 2, 1),
            st("s2", t + 3, t + 4, 1),
            rd("s3_read", t + 5, t + 6),
            st("s3_write", t + 7, t + 8, 1),
        ]
    };
    h.ingest("e1", "f1", 10, naive(10), End::Ok(19, accepted(Some(true))));
    h.ingest(
        "e2",
        "f1",
        20,
        vec![
            st("s1", 21, 22, 1),
            st("s2", 23, 24, 0),
            rd("s3_read", 25, 26),
            st("s3_write", 40, 41, 1),
        ],
        End::Ok(42, accepted(Some(true))),
    );
    h.resolve_ok("f1", 30, 1); // update at [31, 32]
    let p = probe.then(|| h.resolve_refused("f1", 50, "resolved", 2)); // probe [53, 54]
    h.ingest("e3", "f1", 60, naive(60), End::Ok(69, accepted(Some(true))));
    (h, p)
}

#[test]
fn nmr_probe_catches_a_healed_missed_regression() {
    let t = tables(
        &[("e1", "f1"), ("e2", "f1"), ("e3", "f1")],
        &[("f1", "regressed", 3)],
    );
    let (h, p) = healed_history(true);
    let (results, _) = all(&h, &t);
    assert_eq!(
        results[2].verdict,
        Verdict::Holds,
        "CountExact: {:?}",
        results[2]
    );
    let r = &results[3];
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!(r.violations, 1);
    let f = &r.examples[0];
    assert!(
        f.found
            .contains(&format!("refused resolve op {}", p.unwrap())),
        "{f:?}"
    );
    assert!(f.found.contains("(resolved, 2)"), "{f:?}");
    // Without the probe the final row shows nothing.
    let (h, _) = healed_history(false);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    // Same, judged by the count rule alone (no step log).
    let (mut h, p) = healed_history(true);
    h.step_log = false;
    if let Entry::Header(hd) = &mut h.entries[0] {
        hd.step_log = false;
    }
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!(r.violations, 1);
    let f = &r.examples[0];
    assert!(f.found.contains(&format!("op {}", p.unwrap())), "{f:?}");
    assert!(f.explanation.contains("returned 1"), "{f:?}");
}

#[test]
fn nmr_unknown_with_open_ended_indeterminate_resolve() {
    let build = |q_at: u64| {
        let mut h = Hist::new(false, 2);
        h.ingest_counted("e1", "f1", 10);
        h.resolve_ok("f1", 20, 1);
        h.ingest_counted("e2", "f1", 30);
        let q = h.resolve_info("f1", q_at, Some(q_at + 5));
        (h, q)
    };
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)]);
    // Q started before the final read ended; without a step log its window
    // is open-ended, so it may have been the last resolve.
    let (h, q) = build(60);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (0, 1));
    assert!(
        r.unknown_examples[0]
            .explanation
            .contains(&format!("[{q}]")),
        "{r:?}"
    );
    // Q invoked after the probe ended is no candidate: violated.
    let (h, _) = build(READ_AT + 10);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (1, 0));
}

/// Step log: e1 counted; R1 returns 1 (update at [21, 22]); an info
/// resolve Q invoked at 30 (if `q`) whose window closes at `q_end` (None:
/// never completed); e2's counting step at [45, 46] did not flip the group;
/// final (resolved, 2).
fn closed_window_history(q: bool, q_end: Option<u64>) -> (Hist, u64, Option<u64>) {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    let r1 = h.resolve_ok("f1", 20, 1);
    let q = q.then(|| h.resolve_info("f1", 30, q_end));
    h.ingest_counted("e2", "f1", 40);
    (h, r1, q)
}

#[test]
fn nmr_indeterminate_resolve_closed_before_counting_step_is_no_unknown() {
    // groups.md: an indeterminate resolve whose window closed before some
    // counting step of G started, that also ended before the probe started,
    // cannot be the last one: no reason for `unknown`, so the probe is
    // violated (no candidate returned 2).
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)]);
    let (h, _, _) = closed_window_history(true, Some(34));
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (1, 0));
    // Its window overlapping the counting step ([30, 50] vs [45, 46]): it
    // may have resolved after the count, so unknown (and the bookkeeping
    // rule's `unless` applies too).
    let (h, _, q) = closed_window_history(true, Some(50));
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (0, 1));
    assert!(expls(&r).contains(&format!("[{}]", q.unwrap())), "{r:?}");
    // Never completed, in-process: open-ended, unknown.
    let (h, _, _) = closed_window_history(true, None);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
}

#[test]
fn nmr_indeterminate_resolve_closed_before_a_successful_resolve_is_no_unknown() {
    // No counting step after the resolves, so the bookkeeping rule stays
    // silent and only the window rule decides. e1, e2 counted; Q's window
    // [30, 34] closed before R2's statement [41, 42], which returned a count
    // (1) that is not the count (2) the final row shows.
    let build = |q_end: u64| {
        let mut h = Hist::new(true, 2);
        h.ingest_counted("e1", "f1", 10);
        h.ingest_counted("e2", "f1", 20);
        h.resolve_info("f1", 30, Some(q_end));
        let r2 = h.resolve_ok("f1", 40, 1);
        (h, r2)
    };
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)]);
    let (h, r2) = build(34);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (1, 0));
    assert!(
        r.examples[0].explanation.contains(&format!("op {r2}")),
        "{r:?}"
    );
    assert!(!r.examples[0].explanation.contains("dirty"), "{r:?}");
    // Q's window reaching past R2's start: Q may have been the last one.
    let (h, _) = build(45);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (0, 1));
}

#[test]
fn nmr_bookkeeping_rule_reports_dirty() {
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)]);
    // No indeterminate resolve at all.
    let (h, r1, _) = closed_window_history(false, None);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!(r.violations, 1);
    let f = &r.examples[0];
    assert_eq!(f.event_id.as_deref(), Some("e2"));
    assert!(f.explanation.contains("dirty"), "{f:?}");
    assert!(f.evidence.iter().any(|e| e.op == Some(r1)), "{f:?}");
}

/// A target that lost e2's increment and its status flip: R1 returned 1,
/// e2's counting step changed the row at [45, 46], the final row reads
/// (resolved, 1). The count rule is satisfied (R1 returned 1); only the
/// bookkeeping rule sees that the group is dirty. `extra` adds resolves.
fn count_matching_history(step_log: bool, extra: impl FnOnce(&mut Hist)) -> Hist {
    let mut h = Hist::new(step_log, 2);
    h.ingest_counted("e1", "f1", 10);
    h.resolve_ok("f1", 20, 1);
    extra(&mut h);
    h.ingest_counted("e2", "f1", 40);
    h
}

#[test]
fn nmr_bookkeeping_rule_catches_what_the_count_rule_misses() {
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 1)]);
    let h = count_matching_history(true, |_| {});
    let (results, _) = all(&h, &t);
    assert_eq!(
        results[2].verdict,
        Verdict::Violated,
        "CountExact: {:?}",
        results[2]
    );
    let r = &results[3];
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!(r.violations, 1);
    assert!(r.examples[0].explanation.contains("dirty"), "{r:?}");
    assert!(r.examples[0].found.contains("(resolved, 1)"), "{r:?}");
    // The count rule alone (no step log) does not call it a violation.
    let h = count_matching_history(false, |_| {});
    let r = nmr(&h, &t);
    assert_ne!(r.verdict, Verdict::Violated, "{r:?}");
}

#[test]
fn nmr_bookkeeping_unless_a_resolve_overlaps_the_counting_step() {
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 1)]);
    // An indeterminate resolve [30, 50] that ended after S [45, 46] started.
    let h = count_matching_history(true, |h| {
        h.resolve_info("f1", 30, Some(50));
    });
    let r = nmr(&h, &t);
    // No violation; CountExact fails here (2 done, count 1), so the count
    // rule's premise failed and the verdict says so (unknown, not holds).
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!(r.violations, 0);
    assert!(
        r.unknown_examples[0].explanation.contains("CountExact"),
        "{r:?}"
    );
    // A successful one whose statement [44, 47] overlaps S.
    let h = count_matching_history(true, |h| {
        h.op(
            OpKind::Resolve,
            None,
            "f1",
            43,
            vec![St {
                rows: 1,
                ..st("update", 44, 47, 1)
            }],
            End::Ok(48, resolved_res(1)),
        );
    });
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!(r.violations, 0);
    // One that ended before S started does not excuse it.
    let h = count_matching_history(true, |h| {
        h.resolve_info("f1", 30, Some(44));
    });
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert!(r.examples[0].explanation.contains("dirty"), "{r:?}");
}

#[test]
fn nmr_premise_failed_turns_violation_into_unknown() {
    // No step log; e1, e2, e3 accepted, R1 returned 1 after e1; the final
    // row (resolved, 2) lost an increment: CountExact violated, so the
    // count rule cannot judge the probe.
    let mut h = Hist::new(false, 2);
    h.ingest_counted("e1", "f1", 10);
    h.resolve_ok("f1", 20, 1);
    h.ingest_counted("e2", "f1", 30);
    h.ingest_counted("e3", "f1", 40);
    let ev = [("e1", "f1"), ("e2", "f1"), ("e3", "f1")];
    let t = tables(&ev, &[("f1", "resolved", 2)]);
    let (results, _) = all(&h, &t);
    assert_eq!(results[2].verdict, Verdict::Violated);
    let r = &results[3];
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (0, 1));
    assert!(
        r.unknown_examples[0].explanation.contains("CountExact"),
        "{r:?}"
    );
    // With the count right (3) the same probe is a violation.
    let t = tables(&ev, &[("f1", "resolved", 3)]);
    assert_eq!(nmr(&h, &t).verdict, Verdict::Violated);
}

#[test]
fn nmr_premise_failed_is_reported_even_when_the_count_matches() {
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 1)]);
    let h = count_matching_history(false, |_| {});
    let r = nmr(&h, &t);
    let said = r.verdict != Verdict::Holds
        || r.notes
            .iter()
            .any(|n| n.contains("CountExact") || n.contains("premise"));
    assert!(said, "premise failure for g:p:f1 not reported: {r:?}");
}

#[test]
fn nmr_refused_resolve_that_read_open_is_no_probe() {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.resolve_refused("f1", 20, "open", 5);
    h.resolve_refused("f1", 30, "regressed", 7);
    let t = tables(&[("e1", "f1")], &[("f1", "open", 1)]);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (0, 0));
    assert!(r.notes.iter().any(|n| n.starts_with("0 probes")), "{r:?}");
    // The same refused resolve reading `resolved` is a probe, and with no
    // resolve at all it is a violation.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    let p = h.resolve_refused("f1", 20, "resolved", 1);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert!(r.examples[0].found.contains(&format!("op {p}")), "{r:?}");
}

// ---------------------------------------------------------------------------
// Stranded events
// ---------------------------------------------------------------------------

fn busy_history() -> (Hist, u64) {
    let mut h = Hist::new(true, 2);
    let op = h.ingest(
        "e1",
        "f1",
        10,
        vec![
            st("s1", 11, 12, 1),
            err_st("s2", 13, 14, "database is locked (SQLITE_BUSY)", false),
        ],
        End::Info(15, err_res("database is locked")),
    );
    (h, op)
}

#[test]
fn stranded_busy_at_s2() {
    let (h, op) = busy_history();
    let t = tables(&[("e1", "f1")], &[]);
    let (results, s) = all(&h, &t);
    assert_eq!(s.total, Some(1), "{s:?}");
    let (cause, n) = s.by_cause.iter().next().unwrap();
    assert!(cause.contains("busy"), "{s:?}");
    assert!(cause.contains("s2"), "{s:?}");
    assert_eq!(*n, 1);
    assert_eq!(s.examples, vec![("e1".to_string(), op)]);
    // Stranded fails no invariant.
    for r in &results {
        assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    }
}

#[test]
fn stranded_duplicate_retry_does_not_unstrand() {
    let (mut h, op) = busy_history();
    h.ingest_duplicate("e1", "f1", 20);
    h.ingest_duplicate("e1", "f1", 30);
    let t = tables(&[("e1", "f1")], &[]);
    let s = stranded::report(&h.facts(), &t);
    assert_eq!(s.total, Some(1), "{s:?}");
    assert!(s.by_cause.keys().next().unwrap().contains("busy"), "{s:?}");
    assert_eq!(s.examples, vec![("e1".to_string(), op)]);
}

#[test]
fn stranded_counted_event_is_not_stranded() {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_duplicate("e1", "f1", 20);
    let t = tables(&[("e1", "f1")], &[("f1", "open", 1)]);
    let s = stranded::report(&h.facts(), &t);
    assert_eq!(s.total, Some(0), "{s:?}");
    assert!(s.by_cause.is_empty());
}

// ---------------------------------------------------------------------------
// Soundness: a simulated system, correct (atomic) and broken (naive)
// ---------------------------------------------------------------------------

/// A deterministic LCG.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

#[derive(Clone, Debug)]
struct MGroup {
    status: &'static str,
    count: i64,
    /// The spec's `dirty`.
    dirty: bool,
}

#[derive(Clone, Debug)]
enum Spec {
    Ingest { ev: String, fp: String },
    Resolve { fp: String },
}

struct Cur {
    op: u64,
    spec: Spec,
    idx: u32,
    /// Naive: the status read by s3_read.
    read: Option<&'static str>,
}

struct Worker {
    queue: Vec<Spec>,
    cur: Option<Cur>,
    /// Latest recorded instant of this worker (its next record is later).
    free: u64,
    dead: bool,
}

struct Sim {
    naive: bool,
    step_log: bool,
    crashes: bool,
    rng: Lcg,
    entries: Vec<Entry>,
    events: BTreeMap<String, String>,
    groups: BTreeMap<String, MGroup>,
    /// Refused resolves whose probe read `resolved` while the group was dirty.
    dirty_probes: HashSet<u64>,
    indeterminate: u64,
    next_op: u64,
}

/// How a step ended in the simulation.
enum Out {
    /// Go on to the next step.
    Next,
    /// The op is over with this completion.
    Done(bool /* ok */, OpResult),
}

impl Sim {
    /// Runs step `c.idx` of the op atomically (the real instant), returns
    /// (changes, rows, outcome).
    fn effect(&mut self, c: &mut Cur) -> (u64, u64, Out) {
        let naive = self.naive;
        match c.spec.clone() {
            Spec::Ingest { ev, fp } => match c.idx {
                0 => {
                    if let std::collections::btree_map::Entry::Vacant(e) = self.events.entry(ev) {
                        e.insert(fp);
                        (1, 0, Out::Next)
                    } else {
                        (0, 0, Out::Done(true, accepted(Some(false))))
                    }
                }
                1 => {
                    if let std::collections::btree_map::Entry::Vacant(e) = self.groups.entry(fp) {
                        let g = MGroup {
                            status: "open",
                            count: 0,
                            dirty: false,
                        };
                        e.insert(g);
                        (1, 0, Out::Next)
                    } else {
                        (0, 0, Out::Next)
                    }
                }
                2 if !naive => {
                    let g = self.groups.get_mut(&fp).expect("s2 ran");
                    g.count += 1;
                    if g.status == "resolved" {
                        g.status = "regressed";
                    }
                    g.dirty = true;
                    (1, 0, Out::Done(true, accepted(Some(true))))
                }
                2 => {
                    c.read = Some(self.groups[&fp].status);
                    (0, 1, Out::Next)
                }
                _ => {
                    let g = self.groups.get_mut(&fp).expect("s2 ran");
                    g.count += 1;
                    if c.read == Some("resolved") {
                        g.status = "regressed";
                    }
                    g.dirty = true;
                    (1, 0, Out::Done(true, accepted(Some(true))))
                }
            },
            Spec::Resolve { fp } => match c.idx {
                0 => match self.groups.get_mut(&fp) {
                    Some(g) if g.status != "resolved" => {
                        g.status = "resolved";
                        g.dirty = false;
                        (1, 1, Out::Done(true, resolved_res(g.count)))
                    }
                    _ => (0, 0, Out::Next),
                },
                _ => {
                    let r = match self.groups.get(&fp).cloned() {
                        Some(g) => {
                            if g.status == "resolved" && g.dirty {
                                self.dirty_probes.insert(c.op);
                            }
                            refused_res(Some(g.status), Some(g.count))
                        }
                        None => refused_res(None, None),
                    };
                    (0, 1, Out::Done(false, r))
                }
            },
        }
    }

    fn step_name(&self, c: &Cur) -> &'static str {
        match (&c.spec, c.idx) {
            (Spec::Ingest { .. }, 0) => "s1",
            (Spec::Ingest { .. }, 1) => "s2",
            (Spec::Ingest { .. }, 2) if !self.naive => "s3",
            (Spec::Ingest { .. }, 2) => "s3_read",
            (Spec::Ingest { .. }, _) => "s3_write",
            (Spec::Resolve { .. }, 0) => "update",
            (Spec::Resolve { .. }, _) => "probe",
        }
    }

    fn push_step(&mut self, op: u64, c: &Cur, start: u64, end: Option<u64>, ch: u64, rows: u64) {
        if self.step_log {
            self.entries.push(Entry::Step(Step {
                op,
                idx: c.idx,
                step: self.step_name(c).into(),
                start,
                end,
                changes: ch,
                rows,
                error: None,
                error_kind: None,
                maybe_applied: false,
                returned: None,
            }));
        }
    }

    fn complete(&mut self, w: &mut Worker, kind: u8, t: u64, result: OpResult) {
        let c = w.cur.take().expect("an op in flight");
        let comp = Completion {
            t,
            op: c.op,
            worker: 0,
            f: match c.spec {
                Spec::Ingest { .. } => OpKind::Ingest,
                Spec::Resolve { .. } => OpKind::Resolve,
            },
            result,
        };
        self.entries.push(match kind {
            0 => Entry::Ok(comp),
            1 => Entry::Fail(comp),
            _ => Entry::Info(comp),
        });
        w.free = t;
    }

    /// One scheduling slot of worker `w` at real instant `now` (slots are
    /// 16 ns apart; recorded intervals contain `now` and may overlap).
    fn slot(&mut self, w: &mut Worker, now: u64) {
        if w.cur.is_none() {
            let spec = w.queue.remove(0);
            let op = self.next_op;
            self.next_op += 1;
            let t = w.free + 1;
            let (f, ev, fp) = match &spec {
                Spec::Ingest { ev, fp } => (OpKind::Ingest, Some(ev.clone()), fp.clone()),
                Spec::Resolve { fp } => (OpKind::Resolve, None, fp.clone()),
            };
            self.entries.push(Entry::Invoke(Invoke {
                delivery: None,
                t,
                op,
                worker: 0,
                f,
                event_id: ev,
                project: P.into(),
                group_id: gid(&fp),
                fingerprint: fp,
                attempt: None,
                intended: None,
            }));
            w.free = t;
            w.cur = Some(Cur {
                op,
                spec,
                idx: 0,
                read: None,
            });
        }
        let mut c = w.cur.take().unwrap();
        let start = w.free + 1 + self.rng.below(now - w.free);
        assert!(start <= now);
        if self.crashes && self.rng.chance(4) {
            self.indeterminate += 1;
            match self.rng.below(3) {
                0 => {
                    // Crash between steps: nothing of this step ran.
                    w.cur = Some(c);
                    self.complete(w, 2, start, err_res("aborted between steps"));
                }
                1 => {
                    // The statement started, may or may not have applied,
                    // and its end was never recorded.
                    if self.rng.chance(50) {
                        let _ = self.effect(&mut c);
                    }
                    self.push_step(c.op, &c, start, None, 0, 0);
                    w.cur = Some(c);
                    self.complete(w, 2, now + 1, err_res("crashed"));
                }
                _ => {
                    // As 1, and the op never completes: the worker is gone.
                    if self.rng.chance(50) {
                        let _ = self.effect(&mut c);
                    }
                    self.push_step(c.op, &c, start, None, 0, 0);
                    w.dead = true;
                }
            }
            return;
        }
        let (ch, rows, out) = self.effect(&mut c);
        let end = now + 1 + self.rng.below(8);
        self.push_step(c.op, &c, start, Some(end), ch, rows);
        w.free = end;
        match out {
            Out::Next => {
                c.idx += 1;
                w.cur = Some(c);
            }
            Out::Done(ok, r) => {
                w.cur = Some(c);
                self.complete(w, if ok { 0 } else { 1 }, end + 1, r);
            }
        }
    }
}

struct SimOut {
    entries: Vec<Entry>,
    tables: Tables,
    groups: BTreeMap<String, MGroup>,
    dirty_probes: HashSet<u64>,
    indeterminate: u64,
}

fn simulate(seed: u64, naive: bool, step_log: bool, crashes: bool) -> SimOut {
    let mut rng = Lcg(seed.wrapping_mul(0x9E3779B97F4A7C15) ^ 0xD1B54A32D192ED03);
    for _ in 0..3 {
        rng.next();
    }
    let fps = ["f1", "f2", "f3"];
    let n_fps = 1 + rng.below(3) as usize;
    let n_ingest = 2 + rng.below(3) as usize;
    let n_resolvers = 1 + rng.below(3) as usize;
    let n_events = 4 + rng.below(10);
    let mut workers: Vec<Worker> = Vec::new();
    for _ in 0..n_ingest + n_resolvers {
        workers.push(Worker {
            queue: Vec::new(),
            cur: None,
            free: 0,
            dead: false,
        });
    }
    for e in 0..n_events {
        let fp = fps[rng.below(n_fps as u64) as usize].to_string();
        let ev = format!("e{e}");
        let w = rng.below(n_ingest as u64) as usize;
        workers[w].queue.push(Spec::Ingest {
            ev: ev.clone(),
            fp: fp.clone(),
        });
        // A retry with the same id, on another worker.
        if rng.chance(30) {
            let w2 = rng.below(n_ingest as u64) as usize;
            workers[w2].queue.push(Spec::Ingest { ev, fp });
        }
    }
    for r in 0..n_resolvers {
        for _ in 0..2 + rng.below(5) {
            let fp = fps[rng.below(n_fps as u64) as usize].to_string();
            workers[n_ingest + r].queue.push(Spec::Resolve { fp });
        }
    }
    let mut sim = Sim {
        naive,
        step_log,
        crashes,
        rng,
        entries: vec![Entry::Header(Header {
            workload_part: Default::default(),
            schema_version: 3,
            workload: "groups".into(),
            scenario: "sim".into(),
            variant: if naive { "naive" } else { "atomic" }.into(),
            seed,
            started_utc: "2024-01-01T00:00:00Z".into(),
            step_log,
            counting_step: if naive { 3 } else { 2 },
            event_step: Some(0),
            namespace: String::new(),
            ingest_steps: vec![],
            ingest_block: None,
            shard: None,
            merged: None,
        })],
        events: BTreeMap::new(),
        groups: BTreeMap::new(),
        dirty_probes: HashSet::new(),
        indeterminate: 0,
        next_op: 1,
    };
    let mut now = 0u64;
    loop {
        let live: Vec<usize> = (0..workers.len())
            .filter(|&i| {
                !workers[i].dead && (workers[i].cur.is_some() || !workers[i].queue.is_empty())
            })
            .collect();
        if live.is_empty() {
            break;
        }
        now += 16;
        let i = live[sim.rng.below(live.len() as u64) as usize];
        let mut w = std::mem::replace(
            &mut workers[i],
            Worker {
                queue: vec![],
                cur: None,
                free: 0,
                dead: false,
            },
        );
        sim.slot(&mut w, now);
        workers[i] = w;
    }
    let ev: Vec<(&str, &str, &str)> = sim
        .events
        .iter()
        .map(|(id, fp)| (id.as_str(), P, fp.as_str()))
        .collect();
    let rows = sim
        .groups
        .iter()
        .map(|(fp, g)| GroupRow::new(&gid(fp), P, fp, g.status, g.count))
        .collect();
    let tables = Tables::from_rows(&ev, rows, now + 16);
    SimOut {
        entries: sim.entries,
        tables,
        groups: sim.groups,
        dirty_probes: sim.dirty_probes,
        indeterminate: sim.indeterminate,
    }
}

fn judge_sim(o: &SimOut) -> (Vec<CheckResult>, stranded::Stranded) {
    let facts = Facts::from_entries(o.entries.clone().into_iter().map(Ok)).expect("valid history");
    check_all(&facts, &o.tables)
}

#[test]
fn sim_atomic_is_never_violated() {
    let mut runs = 0;
    let mut probes_seen = false;
    for seed in 0..400 {
        for step_log in [true, false] {
            let o = simulate(seed, false, step_log, false);
            assert_eq!(o.indeterminate, 0);
            let (results, s) = judge_sim(&o);
            for r in &results {
                assert_eq!(
                    (r.verdict, r.violations, r.unknowns),
                    (Verdict::Holds, 0, 0),
                    "seed {seed} step_log {step_log}: {r:#?}"
                );
            }
            assert_eq!(s.total, Some(0), "seed {seed}: {s:?}");
            // The model itself never goes dirty-and-resolved.
            assert!(o.dirty_probes.is_empty());
            assert!(o
                .groups
                .values()
                .all(|g| !(g.dirty && g.status == "resolved")));
            probes_seen |= results[3].notes.iter().any(|n| !n.starts_with("0 probes"));
            runs += 1;
        }
    }
    assert_eq!(runs, 800);
    assert!(probes_seen, "the simulation never produced a probe");
}

#[test]
fn sim_atomic_with_indeterminate_ops_is_never_violated() {
    let mut unknowns = 0;
    let mut indeterminate = 0;
    for seed in 0..400 {
        for step_log in [true, false] {
            let o = simulate(seed, false, step_log, true);
            indeterminate += o.indeterminate;
            let (results, _) = judge_sim(&o);
            for r in &results {
                assert_ne!(
                    r.verdict,
                    Verdict::Violated,
                    "seed {seed} step_log {step_log}: {r:#?}"
                );
                unknowns += r.unknowns;
            }
        }
    }
    assert!(indeterminate > 100, "too few crashes: {indeterminate}");
    // Not required, but shows the crash paths reach the checkers.
    assert!(unknowns > 0);
}

#[test]
fn sim_naive_violations_are_found_and_real() {
    let mut found = 0u64;
    let mut dirty_runs = 0u64;
    for seed in 0..400 {
        for step_log in [true, false] {
            let o = simulate(seed, true, step_log, false);
            let (results, s) = judge_sim(&o);
            for r in &results[..3] {
                assert_eq!(r.verdict, Verdict::Holds, "seed {seed}: {r:#?}");
            }
            assert_eq!(s.total, Some(0));
            let r = &results[3];
            assert_eq!(r.unknowns, 0, "seed {seed}: {r:#?}");
            let final_dirty = o
                .groups
                .iter()
                .any(|(_, g)| g.dirty && g.status == "resolved");
            if final_dirty || !o.dirty_probes.is_empty() {
                dirty_runs += 1;
            }
            // Complete here too: in this simulation no resolve can return a
            // dirty probe's count, so every dirty observation is reported.
            let n_final_dirty = o
                .groups
                .values()
                .filter(|g| g.dirty && g.status == "resolved")
                .count();
            assert_eq!(
                r.violations as usize,
                o.dirty_probes.len() + n_final_dirty,
                "seed {seed} step_log {step_log}: {r:#?}"
            );
            assert_eq!(r.violations as usize, r.examples.len());
            for f in &r.examples {
                let id = &f.group.as_ref().expect("a group").id;
                let fp = id.rsplit(':').next().unwrap();
                if f.found.starts_with("the final row") {
                    let g = &o.groups[fp];
                    assert!(
                        g.dirty && g.status == "resolved",
                        "seed {seed} step_log {step_log}: final row of {id} not dirty: {g:?} {f:#?}"
                    );
                } else {
                    let rest = f
                        .found
                        .strip_prefix("refused resolve op ")
                        .unwrap_or_else(|| panic!("unexpected finding {f:#?}"));
                    let op: u64 = rest.split_whitespace().next().unwrap().parse().unwrap();
                    assert!(
                        o.dirty_probes.contains(&op),
                        "seed {seed} step_log {step_log}: probe op {op} was clean: {f:#?}"
                    );
                }
                found += 1;
            }
        }
    }
    assert!(dirty_runs > 0, "the naive simulation never went dirty");
    assert!(
        found > 0,
        "no NoMissedRegression violation in {dirty_runs} dirty runs"
    );
    eprintln!("naive: {found} violations found, {dirty_runs} runs observed dirty");
}

// ---------------------------------------------------------------------------
// Faults (the nemesis): what fault entries and crashes do to the verdicts
// ---------------------------------------------------------------------------

use specstorm::fault_kind::FaultKind;
use specstorm::history::{FaultAction, FaultEntry};

impl Hist {
    fn fault(
        &mut self,
        t: u64,
        kind: FaultKind,
        action: FaultAction,
        op: Option<u64>,
    ) -> &mut FaultEntry {
        self.entries.push(Entry::Fault(FaultEntry {
            t,
            fault: 0,
            kind,
            action,
            op,
            step: None,
            forwarded: None,
            detail: None,
            dropped: None,
        }));
        match self.entries.last_mut() {
            Some(Entry::Fault(f)) => f,
            _ => unreachable!(),
        }
    }

    fn proxied(&mut self, t: u64, op: u64, forwarded: bool, detail: &str) {
        let f = self.fault(t, FaultKind::Proxy, FaultAction::Inject, Some(op));
        f.forwarded = Some(forwarded);
        f.detail = Some(detail.into());
    }
}

fn crashed_res(step: &str) -> OpResult {
    OpResult {
        error: Some(format!("crash fault after step {step}")),
        crashed_after: Some(step.into()),
        ..Default::default()
    }
}

#[test]
fn crash_after_s1_strands_the_event_by_cause_and_breaks_nothing() {
    // Step log: e2's worker crashed after s1; its retry stopped at s1
    // (duplicate). The row is there, never counted: stranded, by "crash".
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    let op = h.ingest(
        "e2",
        "f1",
        20,
        vec![st("s1", 21, 22, 1)],
        End::Info(23, crashed_res("s1")),
    );
    h.ingest_duplicate("e2", "f1", 30);
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 1)]);
    let (results, s) = all(&h, &t);
    for r in &results {
        assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    }
    assert_eq!(s.total, Some(1), "{s:?}");
    assert_eq!(
        s.by_cause,
        BTreeMap::from([("crash after step s1".to_string(), 1)])
    );
    assert_eq!(s.examples, vec![("e2".to_string(), op)]);
    // A count of 2 would be a double count or a count from nowhere: the
    // step log says e2 was never counted (no Maybe), so CountExact fails.
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 2)]);
    assert_eq!(count_exact(&h, &t).verdict, Verdict::Violated);
}

#[test]
fn crash_after_the_counting_step_is_done_and_not_stranded() {
    let mut h = Hist::new(true, 2);
    h.ingest(
        "e1",
        "f1",
        10,
        vec![
            st("s1", 11, 12, 1),
            st("s2", 13, 14, 1),
            st("s3", 15, 16, 1),
        ],
        End::Info(17, crashed_res("s3")),
    );
    let t = tables(&[("e1", "f1")], &[("f1", "open", 1)]);
    let (results, s) = all(&h, &t);
    for r in &results {
        assert_eq!(r.verdict, Verdict::Holds, "{r:?}");
    }
    assert_eq!(s.total, Some(0), "{s:?}");
    // And it is Done, not Maybe: a count of 0 is a lost increment.
    let t = tables(&[("e1", "f1")], &[("f1", "open", 0)]);
    assert_eq!(count_exact(&h, &t).verdict, Verdict::Violated);
}

/// e1, e2 counted; R returned 1 after e1; `q` is an indeterminate resolve
/// (made by `make_q`); the final row is (resolved, 2): only Q can explain it.
fn q_history(step_log: bool, make_q: impl FnOnce(&mut Hist) -> u64) -> (Hist, u64) {
    let mut h = Hist::new(step_log, 2);
    h.ingest_counted("e1", "f1", 10);
    h.resolve_ok("f1", 20, 1);
    h.ingest_counted("e2", "f1", 30);
    let q = make_q(&mut h);
    (h, q)
}

fn final_resolved_2() -> Tables {
    tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)])
}

#[test]
fn step_log_resolve_crashed_before_its_update_is_no_unknown() {
    // A crash after the (refused, 0-change) update: the log says the op
    // changed nothing, so it explains nothing: violated, not unknown.
    let (h, _) = q_history(true, |h| {
        h.op(
            OpKind::Resolve,
            None,
            "f1",
            50,
            vec![st("update", 51, 52, 0)],
            End::Info(53, crashed_res("update")),
        )
    });
    let r = nmr(&h, &final_resolved_2());
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (1, 0));
}

#[test]
fn step_log_resolve_crashed_after_its_update_applied_is_unknown() {
    // The update applied (1 row) and the worker died before answering: it
    // may be the resolve that returned 2, so unknown, never violated.
    let (h, q) = q_history(true, |h| {
        h.op(
            OpKind::Resolve,
            None,
            "f1",
            50,
            vec![St {
                rows: 1,
                ..st("update", 51, 52, 1)
            }],
            End::Info(53, crashed_res("update")),
        )
    });
    let r = nmr(&h, &final_resolved_2());
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (0, 1));
    assert!(expls(&r).contains(&format!("[{q}]")), "{r:?}");
}

#[test]
fn busy_resolve_that_changed_nothing_is_no_unknown() {
    // Lock pressure: the update failed with SQLITE_BUSY (nothing applied).
    let (h, _) = q_history(true, |h| {
        h.op(
            OpKind::Resolve,
            None,
            "f1",
            50,
            vec![err_st("update", 51, 52, "database is locked", false)],
            End::Fail(53, err_res("step update: database is locked")),
        )
    });
    let r = nmr(&h, &final_resolved_2());
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
}

/// Without a step log: Q is an `info` resolve invoked at 50, seen to end at 55.
fn remote_q(extra: impl FnOnce(&mut Hist, u64)) -> Hist {
    let (mut h, q) = q_history(false, |h| h.resolve_info("f1", 50, Some(55)));
    extra(&mut h, q);
    h
}

#[test]
fn remote_info_resolve_is_open_ended_unknown_without_fault_entries() {
    let h = remote_q(|_, _| {});
    let r = nmr(&h, &final_resolved_2());
    assert_eq!(r.verdict, Verdict::Unknown, "{r:?}");
}

#[test]
fn proxy_reset_before_forwarding_means_no_effect() {
    // The proxy never forwarded Q: it explains nothing, so violated.
    let h = remote_q(|h, q| h.proxied(52, q, false, "reset"));
    let r = nmr(&h, &final_resolved_2());
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    assert_eq!((r.violations, r.unknowns), (1, 0));
}

#[test]
fn proxy_drop_response_closes_the_window_at_the_drop() {
    // The server answered Q before the proxy dropped the answer at 53; a
    // successful resolve R2 [61, 63] that returned 1 came after: Q cannot
    // be the last one, so the probe is violated, not unknown.
    let h = remote_q(|h, q| {
        h.proxied(53, q, true, "drop_response (upstream 200)");
        h.resolve_ok("f1", 60, 1);
    });
    let r = nmr(&h, &final_resolved_2());
    assert_eq!(r.verdict, Verdict::Violated, "{r:?}");
    // The same with the drop recorded after R2 began: Q may be last.
    let h = remote_q(|h, q| {
        h.proxied(62, q, true, "drop_response (upstream 200)");
        h.resolve_ok("f1", 60, 1);
    });
    assert_eq!(nmr(&h, &final_resolved_2()).verdict, Verdict::Unknown);
}

#[test]
fn proxy_latency_note_narrows_nothing() {
    // A delayed request is recorded before it is forwarded: no narrowing.
    let h = remote_q(|h, q| {
        h.proxied(51, q, true, "latency 5ms");
        h.resolve_ok("f1", 60, 1);
    });
    assert_eq!(nmr(&h, &final_resolved_2()).verdict, Verdict::Unknown);
}

#[test]
fn kill_closes_the_windows_of_the_killed_process() {
    // Q invoked at 50, server killed at 52 (gone), Q seen failing at 55,
    // restart begins at 58; R2 [61, 63] returned 1 after: violated.
    let h = remote_q(|h, _| {
        h.fault(52, FaultKind::Kill, FaultAction::Start, None);
        h.fault(58, FaultKind::Kill, FaultAction::Stop, None);
        h.resolve_ok("f1", 60, 1);
    });
    assert_eq!(nmr(&h, &final_resolved_2()).verdict, Verdict::Violated);
    // Q ended after the restart began: it may have reached the new server.
    let h = remote_q(|h, _| {
        h.fault(52, FaultKind::Kill, FaultAction::Start, None);
        h.fault(54, FaultKind::Kill, FaultAction::Stop, None);
        h.resolve_ok("f1", 60, 1);
    });
    assert_eq!(nmr(&h, &final_resolved_2()).verdict, Verdict::Unknown);
    // Q invoked while the server was down and ended before the restart:
    // it reached no server at all.
    let h = remote_q(|h, _| {
        h.fault(45, FaultKind::Kill, FaultAction::Start, None);
        h.fault(58, FaultKind::Kill, FaultAction::Stop, None);
    });
    assert_eq!(nmr(&h, &final_resolved_2()).verdict, Verdict::Violated);
}

#[test]
fn proxy_reset_ingest_is_no_maybe() {
    // Without a step log an `info` ingest is Maybe; one the proxy never
    // forwarded is not, so a count that needs it is violated.
    let build = |reset: bool| {
        let mut h = Hist::new(false, 2);
        h.ingest_counted("e1", "f1", 10);
        let op = h.ingest("e2", "f1", 20, vec![], End::Info(30, err_res("reset")));
        if reset {
            h.proxied(25, op, false, "reset");
        }
        h
    };
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 2)]);
    assert_eq!(count_exact(&build(false), &t).verdict, Verdict::Holds);
    assert_eq!(count_exact(&build(true), &t).verdict, Verdict::Violated);
    // Either way a count of 1 holds (e2 may or may not have counted).
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 1)]);
    assert_eq!(count_exact(&build(false), &t).verdict, Verdict::Holds);
}

#[test]
fn step_log_resolve_crashed_after_its_update_keeps_the_returned_count() {
    // In-process, the step log holds what the resolving statement returned
    // even though the worker died before answering: it explains the probe.
    let build = |count: i64| {
        q_history(true, |h| {
            h.op(
                OpKind::Resolve,
                None,
                "f1",
                50,
                vec![St {
                    rows: 1,
                    ..st("update", 51, 52, 1)
                }],
                End::Info(
                    53,
                    OpResult {
                        crashed_after: Some("update".into()),
                        ..resolved_res(count)
                    },
                ),
            )
        })
        .0
    };
    assert_eq!(nmr(&build(2), &final_resolved_2()).verdict, Verdict::Holds);
    // Had it returned 1, nothing explains the (resolved, 2) row: violated.
    assert_eq!(
        nmr(&build(1), &final_resolved_2()).verdict,
        Verdict::Violated
    );
}

// ---------------------------------------------------------------------------
// Keyed by (project, fingerprint); duplicate answers; event-insert step;
// figures and words
// ---------------------------------------------------------------------------

impl Hist {
    /// A history whose header names the ingest steps, the event-insert
    /// step (None: not named) and the history's schema version.
    fn with_header(
        step_log: bool,
        counting: u32,
        steps: &[&str],
        event_step: Option<u32>,
        schema_version: u32,
    ) -> Hist {
        let mut h = Hist::new(step_log, counting);
        if let Entry::Header(hd) = &mut h.entries[0] {
            hd.ingest_steps = steps.iter().map(|s| s.to_string()).collect();
            hd.event_step = event_step;
            hd.schema_version = schema_version;
            hd.variant = "groups-naive".into();
        }
        h
    }
}

fn type_ok(h: &Hist, t: &Tables) -> CheckResult {
    type_ok::check(&h.facts(), t)
}

/// A first attempt (op 1) that answered duplicate, decided by s1 at 14.
fn lone_duplicate(step_log: bool) -> Hist {
    let mut h = Hist::new(step_log, 2);
    h.ingest_duplicate_at("e1", "f1", 10, 12, 14);
    h
}

impl Hist {
    /// A duplicate answer: s1 [s, e] changed nothing; ok accepted = false at e + 1.
    fn ingest_duplicate_at(&mut self, ev: &str, fp: &str, t: u64, s: u64, e: u64) -> u64 {
        let steps = vec![st("s1", s, e, 0)];
        self.ingest(ev, fp, t, steps, End::Ok(e + 1, accepted(Some(false))))
    }
}

#[test]
fn duplicate_explained_when_attempt_1_inserts_before_attempt_0() {
    for step_log in [true, false] {
        // Attempt 0 (invoked first) reached s1 only after attempt 1 (a
        // retry sent soon, from another worker) had inserted the row.
        // Attempt 0 is written first; attempt 1 completes later.
        let mut h = Hist::new(step_log, 2);
        h.ingest_duplicate_at("e1", "f1", 10, 40, 41);
        h.ingest_counted("e1", "f1", 20);
        let t = tables(&[("e1", "f1")], &[("f1", "open", 1)]);
        let (results, s) = all(&h, &t);
        for r in &results {
            assert_eq!(r.verdict, Verdict::Holds, "step_log {step_log}: {r:#?}");
        }
        assert_eq!(s.total, Some(0));
        // Written the other way round (the explaining op completes and is
        // written after the duplicate, though it was invoked before): the
        // same verdict, judged once the whole history is read.
        let mut h = Hist::new(step_log, 2);
        h.ingest_duplicate_at("e1", "f1", 10, 12, 14);
        h.ingest(
            "e1",
            "f1",
            5,
            vec![st("s1", 6, 7, 1), st("s2", 8, 9, 1), st("s3", 25, 26, 1)],
            End::Ok(30, accepted(Some(true))),
        );
        let (results, _) = all(&h, &t);
        assert_eq!(results[0].verdict, Verdict::Holds, "{:#?}", results[0]);
    }
}

#[test]
fn first_ever_duplicate_with_no_other_attempt_is_violated() {
    for step_log in [true, false] {
        let h = lone_duplicate(step_log);
        let t = tables(&[], &[]);
        let r = type_ok(&h, &t);
        assert_eq!(r.verdict, Verdict::Violated, "step_log {step_log}: {r:#?}");
        // Unexplained at its deciding point, and missing from the table.
        assert_eq!(r.violations, 2);
        assert!(
            r.examples[1]
                .explanation
                .starts_with("answered duplicate but never stored"),
            "{r:#?}"
        );
        let f = &r.examples[0];
        assert_eq!(f.event_id.as_deref(), Some("e1"));
        assert!(
            f.found.starts_with("unexplained duplicate: ingest op 1"),
            "{f:#?}"
        );
        assert!(
            f.explanation.contains("dropped while the client was told"),
            "{f:#?}"
        );
        if step_log {
            assert!(f.found.contains("its step s1"), "{f:#?}");
        }
        // Visible at the deciding point: the end of s1 (14), or the
        // answer's arrival (15) without a step log.
        let at = if step_log { 14 } else { 15 };
        assert_eq!(r.first_violation_ns, Some(at), "{r:#?}");
    }
}

#[test]
fn an_ok_that_does_not_say_is_no_duplicate() {
    let mut h = Hist::new(false, 2);
    h.ingest(
        "e1",
        "f1",
        10,
        vec![],
        End::Ok(
            15,
            OpResult {
                ambiguous: Some("the answer does not say accepted or duplicate".into()),
                ..Default::default()
            },
        ),
    );
    let t = tables(&[("e1", "f1")], &[("f1", "open", 1)]);
    assert_eq!(type_ok(&h, &t).verdict, Verdict::Holds);
}

#[test]
fn duplicate_whose_only_other_attempt_failed_is_violated() {
    // Remote: the other attempt failed (certainly no effect).
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 5, vec![], End::Fail(8, err_res("refused")));
    h.ingest_duplicate_at("e1", "f1", 10, 12, 14);
    let t = tables(&[], &[]);
    let r = type_ok(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    let f = &r.examples[0];
    assert!(
        f.evidence
            .iter()
            .any(|e| e.op == Some(1) && e.what.contains("failed (certainly no effect)")),
        "{f:#?}"
    );
    // In-process: the other attempt's event insert was busy (no effect).
    let mut h = Hist::new(true, 2);
    h.ingest(
        "e1",
        "f1",
        5,
        vec![err_st("s1", 6, 7, "database is locked", false)],
        End::Fail(8, err_res("busy")),
    );
    h.ingest_duplicate_at("e1", "f1", 10, 12, 14);
    let r = type_ok(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert!(
        r.examples[0]
            .evidence
            .iter()
            .any(|e| e.what.contains("none of its steps changed a row")),
        "{r:#?}"
    );
    // A failed step that may have applied explains it.
    let mut h = Hist::new(true, 2);
    h.ingest(
        "e1",
        "f1",
        5,
        vec![err_st("s1", 6, 7, "disk I/O error", true)],
        End::Info(8, err_res("io")),
    );
    h.ingest_duplicate_at("e1", "f1", 10, 12, 14);
    assert_eq!(type_ok(&h, &t).verdict, Verdict::Holds);
}

#[test]
fn duplicate_explained_only_by_attempts_that_may_have_had_an_effect() {
    let t = tables(&[("e1", "f1")], &[]);
    let build = |fault: &dyn Fn(&mut Hist, u64)| {
        let mut h = Hist::new(false, 2);
        let a = h.ingest("e1", "f1", 5, vec![], End::Info(9, err_res("timeout")));
        fault(&mut h, a);
        h.ingest_duplicate_at("e1", "f1", 10, 12, 14);
        h
    };
    // An indeterminate attempt invoked before may have stored the row.
    assert_eq!(type_ok(&build(&|_, _| {}), &t).verdict, Verdict::Holds);
    // Not if the fault proxy never forwarded it...
    let h = build(&|h, a| h.proxied(6, a, false, "reset"));
    let r = type_ok(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert!(
        r.examples[0]
            .evidence
            .iter()
            .any(|e| e.what.contains("never forwarded")),
        "{r:#?}"
    );
    // ...nor if it was sent while the server was killed and ended before
    // the restart.
    let h = build(&|h, _| {
        h.fault(4, FaultKind::Kill, FaultAction::Start, None);
        h.fault(10, FaultKind::Kill, FaultAction::Stop, None);
    });
    let r = type_ok(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert!(
        r.examples[0]
            .evidence
            .iter()
            .any(|e| e.what.contains("killed")),
        "{r:#?}"
    );
    // An attempt invoked after the duplicate's answer explains nothing.
    let mut h = Hist::new(false, 2);
    h.ingest_duplicate_at("e1", "f1", 10, 12, 14);
    h.ingest_counted("e1", "f1", 20);
    let r = type_ok(&h, &tables(&[("e1", "f1")], &[("f1", "open", 1)]));
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert!(
        r.examples[0].explanation.contains("1 later attempt(s)"),
        "{r:#?}"
    );
}

#[test]
fn insert_ignored_by_its_own_op_is_violated() {
    // s1 inserted the row, then a stop condition on a stale value (s2's
    // changes = 0: the group existed) answered duplicate: never counted.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e0", "f1", 1);
    let op = h.ingest(
        "e1",
        "f1",
        10,
        vec![st("s1", 11, 12, 1), st("s2", 13, 14, 0)],
        End::Ok(15, accepted(Some(false))),
    );
    // Its retry stops at s1: explained by op's own insert.
    h.ingest_duplicate_at("e1", "f1", 20, 21, 22);
    let t = tables(&[("e0", "f1"), ("e1", "f1")], &[("f1", "open", 1)]);
    let (results, s) = all(&h, &t);
    let r = &results[0];
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert_eq!(r.violations, 1, "{r:#?}");
    let f = &r.examples[0];
    assert!(
        f.found
            .starts_with(&format!("insert ignored by its own op: ingest op {op}")),
        "{f:#?}"
    );
    assert!(f.found.contains("its step s2"), "{f:#?}");
    assert_eq!(r.first_violation_ns, Some(14));
    // The other invariants hold; the row is also reported stranded.
    for r in &results[1..] {
        assert_eq!(r.verdict, Verdict::Holds, "{r:#?}");
    }
    assert_eq!(s.total, Some(1), "{s:?}");
    // A crash fault's abandoned op is no such answer (it ends info), and
    // an op that counted after its insert is fine.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e0", "f1", 1);
    let t = tables(&[("e0", "f1")], &[("f1", "open", 1)]);
    assert_eq!(type_ok(&h, &t).verdict, Verdict::Holds);
}

#[test]
fn insert_ignored_is_not_judged_without_the_event_step() {
    // The header names no event-insert step: the same history's lone
    // duplicate is still unexplained (no other attempt at all), but the
    // second rule is not named, and a note says why.
    let mut h = Hist::with_header(true, 2, &["s1", "s2", "s3"], None, 3);
    h.ingest(
        "e1",
        "f1",
        10,
        vec![st("s1", 11, 12, 1), st("s2", 13, 14, 0)],
        End::Ok(15, accepted(Some(false))),
    );
    let t = tables(&[("e1", "f1")], &[]);
    let r = type_ok(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert!(
        r.examples[0].found.starts_with("unexplained duplicate"),
        "{r:#?}"
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("\"insert ignored by its own op\" not judged")),
        "{r:#?}"
    );
}

/// A design that inserts the group row first: step 0 `g` (group), step 1
/// `ev` (event), step 2 `count` (counting). e2's event insert applied,
/// then its counting step was busy: stranded.
fn group_first(event_step: Option<u32>, schema: u32) -> Hist {
    let mut h = Hist::with_header(true, 2, &["g", "ev", "count"], event_step, schema);
    h.ingest(
        "e1",
        "f1",
        10,
        vec![
            st("g", 11, 12, 1),
            st("ev", 13, 14, 1),
            st("count", 15, 16, 1),
        ],
        End::Ok(17, accepted(Some(true))),
    );
    h.ingest(
        "e2",
        "f1",
        20,
        vec![
            st("g", 21, 22, 0),
            st("ev", 23, 24, 1),
            err_st("count", 25, 26, "database is locked", false),
        ],
        End::Info(27, err_res("busy")),
    );
    h
}

#[test]
fn event_insert_at_step_1_is_stranded() {
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 1)]);
    let (results, s) = all(&group_first(Some(1), 3), &t);
    assert_eq!(s.total, Some(1), "{s:?}");
    assert_eq!(s.by_cause.get("busy at step count"), Some(&1), "{s:?}");
    assert_eq!(s.examples, vec![("e2".to_string(), 2)]);
    assert!(s.notes.is_empty(), "{s:?}");
    for r in &results {
        assert_eq!(r.verdict, Verdict::Holds, "{r:#?}");
    }
    // This version's history naming no event-insert step: cannot tell
    // (no total, so a threshold on it cannot pass), never 0.
    let (_, s) = all(&group_first(None, 3), &t);
    assert_eq!(s.total, None, "{s:?}");
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("does not name the ingest step")),
        "{s:?}"
    );
    let json = serde_json::to_value(&s).unwrap();
    assert!(json["total"].is_null(), "{json}");
    // An older history (no such field): step 0 is taken for it, as its
    // writer did, and a note says so.
    let (_, s) = all(&group_first(None, 2), &t);
    assert_eq!(s.total, Some(0), "{s:?}");
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("step 0 (g) is taken to be it")),
        "{s:?}"
    );
}

/// A design with its own group ids: the exported rows say `grp-p:f1`
/// where the bench sent `g:p:f1`.
fn own_id_tables(status: &str, count: i64) -> Tables {
    Tables::from_rows(
        &[("e1", P, "f1"), ("e2", P, "f1")],
        vec![GroupRow::new("grp-p:f1", P, "f1", status, count)],
        READ_AT,
    )
}

#[test]
fn own_id_design_holds() {
    for step_log in [true, false] {
        let mut h = Hist::new(step_log, 2);
        h.ingest_counted("e1", "f1", 10);
        h.resolve_ok("f1", 20, 1);
        h.ingest_counted("e2", "f1", 30);
        h.resolve_ok("f1", 40, 2);
        h.resolve_refused("f1", 50, "resolved", 2);
        let t = own_id_tables("resolved", 2);
        let (results, _) = all(&h, &t);
        for r in &results {
            assert_eq!(
                (r.verdict, r.violations, r.unknowns),
                (Verdict::Holds, 0, 0),
                "step_log {step_log}: {r:#?}"
            );
        }
        // Keyed the same way, a real missed regression is still found,
        // and shown by the exported id.
        let mut h = Hist::new(step_log, 2);
        h.ingest_counted("e1", "f1", 10);
        h.resolve_ok("f1", 20, 1);
        h.ingest_counted("e2", "f1", 30);
        let r = nmr(&h, &own_id_tables("resolved", 2));
        assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
        assert_eq!(r.examples[0].group.as_ref().unwrap().id, "grp-p:f1");
    }
}

#[test]
fn two_rows_for_one_key_leave_count_and_regression_unjudged() {
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    let t = Tables::from_rows(
        &[("e1", P, "f1")],
        vec![
            GroupRow::new("a", P, "f1", "resolved", 1),
            GroupRow::new("b", P, "f1", "open", 0),
        ],
        READ_AT,
    );
    let (results, _) = all(&h, &t);
    let v: Vec<Verdict> = results.iter().map(|r| r.verdict).collect();
    assert_eq!(
        v,
        [
            Verdict::Holds,
            Verdict::Violated,
            Verdict::Unknown,
            Verdict::Unknown
        ],
        "{results:#?}"
    );
    for r in &results[2..] {
        assert!(
            r.unknown_examples[0].explanation.starts_with("undecided")
                && r.unknown_examples[0]
                    .explanation
                    .contains("OneGroupPerFingerprint does not hold"),
            "{r:#?}"
        );
    }
}

#[test]
fn count_exact_first_violation_at_the_snapshot_time() {
    // Two events counted, the final row says 1: visible at the read.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f1", 20);
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 1)]);
    let r = count_exact(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated);
    assert_eq!(r.first_violation_ns, Some(READ_AT), "{r:#?}");
    let f = &r.examples[0];
    assert!(f.explanation.starts_with("a lost increment"), "{f:#?}");
    // And so in the summary (s, ms precision).
    let mut late = t.clone();
    late.read_start = 2_500_000_000;
    let summary = specstorm::report::summary::invariants(&[count_exact(&h, &late)]);
    assert_eq!(summary["CountExact"].first_violation_s, Some(2.5));
    // A refused resolve's probe read 0 at [53, 54], after both counting
    // steps had ended: visible at the probe.
    h.resolve_refused("f1", 50, "open", 0);
    let r = count_exact(&h, &t);
    assert_eq!(r.violations, 1, "{r:#?}");
    assert_eq!(r.first_violation_ns, Some(53), "{r:#?}");
    assert!(
        r.examples[0]
            .found
            .contains("op 3's probe read event_count = 0"),
        "{r:#?}"
    );
    // A probe that read 2 before e2's counting step started ran ahead.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.resolve_refused("f1", 18, "open", 2);
    h.ingest_counted("e2", "f1", 30);
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 2)]);
    let r = count_exact(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert_eq!(r.first_violation_ns, Some(21), "{r:#?}");
    assert!(
        r.examples[0].explanation.starts_with("a double count"),
        "{r:#?}"
    );
    // The same probe after e2's counting step began holds.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "f1", 10);
    h.ingest_counted("e2", "f1", 30);
    h.resolve_refused("f1", 40, "open", 2);
    assert_eq!(count_exact(&h, &t).verdict, Verdict::Holds);
}

#[test]
fn the_example_violation_is_the_earliest_by_time() {
    // Group a (first by id) is seen violated only in the final snapshot;
    // group b by a probe at 103: b's is the example.
    let mut h = Hist::new(true, 2);
    h.ingest_counted("e1", "a", 10);
    h.ingest_counted("e2", "b", 20);
    h.resolve_refused("b", 100, "resolved", 1);
    let t = tables(
        &[("e1", "a"), ("e2", "b")],
        &[("a", "resolved", 1), ("b", "regressed", 1)],
    );
    let r = nmr(&h, &t);
    assert_eq!(r.violations, 2, "{r:#?}");
    assert_eq!(r.examples[0].group.as_ref().unwrap().fingerprint, "b");
    assert_eq!(r.first_violation_ns, Some(103));
    let s = specstorm::report::summary::invariants(&[r.clone()]);
    assert_eq!(
        s["NoMissedRegression"].first.as_deref(),
        Some(r.examples[0].explanation.as_str())
    );
}

#[test]
fn naive_explanation_names_the_stale_read_and_the_explorer() {
    let mut h = Hist::with_header(true, 3, &["s1", "s2", "s3_read", "s3_write"], Some(0), 3);
    let counted = |h: &mut Hist, ev: &str, t: u64, read: (u64, u64), write: (u64, u64)| {
        h.ingest(
            ev,
            "f1",
            t,
            vec![
                st("s1", t + 1, t + 2, 1),
                st("s2", t + 3, t + 4, 1),
                rd("s3_read", read.0, read.1),
                st("s3_write", write.0, write.1, 1),
            ],
            End::Ok(write.1 + 1, accepted(Some(true))),
        )
    };
    counted(&mut h, "e1", 10, (15, 16), (17, 18));
    // e2 read the group (open) at [35, 36]; the resolve [41, 42] returned
    // 1; e2's write [45, 46] kept `resolved`.
    let e2 = counted(&mut h, "e2", 30, (35, 36), (45, 46));
    let m = h.resolve_ok("f1", 40, 1);
    let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "resolved", 2)]);
    let r = nmr(&h, &t);
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    let x = &r.examples[0].explanation;
    assert!(
        x.contains(&format!(
            "Op {e2}'s step s3_read at [0.000000s, 0.000000s] read the group before resolve op {m}"
        )),
        "{x}"
    );
    assert!(x.contains("its counting write s3_write at"), "{x}");
    assert!(x.contains("kept `resolved`"), "{x}");
    assert!(
        x.contains("run `specstorm explore --set variant=groups-naive`"),
        "{x}"
    );
}

#[test]
fn unknown_findings_say_what_is_undecided_and_which_op() {
    let (h, q) = q_history(false, |h| h.resolve_info("f1", 50, Some(55)));
    let r = nmr(&h, &final_resolved_2());
    assert_eq!(r.verdict, Verdict::Unknown, "{r:#?}");
    let x = &r.unknown_examples[0].explanation;
    assert!(
        x.starts_with("undecided: whether a resolve returned 2"),
        "{x}"
    );
    assert!(
        x.contains(&format!("indeterminate resolve op(s) [{q}]")),
        "{x}"
    );
    assert!(!x.contains("missed resolved->regressed"), "{x}");
}

/// Two attempts of one event answered duplicate at overlapping instants
/// over HTTP: each may explain the other's answer, but a duplicate answer
/// says the row is there and rows are never deleted, so a missing row is
/// a violation when every attempt ended ok or fail.
#[test]
fn overlapping_duplicates_of_an_event_never_stored_are_violated() {
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Ok(20, accepted(Some(false))));
    h.ingest("e1", "f1", 11, vec![], End::Ok(21, accepted(Some(false))));
    let r = type_ok(&h, &tables(&[], &[]));
    assert_eq!(r.verdict, Verdict::Violated, "{r:#?}");
    assert_eq!(r.violations, 1, "{r:#?}");
    assert!(
        r.examples[0]
            .explanation
            .starts_with("answered duplicate but never stored"),
        "{r:#?}"
    );
    // Stored: the overlapping answers explain each other.
    let r = type_ok(&h, &tables(&[("e1", "f1")], &[]));
    assert_eq!(r.verdict, Verdict::Holds, "{r:#?}");
}

/// After an attempt that may have stopped between its steps (a crash, a
/// lost answer), a duplicate answer for an event never stored may be the
/// design's stranding, not a lie: it is counted in the stranded report,
/// not judged a violation.
#[test]
fn a_duplicate_never_stored_after_an_indeterminate_attempt_is_stranded() {
    let mut h = Hist::new(false, 2);
    h.ingest("e1", "f1", 10, vec![], End::Info(20, err_res("timeout")));
    h.ingest("e1", "f1", 30, vec![], End::Ok(40, accepted(Some(false))));
    let t = tables(&[], &[]);
    let (results, stranded) = all(&h, &t);
    let r = results.iter().find(|r| r.invariant == "TypeOK").unwrap();
    assert_eq!(r.verdict, Verdict::Holds, "{r:#?}");
    assert_eq!(stranded.total, Some(1), "{stranded:#?}");
    assert_eq!(
        stranded.by_cause.keys().collect::<Vec<_>>(),
        ["answered duplicate but never stored, after an indeterminate attempt"]
    );
}

// ---------------------------------------------------------------------------
// A one-block ingest (the header's ingest_block): a row without its
// increment is a violation of CountExact, not a stranded event
// ---------------------------------------------------------------------------

/// A stand-in for a target whose "batch" commits its statements one by
/// one: its worker crashed after s1 committed, so the event row is stored
/// and its increment is not. With the header's one-block ingest this is a
/// partial effect; the same history of an autocommit design is a
/// stranded event, and CountExact holds.
#[test]
fn a_batch_that_commits_one_by_one_is_caught_as_a_partial_effect() {
    for block in [None, Some([0, 2])] {
        let mut h = Hist::with_header(true, 2, &["s1", "s2", "s3"], Some(0), 3);
        if let Entry::Header(hd) = &mut h.entries[0] {
            hd.ingest_block = block;
        }
        h.ingest_counted("e1", "f1", 10);
        let crashed = OpResult {
            error: Some("crash fault after step s1".into()),
            crashed_after: Some("s1".into()),
            ..Default::default()
        };
        h.ingest(
            "e2",
            "f1",
            30,
            vec![st("s1", 31, 32, 1)],
            End::Info(33, crashed),
        );
        let t = tables(&[("e1", "f1"), ("e2", "f1")], &[("f1", "open", 1)]);
        let r = count_exact(&h, &t);
        let (_, stranded) = all(&h, &t);
        assert_eq!(stranded.total, Some(1), "the row has no increment");
        match block {
            None => assert_eq!(r.violations, 0, "{}", expls(&r)),
            Some(_) => {
                assert_eq!(r.violations, 1, "{}", expls(&r));
                assert!(expls(&r).contains("a partial effect"), "{}", expls(&r));
            }
        }
    }
    // A correct one-block history: the row and its increment.
    let mut h = Hist::with_header(true, 2, &["s1", "s2", "s3"], Some(0), 3);
    if let Entry::Header(hd) = &mut h.entries[0] {
        hd.ingest_block = Some([0, 2]);
    }
    h.ingest_counted("e1", "f1", 10);
    let r = count_exact(&h, &tables(&[("e1", "f1")], &[("f1", "open", 1)]));
    assert_eq!(r.violations, 0, "{}", expls(&r));
}
