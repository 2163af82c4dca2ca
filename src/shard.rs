//! A sharded run's model: which shard a runner is ([`Shard`]), which
//! groups event ids ([`Shard::id_prefix`]) and outbox message ids
//! ([`Shard::owns_message`]) are its own, the shard record of its history's
//! header ([`shard_header`]), the namespace every
//! shard of a groups run shares ([`namespace_of`]), and the summary's
//! record of a merged run ([`MergeInfo`]). The runs, the audits and the
//! merge read them.
//!
//! Model layer: imports only the history.

use crate::history::ShardHeader;
use serde::{Deserialize, Serialize};

/// Runner i of n of one sharded run (`specstorm run --shard i/n`):
/// several load generators share the work against one HTTP target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// i, 0 <= i < n.
    pub index: u32,
    /// n >= 1.
    pub count: u32,
}

impl Shard {
    /// Why this shard of several is not judged alone (every workload's
    /// verdicts of it say it).
    pub fn not_judged(self) -> String {
        format!(
            "not judged: shard {}/{} holds only its own ops, while the target holds \
             every shard's rows; merge the shards (specstorm merge) to audit the run",
            self.index, self.count
        )
    }

    /// Parses `i/n`. Errors: not two integers, n = 0, or i >= n (the text
    /// says which).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {text:?}: expected i/n with 0 <= i < n, e.g. 0/2");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!("--shard {text:?}: n must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "--shard {text:?}: i must be below n (shards are numbered 0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// The variable a Kubernetes Indexed Job sets to each pod's completion
    /// index, 0 to completions - 1: `run --shard-count N` reads it when no
    /// `--shard-from-env NAME` is given.
    pub const INDEX_VAR: &'static str = "JOB_COMPLETION_INDEX";

    /// Runner i of `count`, with i read from the environment variable
    /// `var` (through `lookup`, so tests need not touch the process's
    /// environment). Errors: the variable unset or empty, not a decimal
    /// integer, or not below `count`, or `count` = 0 (the text says which,
    /// naming the variable and its value).
    pub fn from_env(
        var: &str,
        count: u32,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Shard, String> {
        if count == 0 {
            return Err("--shard-count: N must be at least 1".to_string());
        }
        let value = lookup(var).unwrap_or_default();
        let text = value.trim();
        if text.is_empty() {
            return Err(format!(
                "--shard-count {count}: the shard index is read from ${var}, which is not set \
                 (an Indexed Job sets JOB_COMPLETION_INDEX; elsewhere name the variable with \
                 --shard-from-env NAME, or give --shard i/n)"
            ));
        }
        // Digits only: u32's parser would also take a sign ("+1").
        let digits = text.bytes().all(|b| b.is_ascii_digit());
        let index: u32 = text.parse().ok().filter(|_| digits).ok_or_else(|| {
            format!(
                "--shard-count {count}: ${var} = {value:?} is not a shard index (0 to {})",
                count - 1
            )
        })?;
        if index >= count {
            return Err(format!(
                "--shard-count {count}: ${var} = {index} is not below the shard count \
                 (shards are numbered 0 to {})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// This shard's part of `total` (fresh events): `total / n`, plus one
    /// for the first `total % n` shards, so the parts sum to `total`.
    /// 0 (no limit) stays 0.
    pub fn share(&self, total: u64) -> u64 {
        let n = self.count as u64;
        total / n + u64::from((self.index as u64) < total % n)
    }

    /// The seed of this shard's random streams: the run's seed for shard 0
    /// of 1 (an unsharded run draws exactly what it always drew), else
    /// mixed with i so that shards draw different keys and ids.
    pub(crate) fn seed(shard: Option<Shard>, seed: u64) -> u64 {
        match shard {
            Some(s) if s.count > 1 => {
                seed ^ (u64::from(s.index) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            }
            _ => seed,
        }
    }

    /// The prefix this shard puts before every event id (after the
    /// namespace): `k<i>-` when n > 1. It makes the shards' ids disjoint by
    /// construction, whatever their random draws: two shards can never
    /// send one event id (only a shard's own duplicate-id retries reuse
    /// an id, as in an unsharded run). Plain ids (`keys.event_id` = uuid
    /// or hex32) carry no prefix: the groups' generator hashes it into
    /// them instead.
    pub fn id_prefix(shard: Option<Shard>) -> String {
        match shard {
            Some(s) if s.count > 1 => format!("k{}-", s.index),
            _ => String::new(),
        }
    }

    /// Whether outbox message `msg_id` is this shard's: shard i of n owns
    /// the ids m >= 1 with (m - 1) mod n = i (an unsharded run, or shard 0
    /// of 1, owns them all). Every id of 1..=M is owned by exactly one
    /// shard, so the shards' queues are disjoint by construction and
    /// together hold every delivery of the unsharded queue; shard i's
    /// share of M is [`Shard::share`]`(M)`. An id below 1 is nobody's.
    pub fn owns_message(shard: Option<Shard>, msg_id: i64) -> bool {
        match shard {
            Some(s) if s.count > 1 => {
                msg_id >= 1 && (msg_id - 1) % i64::from(s.count) == i64::from(s.index)
            }
            _ => true,
        }
    }
}

/// The project namespace of every shard of run `run_id`: `s-<run id>.`.
/// Unsharded runs use `r<ms>-<hex>.`, so the two never share a prefix; a
/// run id has no `.`, so one run id's namespace is never a prefix of
/// another's.
pub fn namespace_of(run_id: &str) -> String {
    format!("s-{run_id}.")
}

/// The history header's shard record of a run, if it is sharded: shard
/// `shard` of the run `run_id`, whose clock started at `clock_utc_ns`.
pub fn shard_header(
    shard: Option<Shard>,
    run_id: Option<&str>,
    clock_utc_ns: u64,
) -> Option<ShardHeader> {
    match (shard, run_id) {
        (Some(sh), Some(id)) => Some(ShardHeader {
            index: sh.index,
            count: sh.count,
            run_id: id.to_string(),
            clock_utc_ns,
        }),
        _ => None,
    }
}

/// The summary's record of a merged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct MergeInfo {
    /// The shards' shared run id.
    pub run_id: String,
    /// The shards, by index.
    pub shards: Vec<ShardRef>,
    /// The clock-skew bound, ms: every op's window was widened by half of
    /// it on each side.
    pub clock_skew_ms: f64,
    /// Where the final tables came from.
    pub tables: String,
}

/// One shard of a merged run, as its summary says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ShardRef {
    /// i of i/n.
    pub index: u32,
    /// Its run folder.
    pub run_dir: String,
    /// Its UTC start.
    pub started_utc: String,
    /// Distinct events it generated.
    pub events: u64,
    /// Its own exit code (its audit saw only its own ops).
    pub exit_code: i32,
}
