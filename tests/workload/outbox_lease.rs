//! Leases of the outbox queue (`outbox.lease`): the queue's bookkeeping
//! with hand-made instants (no timing), the key's checks, and an end-to-end
//! run where pauses hold attempts past their lease, the deliveries overlap,
//! and every invariant still holds.

use specstorm::workload::outbox::config::OutboxConfig;
use specstorm::workload::outbox::config::OUTBOX_INVARIANTS;
use specstorm::workload::outbox::runtime::Queue;
use std::time::{Duration, Instant};

use crate::common::run::{load_text as load, run_into};
use crate::common::{command, summary};

fn cfg(messages: u64, deliveries: u32, max_attempts: u32, lease_ms: Option<u64>) -> OutboxConfig {
    OutboxConfig {
        messages,
        deliveries,
        handlers: 1,
        max_attempts,
        lease: lease_ms.map(Duration::from_millis),
    }
}

#[test]
fn without_a_lease_a_delivery_comes_back_only_after_its_attempt() {
    let mut q = Queue::new(&cfg(1, 1, 5, None), 1);
    let t0 = Instant::now();
    let (k, a) = q.take_at(t0).unwrap();
    assert_eq!((k, a), ((1, 1), 1));
    // However late: nothing to take while the attempt runs.
    assert_eq!(q.take_at(t0 + Duration::from_secs(3600)), None);
    q.settle(k, a, false);
    assert_eq!(q.take_at(t0), Some(((1, 1), 2)));
    q.settle(k, 2, true);
    assert!(q.drained() && q.leases.is_none());
}

#[test]
fn an_expired_lease_hands_the_delivery_out_again_and_the_first_ack_wins() {
    let mut q = Queue::new(&cfg(1, 1, 5, Some(100)), 1);
    let t0 = Instant::now();
    let (k, a1) = q.take_at(t0).unwrap();
    // Within the lease: nothing else to take.
    assert_eq!(q.take_at(t0 + Duration::from_millis(99)), None);
    // Past it: the same delivery again, a new attempt, while a1 runs.
    let (k2, a2) = q.take_at(t0 + Duration::from_millis(100)).unwrap();
    assert_eq!((k2, a2), (k, 2));
    // The second attempt acks first; the slow one's ack comes later.
    q.settle(k, a2, true);
    assert!(q.drained());
    q.settle(k, a1, true);
    let l = q.leases.as_ref().unwrap();
    assert_eq!(
        (q.acked, l.overlapping, l.expired, l.late_acks),
        (1, 1, 1, 1)
    );
    assert!(q.given_up.is_empty());
    assert_eq!(q.take_at(t0 + Duration::from_secs(10)), None);
}

#[test]
fn a_failed_overtaken_attempt_neither_requeues_nor_gives_up() {
    let mut q = Queue::new(&cfg(1, 1, 2, Some(10)), 1);
    let t0 = Instant::now();
    let (k, a1) = q.take_at(t0).unwrap();
    let (_, a2) = q.take_at(t0 + Duration::from_millis(10)).unwrap();
    // The overtaken attempt fails: its delivery is a2's now.
    q.settle(k, a1, false);
    assert_eq!(q.take_at(t0 + Duration::from_millis(15)), None);
    assert!(q.given_up.is_empty() && !q.drained());
    // The budget (2) is spent: a2's lease expiring hands out nothing.
    assert_eq!(q.take_at(t0 + Duration::from_secs(1)), None);
    // a2 fails too: now the delivery is given up, once.
    q.settle(k, a2, false);
    assert_eq!(q.given_up, vec![(1, 1)]);
    assert!(q.drained());
}

#[test]
fn a_delivery_acked_while_it_waited_is_not_handed_out() {
    let mut q = Queue::new(&cfg(3, 1, 5, Some(10)), 7);
    let t0 = Instant::now();
    let (x, _) = q.take_at(t0).unwrap();
    let (y, _) = q.take_at(t0).unwrap();
    // Both leases ran out: both go to the head (ahead of the third
    // message); one is handed out, the other waits there.
    let (first, a) = q.take_at(t0 + Duration::from_millis(20)).unwrap();
    assert!(first == x || first == y);
    assert_eq!(a, 2);
    let waiting = if first == x { y } else { x };
    // The waiting one's slow first attempt acks: it must not run again.
    q.settle(waiting, 1, true);
    let (next, a) = q.take_at(t0 + Duration::from_millis(20)).unwrap();
    assert!(
        next != x && next != y,
        "an acked delivery was handed out again"
    );
    assert_eq!(a, 1);
    assert_eq!(q.acked, 1);
}

#[test]
fn the_lease_key_is_checked_and_saved() {
    let s = load("workload = \"outbox\"\n[outbox]\nlease = \"250ms\"\n").unwrap();
    assert_eq!(
        s.part::<OutboxConfig>().unwrap().lease,
        Some(Duration::from_millis(250))
    );
    // The saved scenario says it, and loads back the same.
    let text = s.to_toml();
    assert!(text.contains("lease = \"250ms\""), "{text}");
    assert_eq!(
        load(&text).unwrap().part::<OutboxConfig>(),
        s.part::<OutboxConfig>()
    );
    // Unset and "0s": no lease, said in a comment.
    let none = load("workload = \"outbox\"\n").unwrap();
    assert_eq!(none.part::<OutboxConfig>().unwrap().lease, None);
    assert!(none.to_toml().contains("# lease: not set"));
    let zero = load("workload = \"outbox\"\n[outbox]\nlease = \"0s\"\n").unwrap();
    assert_eq!(zero.part::<OutboxConfig>().unwrap().lease, None);
    // Refused, with the line: too short, not a duration, on groups.
    let e = load("workload = \"outbox\"\n[outbox]\nlease = \"500us\"\n").unwrap_err();
    assert!(e.contains("t.toml:3") && e.contains("at least 1ms"), "{e}");
    let e = load("workload = \"outbox\"\n[outbox]\nlease = 5\n").unwrap_err();
    assert!(e.contains("t.toml:3") && e.contains("duration"), "{e}");
    let e = load("[outbox]\nlease = \"1s\"\n").unwrap_err();
    assert!(e.contains("only applies to workload = \"outbox\""), "{e}");
}

#[test]
fn overlapping_attempts_happen_and_the_protocol_survives_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run_into(
        "scenarios/outbox-lease.toml",
        &out,
        &["--set", "outbox.messages=800", "--set", "outbox.handlers=8"],
    );
    let s = summary(&out);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let ob = &s["outbox"];
    // Pauses of 100ms+ against a 20ms lease: overlaps must have happened
    // (a queue that ignored the lease would count none).
    assert!(ob["overlapping_attempts"].as_u64().unwrap() > 0, "{ob}");
    assert!(ob["lease_expired"].as_u64().unwrap() > 0, "{ob}");
    assert!(s["faults_injected"]["pause"].as_u64().unwrap() > 0);
    assert_eq!(ob["liveness"]["acked_messages"], 800);
    for name in OUTBOX_INVARIANTS {
        assert_eq!(s["invariants"][name]["verdict"], "holds", "{name}");
    }
    // The run said it in words, and an audit confirms the verdicts.
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("overlapping attempts"), "{text}");
    let a = command().arg("audit").arg(&out).output().unwrap();
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stdout)
    );
}
