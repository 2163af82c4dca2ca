//! The explorer's database: one in-memory SQLite connection whose content
//! is saved and restored per state (SQLite's serialize/deserialize, see
//! [`Restore`]), and the rows of every table read as the state key's part
//! and as the trace's row changes.
//!
//! Layer: workload. May import the modules of its own layer and of the
//! layers below it (core, model, config, engine and target and nemesis).

use crate::workload::Value;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, MAIN_DB};

/// How the database of a state is brought back before one of its
/// successors is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Restore {
    /// Keep the path of the state being expanded as nested savepoints of
    /// one transaction: a successor is one step inside a savepoint, rolled
    /// back after its key is read; the next state is reached by rolling
    /// back to the savepoint the two paths share and running the steps of
    /// the rest of its path (the default: no copy of the database, and the
    /// prepared statements stay valid, where every `sqlite3_deserialize`
    /// makes SQLite re-read the schema and re-prepare every statement).
    /// A schema that declares a foreign key (enforced) is searched with
    /// [`Restore::Serialize`] instead: a deferred foreign key fails at a
    /// commit, and this transaction never commits.
    #[default]
    Savepoint,
    /// `sqlite3_serialize` the database once per new state and
    /// `sqlite3_deserialize` it before each successor (a copy of a few
    /// pages; kept to measure against and as a cross-check).
    Serialize,
    /// Rebuild the state: a fresh in-memory database, the schema, then
    /// every step of the path from the initial state again (no snapshot is
    /// kept; slower, kept to measure against and as a cross-check).
    Replay,
}

/// The in-memory database the explorer runs statements on.
pub struct Db {
    /// The connection the steps run on (autocommit, like a worker's).
    pub conn: Connection,
    schema: String,
    /// The tables' layout, read once per schema version (`PRAGMA
    /// schema_version`): reading it per state cost a third of the time.
    layout: std::cell::RefCell<Option<(i64, Vec<TableLayout>)>>,
    /// [`Db::encode_rows`]'s buffers, kept between calls: one table's
    /// encoded rows, and each row's span in them.
    scratch: std::cell::RefCell<Scratch>,
}

/// One table's encoded rows, and each row's (start, end) in them.
type Scratch = (Vec<u8>, Vec<(usize, usize)>);

impl Db {
    /// A fresh in-memory database with `schema` (a batch) applied.
    ///
    /// # Errors
    /// The schema batch failed.
    pub fn new(schema: &str) -> rusqlite::Result<Db> {
        let conn = Connection::open_in_memory()?;
        // Small pages: a snapshot is a copy of every page, and the worlds'
        // tables hold a few short rows each.
        conn.execute_batch("PRAGMA page_size = 512")?;
        conn.execute_batch(schema)?;
        // Every step, export, table read and savepoint statement stays
        // prepared: the default cache of 16 evicts some of them, which
        // re-prepares them on every state.
        conn.set_prepared_statement_cache_capacity(128);
        Ok(Db {
            conn,
            schema: schema.to_owned(),
            layout: std::cell::RefCell::new(None),
            scratch: std::cell::RefCell::default(),
        })
    }

    /// Back to the empty database with the schema (for [`Restore::Replay`]).
    ///
    /// # Errors
    /// The schema batch failed.
    pub fn reset(&mut self) -> rusqlite::Result<()> {
        *self = Db::new(&self.schema)?;
        Ok(())
    }

    /// The database's bytes (`sqlite3_serialize` of `main`).
    ///
    /// # Errors
    /// SQLite could not serialize (out of memory).
    pub fn snapshot(&mut self) -> rusqlite::Result<Vec<u8>> {
        Ok(self.conn.serialize(MAIN_DB)?.to_vec())
    }

    /// Replaces the database by `bytes` from [`Db::snapshot`].
    ///
    /// # Errors
    /// SQLite refused the bytes (out of memory, or a read in progress).
    pub fn restore(&mut self, bytes: &[u8]) -> rusqlite::Result<()> {
        self.conn
            .deserialize_read_exact(MAIN_DB, bytes, bytes.len(), false)
    }

