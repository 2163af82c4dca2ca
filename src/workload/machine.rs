//! The step machine: one op as a sequence of steps, one statement each,
//! advanced one step at a time by whatever scheduler drives it (the
//! concurrent runtime now, a deterministic explorer later). It holds no
//! connection and does no I/O: the scheduler executes the step the machine
//! names, with the parameters it gives, and feeds the outcome back.
//!
//! Steps run in file order unless a step branches (outbox: `goto-if`,
//! `goto`, `fail-if`). Columns of a step that has not run (skipped by a
//! jump) are NULL; after a backward jump a column keeps the value of its
//! step's last run until that step runs again.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

use super::value::Value;
use crate::statements::{Cond, OpProgram, ParamSource, StepDef, MAX_MACHINE_STEPS};

/// What one executed step did: rows changed (SQLite's `changes()`, 0 for
/// read-only statements) and the rows it returned (one `Vec` per row, in
/// the step's column order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepOutcome {
    /// Rows changed (`changes()`).
    pub changes: u64,
    /// Rows returned, one `Vec` per row.
    pub rows: Vec<Vec<Value>>,
}

/// What the machine does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run the next step.
    Continue,
    /// A `stop-if` held at step `at`: the op ends here.
    Stopped {
        /// Index of the step whose `stop-if` held.
        at: usize,
    },
    /// The last step ran: the op ends.
    Finished,
    /// Step `at` returned more than one row: the op ends as `fail`
    /// (targets/README.md, "Returned columns").
    TooManyRows {
        /// Index of the step.
        at: usize,
        /// Rows it returned (> 1).
        rows: usize,
    },
    /// A `fail-if` held at step `at`: the op ends as a natural failure
    /// (outbox: a lost compare-and-swap).
    FailedIf {
        /// Index of the step whose `fail-if` held.
        at: usize,
    },
    /// The op executed [`MAX_MACHINE_STEPS`] steps without ending (a
    /// backward jump looping under contention): it ends as `fail`.
    StepLimit {
        /// Index of the last step executed.
        at: usize,
    },
}

/// One op in flight: its program, its built-in parameter values, and what
/// each completed step returned.
#[derive(Debug, Clone)]
pub struct StepMachine<'p> {
    program: &'p OpProgram,
    builtins: Vec<Value>,
    /// Per step: the single returned row (all NULL for zero rows), or empty
    /// for steps that return no columns or have not run.
    values: Vec<Vec<Value>>,
    changes: Vec<Option<u64>>,
    pos: usize,
    ended: bool,
    /// Steps executed so far (a step run twice counts twice).
    executed: usize,
    /// Whether any executed step changed a row (a step run again may
    /// overwrite its own count with 0).
    changed: bool,
}

impl<'p> StepMachine<'p> {
    /// A machine at its first step. `builtins` follows `program.builtins`.
    pub fn new(program: &'p OpProgram, builtins: Vec<Value>) -> Self {
        debug_assert_eq!(builtins.len(), program.builtins.len());
        let n = program.steps.len();
        StepMachine {
            program,
            builtins,
            values: vec![Vec::new(); n],
            changes: vec![None; n],
            pos: 0,
            ended: n == 0,
            executed: 0,
            changed: false,
        }
    }

    /// Index of the step to run next, or None once the op has ended.
    pub fn current(&self) -> Option<usize> {
        (!self.ended).then_some(self.pos)
    }

    /// The definition of the step to run next.
    pub fn current_step(&self) -> Option<&'p StepDef> {
        self.current().map(|i| &self.program.steps[i])
    }

    /// The parameter values of the step to run next, in SQLite parameter
    /// index order (index 1 first). Empty once the op has ended.
    pub fn params(&self) -> Vec<&Value> {
        match self.current_step() {
            None => Vec::new(),
            Some(step) => step
                .params
                .iter()
                .map(|src| match *src {
                    ParamSource::Builtin(i) => &self.builtins[i],
                    ParamSource::Column { step, column } => &self.values[step][column],
                })
                .collect(),
        }
    }

    /// Feed the outcome of the current step; returns what happens next.
    /// Panics if the op has already ended (a scheduler bug, not an input error).
    pub fn advance(&mut self, outcome: StepOutcome) -> Next {
        let i = self.current().expect("advance on an ended step machine");
        let step = &self.program.steps[i];
        let nrows = outcome.rows.len();
        self.changes[i] = Some(outcome.changes);
        self.changed |= outcome.changes > 0;
        self.executed += 1;
        if !step.columns.is_empty() {
            if nrows > 1 {
                self.ended = true;
                return Next::TooManyRows { at: i, rows: nrows };
            }
            self.values[i] = match outcome.rows.into_iter().next() {
                Some(row) => row,
                None => vec![Value::Null; step.columns.len()],
            };
        }
        let holds = |c: Cond| match c {
            Cond::Count(s) => s.holds(outcome.changes, nrows),
            Cond::IsNull(col) => self.values[i].get(col).is_none_or(|v| *v == Value::Null),
            Cond::NotNull(col) => self.values[i].get(col).is_some_and(|v| *v != Value::Null),
        };
        if step.fail_if.is_some_and(holds) {
            self.ended = true;
            return Next::FailedIf { at: i };
        }
        if step
            .stop_if
            .is_some_and(|s| s.holds(outcome.changes, nrows))
        {
            self.ended = true;
            return Next::Stopped { at: i };
        }
        let jump = match step.goto_if {
            Some((c, to)) if holds(c) => Some(to),
            _ => step.goto,
        };
        self.pos = jump.unwrap_or(self.pos + 1);
        if self.pos == self.program.steps.len() {
            self.ended = true;
            Next::Finished
        } else if self.executed >= MAX_MACHINE_STEPS.max(self.program.steps.len()) {
            self.ended = true;
            Next::StepLimit { at: i }
        } else {
            Next::Continue
        }
    }

    /// Steps executed so far (a step run twice counts twice).
    pub fn executed(&self) -> usize {
        self.executed
    }

    /// Rows changed by step `i`, if it ran.
    pub fn changes(&self, i: usize) -> Option<u64> {
        self.changes[i]
    }

    /// Whether any step that ran changed a row (an op that failed after
    /// such a step partly happened: its completion is `info`, not `fail`).
    pub fn changed_any(&self) -> bool {
        self.changed
    }

    /// The latest value of column `name` returned by steps `0..=upto`,
    /// with the index of the step that returned it.
    pub fn column(&self, name: &str, upto: usize) -> Option<(usize, &Value)> {
        (0..=upto.min(self.program.steps.len() - 1))
            .rev()
            .find_map(|s| {
                let step = &self.program.steps[s];
                let c = step.columns.iter().position(|c| c == name)?;
                self.values[s].get(c).map(|v| (s, v))
            })
    }

    /// The program this machine runs.
    pub fn program(&self) -> &'p OpProgram {
        self.program
    }
}
