//! The final tables of an outbox run, as the variant's `export.*`
//! statements map them onto the canonical ones (`docs/outbox.md`, "The
//! tables"): `state_log`,
//! `outbox`, `out_queue`, `processed`. Read once, in one read transaction,
//! after the load drained.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use rusqlite::types::Value as Sql;
use rusqlite::Connection;
use std::collections::{HashMap, HashSet};

/// One `state_log` row. Integers that were not integers in the database
/// are None here and named in `bad_values` (TypeOK reports them).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StateRow {
    /// The version (the head is the highest).
    pub ver: Option<i64>,
    /// The message of the change (or of the change a cleanup closes).
    pub msg_id: Option<i64>,
    /// The transaction marker: set on a change of the protocol, NULL on a
    /// cleanup.
    pub tx_id: Option<i64>,
    /// `init` (ver 0), `change` or `cleanup`.
    pub kind: String,
}

impl StateRow {
    /// `state_log(ver=.., msg=.., tx=.., kind)`, for findings.
    pub fn describe(&self) -> String {
        format!(
            "state_log(ver={}, msg_id={}, tx_id={}, {})",
            opt(self.ver),
            opt(self.msg_id),
            opt(self.tx_id),
            self.kind
        )
    }

    /// A business state change (cleanups and the head row are not).
    pub fn is_change(&self) -> bool {
        self.kind == "change"
    }
}

/// One `out_queue` row: one publish (resends included).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutRow {
    /// Publication order.
    pub seq: Option<i64>,
    /// The message published.
    pub msg_id: Option<i64>,
    /// The base version it carries.
    pub ver: Option<i64>,
}

impl OutRow {
    /// `out_queue(seq=.., msg=.., ver=..)`, for findings.
    pub fn describe(&self) -> String {
        format!(
            "out_queue(seq={}, msg_id={}, ver={})",
            opt(self.seq),
            opt(self.msg_id),
            opt(self.ver)
        )
    }
}

fn opt(v: Option<i64>) -> String {
    v.map_or("NULL".into(), |v| v.to_string())
}

/// The canonical tables of one outbox run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutboxTables {
    /// `export.state_log`.
    pub state_log: Vec<StateRow>,
    /// `export.outbox` (None: the variant has no outbox).
    pub outbox: Option<Vec<(Option<i64>, Option<i64>)>>,
    /// `export.out_queue`.
    pub out_queue: Vec<OutRow>,
    /// `export.processed`: (msg_id, dup_id).
    pub processed: Vec<(Option<i64>, Option<i64>)>,
    /// Values that were not of their canonical type: "table.column = value".
    pub bad_values: Vec<String>,
    /// When the read transaction began and ended, ns since run start.
    pub read_start: u64,
    /// See `read_start`.
    pub read_end: u64,
}

impl OutboxTables {
    /// Rows of `state_log` of message `m` that are changes.
    pub fn changes_of(&self, m: i64) -> Vec<&StateRow> {
        self.state_log
            .iter()
            .filter(|r| r.is_change() && r.msg_id == Some(m))
            .collect()
    }

    /// Rows of `out_queue` of message `m`.
    pub fn out_of(&self, m: i64) -> Vec<&OutRow> {
        self.out_queue
            .iter()
            .filter(|r| r.msg_id == Some(m))
            .collect()
    }

    /// The rows of each message, indexed once (see [`RowsByMsg`]).
    pub fn by_msg(&self) -> RowsByMsg<'_> {
        let mut ix = RowsByMsg::default();
        for r in self.state_log.iter().filter(|r| r.is_change()) {
            if let Some(m) = r.msg_id {
                ix.changes.entry(m).or_default().push(r);
            }
        }
        for r in &self.out_queue {
            if let Some(m) = r.msg_id {
                ix.outs.entry(m).or_default().push(r);
            }
        }
        ix.processed = self
            .processed
            .iter()
            .filter_map(|&(m, d)| Some((m?, d?)))
            .collect();
        ix
    }

    /// Whether `processed` holds (m, d).
    pub fn processed_holds(&self, m: i64, d: u32) -> bool {
        self.processed
            .iter()
            .any(|&(pm, pd)| pm == Some(m) && pd == Some(d as i64))
    }
}

/// The rows of each message, for the checkers that ask message by message.
/// Built once in one pass over the tables: asking [`OutboxTables`] itself
/// scans every row per message, which made the audit quadratic (a
/// 100,000-message nightly run took most of an hour to judge).
#[derive(Debug, Default)]
pub struct RowsByMsg<'a> {
    changes: HashMap<i64, Vec<&'a StateRow>>,
    outs: HashMap<i64, Vec<&'a OutRow>>,
    processed: HashSet<(i64, i64)>,
}

impl<'a> RowsByMsg<'a> {
    /// As [`OutboxTables::changes_of`], rows in table order.
    pub fn changes_of(&self, m: i64) -> &[&'a StateRow] {
        self.changes.get(&m).map_or(&[], Vec::as_slice)
    }

    /// As [`OutboxTables::out_of`], rows in table order.
    pub fn out_of(&self, m: i64) -> &[&'a OutRow] {
        self.outs.get(&m).map_or(&[], Vec::as_slice)
    }

