//! A workload's export endpoint: its variant's `export.*` queries (the
//! [`Section`]s its routes name) inside ONE read transaction on a
//! connection of its own, on a thread of its own, streamed: rows are
//! serialized in chunks into a tokio
//! mpsc channel whose receiver is the response body, so memory stays
//! bounded by the channel (a few chunks), never the whole export.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::scenario::SqliteTarget;
use crate::target::sqlite::client as sqlite;
use crate::workload::Value;
use axum::body::Bytes;
use rusqlite::Connection;
use std::path::PathBuf;
use tokio::sync::{mpsc, oneshot};

/// Flush a chunk once it holds this many bytes.
const CHUNK: usize = 64 * 1024;
/// Chunks in flight between the reader thread and the response body.
const CHANNEL_CHUNKS: usize = 4;

/// One array of the export's JSON object: its key, its query (None: an
/// empty array, for a table the variant does not have) and the names of
/// the query's columns, in order.
#[derive(Debug, Clone)]
pub struct Section {
    /// The JSON key.
    pub key: &'static str,
    /// The query, or None for `[]`.
    pub sql: Option<String>,
    /// Column names, in the query's order.
    pub columns: &'static [&'static str],
}

/// One chunk of the body, or the error that cuts the body short.
pub type Chunk = Result<Bytes, std::io::Error>;

/// Starts an export on a new thread that opens its own connection to `db`.
/// The oneshot answers once the connection and the read transaction are
/// open and every query is prepared (an
/// error there becomes a clean 503); after that, the body's chunks arrive
/// on the returned receiver. An error mid-stream ends the body with an
/// error (the client sees a broken response, never a truncated valid one).
pub fn start(
    sections: Vec<Section>,
    db: PathBuf,
    target: SqliteTarget,
) -> (oneshot::Receiver<Result<(), String>>, mpsc::Receiver<Chunk>) {
    let (ready_tx, ready_rx) = oneshot::channel();
    let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
    let spawned = std::thread::Builder::new()
        .name("export".into())
        .spawn(move || {
            let conn = match sqlite::open(&db, &target) {
                Ok(c) => c,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("cannot open {}: {e}", db.display())));
                    return;
                }
            };
            if let Err(e) = stream(&sections, conn, ready_tx, &tx) {
                tracing::warn!(error = %e, "export failed mid-stream");
                let _ = tx.blocking_send(Err(std::io::Error::other(e)));
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot spawn the export thread");
    }
    (ready_rx, rx)
}

/// Why a stream stopped early.
enum Stop {
    /// The client went away: nothing to report.
    Gone,
    /// SQLite failed.
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for Stop {
    fn from(e: rusqlite::Error) -> Self {
        Stop::Sqlite(e)
    }
}

fn stream(
    sections: &[Section],
    mut conn: Connection,
    ready: oneshot::Sender<Result<(), String>>,
    tx: &mpsc::Sender<Chunk>,
) -> Result<(), String> {
    // The snapshot is taken by the first read and holds for every query;
    // all are prepared before readiness is reported.
    let txn = match conn.transaction() {
        Ok(t) => t,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return Ok(());
        }
    };
    let r = {
        let mut stmts = Vec::with_capacity(sections.len());
        for s in sections {
            match s.sql.as_deref().map(|q| txn.prepare(q)).transpose() {
                Ok(st) => stmts.push(st),
                Err(e) => {
                    let _ = ready.send(Err(e.to_string()));
                    return Ok(());
                }
            }
        }
        if ready.send(Ok(())).is_err() {
            return Ok(());
        }
        let mut out = Writer {
            buf: Vec::with_capacity(CHUNK + 1024),
            tx,
        };
        out.raw(b"{");
        let mut r = Ok(());
        for (i, (s, st)) in sections.iter().zip(stmts.iter_mut()).enumerate() {
            if i > 0 {
                out.raw(b",");
            }
            let _ = serde_json::to_writer(&mut out.buf, s.key);
            out.raw(b":[");
            if let Some(st) = st {
                r = rows(&mut out, st, s.columns);
                if r.is_err() {
                    break;
                }
            }
            out.raw(b"]");
        }
        r.and_then(|()| {
            out.raw(b"}");
            out.flush()
        })
    };
    // A read transaction: nothing to commit, ending it releases the snapshot.
    let _ = txn.rollback();
    match r {
        Ok(()) | Err(Stop::Gone) => Ok(()),
        Err(Stop::Sqlite(e)) => Err(e.to_string()),
    }
}

fn rows(
    out: &mut Writer<'_>,
    stmt: &mut rusqlite::Statement<'_>,
    columns: &[&str],
) -> Result<(), Stop> {
    let mut rows = stmt.query([])?;
    let mut first = true;
    while let Some(r) = rows.next()? {
        if !first {
            out.buf.push(b',');
        }
        first = false;
        out.buf.push(b'{');
        for (c, name) in columns.iter().enumerate() {
            if c > 0 {
                out.buf.push(b',');
            }
            let v = Value::from(r.get_ref(c)?);
            // Writing JSON into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut out.buf, name);
            out.buf.push(b':');
            let _ = serde_json::to_writer(&mut out.buf, &v);
        }
        out.buf.push(b'}');
        if out.buf.len() >= CHUNK {
            out.flush()?;
        }
    }
    Ok(())
}

struct Writer<'a> {
    buf: Vec<u8>,
    tx: &'a mpsc::Sender<Chunk>,
}

impl Writer<'_> {
    fn raw(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    fn flush(&mut self) -> Result<(), Stop> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(CHUNK + 1024),
        ));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| Stop::Gone)
    }
}
