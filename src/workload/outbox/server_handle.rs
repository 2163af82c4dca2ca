//! One outbox delivery on the reference server (`POST /v1/messages`): the
//! variant's `handle` step machine run on a pool worker's connection,
//! every step its own autocommit statement (exactly as the in-process
//! outbox runtime runs it), with the test-only fault hook (a crash after a
//! step, a crash drawn after every step, a pause before a step, the
//! schedule fuzzer's points). After the
//! machine ran through `handle.ack`, the out-queue record the attempt
//! published is read back for the answer's `sent`.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::AttemptEnd;
use crate::clock::wall_ms;
use crate::draws::draw_rng;
use crate::fault_hook::HandleHook;
use crate::history::{CompletionType, OpResult};
use crate::statements::OpProgram;
use crate::statements::StepDef;
use crate::target::sqlite::client::{Journal, StepError};
use crate::txn_backoff::TxnPolicy;
use crate::workload::StepOutcome;
use crate::workload::{StepMachine, Value};
use rand::RngExt;
use rusqlite::{Connection, OptionalExtension};

/// One delivery to handle: the message, its duplicate number and the
/// attempt's transaction id (the server's, unique per request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandleOp {
    /// Input message id.
    pub msg_id: i64,
    /// Duplicate number of the delivery.
    pub dup_id: i64,
    /// The attempt's transaction id.
    pub tx_id: i64,
}

/// How one delivery ended on the server.
#[derive(Debug, Clone, PartialEq)]
pub struct HandleAnswer {
    /// ok (ran through `ack`), fail or info, as the in-process runtime
    /// reads an attempt ([`attempt_result`]).
    pub kind: CompletionType,
    /// Acked, lost CAS, crashed, error.
    pub end: AttemptEnd,
    /// Why it did not succeed; the step a hook crash followed.
    pub result: OpResult,
    /// Acked: the out-queue record it published, (msg_id, ver); None when
    /// it published nothing (a variant that may skip its publish).
    pub sent: Option<(i64, i64)>,
}

/// Runs `handle` for `op` on `conn` with the hook's faults; its pauses
/// and the transaction blocks' backoff (`policy`) wait on `pauses` (a stop
/// cuts them short).
pub fn run_handle(
    conn: &Connection,
    journal: Journal,
    program: &OpProgram,
    op: &HandleOp,
    hook: &HandleHook,
    (pauses, policy): (&crate::control::Control, TxnPolicy),
) -> HandleAnswer {
    let builtins = vec![
        Value::Int(op.msg_id),
        Value::Int(op.dup_id),
        Value::Int(op.tx_id),
        Value::Int(wall_ms()),
    ];
    let mut hooks = HookFaults {
        conn,
        hook,
        pauses,
        policy,
        paused: Vec::new(),
        crashed_once: false,
        published: None,
        program,
    };
    let (end, kind, result) =
        crate::step_driver::drive((conn, journal), program, builtins, &mut hooks);
    let published = hooks.published;
    let sent = if end == AttemptEnd::Acked {
        published.and_then(|rowid| sent_row(conn, rowid).ok().flatten())
    } else {
        None
    };
    HandleAnswer {
        kind,
        end,
        result,
        sent,
    }
}

/// The out-queue row a publish inserted (its rowid), as (msg_id, ver).
/// Reads the file's own `out_queue` table: the statement files name it so
/// (an INSERT's rowid is only meaningful in the table it went to).
fn sent_row(conn: &Connection, rowid: i64) -> rusqlite::Result<Option<(i64, i64)>> {
    conn.query_row(
        "SELECT msg_id, ver FROM out_queue WHERE rowid = ?1",
        [rowid],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
    )
    .optional()
}

/// The server's handle attempt as the step driver's hooks: the fault
/// hook's pauses (once per named step) and crashes (a named step once, or
/// a drawn chance after each executed step), and the rowid of the
/// attempt's last publish.
struct HookFaults<'a> {
    conn: &'a Connection,
    hook: &'a HandleHook,
    pauses: &'a crate::control::Control,
    policy: TxnPolicy,
    paused: Vec<&'a str>,
    crashed_once: bool,
    /// The rowid of this attempt's last publish (the step named `publish`).
    published: Option<i64>,
    program: &'a OpProgram,
}

impl<'a> crate::step_driver::StepHooks<'a> for &mut HookFaults<'a> {
    type Out = (AttemptEnd, CompletionType, OpResult);

    fn before(&mut self, _n: usize, _i: usize, step: &'a StepDef) {
        if let Some((_, d)) = self
            .hook
            .pauses
            .iter()
            .find(|(s, _)| *s == step.name && !self.paused.contains(&s.as_str()))
        {
            self.paused.push(&step.name);
            // Cut short when the server shuts down.
            self.pauses.sleep(*d);
        }
    }

    fn txn_policy(&self) -> TxnPolicy {
        self.policy
    }

    fn wait(&mut self, d: std::time::Duration) {
        // Cut short when the server shuts down.
        self.pauses.sleep(d);
    }

    fn fuzz(&mut self, n: usize) -> Option<crate::fuzz::Delay> {
        // The bench recorded its points when it sent them.
        self.hook
            .fuzz
            .iter()
            .find(|(at, _)| *at == n)
            .map(|(_, d)| *d)
    }

    fn after(&mut self, i: usize, _start: u64, _end: u64, r: &Result<StepOutcome, StepError>) {
        if let Ok(out) = r {
            if self.program.steps[i].name == "publish" && out.changes > 0 {
                self.published = Some(self.conn.last_insert_rowid());
            }
        }
    }

    fn crash(&mut self, n: usize, _i: usize, step: &'a StepDef) -> bool {
        let hook = self.hook;
        let crash = (!self.crashed_once && hook.crash_after.as_deref() == Some(&step.name))
            || hook.crash_p.as_ref().is_some_and(|(p, salt, only)| {
                only.as_deref().is_none_or(|s| s == step.name)
                    && draw_rng(*salt, 0, 0, n as u32).random_bool(*p)
            });
        self.crashed_once |= hook.crash_after.as_deref() == Some(&step.name);
        crash
    }

    fn end(self, m: &StepMachine<'a>, end: crate::step_driver::End) -> Self::Out {
        super::runtime::outbox_end(m, self.program, end, "crashed by the fault hook after step")
    }
}
