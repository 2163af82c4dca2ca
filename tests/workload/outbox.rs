//! Tests of the outbox workload: the branch directives (parsing and
//! checking, with lines), the step machine's jumps (pure), each checker on
//! hand-made tables and histories (holds and violated, per invariant and
//! edge), the scenario keys, and small end-to-end runs on SQLite.

use specstorm::history::{CompletionType, Delivery, Step};
use specstorm::statements::{parse, Cond, StopIf};
use specstorm::verdict::Verdict;
use specstorm::workload::groups::statements::compile_groups;
use specstorm::workload::outbox::checker::{
    self as outbox, Attempt, OutRow, OutboxFacts, OutboxTables, StateRow,
};
use specstorm::workload::outbox::config::OutboxConfig;
use specstorm::workload::outbox::config::OUTBOX_INVARIANTS;
use specstorm::workload::outbox::header::OutboxHeader;
use specstorm::workload::outbox::statements::compile_outbox;
use specstorm::workload::{Next, StepMachine, StepOutcome, Value};
use std::path::Path;
use std::process::Output;

use crate::common::folder::leaves;
use crate::common::run::load_text as load;
use crate::common::{specstorm, verdict};

// ------------------------------------------------------------ statements

fn protocol_text() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sqlite/outbox-protocol.sql"),
    )
    .unwrap()
}

/// The error of compiling `text` as an outbox file: (line, reason).
#[track_caller]
fn outbox_err(text: &str) -> (usize, String) {
    let e = parse(Path::new("t.sql"), text)
        .and_then(|f| compile_outbox(&f))
        .map(|_| ())
        .expect_err("the file should be refused");
    (e.line, e.reason)
}

/// The line (1-based) of the first line of `text` holding `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn the_shipped_outbox_files_compile_with_their_branches() {
    for f in [
        "outbox-protocol.sql",
        "outbox-naive-no-outbox.sql",
        "outbox-naive-no-redo.sql",
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("targets/sqlite")
            .join(f);
        let text = std::fs::read_to_string(&path).unwrap();
        let v = compile_outbox(&parse(&path, &text).unwrap()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v.handle.steps.last().unwrap().name, "ack", "{f}");
    }
    let v = compile_outbox(&parse(Path::new("p.sql"), &protocol_text()).unwrap()).unwrap();
    let names: Vec<&str> = v.handle.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "load_state",
            "redo_outbox_commit",
            "redo_state_cleanup",
            "process",
            "stage_outbox",
            "state_commit",
            "outbox_commit",
            "state_cleanup",
            "publish",
            "ack"
        ]
    );
    let s = &v.handle.steps;
    // head_tx is the third column of load_state.
    assert_eq!(s[0].goto_if, Some((Cond::IsNull(2), 3)));
    assert_eq!(s[2].goto, Some(0));
    assert_eq!(s[2].fail_if, Some(Cond::Count(StopIf::ChangesZero)));
    assert_eq!(s[3].goto_if, Some((Cond::Count(StopIf::RowsPositive), 8)));
    assert_eq!(s[5].fail_if, Some(Cond::Count(StopIf::ChangesZero)));
    assert_eq!(s[7].fail_if, Some(Cond::Count(StopIf::ChangesZero)));
    assert!(v.export_outbox.is_some());
}

