//! What every workload's `replay` shares about orders: which recorded
//! steps a replay runs ([`Plan`]), which orders of them the steps'
//! intervals allow ([`predecessors`]), the depth-first search over those
//! orders ([`search`]), and the shrinking of a reproducing plan by delta
//! debugging ([`ddmin`], [`fewest_steps`]). The workloads' replays differ
//! in what a step is and what reproduces a finding; they hand that in as
//! a [`Stepper`] and a test.
//!
//! An order is allowed when a step that ended before another began comes
//! first (`validate`'s reasoning, docs/validate.md, "Orders": j ended
//! before i began is a comparison of the two, so leaving steps out removes
//! no constraint between those kept) and each op's steps keep their order.
//! The search tries choices in a fixed order and its budget counts steps
//! taken, never time: the same plan gives the same order every time.
//!
//! Layer: app. Imports nothing of the crate, so both workloads' replays
//! (and validate) may use it.

/// Which recorded ops a replay runs, and how many of each one's steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Indices into the recording's ops, in invoke order.
    pub ops: Vec<usize>,
    /// Per entry of `ops`: how many of its recorded steps run (fewer than
    /// all: the op is cut short after the last, as a crash cuts one).
    pub keep: Vec<usize>,
}

impl Plan {
    /// Every step of `ops`; `recorded(i)` is how many steps op `i` has.
    pub fn whole(ops: Vec<usize>, recorded: impl Fn(usize) -> usize) -> Plan {
        let keep = ops.iter().map(|&i| recorded(i)).collect();
        Plan { ops, keep }
    }

    /// Steps in all.
    pub fn steps(&self) -> usize {
        self.keep.iter().sum()
    }
}

/// Per step (each an interval [start, end]), its immediate predecessors in
/// the interval order: the steps that ended before it began and are not
/// themselves before another such step's start.
pub fn predecessors(steps: &[(u64, u64)]) -> Vec<Vec<usize>> {
    (0..steps.len())
        .map(|i| {
            let before: Vec<usize> = (0..steps.len())
                .filter(|&j| steps[j].1 < steps[i].0)
                .collect();
            let latest_start = before.iter().map(|&k| steps[k].0).max();
            before
                .into_iter()
                .filter(|&j| latest_start.is_none_or(|m| steps[j].1 >= m))
                .collect()
        })
        .collect()
}

/// What a search drives: the state of one replay in progress (a database
/// with a savepoint per step taken, the ops' machines).
pub trait Stepper {
    /// A failure that ends the search (the database refused a savepoint).
    type Error;
    /// Takes node `n` (entry of the plan's ops, position): Ok(true) when
    /// it ran as the search asks (the state moved on), Ok(false) when it
    /// may not be taken here (the state is as before the call).
    fn take(&mut self, n: usize) -> Result<bool, Self::Error>;
    /// Undoes the last node taken, `n`.
    fn untake(&mut self, n: usize) -> Result<(), Self::Error>;
    /// Whether the complete order just taken is the one looked for.
    fn accept(&mut self) -> Result<bool, Self::Error>;
}

/// What a search found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// An allowed order that the stepper accepts; its state is left at the
    /// order's end.
    Accepted,
    /// Every allowed order was run; none is accepted (`leaves`: how many
    /// ran to their end).
    Exhausted {
        /// Orders run to their end.
        leaves: u64,
    },
    /// The budget ran out first.
    Cut,
}

struct Frame {
    choices: Vec<usize>,
    at: usize,
}

