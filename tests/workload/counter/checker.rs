//! The counter's facts (increments acknowledged, failed, indeterminate,
//! read back from the history) and its one checker, `NoLostIncrement`.
//!
//! Premises: every increment adds one at most once (a write is one
//! autocommit statement), and nothing else writes the counter; so the
//! final count lies between the acknowledged increments and those that may
//! have happened (acknowledged plus indeterminate). Below: an
//! acknowledged increment was lost. Above: an increment happened that
//! nobody sent.

use specstorm::history::{reader, Entry};
use specstorm::prepare::RunError;
use specstorm::verdict::{CheckResult, Finding};
use std::path::Path;

/// What the history says of the increments.
#[derive(Debug, Default)]
pub struct Facts {
    pub ops: u64,
    pub ok: u64,
    pub fail: u64,
    pub info: u64,
}

impl Facts {
    /// Reads the history, handing every entry to `feed`.
    pub fn read(history: &Path, feed: &mut dyn FnMut(&Entry)) -> Result<Facts, RunError> {
        let mut f = Facts::default();
        for e in reader::read(history)? {
            let e = e?;
            feed(&e);
            match e {
                Entry::Invoke(_) => f.ops += 1,
                Entry::Ok(_) => f.ok += 1,
                Entry::Fail(_) => f.fail += 1,
                Entry::Info(_) => f.info += 1,
                _ => {}
            }
        }
        // An op without a completion may have happened.
        f.info += f.ops - f.ok - f.fail - f.info;
        Ok(f)
    }
}

/// A finding in the counter's words.
pub fn finding(expected: &str, found: &str, explanation: &str) -> Finding {
    Finding {
        group: None,
        event_id: None,
        msg_id: None,
        expected: expected.into(),
        found: found.into(),
        explanation: explanation.into(),
        evidence: Vec::new(),
    }
}

/// `NoLostIncrement`: acknowledged <= final count <= acknowledged +
/// indeterminate.
pub fn no_lost_increment(f: &Facts, count: i64) -> CheckResult {
    let mut r = CheckResult::new(super::NO_LOST_INCREMENT);
    let (low, high) = (f.ok as i64, (f.ok + f.info) as i64);
    if count < low {
        r.violation(finding(
            &format!("a count of at least {low} (the increments acknowledged)"),
            &format!("{count}"),
            &format!("{} acknowledged increments were lost", low - count),
        ));
    } else if count > high {
        r.violation(finding(
            &format!("a count of at most {high} (increments that may have happened)"),
            &format!("{count}"),
            "the counter grew by more than the increments sent",
        ));
    }
    r
}
