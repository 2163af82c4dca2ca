//! Reads the states TLC printed: an error trace (`State 1: <Initial
//! predicate>`, then one `/\ var = value` line per variable, a long value
//! continued on indented lines) or a `-dump` of every reachable state (the
//! same, headed `State N:`). Only the few variables `validate` names steps
//! by are parsed: `taken` and `lo` (numbers), `events` (a set of numbers)
//! and `groups` (a set of the spec's group records).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;

/// One state: each variable's value as TLC wrote it, on one line.
pub type State = BTreeMap<String, String>;

/// Calls `each` with every state of `lines`, in order. Lines that belong
/// to no state (TLC's messages before and after a trace) are skipped.
pub fn each_state(
    lines: impl Iterator<Item = std::io::Result<String>>,
    mut each: impl FnMut(&State),
) -> std::io::Result<()> {
    let mut cur: Option<State> = None;
    let mut var: Option<String> = None;
    for line in lines {
        let line = line?;
        if line.starts_with("State ") && line.contains(':') {
            if let Some(s) = cur.take() {
                each(&s);
            }
            cur = Some(State::new());
            var = None;
        } else if let (Some(s), Some(rest)) = (cur.as_mut(), line.strip_prefix("/\\ ")) {
            if let Some((name, value)) = rest.split_once(" = ") {
                s.insert(name.to_string(), value.to_string());
                var = Some(name.to_string());
            }
        } else if let (Some(s), Some(v), true) = (cur.as_mut(), &var, line.starts_with(' ')) {
            if let Some(value) = s.get_mut(v) {
                value.push(' ');
                value.push_str(line.trim());
            }
        } else if !line.trim().is_empty() {
            // Anything else ends the state listing (TLC's closing lines).
            if let Some(s) = cur.take() {
                each(&s);
            }
            var = None;
        }
    }
    if let Some(s) = cur.take() {
        each(&s);
    }
    Ok(())
}

/// The states of TLC's error trace in `text` (empty without one).
pub fn error_trace(text: &str) -> Vec<State> {
    let Some(at) = text.find("Error: The behavior up to this point is:") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let _ = each_state(text[at..].lines().skip(1).map(|l| Ok(l.to_string())), |s| {
        out.push(s.clone())
    });
    out
}

/// The numbers in a value such as `{1, 2, 3}` or `7`.
pub fn numbers(value: &str) -> Vec<i64> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in value.chars().chain([' ']) {
        if c.is_ascii_digit() || (c == '-' && cur.is_empty()) {
            cur.push(c);
        } else {
            if let Ok(n) = cur.parse() {
                out.push(n);
            }
            cur.clear();
        }
    }
    out
}

/// A group record of the spec's state: id (a number of the trace
/// module), status, count.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupRec {
    /// The group's number.
    pub id: i64,
    /// Its status.
    pub status: String,
    /// Its count.
    pub count: i64,
}

/// The records of a value such as
/// `{[id |-> 41, fp |-> 41, status |-> "open", count |-> 10]}`.
pub fn groups(value: &str) -> BTreeSet<GroupRec> {
    let mut out = BTreeSet::new();
    for rec in value.split('[').skip(1) {
        let body = rec.split(']').next().unwrap_or("");
        let mut fields = BTreeMap::new();
        for f in body.split(',') {
            if let Some((k, v)) = f.split_once("|->") {
                fields.insert(k.trim(), v.trim().trim_matches('"'));
            }
        }
        let num = |k: &str| fields.get(k).and_then(|v| v.parse().ok());
        if let (Some(id), Some(count)) = (num("id"), num("count")) {
            out.insert(GroupRec {
                id,
                status: fields.get("status").unwrap_or(&"").to_string(),
                count,
            });
        }
    }
    out
}

/// What a dump of every reachable state of the trace says about the steps.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// Reachable states read.
    pub states: u64,
    /// The steps (1-based) some reachable state has taken.
    pub ever_taken: BTreeSet<i64>,
    /// The largest `lo` (first step not taken) of any reachable state.
    pub max_lo: i64,
    /// Per reachable state that has taken every step: its `events` and
    /// `groups` (distinct pairs).
    pub complete: BTreeSet<(BTreeSet<i64>, BTreeSet<GroupRec>)>,
}

/// Reads a `-dump` file of the trace (`steps` steps).
pub fn reach(dump: impl BufRead, steps: usize) -> std::io::Result<Reach> {
    let mut r = Reach::default();
    each_state(dump.lines(), |s| {
        r.states += 1;
        let taken = s.get("taken").map(|v| numbers(v)).unwrap_or_default();
        if let Some(lo) = s.get("lo").and_then(|v| numbers(v).first().copied()) {
            r.max_lo = r.max_lo.max(lo);
        }
        if taken.len() == steps {
            let events = s.get("events").map(|v| numbers(v)).unwrap_or_default();
            let gs = s.get("groups").map(|v| groups(v)).unwrap_or_default();
            r.complete.insert((events.into_iter().collect(), gs));
        }
        r.ever_taken.extend(taken);
    })?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "Error: Invariant X is violated.\n\
        Error: The behavior up to this point is:\n\
        State 1: <Initial predicate>\n\
        /\\ lo = 1\n\
        /\\ taken = {}\n\
        /\\ groups = {}\n\
        \n\
        State 2: <TNext line 1, col 1 to line 1, col 2 of module T>\n\
        /\\ lo = 1\n\
        /\\ taken = { 2,\n  3 }\n\
        /\\ groups = {[id |-> 41, fp |-> 41, status |-> \"open\", count |-> 10]}\n\
        \n\
        1851 states generated, 1351 distinct states found, 0 states left on queue.\n";

    #[test]
    fn an_error_trace_is_read_with_its_continued_values() {
        let t = error_trace(TRACE);
        assert_eq!(t.len(), 2);
        assert_eq!(numbers(&t[0]["taken"]), Vec::<i64>::new());
        assert_eq!(numbers(&t[1]["taken"]), vec![2, 3]);
        let g = groups(&t[1]["groups"]);
        assert_eq!(
            g.into_iter().collect::<Vec<_>>(),
            vec![GroupRec {
                id: 41,
                status: "open".into(),
                count: 10
            }]
        );
    }

    #[test]
    fn a_dump_gives_the_steps_ever_taken_and_the_complete_states() {
        let dump = TRACE.replace("Error: The behavior up to this point is:\n", "");
        let r = reach(dump.as_bytes(), 2).unwrap();
        assert_eq!(r.states, 2);
        assert_eq!(r.ever_taken.iter().copied().collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(r.max_lo, 1);
        assert_eq!(r.complete.len(), 1);
    }
}