/// Depth-first search over the orders of `nodes` (entry of the plan's
/// ops, position; listed in the order choices are tried) that `preds`
/// (per node, the nodes that come before it) allow, each op's nodes in
/// position order, spending at most `budget` steps (what is left stays in
/// it).
///
/// # Errors
/// As the stepper's.
pub fn search<S: Stepper>(
    nodes: &[(usize, usize)],
    preds: &[Vec<usize>],
    budget: &mut u64,
    s: &mut S,
) -> Result<Found, S::Error> {
    let ops = nodes.iter().map(|n| n.0 + 1).max().unwrap_or(0);
    let mut next_pos = vec![0usize; ops];
    let mut done = vec![false; nodes.len()];
    let mut path: Vec<usize> = Vec::new();
    let enabled = |done: &[bool], next_pos: &[usize]| -> Vec<usize> {
        (0..nodes.len())
            .filter(|&n| {
                !done[n] && next_pos[nodes[n].0] == nodes[n].1 && preds[n].iter().all(|&p| done[p])
            })
            .collect()
    };
    let mut leaves = 0u64;
    let mut stack = vec![Frame {
        choices: enabled(&done, &next_pos),
        at: 0,
    }];
    loop {
        let f = stack.last_mut().expect("the root frame is never popped");
        if f.at >= f.choices.len() {
            let Some(n) = path.pop() else {
                return Ok(Found::Exhausted { leaves });
            };
            stack.pop();
            s.untake(n)?;
            next_pos[nodes[n].0] -= 1;
            done[n] = false;
            continue;
        }
        let n = f.choices[f.at];
        f.at += 1;
        if *budget == 0 {
            return Ok(Found::Cut);
        }
        *budget -= 1;
        if !s.take(n)? {
            continue;
        }
        path.push(n);
        next_pos[nodes[n].0] += 1;
        done[n] = true;
        let choices = if path.len() == nodes.len() {
            leaves += 1;
            if s.accept()? {
                return Ok(Found::Accepted);
            }
            Vec::new()
        } else {
            enabled(&done, &next_pos)
        };
        stack.push(Frame { choices, at: 0 });
    }
}

/// The ddmin of `items` (`pinned` are kept in every test and are not in
/// `items`): a subset that `test` takes, from which no single chunk of
/// the last split can be removed. `test` gets the candidate with `pinned`.
///
/// # Errors
/// As `test`.
pub fn ddmin<E>(
    items: Vec<usize>,
    pinned: &[usize],
    test: &mut dyn FnMut(&[usize]) -> Result<bool, E>,
) -> Result<Vec<usize>, E> {
    let with = |s: &[usize]| {
        let mut v: Vec<usize> = s.iter().chain(pinned).copied().collect();
        v.sort_unstable();
        v
    };
    let mut items = items;
    let mut n = 2usize;
    // Leaving every op but the pinned ones out is tried first: a finding
    // its own ops explain needs nothing else.
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
pub fn fewest_steps<E>(
    plan: Plan,
    test: &mut dyn FnMut(&Plan) -> Result<bool, E>,
) -> Result<Plan, E> {
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
        let got = ddmin::<()>((0..20).collect(), &[], &mut |s| {
            calls += 1;
            Ok(s.contains(&3) && s.contains(&17))
        })
        .unwrap();
        assert_eq!(got, vec![3, 17]);
        assert!(calls > 0);
    }

    #[test]
    fn ddmin_keeps_the_pinned_items_in_every_test_and_out_of_the_answer() {
        let got = ddmin::<()>((1..10).collect(), &[0], &mut |s| {
            assert!(s.contains(&0));
            Ok(s.contains(&5))
        })
        .unwrap();
        assert_eq!(got, vec![5]);
    }

    #[test]
    fn ddmin_leaves_everything_out_when_the_pinned_items_suffice() {
        let got = ddmin::<()>((1..10).collect(), &[0], &mut |_| Ok(true)).unwrap();
        assert!(got.is_empty());
    }

    /// Records the orders it completes; accepts none.
    struct Orders {
        taken: Vec<usize>,
        seen: Vec<Vec<usize>>,
    }

    impl Stepper for Orders {
        type Error = ();
        fn take(&mut self, n: usize) -> Result<bool, ()> {
            self.taken.push(n);
            Ok(true)
        }
        fn untake(&mut self, _: usize) -> Result<(), ()> {
            self.taken.pop();
            Ok(())
        }
        fn accept(&mut self) -> Result<bool, ()> {
            self.seen.push(self.taken.clone());
            Ok(false)
        }
    }

    #[test]
    fn search_runs_exactly_the_orders_the_intervals_allow() {
        // Op 0: steps [0,1] then [4,5]; op 1: one step [2,6], which
        // overlaps the second of op 0 but not the first.
        let nodes = [(0, 0), (1, 0), (0, 1)];
        let preds = predecessors(&[(0, 1), (2, 6), (4, 5)]);
        let mut s = Orders {
            taken: vec![],
            seen: vec![],
        };
        let mut budget = 100;
        let got = search(&nodes, &preds, &mut budget, &mut s).unwrap();
        assert_eq!(got, Found::Exhausted { leaves: 2 });
        assert_eq!(s.seen, vec![vec![0, 1, 2], vec![0, 2, 1]]);
    }
}
