//! Reads a history file back, one entry at a time (memory stays flat
//! whatever the history's length), in either format ([`super::file`]):
//! the binary one a run writes ([`super::binary`]) or the JSON lines of
//! an earlier release's folder (a line is read within
//! [`crate::input::HISTORY_LINE`]). [`cut_tail`] finds where a history a
//! killed run left ends: its writer may have been stopped in the middle of
//! a chunk or a line.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use super::file::{format_of, Format};
use super::Entry;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Iterates the entries of a history file, in either format. Errors name
/// the file and line or chunk (a line or chunk over its cap:
/// [`crate::input::is_too_large`] tells).
pub fn read(path: &Path) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Entry>>> {
    read_prefix(path, u64::MAX)
}

/// [`read`] over the first `len` bytes of the file only (a history whose
/// cut last chunk or line [`cut_tail`] found).
pub fn read_prefix(
    path: &Path,
    len: u64,
) -> anyhow::Result<Box<dyn Iterator<Item = anyhow::Result<Entry>> + Send>> {
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot open history {}: {e}", path.display());
    Ok(match format_of(path).map_err(cannot)? {
        Format::Binary => Box::new(super::binary::open(path, len).map_err(cannot)?),
        Format::JsonLines => Box::new(json_lines(path, len)?),
    })
}

/// A history's records as the binary codec's payloads
/// ([`super::codec::decode`] takes them), read from the first `len` bytes
/// of the file: a binary history's as they are, a JSON lines history's
/// entries encoded. Errors as [`read_prefix`]'s.
pub fn payloads_prefix(path: &Path, len: u64) -> anyhow::Result<Payloads> {
    let cannot = |e: std::io::Error| anyhow::anyhow!("cannot open history {}: {e}", path.display());
    Ok(match format_of(path).map_err(cannot)? {
        Format::Binary => Payloads(Source::Binary(
            super::binary::open(path, len).map_err(cannot)?,
        )),
        Format::JsonLines => Payloads(Source::Json(Box::new(json_lines(path, len)?), Vec::new())),
    })
}

/// See [`payloads_prefix`].
pub struct Payloads(Source);

enum Source {
    /// A binary history's records, undecoded.
    Binary(super::binary::Entries),
    /// A JSON lines history's entries, and the last one's record.
    Json(
        Box<dyn Iterator<Item = anyhow::Result<Entry>> + Send>,
        Vec<u8>,
    ),
}

impl Payloads {
    /// The next record's payload, None at the end. A record of a binary
    /// history is not decoded here: [`super::codec::decode`] reports what
    /// is wrong with it. Inlined: one per record.
    #[inline]
    pub fn next_payload(&mut self) -> Option<anyhow::Result<&[u8]>> {
        match &mut self.0 {
            Source::Binary(b) => b.next_payload(),
            Source::Json(entries, buf) => match entries.next()? {
                Ok(e) => {
                    buf.clear();
                    super::codec::encode_payload(&e, buf);
                    Some(Ok(buf))
                }
                Err(e) => Some(Err(e)),
            },
        }
    }
}

fn json_lines(
    path: &Path,
    len: u64,
) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Entry>> + Send> {
    let file = File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot open history {}: {e}", path.display()))?;
    let display = path.display().to_string();
    let lines = crate::input::lines(
        BufReader::with_capacity(1 << 20, file.take(len)),
        crate::input::HISTORY_LINE,
    );
    Ok(lines
        .enumerate()
        .filter(|(_, l)| !matches!(l, Ok(s) if s.trim().is_empty()))
        .map(move |(i, line)| {
            let line = line.map_err(|e| e.in_file(format!("{display}:{}", i + 1)))?;
            serde_json::from_str(&line)
                .map_err(|e| anyhow::anyhow!("{display}:{}: not a history entry: {e}", i + 1))
        }))
}

/// Where a history's whole chunks (binary) or lines (JSON lines) end, when
/// its last one was cut (its writer was stopped in the middle of writing
/// it): `Some(n)`, the first `n` bytes hold every whole one. None when the
/// file ends with a whole one (a JSON entry that lacks only its newline is
/// whole: no prefix of an entry's JSON object is itself an object).
/// Errors: the file cannot be read.
pub fn cut_tail(path: &Path) -> anyhow::Result<Option<u64>> {
    let bad = |e: std::io::Error| anyhow::anyhow!("cannot read history {}: {e}", path.display());
    match format_of(path).map_err(bad)? {
        Format::Binary => super::binary::whole_len(path).map_err(bad),
        Format::JsonLines => json_cut_tail(path),
    }
}

fn json_cut_tail(path: &Path) -> anyhow::Result<Option<u64>> {
    let bad = |e: std::io::Error| anyhow::anyhow!("cannot read history {}: {e}", path.display());
    let mut file = File::open(path).map_err(bad)?;
    let len = file.metadata().map_err(bad)?.len();
    let mut end = len;
    let mut tail: Vec<u8> = Vec::new();
    // Back from the end, a chunk at a time, to the last newline.
    let start = loop {
        if end == 0 {
            break 0;
        }
        let n = end.min(64 * 1024);
        let mut chunk = vec![0u8; n as usize];
        file.seek(SeekFrom::Start(end - n)).map_err(bad)?;
        file.read_exact(&mut chunk).map_err(bad)?;
        if end == len && chunk.last() == Some(&b'\n') {
            return Ok(None);
        }
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(i) => {
                tail.splice(0..0, chunk[i + 1..].iter().copied());
                break end - n + i as u64 + 1;
            }
            None => {
                tail.splice(0..0, chunk);
                end -= n;
            }
        }
    };
    if tail.is_empty() || serde_json::from_slice::<Entry>(&tail).is_ok() {
        return Ok(None);
    }
    Ok(Some(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Completion, OpKind, OpResult};

    fn line(op: u64) -> String {
        let mut s = serde_json::to_string(&Entry::Ok(Completion {
            t: 5,
            op,
            worker: 0,
            f: OpKind::Ingest,
            result: OpResult::default(),
        }))
        .unwrap();
        s.push('\n');
        s
    }

    #[test]
    fn a_cut_last_line_is_found_and_a_whole_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.jsonl");
        let whole = format!("{}{}", line(1), line(2));
        std::fs::write(&p, &whole).unwrap();
        assert_eq!(cut_tail(&p).unwrap(), None);
        // The last entry without its newline is whole.
        std::fs::write(&p, whole.trim_end()).unwrap();
        assert_eq!(cut_tail(&p).unwrap(), None);
        // Cut anywhere inside the second line: the first line is kept.
        let first = line(1).len();
        for cut in first + 1..whole.len() - 1 {
            std::fs::write(&p, &whole[..cut]).unwrap();
            assert_eq!(cut_tail(&p).unwrap(), Some(first as u64), "cut at {cut}");
            let read: Vec<_> = read_prefix(&p, first as u64).unwrap().collect();
            assert_eq!(read.len(), 1);
            assert!(read[0].is_ok());
        }
        // Cut inside the only line: nothing is whole.
        std::fs::write(&p, &whole[..first / 2]).unwrap();
        assert_eq!(cut_tail(&p).unwrap(), Some(0));
        std::fs::write(&p, "").unwrap();
        assert_eq!(cut_tail(&p).unwrap(), None);
    }

    #[test]
    fn a_long_cut_line_is_found_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("h.jsonl");
        let long = format!("{{\"type\":\"ok\",\"x\":\"{}", "a".repeat(200_000));
        std::fs::write(&p, format!("{}{long}", line(1))).unwrap();
        assert_eq!(cut_tail(&p).unwrap(), Some(line(1).len() as u64));
    }
}
