//! Shrinking a reproduced replay: delta debugging (Zeller's ddmin) over
//! its ops, then, op by op, the fewest of each one's steps that still
//! reproduce (an op cut short after a step, as a crash cuts one: every
//! shrunk replay is still something the implementation can do). The ops
//! of the events the finding names are never left out, and the group is
//! the finding's, since only its ops are replayed. Each test is a relaxed
//! search with a budget of its own; a test the budget cuts counts as not
//! reproduced, so the result still reproduces but may be larger than a
//! bigger budget would leave.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::search::{DbError, Plan};

/// The ddmin of `items` (`pinned` are kept in every test and are not in
/// `items`): a subset that `test` takes, from which no single chunk of
/// the last split can be removed. `test` gets the candidate with `pinned`.
///
/// # Errors
/// As `test`.
pub fn ddmin(
    items: Vec<usize>,
    pinned: &[usize],
    test: &mut dyn FnMut(&[usize]) -> Result<bool, DbError>,
) -> Result<Vec<usize>, DbError> {
    let with = |s: &[usize]| {
        let mut v: Vec<usize> = s.iter().chain(pinned).copied().collect();
        v.sort_unstable();
        v
    };
    let mut items = items;
    let mut n = 2usize;
    // Leaving every op but the pinned ones out is tried first: a finding
    // its own events explain needs nothing else.
    if !items.is_empty() && test(&with(&[]))? {
        return Ok(Vec::new());
    }
    while items.len() >= 2 {
        let chunks: Vec<Vec<usize>> = split(&items, n);
        let mut reduced = false;
        for c in &chunks {
            if test(&with(c))? {
                items = c.clone();
                n = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && n > 2 {
            for j in 0..chunks.len() {
                let rest: Vec<usize> = chunks
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| k != j)
                    .flat_map(|(_, c)| c.iter().copied())
                    .collect();
                if test(&with(&rest))? {
                    items = rest;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n >= items.len() {
                break;
            }
            n = (2 * n).min(items.len());
        }
    }
    if items.len() == 1 && test(&with(&[]))? {
        items.clear();
    }
    Ok(items)
}

fn split(items: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.min(items.len()).max(1);
    let (q, r) = (items.len() / n, items.len() % n);
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    for k in 0..n {
        let len = q + usize::from(k < r);
        out.push(items[at..at + len].to_vec());
        at += len;
    }
    out
}

/// Per op of `plan`, the fewest of its steps (at least one) with which
/// `test` still takes the plan; ops in plan order, each shortest first.
///
/// # Errors
/// As `test`.
pub fn steps(
    plan: Plan,
    test: &mut dyn FnMut(&Plan) -> Result<bool, DbError>,
) -> Result<Plan, DbError> {
    let mut plan = plan;
    for i in 0..plan.ops.len() {
        let full = plan.keep[i];
        for k in 1..full {
            let mut p = plan.clone();
            p.keep[i] = k;
            if test(&p)? {
                plan = p;
                break;
            }
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_two_items_a_test_needs() {
        let mut calls = 0;
        let got = ddmin((0..20).collect(), &[], &mut |s| {
            calls += 1;
            Ok(s.contains(&3) && s.contains(&17))
        })
        .unwrap();
        assert_eq!(got, vec![3, 17]);
        assert!(calls > 0);
    }

    #[test]
    fn ddmin_keeps_the_pinned_items_in_every_test_and_out_of_the_answer() {
        let got = ddmin((1..10).collect(), &[0], &mut |s| {
            assert!(s.contains(&0));
            Ok(s.contains(&5))
        })
        .unwrap();
        assert_eq!(got, vec![5]);
    }

    #[test]
    fn ddmin_leaves_everything_out_when_the_pinned_items_suffice() {
        let got = ddmin((1..10).collect(), &[0], &mut |_| Ok(true)).unwrap();
        assert!(got.is_empty());
    }
}