    /// Opens a savepoint: the database as it is now can be brought back
    /// by [`Db::undo`].
    ///
    /// # Errors
    /// SQLite refused the savepoint.
    pub fn savepoint(&self) -> rusqlite::Result<()> {
        self.run_cached("SAVEPOINT explore_path")
    }

    /// Brings back the database as it was when the `n`-th innermost open
    /// savepoint was opened, and closes it and the `n - 1` inside it.
    ///
    /// # Errors
    /// SQLite refused (fewer than `n` savepoints open).
    pub fn undo(&self, n: usize) -> rusqlite::Result<()> {
        if n == 0 {
            return Ok(());
        }
        // All share one name: each RELEASE closes the innermost one, folding
        // its changes into the next, which the ROLLBACK TO then undoes.
        for _ in 1..n {
            self.run_cached("RELEASE explore_path")?;
        }
        self.run_cached("ROLLBACK TO explore_path")?;
        self.run_cached("RELEASE explore_path")
    }

    /// Whether no transaction is open (no savepoint of [`Db::savepoint`]
    /// left): a statement whose conflict clause says ROLLBACK ends the
    /// whole transaction, every savepoint with it.
    pub fn is_autocommit(&self) -> bool {
        self.conn.is_autocommit()
    }

    /// Whether foreign keys are enforced (`PRAGMA foreign_keys`, on in
    /// this build unless the schema turns it off) and a table declares one.
    ///
    /// # Errors
    /// The schema could not be read.
    pub fn foreign_keys(&self) -> rusqlite::Result<bool> {
        let enforced: bool = self
            .conn
            .prepare_cached("PRAGMA foreign_keys")?
            .query_row([], |r| r.get(0))?;
        let declared: i64 = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM sqlite_schema AS t, pragma_foreign_key_list(t.name) \
                 WHERE t.type = 'table'",
            )?
            .query_row([], |r| r.get(0))?;
        Ok(enforced && declared > 0)
    }

    fn run_cached(&self, sql: &str) -> rusqlite::Result<()> {
        self.conn.prepare_cached(sql)?.raw_execute().map(drop)
    }

    /// Appends the rows of every table, encoded as [`Rows::encode`]
    /// encodes them (the same bytes), without building the [`Rows`]: the
    /// state key's database part, read once per successor.
    ///
    /// # Errors
    /// A table could not be read.
    pub fn encode_rows(&self, out: &mut Vec<u8>) -> rusqlite::Result<()> {
        self.with_layout(|layout| {
            let mut scratch = self.scratch.borrow_mut();
            let (buf, spans) = &mut *scratch;
            for t in layout {
                let n = t.columns.len().max(1);
                buf.clear();
                spans.clear();
                let mut stmt = self.conn.prepare_cached(&t.select)?;
                let mut q = stmt.query([])?;
                while let Some(r) = q.next()? {
                    let start = buf.len();
                    for i in 0..n {
                        encode_ref(r.get_ref(i)?, buf);
                    }
                    spans.push((start, buf.len()));
                }
                spans.sort_by(|a, b| buf[a.0..a.1].cmp(&buf[b.0..b.1]));
                encode_str(&t.name, out);
                out.extend_from_slice(&(spans.len() as u32).to_le_bytes());
                for &(a, b) in spans.iter() {
                    out.extend_from_slice(&buf[a..b]);
                }
            }
            Ok(())
        })
    }

    /// Every row of every table: see [`rows_of`].
    ///
    /// # Errors
    /// A table could not be read.
    pub fn rows(&self) -> rusqlite::Result<Rows> {
        self.with_layout(|layout| read_rows(&self.conn, layout))
    }

    /// Runs `f` on the tables' layout, read again when the schema changed.
    fn with_layout<T>(
        &self,
        f: impl FnOnce(&[TableLayout]) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let version: i64 = self
            .conn
            .prepare_cached("PRAGMA schema_version")?
            .query_row([], |r| r.get(0))?;
        let mut cache = self.layout.borrow_mut();
        if cache.as_ref().is_none_or(|(v, _)| *v != version) {
            *cache = Some((version, layout(&self.conn)?));
        }
        f(&cache.as_ref().expect("just set").1)
    }
}

