//! The outbox queue of a shard (`run --shard i/n` on an outbox scenario):
//! shard i of n hands out exactly the deliveries of the message ids it
//! owns ((m - 1) mod n = i), in the order the unsharded queue of the same
//! seed hands them out; the n shards' plans are disjoint and together are
//! the unsharded plan, delivery for delivery. Deterministic: the queues
//! are drained by hand at one instant (no handler, no timing).

use specstorm::shard::Shard;
use specstorm::workload::outbox::config::OutboxConfig;
use specstorm::workload::outbox::runtime::{Key, Queue};
use std::collections::BTreeSet;
use std::time::Instant;

fn cfg(messages: u64, deliveries: u32) -> OutboxConfig {
    OutboxConfig {
        messages,
        deliveries,
        handlers: 1,
        max_attempts: 3,
        lease: None,
    }
}

/// Every delivery the queue hands out, first attempts acked at once.
fn drain(mut q: Queue) -> Vec<Key> {
    let now = Instant::now();
    let mut out = Vec::new();
    while let Some((key, attempt)) = q.take_at(now) {
        q.settle(key, attempt, true);
        out.push(key);
    }
    assert!(q.drained());
    out
}

#[test]
fn the_shards_plans_split_the_unsharded_plan_by_message_id() {
    for (messages, deliveries, n, seed) in [(301, 3, 2, 7), (10, 2, 3, 1), (5, 1, 5, 42)] {
        let c = cfg(messages, deliveries);
        let whole = drain(Queue::new(&c, seed));
        assert_eq!(whole.len() as u64, messages * deliveries as u64);
        let mut union = BTreeSet::new();
        for index in 0..n {
            let sh = Shard { index, count: n };
            let part = drain(Queue::sharded(&c, seed, Some(sh)));
            // Its own messages only, each delivery once, in the unsharded order.
            let expected: Vec<Key> = whole
                .iter()
                .copied()
                .filter(|&(m, _)| (m - 1) % i64::from(n) == i64::from(index))
                .collect();
            assert_eq!(part, expected, "shard {index}/{n} of seed {seed}");
            assert_eq!(
                part.len() as u64,
                sh.share(messages) * deliveries as u64,
                "shard {index}/{n}: its share of the message ids"
            );
            for k in part {
                assert!(union.insert(k), "{k:?} in two shards");
            }
        }
        assert_eq!(union, whole.iter().copied().collect(), "n = {n}");
    }
}

#[test]
fn shard_0_of_1_is_the_unsharded_queue() {
    let c = cfg(50, 3);
    let one = Shard { index: 0, count: 1 };
    assert_eq!(
        drain(Queue::sharded(&c, 9, Some(one))),
        drain(Queue::new(&c, 9))
    );
    assert_eq!(drain(Queue::sharded(&c, 9, None)), drain(Queue::new(&c, 9)));
}

#[test]
fn every_message_id_has_one_owner() {
    for n in 1..=4u32 {
        for m in 1..=40i64 {
            let owners = (0..n)
                .filter(|&i| Shard::owns_message(Some(Shard { index: i, count: n }), m))
                .count();
            assert_eq!(owners, 1, "message {m} of {n} shards");
        }
        // No shard of several owns an id below 1.
        if n > 1 {
            assert!((0..n).all(|i| !Shard::owns_message(Some(Shard { index: i, count: n }), 0)));
        }
    }
    assert!(Shard::owns_message(None, 0));
}
