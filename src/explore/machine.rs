//! A step machine's moves in the explorer, shared by every workload's
//! world: one step run on the explored database (and what it answered,
//! for the trace), the statement's name, and the machine's part of a
//! state key.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::explore::db::{encode_value, show};
use crate::statements::OpProgram;
use crate::target::sqlite::client::{exec_step, exec_step_in_txn, Journal};
use crate::workload::{Next, StepMachine, StepOutcome};
use rusqlite::Connection;

/// Runs the current step of `m` on `db`: one step, or, where the step
/// opens a transaction block, every step of the block as one move (a
/// committed block is one atomic step of the search; docs/groups.md,
/// "Transaction blocks in the explorer", argues why that is sound). Returns
/// the op's next move (None: a statement failed, which ends the op; a
/// block's changes are then undone, as its ROLLBACK does), each executed
/// step's index and rows changed, and what the statements answered, for
/// the trace.
pub fn run_step(
    m: &mut StepMachine<'_>,
    db: &Connection,
) -> (Option<Next>, Vec<(usize, u64)>, String) {
    let i = m.current().expect("a choice names a running machine");
    let Some(txn) = m.program().txn_of(i).copied() else {
        let (next, changes, said) = one_step(m, db, false);
        return (next, vec![(i, changes)], said);
    };
    db.execute_batch("SAVEPOINT explored_block")
        .expect("a savepoint on the explored database");
    let mut ran = Vec::new();
    let mut said = Vec::new();
    let next = loop {
        let at = m.current().expect("a block's steps run until it ends");
        let (next, changes, s) = one_step(m, db, true);
        ran.push((at, changes));
        said.push(format!("{}: {s}", m.program().steps[at].name));
        match next {
            Some(Next::Continue) if at != txn.last => {}
            Some(Next::Continue | Next::Stopped { .. } | Next::Finished) => break next,
            // A failure inside the block rolls it all back.
            _ => break None,
        }
    };
    let end = if next.is_some() {
        "RELEASE explored_block"
    } else {
        ran.clear();
        "ROLLBACK TO explored_block; RELEASE explored_block"
    };
    db.execute_batch(end)
        .expect("closing a savepoint on the explored database");
    (next, ran, said.join("; "))
}

/// Runs the current step of `m` on `db` (inside an open block when
/// `in_txn`).
fn one_step(m: &mut StepMachine<'_>, db: &Connection, in_txn: bool) -> (Option<Next>, u64, String) {
    let step = m.current_step().expect("a choice names a running machine");
    // The explorer reads the database after every step instead of an
    // error's `maybe_applied`, so the conservative journal costs nothing.
    // Inside the explorer's own savepoints (Restore::Savepoint) a step
    // runs as in an open block: an autocommit step's check for a
    // transaction left open would roll them back.
    let r = if in_txn || !db.is_autocommit() {
        exec_step_in_txn(db, Journal::Off, step, &m.params())
    } else {
        exec_step(db, Journal::Off, step, &m.params())
    };
    match r {
        Ok(out) => {
            let said = answered(&step.columns, &out);
            let changes = out.changes;
            (Some(m.advance(out)), changes, said)
        }
        Err(e) => (None, 0, format!("error: {}", e.message)),
    }
}

fn answered(columns: &[String], out: &StepOutcome) -> String {
    let mut said = format!("changes={}", out.changes);
    if !columns.is_empty() {
        let rows: Vec<String> = out
            .rows
            .iter()
            .map(|r| {
                let cols: Vec<String> = columns
                    .iter()
                    .zip(r)
                    .map(|(c, v)| format!("{c}={}", show(v)))
                    .collect();
                cols.join(" ")
            })
            .collect();
        said.push_str(&match rows.len() {
            0 => ", returned no row".to_string(),
            _ => format!(", returned {}", rows.join("; ")),
        });
    }
    said
}

/// The name of the step the machine runs next (`op.step`), for the trace.
pub fn statement(p: &OpProgram, m: &StepMachine<'_>) -> String {
    let i = m.current().expect("a choice names a running machine");
    match p.txn_of(i) {
        Some(t) if t.first == i && t.last > i => format!(
            "{}.{}..{} ({} block)",
            p.op,
            p.steps[i].name,
            p.steps[t.last].name,
            t.mode.name()
        ),
        _ => format!("{}.{}", p.op, p.steps[i].name),
    }
}

/// Appends a machine's position and the values its steps read so far.
pub fn machine_key(m: &StepMachine<'_>, out: &mut Vec<u8>) {
    let pos = m.current().expect("a machine in a state is running");
    out.extend_from_slice(&(pos as u32).to_le_bytes());
    for j in 0..pos {
        for name in &m.program().steps[j].columns {
            match m.column(name, j) {
                Some((s, v)) if s == j => encode_value(v, out),
                _ => out.push(0xff),
            }
        }
    }
}