#[test]
fn branch_directive_errors_name_the_line_and_reason() {
    let base = protocol_text();
    let cases: Vec<(&str, &str, &str)> = vec![
        // (replace this, with this, reason contains)
        (
            "-- goto-if: rows > 0 -> publish",
            "-- goto-if: rows > 0 -> pubish",
            "jump to unknown step `pubish`",
        ),
        (
            "-- goto-if: rows > 0 -> publish",
            "-- goto-if: rows > 0 -> process",
            "a jump to the step itself",
        ),
        (
            "-- goto-if: head_tx is null -> process",
            "-- goto-if: head_txx is null -> process",
            "column `head_txx`, which this step does not return",
        ),
        (
            "-- goto-if: rows > 0 -> publish",
            "-- goto-if: changes = 0 -> publish",
            "needs a statement that modifies rows",
        ),
        (
            "-- name: handle.stage_outbox\n",
            "-- name: handle.stage_outbox\n-- fail-if: rows = 0\n",
            "needs a statement that returns rows",
        ),
        (
            "-- goto-if: rows > 0 -> publish",
            "-- goto-if: rows > 0 publish",
            "expected `CONDITION -> STEP`",
        ),
        (
            "-- goto: load_state",
            "-- goto: handle.load_state",
            "bad jump target",
        ),
        (
            "-- fail-if: changes = 0\n-- StateCommit",
            "-- fail-if: changes >= 0\n-- StateCommit",
            "bad condition",
        ),
        (
            "-- goto-if: rows > 0 -> publish",
            "-- stop-if: rows > 0",
            "`stop-if` has no meaning in outbox",
        ),
        (
            "-- name: handle.ack\n",
            "-- name: handle.ack\n-- goto: publish\n",
            "takes no branch directive",
        ),
    ];
    for (from, to, why) in cases {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        let (line, reason) = outbox_err(&text);
        // The directive's own line (the name line for the whole-block ones).
        let first = to.lines().find(|l| !l.contains("-- name:")).unwrap_or(to);
        let expected = line_of(&text, first.trim());
        assert!(reason.contains(why), "{to}: {reason}");
        if !why.contains("has no meaning") {
            assert_eq!(line, expected, "{to}: {reason}");
        }
    }
}

#[test]
fn outbox_file_shape_errors() {
    let base = protocol_text();
    // The last step must be ack.
    let no_ack = base.replace("-- name: handle.ack", "-- name: handle.ackk");
    let (line, reason) = outbox_err(&no_ack);
    assert_eq!(line, line_of(&no_ack, "-- name: handle.ackk"));
    assert!(reason.contains("must be `handle.ack`"), "{reason}");
    // A required export is missing (line 0: the whole file).
    let cut = base.find("-- name: export.processed").unwrap();
    let (line, reason) = outbox_err(&base[..cut]);
    assert_eq!(
        (line, reason.as_str()),
        (0, "missing block `export.processed`")
    );
    // Another workload's op.
    let other = base.replace("-- name: handle.load_state", "-- name: ingest.load_state");
    let (_, reason) = outbox_err(&other);
    assert!(
        reason.contains("unknown block `ingest.load_state`"),
        "{reason}"
    );
}

#[test]
fn groups_refuses_the_branch_directives() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sqlite/groups-atomic.sql"),
    )
    .unwrap();
    for d in [
        "-- goto: s2",
        "-- goto-if: changes = 0 -> s2",
        "-- fail-if: changes = 0",
    ] {
        let t = text.replacen("-- stop-if: changes = 0", d, 1);
        let e = parse(Path::new("g.sql"), &t)
            .and_then(|f| compile_groups(&f))
            .map(|_| ())
            .expect_err("groups must refuse branches");
        assert_eq!(e.line, line_of(&t, d), "{d}");
        assert!(
            e.reason.contains("belong to the outbox workload"),
            "{}",
            e.reason
        );
    }
}

// ------------------------------------------------------------ step machine

fn protocol() -> specstorm::workload::outbox::statements::OutboxVariant {
    compile_outbox(&parse(Path::new("p.sql"), &protocol_text()).unwrap()).unwrap()
}

fn row(values: &[Value]) -> StepOutcome {
    StepOutcome {
        changes: 0,
        rows: vec![values.to_vec()],
    }
}

fn changed(n: u64) -> StepOutcome {
    StepOutcome {
        changes: n,
        rows: vec![],
    }
}

fn builtins() -> Vec<Value> {
    vec![Value::Int(7), Value::Int(1), Value::Int(100), Value::Int(0)]
}

#[test]
fn a_clean_head_jumps_over_the_redo_and_runs_to_ack() {
    let v = protocol();
    let mut m = StepMachine::new(&v.handle, builtins());
    // Head ver 4, clean (head_tx NULL): straight to process (3).
    let next = m.advance(row(&[Value::Int(4), Value::Int(2), Value::Null]));
    assert_eq!((next, m.current()), (Next::Continue, Some(3)));
    // No outbox entry (zero rows): on to stage_outbox.
    assert_eq!(m.advance(StepOutcome::default()), Next::Continue);
    assert_eq!(m.current(), Some(4));
    // Parameters of stage_outbox: tx_id, msg_id, base_ver (in SQL order).
    let p: Vec<Value> = m.params().into_iter().cloned().collect();
    assert_eq!(p, [Value::Int(100), Value::Int(7), Value::Int(4)]);
    for _ in 4..9 {
        assert_eq!(m.advance(changed(1)), Next::Continue);
    }
    assert_eq!(m.current(), Some(9));
    assert_eq!(m.advance(changed(1)), Next::Finished);
    assert_eq!(m.executed(), 8);
}