/// Every row of every table of `conn` but SQLite's own (`sqlite_%`, so
/// the AUTOINCREMENT counters of `sqlite_sequence` are left out), tables
/// by name, rows sorted (a multiset). The rowid alias of an
/// `AUTOINCREMENT` table (`seq INTEGER PRIMARY KEY AUTOINCREMENT`) is left
/// out too: AUTOINCREMENT says its numbers follow the insertion order,
/// which differs between interleavings that the spec treats as one state.
/// A rowid alias without AUTOINCREMENT is kept: a file may give it
/// values that are data (`state_log.ver`, `outbox.msg_id`), and dropping
/// those would merge states that behave differently.
///
/// # Errors
/// A table could not be read.
pub fn rows_of(conn: &Connection) -> rusqlite::Result<Rows> {
    read_rows(conn, &layout(conn)?)
}

/// What [`rows_of`] reads of one table: its name, the columns kept, the
/// primary key's positions among them, the SELECT.
#[derive(Debug, Clone)]
struct TableLayout {
    name: String,
    columns: Vec<String>,
    key: Vec<usize>,
    select: String,
}

/// The layout of every table (from `sqlite_schema` and `table_info`).
fn layout(conn: &Connection) -> rusqlite::Result<Vec<TableLayout>> {
    let names: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT name, sql FROM sqlite_schema WHERE type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get::<_, Option<String>>(1)?)))?
        .map(|r| r.map(|(n, sql)| (n, sql.unwrap_or_default())))
        .collect::<rusqlite::Result<_>>()?;
    let mut out = Vec::with_capacity(names.len());
    for (name, sql) in names {
        let autoincrement = sql.to_ascii_uppercase().contains("AUTOINCREMENT");
        out.push(table_layout(conn, &name, autoincrement)?);
    }
    Ok(out)
}

