//! A groups op (ingest or resolve) on a worker of the reference server's
//! pool ([`crate::server::pool`]): the variant's step machine, every step
//! its own autocommit statement (as the in-process SQLite target runs it,
//! via [`super::runtime::run_steps_policy`]), with the test-only fault
//! hook's pauses and crash, and the step log a crash's answer reports.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::runtime::{run_steps_policy, TxnNote};
use super::statements::GroupsVariant;
use super::{ingest_result, resolve_result, IngestOp, ResolveOp};
use crate::clock::wall_ms;
use crate::history::{CompletionType, HookStep, OpResult};
use crate::nemesis::OpFaults;
use crate::server::pool::Worker;
use crate::statements::OpProgram;
use crate::target::sqlite::client::StepError;
use crate::workload::StepOutcome;

/// The log's target stays the one the pool's worker had before the
/// groups ops moved here: whoever reads the server's log sees no change.
const LOG_TARGET: &str = "specstorm::server::pool";

/// How one op ended: its completion type (`ok`, `fail`, `info`) and what
/// the step machine made of it.
#[derive(Debug, Clone)]
pub struct OpAnswer {
    /// `ok`, `fail` (certainly not applied) or `info` (indeterminate).
    pub kind: CompletionType,
    /// Accepted/duplicate, resolved/refused with its probe, or the error.
    pub result: OpResult,
    /// The op ended on a step SQLite refused as busy or locked (from the
    /// step's error code): with `fail`, nothing applied and the op may
    /// succeed if sent again.
    pub busy: bool,
    /// Every step the op ran to completion, in order, with the rows it
    /// changed (what the in-process step log would know of it, but times).
    pub steps: Vec<HookStep>,
}

/// The step log of one op on a worker: what [`OpAnswer`] reports besides
/// the result.
#[derive(Default)]
struct Ran {
    /// Keep each step's name and changes (for the fault hook's report).
    record: bool,
    busy: bool,
    steps: Vec<HookStep>,
}

impl Ran {
    fn step(&mut self, program: &OpProgram, i: usize, r: &Result<StepOutcome, StepError>) {
        match r {
            Ok(_) if !self.record => {}
            Ok(out) => self.steps.push(HookStep {
                step: program.steps[i].name.clone(),
                changes: out.changes,
            }),
            Err(e) => self.busy = e.busy,
        }
    }
}

/// One op for a worker.
#[derive(Debug)]
pub enum Op {
    /// Ingest one event.
    Ingest(IngestOp),
    /// Resolve one group.
    Resolve(ResolveOp),
}

/// Runs `op` of `variant` on `w`'s connection with the hook's `faults`.
pub fn run_op(w: &Worker<'_>, variant: &GroupsVariant, op: &Op, faults: &OpFaults) -> OpAnswer {
    let (program, builtins, counting) = match op {
        Op::Ingest(op) => (
            &variant.ingest,
            op.builtins(wall_ms()),
            Some(variant.counting_step),
        ),
        Op::Resolve(op) => (&variant.resolve, op.builtins(wall_ms()), None),
    };
    // The steps are reported only by the fault hook's crash answer: no
    // copies of step names for the ops no crash is planned for.
    let ran = Ran {
        record: faults.crash_after.is_some(),
        ..Ran::default()
    };
    // Where the open transaction block's attempt began in the step
    // report: a rollback forgets its steps.
    let mark = std::cell::Cell::new(0usize);
    let ran = std::cell::RefCell::new(ran);
    let (kind, result) = run_steps_policy(
        (w.conn, w.journal),
        program,
        builtins,
        (faults, w.policy),
        (
            || None,
            |d| {
                w.pauses.sleep(d);
            },
            || 0,
        ),
        (
            |i, _, _, r| ran.borrow_mut().step(program, i, r),
            |_, _, _| {},
            // The bench recorded the fuzzer's points when it sent them.
            |_, _, _, _, _| {},
            |note: TxnNote<'_, '_>| {
                let mut ran = ran.borrow_mut();
                match note {
                    TxnNote::Begun => {
                        mark.set(ran.steps.len());
                        ran.busy = false;
                    }
                    TxnNote::RolledBack(_) => {
                        let m = mark.get();
                        ran.steps.truncate(m);
                    }
                    TxnNote::Committed(_) => {}
                }
            },
        ),
        |m, n| match counting {
            Some(c) => ingest_result(m, n, c),
            None => resolve_result(m, n),
        },
    );
    let ran = ran.into_inner();
    tracing::trace!(target: LOG_TARGET, ?op, ?kind, ?result, "op done");
    OpAnswer {
        kind,
        result,
        busy: ran.busy,
        steps: ran.steps,
    }
}