#[test]
fn a_dirty_head_is_redone_then_loaded_again() {
    let v = protocol();
    let mut m = StepMachine::new(&v.handle, builtins());
    m.advance(row(&[Value::Int(4), Value::Int(2), Value::Int(55)]));
    assert_eq!(m.current(), Some(1));
    // redo_outbox_commit binds head_tx.
    let p: Vec<Value> = m.params().into_iter().cloned().collect();
    assert_eq!(p, [Value::Int(55)]);
    m.advance(changed(1));
    assert_eq!(m.current(), Some(2));
    // The redo cleanup won: back to load_state (a backward jump).
    assert_eq!(m.advance(changed(1)), Next::Continue);
    assert_eq!(m.current(), Some(0));
    // The new head is clean: on to process, with the new base.
    m.advance(row(&[Value::Int(5), Value::Int(2), Value::Null]));
    assert_eq!(m.current(), Some(3));
    m.advance(StepOutcome::default());
    let p: Vec<Value> = m.params().into_iter().cloned().collect();
    assert_eq!(p[2], Value::Int(5));
}

#[test]
fn a_processed_message_jumps_to_publish() {
    let v = protocol();
    let mut m = StepMachine::new(&v.handle, builtins());
    m.advance(row(&[Value::Int(4), Value::Int(2), Value::Null]));
    assert_eq!(m.advance(row(&[Value::Int(3)])), Next::Continue);
    assert_eq!(m.current(), Some(8));
}

#[test]
fn a_lost_compare_and_swap_ends_the_attempt_as_failed() {
    let v = protocol();
    let mut m = StepMachine::new(&v.handle, builtins());
    m.advance(row(&[Value::Int(4), Value::Int(2), Value::Null]));
    m.advance(StepOutcome::default());
    m.advance(changed(1));
    assert_eq!(m.advance(changed(0)), Next::FailedIf { at: 5 });
    assert_eq!(m.current(), None);
    // A lost redo cleanup too.
    let mut m = StepMachine::new(&v.handle, builtins());
    m.advance(row(&[Value::Int(4), Value::Int(2), Value::Int(9)]));
    m.advance(changed(1));
    assert_eq!(m.advance(changed(0)), Next::FailedIf { at: 2 });
}

#[test]
fn a_redo_loop_is_bounded() {
    let v = protocol();
    let mut m = StepMachine::new(&v.handle, builtins());
    let mut last = Next::Continue;
    let mut n = 0;
    while last == Next::Continue {
        last = match m.current() {
            Some(0) => m.advance(row(&[Value::Int(4), Value::Int(2), Value::Int(9)])),
            Some(_) => m.advance(changed(1)),
            None => unreachable!(),
        };
        n += 1;
        assert!(n <= 64, "the machine must stop by itself");
    }
    assert_eq!(n, specstorm::statements::MAX_MACHINE_STEPS);
    assert!(matches!(last, Next::StepLimit { .. }), "{last:?}");
}

// ------------------------------------------------------------ checkers

const M: u64 = 3;

fn header() -> OutboxHeader {
    OutboxHeader {
        messages: M,
        deliveries: 2,
        max_attempts: 2,
    }
}

fn step(op: u64, name: &str, t: u64, changes: u64) -> Step {
    Step {
        op,
        idx: 0,
        step: name.into(),
        start: t,
        end: Some(t + 1),
        changes,
        rows: 0,
        error: None,
        error_kind: None,
        maybe_applied: false,
        returned: None,
    }
}