fn table_layout(
    conn: &Connection,
    name: &str,
    autoincrement: bool,
) -> rusqlite::Result<TableLayout> {
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    // (name, declared type, pk position) per column.
    let info: Vec<(String, String, i64)> = conn
        .prepare_cached(&format!("PRAGMA table_info({quoted})"))?
        .query_map([], |r| Ok((r.get(1)?, r.get(2)?, r.get(5)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let pks = info.iter().filter(|c| c.2 > 0).count();
    let alias = |c: &(String, String, i64)| {
        autoincrement && pks == 1 && c.2 == 1 && c.1.eq_ignore_ascii_case("INTEGER")
    };
    let kept: Vec<&(String, String, i64)> = info.iter().filter(|c| !alias(c)).collect();
    let columns: Vec<String> = kept.iter().map(|c| c.0.clone()).collect();
    // The primary key's columns name a row in the trace's changes.
    let key: Vec<usize> = kept
        .iter()
        .enumerate()
        .filter(|(_, c)| c.2 > 0)
        .map(|(i, _)| i)
        .collect();
    let select = if columns.is_empty() {
        format!("SELECT NULL FROM {quoted} WHERE 0")
    } else {
        let list: Vec<String> = columns
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        format!("SELECT {} FROM {quoted}", list.join(", "))
    };
    Ok(TableLayout {
        name: name.to_owned(),
        columns,
        key,
        select,
    })
}

fn read_rows(conn: &Connection, layout: &[TableLayout]) -> rusqlite::Result<Rows> {
    let mut tables = Vec::with_capacity(layout.len());
    for t in layout {
        let n = t.columns.len().max(1);
        let mut rows: Vec<(Vec<u8>, Vec<Value>)> = Vec::new();
        let mut stmt = conn.prepare_cached(&t.select)?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            let row: Vec<Value> = (0..n)
                .map(|i| r.get_ref(i).map(Value::from))
                .collect::<rusqlite::Result<_>>()?;
            let mut enc = Vec::new();
            for v in &row {
                encode_value(v, &mut enc);
            }
            rows.push((enc, row));
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        tables.push(Table {
            name: t.name.clone(),
            columns: t.columns.clone(),
            key: t.key.clone(),
            rows,
        });
    }
    Ok(Rows { tables })
}

/// The rows of one table, sorted by their encoding.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Table name.
    pub name: String,
    /// Column names (a rowid alias left out).
    pub columns: Vec<String>,
    /// Indices into `columns` of the primary key (empty: none declared).
    pub key: Vec<usize>,
    /// (encoding, values) per row, sorted by encoding.
    pub rows: Vec<(Vec<u8>, Vec<Value>)>,
}

/// Every table's rows: the database part of a state.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Tables by name.
    pub tables: Vec<Table>,
}

impl Rows {
    /// Appends the canonical encoding (the state key's database part).
    pub fn encode(&self, out: &mut Vec<u8>) {
        for t in &self.tables {
            encode_str(&t.name, out);
            out.extend_from_slice(&(t.rows.len() as u32).to_le_bytes());
            for (enc, _) in &t.rows {
                out.extend_from_slice(enc);
            }
        }
    }

    /// The rows that changed from `self` to `after`, one line each:
    /// `+ table(row)`, `- table(row)`, or `~ table[key]: col a -> b` for a
    /// row whose primary key stayed.
    pub fn changes(&self, after: &Rows) -> Vec<String> {
        let mut out = Vec::new();
        for t in &after.tables {
            let empty = Table {
                rows: Vec::new(),
                ..t.clone()
            };
            let b = self
                .tables
                .iter()
                .find(|x| x.name == t.name)
                .unwrap_or(&empty);
            let gone: Vec<&Vec<Value>> = b
                .rows
                .iter()
                .filter(|r| !t.rows.iter().any(|x| x.0 == r.0))
                .map(|r| &r.1)
                .collect();
            let new: Vec<&Vec<Value>> = t
                .rows
                .iter()
                .filter(|r| !b.rows.iter().any(|x| x.0 == r.0))
                .map(|r| &r.1)
                .collect();
            let key_of = |r: &Vec<Value>| -> Option<Vec<Value>> {
                (!t.key.is_empty()).then(|| t.key.iter().map(|&i| r[i].clone()).collect())
            };
            let mut paired = vec![false; new.len()];
            for g in &gone {
                let partner = new
                    .iter()
                    .enumerate()
                    .find(|(i, n)| !paired[*i] && key_of(g).is_some() && key_of(g) == key_of(n));
                match partner {
                    Some((i, n)) => {
                        paired[i] = true;
                        let what: Vec<String> = t
                            .columns
                            .iter()
                            .enumerate()
                            .filter(|(c, _)| g[*c] != n[*c])
                            .map(|(c, name)| format!("{name} {} -> {}", show(&g[c]), show(&n[c])))
                            .collect();
                        let key: Vec<String> = t.key.iter().map(|&k| show(&g[k])).collect();
                        out.push(format!(
                            "~ {}[{}]: {}",
                            t.name,
                            key.join(", "),
                            what.join(", ")
                        ));
                    }
                    None => out.push(format!("- {}{}", t.name, row(&t.columns, g))),
                }
            }
            for (i, n) in new.iter().enumerate() {
                if !paired[i] {
                    out.push(format!("+ {}{}", t.name, row(&t.columns, n)));
                }
            }
        }
        out
    }
}

fn row(columns: &[String], values: &[Value]) -> String {
    let parts: Vec<String> = columns
        .iter()
        .zip(values)
        .map(|(c, v)| format!("{c}={}", show(v)))
        .collect();
    format!("({})", parts.join(", "))
}

/// A value as SQL shows it: 'text', 12, NULL.
pub fn show(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(i) => i.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

/// Appends a self-delimiting encoding of `v` (a tag byte, then the value).
pub fn encode_value(v: &Value, out: &mut Vec<u8>) {
    encode_ref(
        match v {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Real(f) => ValueRef::Real(*f),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        },
        out,
    );
}

/// Appends the encoding of `Value::from(v)` (text and blob alike, as that
/// conversion reads them), without building the value: a tag byte, then
/// the value.
fn encode_ref(v: ValueRef<'_>, out: &mut Vec<u8>) {
    match v {
        ValueRef::Null => out.push(0),
        ValueRef::Integer(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_be_bytes());
        }
        ValueRef::Real(f) => {
            out.push(2);
            out.extend_from_slice(&f.to_bits().to_be_bytes());
        }
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            out.push(3);
            encode_str(&String::from_utf8_lossy(t), out);
        }
    }
}

/// Appends a length-prefixed string.
pub fn encode_str(s: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}