    /// As [`OutboxTables::processed_holds`].
    pub fn processed_holds(&self, m: i64, d: u32) -> bool {
        self.processed.contains(&(m, i64::from(d)))
    }
}

/// The queries that map a database onto the canonical tables, each
/// giving the canonical columns in order (`docs/outbox.md`, "The
/// tables"): a statement file's `export.*`, or a mapped service's
/// `[audit] export.*`.
#[derive(Debug, Clone, Copy)]
pub struct ExportQueries<'a> {
    /// `export.state_log`: ver, msg_id, tx_id, kind.
    pub state_log: &'a str,
    /// `export.outbox`: msg_id, ver (None: the design has no outbox).
    pub outbox: Option<&'a str>,
    /// `export.out_queue`: seq, msg_id, ver.
    pub out_queue: &'a str,
    /// `export.processed`: msg_id, dup_id.
    pub processed: &'a str,
}

impl<'a> ExportQueries<'a> {
    /// A statement file's exports.
    pub fn of(variant: &'a crate::workload::outbox::statements::OutboxVariant) -> Self {
        ExportQueries {
            state_log: &variant.export_state_log,
            outbox: variant.export_outbox.as_deref(),
            out_queue: &variant.export_out_queue,
            processed: &variant.export_processed,
        }
    }
}

/// Reads the canonical tables with the variant's exports, in one read
/// transaction; `now` gives the read's times (ns since run start).
/// Errors: SQLite's (an export failing on the real database).
pub fn read(
    conn: &mut Connection,
    variant: &crate::workload::outbox::statements::OutboxVariant,
    now: &dyn Fn() -> u64,
) -> rusqlite::Result<OutboxTables> {
    read_with(conn, ExportQueries::of(variant), now)
}

/// [`read`] through `queries`.
pub fn read_with(
    conn: &mut Connection,
    queries: ExportQueries<'_>,
    now: &dyn Fn() -> u64,
) -> rusqlite::Result<OutboxTables> {
    let tx = conn.transaction()?;
    let read_start = now();
    let mut t = read_rows_with(&tx, queries)?;
    t.read_start = read_start;
    t.read_end = now();
    tx.commit()?;
    Ok(t)
}

/// The canonical tables through the file's `export.*` statements, on
/// `conn` as it is (no transaction, no read interval: [`read`] adds them
/// for a load run; the explorer reads its in-memory state this way).
/// Values of a wrong type are listed in `bad_values`, never dropped.
///
/// # Errors
/// An export statement failed.
pub fn read_rows(
    conn: &rusqlite::Connection,
    variant: &crate::workload::outbox::statements::OutboxVariant,
) -> rusqlite::Result<OutboxTables> {
    read_rows_with(conn, ExportQueries::of(variant))
}

/// [`read_rows`] through `queries`.
///
/// # Errors
/// A query failed.
pub fn read_rows_with(
    conn: &rusqlite::Connection,
    queries: ExportQueries<'_>,
) -> rusqlite::Result<OutboxTables> {
    let mut t = OutboxTables::default();
    let mut bad = Vec::new();
    let rows = |sql: &str, n: usize| -> rusqlite::Result<Vec<Vec<Sql>>> {
        let mut st = conn.prepare_cached(sql)?;
        let out = st
            .query_map([], |r| (0..n).map(|i| r.get::<_, Sql>(i)).collect())?
            .collect();
        out
    };
    let mut int = |table: &str, col: &str, v: &Sql| -> Option<i64> {
        match v {
            Sql::Integer(i) => Some(*i),
            Sql::Null => None,
            other => {
                bad.push(format!("{table}.{col} = {other:?}"));
                None
            }
        }
    };
    for r in rows(queries.state_log, 4)? {
        let kind = match &r[3] {
            Sql::Text(s) => s.clone(),
            other => format!("{other:?}"),
        };
        t.state_log.push(StateRow {
            ver: int("state_log", "ver", &r[0]),
            msg_id: int("state_log", "msg_id", &r[1]),
            tx_id: int("state_log", "tx_id", &r[2]),
            kind,
        });
    }
    if let Some(sql) = queries.outbox {
        let mut v = Vec::new();
        for r in rows(sql, 2)? {
            v.push((int("outbox", "msg_id", &r[0]), int("outbox", "ver", &r[1])));
        }
        t.outbox = Some(v);
    }
    for r in rows(queries.out_queue, 3)? {
        t.out_queue.push(OutRow {
            seq: int("out_queue", "seq", &r[0]),
            msg_id: int("out_queue", "msg_id", &r[1]),
            ver: int("out_queue", "ver", &r[2]),
        });
    }
    for r in rows(queries.processed, 2)? {
        t.processed.push((
            int("processed", "msg_id", &r[0]),
            int("processed", "dup_id", &r[1]),
        ));
    }
    t.bad_values = bad;
    Ok(t)
}

impl crate::workload::ran::ReadSpan for OutboxTables {
    fn read_span(&self) -> [u64; 2] {
        [self.read_start, self.read_end]
    }
}
