//! A transaction block's retry policy (`target.txn_retries`,
//! `target.txn_backoff`, `target.txn_backoff_max`): how many times a block
//! rolled back on SQLITE_BUSY, SQLITE_BUSY_SNAPSHOT or SQLITE_LOCKED runs
//! again from BEGIN within one op, and how long the worker waits between
//! the ROLLBACK and the next BEGIN.
//!
//! The wait is capped exponential with jitter: before retry k (0 the
//! first) the nominal wait is `min(txn_backoff_max, txn_backoff * 2^k)`,
//! and the worker waits half of it plus a uniform draw of up to the other
//! half ("equal jitter": workers that met the same writer do not all come
//! back at the same instant, and none comes back at once). Why a wait at
//! all: a DEFERRED block that lost its snapshot fails at once, without the
//! busy handler; rerun at once it mostly meets the same writer again.
//! Each draw comes from (seed, op key, attempt) alone on a stream salted
//! apart from the fault plan's and the fuzzer's ([`SALT`]), so a seed's
//! waits are the same whatever the timing, and a seed's ops and faults
//! are the same whatever the policy. The waiting itself is the caller's
//! (`crate::step_driver::StepHooks::wait`), which wakes on a stop.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use crate::draws::draw_rng;
use crate::scenario::Target;
use rand::RngExt;
use std::time::Duration;

/// Mixed into the seed of every backoff draw, so that its stream is none
/// of the fault plan's or the schedule fuzzer's.
pub const SALT: u64 = 0x7478_6e5f_6261_636b;

/// The default retry budget (`target.txn_retries`).
pub const DEFAULT_RETRIES: u32 = 16;

/// One op's retry policy for its transaction blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnPolicy {
    /// Reruns from BEGIN after a busy rollback before the op ends `fail`.
    pub retries: u32,
    /// The nominal wait before the first rerun (zero: no wait at all).
    pub backoff: Duration,
    /// The cap of the doubling nominal wait.
    pub backoff_max: Duration,
    /// The run's seed.
    pub seed: u64,
    /// The op's key (`crate::draws::op_key`).
    pub key: u64,
}

impl Default for TxnPolicy {
    /// [`DEFAULT_RETRIES`] reruns at once: the policy of the scenario's
    /// defaults, and of callers that have no scenario.
    fn default() -> Self {
        TxnPolicy {
            retries: DEFAULT_RETRIES,
            backoff: Duration::ZERO,
            backoff_max: Duration::ZERO,
            seed: 0,
            key: 0,
        }
    }
}

impl TxnPolicy {
    /// The policy `target` sets for the op with `key` in a run of `seed`.
    pub fn of(target: &Target, seed: u64, key: u64) -> Self {
        TxnPolicy {
            retries: target.txn_retries,
            backoff: target.txn_backoff,
            backoff_max: target.txn_backoff_max,
            seed,
            key,
        }
    }

    /// The same policy for another op.
    pub fn for_op(self, key: u64) -> Self {
        TxnPolicy { key, ..self }
    }

    /// The wait before rerun `attempt` (0 the first rerun): zero when the
    /// policy has no backoff, else half the capped nominal wait plus a
    /// seeded draw of up to the other half.
    pub fn wait(&self, attempt: u32) -> Duration {
        if self.backoff.is_zero() {
            return Duration::ZERO;
        }
        let cap = self.backoff_max.max(self.backoff);
        let nominal = self
            .backoff
            .checked_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .map_or(cap, |d| d.min(cap));
        let half = nominal / 2;
        let span = u64::try_from((nominal - half).as_nanos()).unwrap_or(u64::MAX);
        let mut rng = draw_rng(self.seed ^ SALT, u32::MAX - 1, self.key, attempt);
        half + Duration::from_nanos(rng.random_range(0..=span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(backoff_ms: u64, max_ms: u64) -> TxnPolicy {
        TxnPolicy {
            backoff: Duration::from_millis(backoff_ms),
            backoff_max: Duration::from_millis(max_ms),
            seed: 7,
            key: 3,
            ..TxnPolicy::default()
        }
    }

    #[test]
    fn no_backoff_never_waits() {
        let p = TxnPolicy::default();
        assert!((0..40).all(|a| p.wait(a).is_zero()));
    }

    #[test]
    fn waits_double_within_the_cap_and_repeat_for_a_seed() {
        let p = policy(2, 20);
        for a in 0..40u32 {
            let nominal = Duration::from_millis((2u64 << a.min(20)).min(20));
            let w = p.wait(a);
            assert!(w >= nominal / 2 && w <= nominal, "attempt {a}: {w:?}");
            assert_eq!(w, p.wait(a), "the same seed, op and attempt wait the same");
        }
        let other = p.for_op(4);
        assert!((0..8).any(|a| other.wait(a) != p.wait(a)));
    }
}
