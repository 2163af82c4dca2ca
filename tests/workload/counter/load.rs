//! The counter's statement file (`schema`, `increment.*`, `export.count`)
//! and its load: [`WORKERS`] threads, one connection each, that increment
//! [`ROUNDS`] times in lock-step (every worker runs a step, then all wait
//! for each other), so that a read-then-write design loses increments on
//! every round, whatever the machine's speed: deterministic, not a race.

use specstorm::history::{Completion, CompletionType, Entry, Invoke, OpKind, OpResult};
use specstorm::prepare::RunError;
use specstorm::scenario::Scenario;
use specstorm::statements::StatementFile;
use specstorm::stats::Stats;
use specstorm::workload::traits::{LoadCx, Loaded};
use std::sync::{Arc, Barrier};

/// Concurrent workers.
pub const WORKERS: usize = 2;
/// Increments per worker.
pub const ROUNDS: u64 = 50;
/// The naive variant's final count: every round loses all increments
/// but one.
pub const ROUNDS_NAIVE_COUNT: u64 = ROUNDS;

/// The statement file, checked.
pub struct Statements {
    pub schema: String,
    /// The steps of one increment, in file order.
    pub increment: Vec<String>,
    pub export_count: String,
}

impl Statements {
    /// The blocks the counter needs. Errors: file, line, reason (exit 2).
    pub fn of(file: &StatementFile) -> Result<Statements, RunError> {
        let block = |name: &str| {
            file.blocks
                .iter()
                .find(|b| b.name == name)
                .map(|b| b.sql.clone())
        };
        let missing = |name: &str| {
            RunError::Input(format!(
                "{}:1: no `-- name: {name}` block",
                file.path.display()
            ))
        };
        let increment: Vec<String> = file
            .blocks
            .iter()
            .filter(|b| b.name.starts_with("increment."))
            .map(|b| b.sql.clone())
            .collect();
        if increment.is_empty() {
            return Err(missing("increment.<step>"));
        }
        Ok(Statements {
            schema: block("schema").ok_or_else(|| missing("schema"))?,
            increment,
            export_count: block("export.count").ok_or_else(|| missing("export.count"))?,
        })
    }
}

/// What the load leaves for the audit.
pub struct Outcome {
    /// The counter as read after the load; None when it could not be read.
    pub final_count: Option<i64>,
}

/// Runs the load, then reads the final count.
pub fn run(
    s: &Scenario,
    st: &Statements,
    kind: OpKind,
    cx: &LoadCx<'_>,
) -> Result<(Outcome, Loaded), RunError> {
    let target = s.target.sqlite();
    let db = target
        .path
        .clone()
        .unwrap_or_else(|| cx.run_dir.join("target.db"));
    let open = || {
        specstorm::target::sqlite::client::open(&db, &target)
            .map_err(|e| RunError::Target(format!("{}: {e}", db.display())))
    };
    open()?
        .execute_batch(&st.schema)
        .map_err(|e| RunError::Target(format!("schema: {e}")))?;
    let barrier = Arc::new(Barrier::new(WORKERS));
    let start = cx.clock.now();
    let stats: Vec<Stats> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let conn = open();
                let barrier = barrier.clone();
                scope.spawn(move || {
                    let mut stats = Stats::default();
                    let conn = conn.ok();
                    for round in 0..ROUNDS {
                        let op = round * WORKERS as u64 + w as u64 + 1;
                        let t0 = cx.clock.now();
                        cx.sink.send_entry(&Entry::Invoke(Invoke {
                            t: t0,
                            op,
                            worker: w as u32,
                            f: kind,
                            delivery: None,
                            event_id: None,
                            project: String::new(),
                            fingerprint: String::new(),
                            group_id: String::new(),
                            attempt: None,
                            intended: None,
                        }));
                        let mut n: i64 = 0;
                        let mut error = None;
                        let mut wrote = false;
                        for sql in &st.increment {
                            // Every worker runs this step before any runs the next.
                            barrier.wait();
                            let Some(conn) = &conn else {
                                error = Some("no connection".to_string());
                                continue;
                            };
                            if error.is_some() {
                                continue;
                            }
                            let done = conn.prepare(sql).and_then(|mut q| {
                                if let Some(i) = q.parameter_index(":n")? {
                                    q.raw_bind_parameter(i, n)?;
                                }
                                if q.column_count() > 0 {
                                    let mut rows = q.raw_query();
                                    if let Some(row) = rows.next()? {
                                        n = row.get(0)?;
                                    }
                                } else {
                                    q.raw_execute()?;
                                    wrote = true;
                                }
                                Ok(())
                            });
                            if let Err(e) = done {
                                error = Some(e.to_string());
                            }
                        }
                        let t1 = cx.clock.now();
                        // A failed write may or may not have applied.
                        let (ty, result) = match error {
                            None => (CompletionType::Ok, OpResult::default()),
                            Some(e) => (
                                if wrote {
                                    CompletionType::Info
                                } else {
                                    CompletionType::Fail
                                },
                                OpResult {
                                    error: Some(e),
                                    ..OpResult::default()
                                },
                            ),
                        };
                        stats.record(kind, ty, t1 - t0);
                        cx.sink.send_entry(&Entry::completion(
                            ty,
                            Completion {
                                t: t1,
                                op,
                                worker: w as u32,
                                f: kind,
                                result,
                            },
                        ));
                    }
                    stats
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker"))
            .collect()
    });
    let mut all = Stats::default();
    for s in &stats {
        all.merge(s);
    }
    let read_start = cx.clock.now();
    let final_count = open().ok().and_then(|c| {
        c.query_row(&st.export_count, [], |r| r.get::<_, i64>(0))
            .ok()
    });
    let read_end = cx.clock.now();
    let end = cx.clock.now();
    Ok((
        Outcome { final_count },
        Loaded {
            ops: WORKERS as u64 * ROUNDS,
            elapsed_ns: end - start,
            stats: all,
            tables_read: final_count.map(|_| [read_start, read_end]),
            target_desc: format!("sqlite {}", db.display()),
            target_error: final_count
                .is_none()
                .then(|| "the final count could not be read".to_string()),
            wal: None,
        },
    ))
}