/// An attempt on (m, d) with tx `tx`, ending `c`, whose steps changed rows.
fn attempt(op: u64, m: i64, d: u32, tx: i64, c: CompletionType, steps: &[&str]) -> Attempt {
    Attempt {
        op,
        delivery: Delivery {
            msg_id: m,
            dup_id: d,
            attempt: 1,
            tx_id: tx,
        },
        t0: op * 100,
        t1: Some(op * 100 + 50),
        completion: Some(c),
        error: (c != CompletionType::Ok).then(|| "x".into()),
        crashed_after: (c == CompletionType::Info).then(|| steps.last().unwrap().to_string()),
        steps: steps
            .iter()
            .enumerate()
            .map(|(i, s)| step(op, s, op * 100 + i as u64, 1))
            .collect(),
    }
}

const FULL: &[&str] = &[
    "stage_outbox",
    "state_commit",
    "outbox_commit",
    "state_cleanup",
    "publish",
    "ack",
];
const RESEND: &[&str] = &["publish", "ack"];

fn facts(attempts: Vec<Attempt>) -> OutboxFacts {
    let mut f = OutboxFacts {
        header: Some(header()),
        attempts,
        ..Default::default()
    };
    f.index();
    f
}

fn change(ver: i64, m: i64, tx: Option<i64>) -> StateRow {
    StateRow {
        ver: Some(ver),
        msg_id: Some(m),
        tx_id: tx,
        kind: "change".into(),
    }
}

fn cleanup(ver: i64, m: i64) -> StateRow {
    StateRow {
        ver: Some(ver),
        msg_id: Some(m),
        tx_id: None,
        kind: "cleanup".into(),
    }
}

fn out(seq: i64, m: i64, ver: i64) -> OutRow {
    OutRow {
        seq: Some(seq),
        msg_id: Some(m),
        ver: Some(ver),
    }
}

fn init() -> StateRow {
    StateRow {
        ver: Some(0),
        msg_id: None,
        tx_id: None,
        kind: "init".into(),
    }
}

/// A correct run: messages 1..=3, each changed once (at 1, 3, 5 on bases
/// 0, 2, 4), published on its base, every delivery acked; message 2's
/// second delivery is a resend of the same (msg, ver).
fn good() -> (OutboxFacts, OutboxTables) {
    use CompletionType::Ok;
    let f = facts(vec![
        attempt(1, 1, 1, 1, Ok, FULL),
        attempt(2, 1, 2, 2, Ok, RESEND),
        attempt(3, 2, 1, 3, Ok, FULL),
        attempt(4, 2, 2, 4, Ok, RESEND),
        attempt(5, 3, 1, 5, Ok, FULL),
        attempt(6, 3, 2, 6, Ok, RESEND),
    ]);
    let t = OutboxTables {
        state_log: vec![
            init(),
            change(1, 1, Some(1)),
            cleanup(2, 1),
            change(3, 2, Some(3)),
            cleanup(4, 2),
            change(5, 3, Some(5)),
            cleanup(6, 3),
        ],
        outbox: Some(vec![]),
        out_queue: vec![
            out(1, 1, 0),
            out(2, 1, 0),
            out(3, 2, 2),
            out(4, 2, 2),
            out(5, 3, 4),
            out(6, 3, 4),
        ],
        processed: (1..=3)
            .flat_map(|m| (1..=2).map(move |d| (Some(m), Some(d))))
            .collect(),
        ..Default::default()
    };
    (f, t)
}

fn verdicts(f: &OutboxFacts, t: &OutboxTables) -> Vec<(String, Verdict)> {
    outbox::check_all(f, t)
        .0
        .into_iter()
        .map(|r| (r.invariant, r.verdict))
        .collect()
}

/// Asserts exactly `violated` are violated, `unknown` unknown, the rest hold.
#[track_caller]
fn expect(f: &OutboxFacts, t: &OutboxTables, violated: &[&str], unknown: &[&str]) {
    for (name, v) in verdicts(f, t) {
        let want = if violated.contains(&name.as_str()) {
            Verdict::Violated
        } else if unknown.contains(&name.as_str()) {
            Verdict::Unknown
        } else {
            Verdict::Holds
        };
        assert_eq!(v, want, "{name}");
    }
}

#[test]
fn a_correct_run_holds_and_counts_resends() {
    let (f, t) = good();
    expect(&f, &t, &[], &[]);
    let (r, live) = outbox::check_all(&f, &t);
    assert_eq!(
        r.iter().map(|r| r.invariant.as_str()).collect::<Vec<_>>(),
        OUTBOX_INVARIANTS
    );
    assert_eq!(live.redeliveries, 3);
    assert!(live.drained && live.judged);
    assert_eq!(live.holds, Some(true));
}

