//! The temp files of an audit in parts ([`super::audit_parts`]): streams of
//! length-prefixed records written once and read back once, in order.
//! A history entry is kept as its place in the history (so that the parts
//! of several files can be read back in history order) and its record in
//! the history's own binary codec ([`crate::history::codec`]).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::history::{codec, Entry};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Buffer of each temp file's writer and reader.
const BUF: usize = 64 << 10;

/// A temp file being written: one record after another.
pub struct SpillWriter {
    path: PathBuf,
    w: BufWriter<File>,
    scratch: Vec<u8>,
    enc: Vec<u8>,
}

impl SpillWriter {
    /// Creates `path`. Errors: the file system's.
    pub fn create(path: PathBuf) -> io::Result<Self> {
        let w = BufWriter::with_capacity(BUF, File::create(&path)?);
        Ok(SpillWriter {
            path,
            w,
            scratch: Vec::new(),
            enc: Vec::new(),
        })
    }

    /// Appends one record: `bytes`, then the number `n`.
    pub fn record(&mut self, bytes: &[u8], n: u64) -> io::Result<()> {
        self.scratch.clear();
        codec::put(&mut self.scratch, bytes.len() as u64);
        self.scratch.extend_from_slice(bytes);
        codec::put(&mut self.scratch, n);
        self.w.write_all(&self.scratch)
    }

    /// Appends history entry number `seq` of the history.
    pub fn entry(&mut self, seq: u64, e: &Entry) -> io::Result<()> {
        let mut bytes = std::mem::take(&mut self.enc);
        bytes.clear();
        codec::encode(e, &mut bytes);
        let written = self.record(&bytes, seq);
        self.enc = bytes;
        written
    }

    /// Ends the file; returns its path. Errors: the write's.
    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.w.flush()?;
        Ok(self.path)
    }
}

/// A temp file read back, record by record.
pub struct SpillReader {
    r: BufReader<File>,
    bytes: Vec<u8>,
}

impl SpillReader {
    /// Opens `path`. Errors: the file system's.
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(SpillReader {
            r: BufReader::with_capacity(BUF, File::open(path)?),
            bytes: Vec::new(),
        })
    }

    /// The next record (its bytes and its number), None at the end.
    /// Errors: the read's, or a file cut short.
    pub fn next_record(&mut self) -> io::Result<Option<(&[u8], u64)>> {
        if self.r.fill_buf()?.is_empty() {
            return Ok(None);
        }
        let len = varint(&mut self.r)?;
        self.bytes.resize(len as usize, 0);
        self.r.read_exact(&mut self.bytes)?;
        let n = varint(&mut self.r)?;
        Ok(Some((&self.bytes, n)))
    }

    /// The next history entry and its number, None at the end. Errors:
    /// the read's, or a record the codec refuses.
    pub fn next_entry(&mut self) -> io::Result<Option<(u64, Entry)>> {
        let Some((bytes, seq)) = self.next_record()? else {
            return Ok(None);
        };
        let bad = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
        let (len, at) = codec::varint(bytes).ok_or_else(|| bad("a cut record".into()))?;
        let payload = bytes
            .get(at..at + len as usize)
            .ok_or_else(|| bad("a cut record".into()))?;
        let e = codec::decode(payload).map_err(|e| bad(e.to_string()))?;
        Ok(Some((seq, e)))
    }
}

/// A LEB128 varint read from `r`. Errors: the read's, or one too long.
fn varint(r: &mut impl Read) -> io::Result<u64> {
    let mut n = 0u64;
    for i in 0..10 {
        let mut b = [0u8];
        r.read_exact(&mut b)?;
        n |= u64::from(b[0] & 0x7f) << (7 * i);
        if b[0] & 0x80 == 0 {
            return Ok(n);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "a varint too long",
    ))
}

/// A stable hash of text (FNV-1a): the same part for the same key or id
/// in every pass.
pub fn hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator no text byte of UTF-8 is.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
