//! The verdicts of a sharded run: every invariant `unknown` for a shard
//! of several judged alone ([`shard_verdicts`]), and the clock-skew note on
//! the verdicts of a merged history ([`note_skew`]). The run, its audit and
//! the merge give them alike.
//!
//! Workload layer: imports the checkers' names, the verdicts, the history
//! and the shard model.

use crate::history::MergedHeader;
use crate::shard::Shard;
use crate::verdict::CheckResult;

/// The verdicts a shard of n > 1 gives for itself: every invariant
/// `unknown`, None for a run that is not such a shard. A shard's history
/// holds only its own ops while the target's namespace holds every
/// shard's rows, so judging it alone would read the other shards' events
/// as counts nothing explains (a false violation); only the merge of all
/// shards can be judged (`specstorm merge`).
pub fn shard_verdicts(shard: Option<Shard>) -> Option<Vec<CheckResult>> {
    let sh = shard.filter(|s| s.count > 1)?;
    Some(crate::workload::groups::checker::all_unknown(
        "the history of every shard",
        &format!("shard {}/{} only", sh.index, sh.count),
        &sh.not_judged(),
    ))
}

/// The note every invariant of a merged history carries: how far its
/// ordering across runners is trusted.
pub fn skew_note(m: &MergedHeader) -> String {
    format!(
        "merged from {} shards: times across runners are trusted only up to the clock-skew \
         bound {:.3} ms (every op's window widened by half of it on each side)",
        m.shards,
        m.clock_skew_ns as f64 / 1e6
    )
}

/// Adds [`skew_note`] to the one checker that orders ops in time
/// (NoMissedRegression); the others judge per event id, all of whose
/// attempts lie in one shard, or the tables alone.
pub fn note_skew(results: &mut [CheckResult], m: &MergedHeader) {
    for r in results
        .iter_mut()
        .filter(|r| r.invariant == crate::workload::groups::checker::no_missed_regression::NAME)
    {
        r.notes.push(skew_note(m));
    }
}