#[test]
fn a_second_change_is_named_with_its_attempt() {
    let (mut f, mut t) = good();
    // Message 2 changed again at 7 by attempt 7 (tx 7), on base 6.
    f.attempts
        .push(attempt(7, 2, 2, 7, CompletionType::Info, &["state_commit"]));
    f.index();
    t.state_log.push(change(7, 2, Some(7)));
    expect(
        &f,
        &t,
        &[
            outbox::at_most_one_state_change::NAME,
            outbox::consistent::NAME,
        ],
        &[],
    );
    let r = outbox::at_most_one_state_change::check(&f, &t);
    let v = &r.examples[0];
    assert_eq!(v.msg_id, Some(2));
    assert!(
        v.explanation.contains("op 7 (msg 2 dup 2 attempt 1, tx 7)"),
        "{}",
        v.explanation
    );
    assert!(
        v.found
            .contains("state_log(ver=7, msg_id=2, tx_id=7, change)"),
        "{}",
        v.found
    );
    assert!(v
        .evidence
        .iter()
        .any(|e| e.what.contains("step state_commit")));
}

#[test]
fn two_versions_in_the_out_queue_break_at_most_one_out_queue_msg() {
    let (f, mut t) = good();
    t.out_queue.push(out(7, 3, 5));
    expect(
        &f,
        &t,
        &[
            outbox::at_most_one_out_queue_msg::NAME,
            outbox::consistent::NAME,
        ],
        &[],
    );
    let r = outbox::at_most_one_out_queue_msg::check(&f, &t);
    assert_eq!(r.examples[0].msg_id, Some(3));
}

#[test]
fn output_on_the_changed_version_breaks_consistency() {
    // The seed read literally: the output carries ver+1, not the base.
    let (f, mut t) = good();
    for o in t.out_queue.iter_mut().filter(|o| o.msg_id == Some(1)) {
        o.ver = Some(1);
    }
    expect(&f, &t, &[outbox::consistent::NAME], &[]);
}

#[test]
fn an_acked_message_without_output_breaks_no_lost_output() {
    let (f, mut t) = good();
    t.out_queue.retain(|o| o.msg_id != Some(1));
    expect(
        &f,
        &t,
        &[outbox::consistent::NAME, outbox::no_lost_output::NAME],
        &[],
    );
}

#[test]
fn a_crashed_attempt_that_committed_is_no_violation() {
    use CompletionType::{Info, Ok};
    // Message 1: the first attempt crashed after state_commit; a second
    // attempt redid its outbox commit and cleanup (as the redo does) and
    // published; the delivery came back and was acked.
    let (_, t) = good();
    let f = facts(vec![
        attempt(1, 1, 1, 1, Info, &["stage_outbox", "state_commit"]),
        attempt(
            2,
            1,
            2,
            2,
            Ok,
            &["redo_outbox_commit", "redo_state_cleanup", "publish", "ack"],
        ),
        attempt(3, 1, 1, 3, Ok, RESEND),
        attempt(4, 2, 1, 4, Ok, FULL),
        attempt(5, 2, 2, 5, Ok, RESEND),
        attempt(6, 3, 1, 6, Ok, FULL),
        attempt(7, 3, 2, 7, Ok, RESEND),
    ]);
    let mut t = t;
    // tx ids as these attempts had them.
    t.state_log[3].tx_id = Some(4);
    t.state_log[5].tx_id = Some(6);
    expect(&f, &t, &[], &[]);
}

