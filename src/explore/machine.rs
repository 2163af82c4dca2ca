//! A step machine's moves in the explorer, shared by every workload's
//! world: one step run on the explored database (and what it answered,
//! for the trace), the statement's name, and the machine's part of a
//! state key.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::explore::db::{encode_value, show};
use crate::statements::OpProgram;
use crate::target::sqlite::client::{exec_step, Journal};
use crate::workload::{Next, StepMachine, StepOutcome};
use rusqlite::Connection;

/// Runs the current step of `m` on `db`. Returns the op's next move (None:
/// the statement failed, which ends the op), the outcome's rows changed,
/// and what the statement answered, for the trace.
pub fn run_step(m: &mut StepMachine<'_>, db: &Connection) -> (Option<Next>, u64, String) {
    let step = m.current_step().expect("a choice names a running machine");
    // The explorer reads the database after every step instead of an
    // error's `maybe_applied`, so the conservative journal costs nothing.
    match exec_step(db, Journal::Off, step, &m.params()) {
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
    format!("{}.{}", p.op, p.steps[i].name)
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