#[test]
fn a_given_up_message_is_listed_apart() {
    use CompletionType::Info;
    let (mut f, mut t) = good();
    // Message 3: both deliveries crashed twice (the budget), the first
    // after committing: committed, never published, never acked.
    f.attempts.retain(|a| a.delivery.msg_id != 3);
    for (op, d) in [(10, 1), (11, 1), (12, 2), (13, 2)] {
        let steps: &[&str] = if op == 10 {
            &["stage_outbox", "state_commit"]
        } else {
            &["stage_outbox"]
        };
        f.attempts.push(attempt(op, 3, d, op as i64, Info, steps));
    }
    f.index();
    t.state_log[5].tx_id = Some(10);
    t.state_log.pop();
    t.out_queue.retain(|o| o.msg_id != Some(3));
    t.processed.retain(|p| p.0 != Some(3));
    expect(&f, &t, &[], &[]);
    assert_eq!(f.given_up_msgs().into_iter().collect::<Vec<_>>(), [3]);
    let r = outbox::no_lost_output::check(&f, &t);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("given up") && n.contains("3 (changes 1, published 0)")),
        "{:?}",
        r.notes
    );
    let (_, live) = outbox::check_all(&f, &t);
    assert!(live.drained);
    // Faults were injected: liveness is not judged.
    let mut f2 = f.clone();
    f2.faults_seen = true;
    assert_eq!(outbox::liveness::report(&f2, &t).holds, None);
    // Without faults, a message never acked breaks liveness.
    assert_eq!(live.holds, Some(false));
    assert_eq!(live.unacked, [3]);
}

#[test]
fn history_and_processed_disagreeing_is_reported_not_judged() {
    // An ok attempt whose ack row is missing from `processed`.
    let (f, mut t) = good();
    t.processed.retain(|p| *p != (Some(2), Some(2)));
    expect(&f, &t, &[], &[outbox::consistent::NAME]);
    // A `processed` row no attempt's ack step wrote.
    let (mut f, t) = good();
    f.attempts.retain(|a| a.op != 6);
    f.index();
    expect(&f, &t, &[], &[outbox::consistent::NAME]);
    // A row written by an attempt that crashed after its ack step: fine.
    let (mut f, t) = good();
    f.attempts
        .push(attempt(9, 2, 2, 9, CompletionType::Info, RESEND));
    f.index();
    expect(&f, &t, &[], &[]);
    let (_, live) = outbox::check_all(&f, &t);
    assert_eq!(live.ack_disagreements, 0);
}

#[test]
fn type_ok_catches_a_broken_chain_and_kinds() {
    let (f, mut t) = good();
    t.state_log[2].kind = "cleanUp".into();
    expect(&f, &t, &[outbox::type_ok::NAME], &[]);
    let (f, mut t) = good();
    t.state_log.remove(2);
    expect(&f, &t, &[outbox::type_ok::NAME], &[]);
    let (f, mut t) = good();
    t.processed.push((Some(99), Some(1)));
    // Also no attempt wrote it: the ack disagreement is reported.
    expect(
        &f,
        &t,
        &[outbox::type_ok::NAME],
        &[outbox::consistent::NAME],
    );
}

// ------------------------------------------------------------ scenarios

#[test]
fn outbox_scenario_keys_are_checked_with_lines() {
    let s = load("workload = \"outbox\"\n").unwrap();
    let o = s.part::<OutboxConfig>().cloned().unwrap();
    assert_eq!(
        (o.messages, o.deliveries, o.handlers, o.max_attempts),
        (1000, 3, 8, 100)
    );
    assert_eq!(s.variant, "outbox-protocol");
    // A groups scenario resolves without [outbox].
    assert!(load("").unwrap().part::<OutboxConfig>().is_none());
    let cases = [
        (
            "[outbox]\nmessages = 5\n",
            "t.toml:1: [outbox] only applies to workload = \"outbox\"",
        ),
        (
            "workload = \"outbox\"\n[load]\ningesters = 2\n",
            "t.toml:2: [load] does not apply to workload = \"outbox\"",
        ),
        (
            "workload = \"outbox\"\n[stop]\nevents = 5\n",
            "t.toml:3: `stop.events` does not apply",
        ),
        (
            "workload = \"outbox\"\n[outbox]\nmessages = 0\n",
            "t.toml:3: `outbox.messages`",
        ),
        (
            "workload = \"outbox\"\n[outbox]\nqueue = 1\n",
            "t.toml:3: unknown key `queue` in [outbox]",
        ),
        (
            "workload = \"outbox\"\n[[faults]]\nkind = \"proxy\"\ntoxic = \"latency\"\nprobability = 0.05\ndelay = \"5ms\"\n",
            "t.toml:3: `faults[0]` (kind = \"proxy\") needs target.kind = \"http\"",
        ),
        (
            "workload = \"outbox\"\nvariant = \"groups-naive\"\n",
            "t.toml:2: \"groups-naive\" is a groups variant",
        ),
        (
            "workload = \"outbox\"\n[[faults]]\nkind = \"crash\"\nops = \"ingest\"\n",
            "t.toml:4: `faults[0].ops`: the outbox workload's only op",
        ),
        (
            "[[faults]]\nkind = \"crash\"\nper = \"step\"\n",
            "t.toml:3: `faults[0].per` = \"step\" is supported by the outbox workload only",
        ),
        (
            "workload = \"outbox\"\nexpect = { violated = [\"CountExact\"] }\n",
            "t.toml:2: unknown invariant \"CountExact\"",
        ),
        (
            "expect = { violated = [\"NoLostOutput\"] }\n",
            "t.toml:1: unknown invariant \"NoLostOutput\"",
        ),
    ];
    for (text, want) in cases {
        let e = load(text).expect_err(text);
        assert!(e.starts_with(want), "{text:?}:\n  got  {e}\n  want {want}");
    }
    // Over HTTP, the fault proxy draws for the outbox's deliveries.
    let s = load(
        "workload = \"outbox\"\n[target]\nkind = \"http\"\nspawn = true\n[[faults]]\nkind = \"proxy\"\ntoxic = \"latency\"\nprobability = 0.05\ndelay = \"5ms\"\n",
    )
    .unwrap();
    assert_eq!(s.faults[0].kind, specstorm::fault_kind::FaultKind::Proxy);
    // An outbox crash defaults to the handle op; `per` stays unset.
    let s = load("workload = \"outbox\"\n[[faults]]\nkind = \"crash\"\n").unwrap();
    assert_eq!(s.faults[0].ops, Some(specstorm::scenario::FaultOps::Handle));
    assert_eq!(s.faults[0].per, None);
}

#[test]
fn an_outbox_skeleton_has_no_groups_kinds() {
    let s = load("workload = \"outbox\"\n").unwrap();
    let k = specstorm::report::summary::skeleton(&s);
    assert!(k["ops"].get("handle").is_some());
    assert!(k["ops"].get("ingest").is_none());
    for name in OUTBOX_INVARIANTS {
        assert!(k["invariants"].get(name).is_some(), "{name}");
    }
    assert!(k["outbox"]["liveness"].get("redeliveries").is_some());
}

// ------------------------------------------------------------ end to end

fn run(scenario: &str, sets: &[&str]) -> (Output, serde_json::Value, tempfile::TempDir) {
    let r = crate::common::run::run(scenario, &crate::common::run::sets(sets));
    let summary = r.summary();
    (r.output, summary, r.tmp)
}

#[test]
fn the_protocol_holds_under_crashes_at_every_step() {
    let (o, s, tmp) = run(
        "scenarios/outbox-protocol.toml",
        &["outbox.messages=1500", "outbox.handlers=8"],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(s["workload"], "outbox");
    let ob = &s["outbox"];
    assert!(ob["crashed"].as_u64().unwrap() > 0);
    assert_eq!(ob["liveness"]["drained"], true);
    assert_eq!(ob["liveness"]["acked_messages"], 1500);
    for name in OUTBOX_INVARIANTS {
        assert_eq!(verdict(&s, name), "holds", "{name}");
    }
    // The run folder is complete, and groups' figures are not there.
    let dir = tmp.path().join("run");
    for f in [
        "checks.json",
        "junit.xml",
        "history.bin",
        "latency.hlog",
        "scenario.toml",
    ] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert!(s["ops"].get("ingest").is_none() && s.get("resolves").is_none());
    // The skeleton names exactly the figures of a real outbox summary.
    let scenario = specstorm::scenario::load(Some(&dir.join("scenario.toml")), &[])
        .unwrap()
        .0;
    let skeleton = specstorm::report::summary::skeleton(&scenario);
    let (mut have, mut named) = (Vec::new(), Vec::new());
    leaves(&s, "", &mut have);
    leaves(&skeleton, "", &mut named);
    let not_figures = [
        "resolved_scenario",
        "provenance",
        "exit",
        "schema_version",
        "seed",
        "thresholds",
    ];
    have.retain(|p| {
        !not_figures
            .iter()
            .any(|x| p == x || p.starts_with(&format!("{x}.")))
    });
    for p in &have {
        assert!(
            named.contains(p),
            "summary.json has {p}, the skeleton does not"
        );
    }
    for p in named.iter().filter(|p| !p.ends_with("first_violation_s")) {
        assert!(
            have.contains(p),
            "the skeleton names {p}, the summary has not"
        );
    }
    // The history records deliveries, tx ids and crashes.
    let h = crate::common::folder::history_text(&dir).unwrap();
    assert!(h.contains("\"delivery\":{\"msg_id\":"));
    assert!(h.contains("\"crashed_after\":"));
}

#[test]
fn a_delivery_budget_gives_messages_up_and_they_are_left_out() {
    let (o, s, _tmp) = run(
        "scenarios/outbox-protocol.toml",
        &[
            "outbox.messages=300",
            "outbox.deliveries=1",
            "outbox.max_attempts=1",
            "outbox.handlers=4",
        ],
    );
    let ob = &s["outbox"];
    assert!(ob["given_up_deliveries"].as_u64().unwrap() > 0, "{ob}");
    assert_eq!(ob["liveness"]["drained"], true);
    for name in OUTBOX_INVARIANTS {
        assert_eq!(verdict(&s, name), "holds", "{name}");
    }
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn each_naive_variant_is_caught_for_its_real_defect() {
    for (scenario, defect) in [
        (
            "scenarios/outbox-naive-no-outbox.toml",
            "AtMostOneStateChange",
        ),
        (
            "scenarios/outbox-naive-no-redo.toml",
            "AtMostOneStateChange",
        ),
    ] {
        let (_, s, _tmp) = run(scenario, &["outbox.messages=2000", "outbox.handlers=8"]);
        assert_eq!(verdict(&s, defect), "violated", "{scenario}");
        assert_eq!(
            verdict(&s, "ConsistentStateAndOutQueue"),
            "violated",
            "{scenario}"
        );
        assert_eq!(verdict(&s, "TypeOK"), "holds", "{scenario}");
    }
}

#[test]
fn an_outbox_scenario_on_http_is_accepted_by_check() {
    // Lifted (issue 7, part 5): HTTP outbox runs are tests/target/outbox_http.rs's.
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("s.toml");
    std::fs::write(
        &sc,
        "workload = \"outbox\"\n[target]\nkind = \"http\"\nspawn = true\n",
    )
    .unwrap();
    let o = specstorm(&["check", sc.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The per-message index the checkers read (built once, so an audit is
/// linear in its messages) answers exactly what a scan of the tables
/// answers, on seeded random tables with NULLs, cleanups, resends and rows
/// of messages that never ran.
#[test]
fn the_rows_by_message_index_answers_as_a_scan_of_the_tables() {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let maybe =
        |rng: &mut rand_chacha::ChaCha8Rng, v: i64| (rng.random_range(0..10) != 0).then_some(v);
    for _ in 0..50 {
        let mut t = OutboxTables::default();
        for i in 0..rng.random_range(0..60) {
            let m = rng.random_range(0..12);
            let kind = ["init", "change", "cleanup"][rng.random_range(0..3)];
            t.state_log.push(StateRow {
                ver: maybe(&mut rng, i),
                msg_id: maybe(&mut rng, m),
                tx_id: maybe(&mut rng, i),
                kind: kind.into(),
            });
        }
        for i in 0..rng.random_range(0..60) {
            let m = rng.random_range(0..12);
            let ver = rng.random_range(0..4);
            t.out_queue.push(OutRow {
                seq: Some(i),
                msg_id: maybe(&mut rng, m),
                ver: maybe(&mut rng, ver),
            });
        }
        for _ in 0..rng.random_range(0..30) {
            let (m, d) = (rng.random_range(0..12), rng.random_range(0..4));
            t.processed.push((maybe(&mut rng, m), maybe(&mut rng, d)));
        }
        let rows = t.by_msg();
        for m in -1..13 {
            assert_eq!(
                rows.changes_of(m),
                t.changes_of(m).as_slice(),
                "changes of {m}"
            );
            assert_eq!(rows.out_of(m), t.out_of(m).as_slice(), "out queue of {m}");
            for d in 0..5 {
                assert_eq!(
                    rows.processed_holds(m, d),
                    t.processed_holds(m, d),
                    "({m}, {d})"
                );
            }
        }
    }
}
