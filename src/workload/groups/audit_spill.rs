//! The temp files of an audit in parts ([`super::audit_parts`]): streams of
//! length-prefixed records written once and read back once, in order.
//! A history entry is kept as its place in the history (so that the parts
//! of several files can be read back in history order) and its record in
//! the history's own binary codec ([`crate::history::codec`]), its
//! payload as the history holds it.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::history::codec;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Buffer of each temp file's writer and reader.
const BUF: usize = 64 << 10;

/// A temp file being written: one record after another, gathered in a
/// buffer of its own (each record's length and number put straight into
/// it, no write call per field) and written out when it fills.
pub struct SpillWriter {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
}

impl SpillWriter {
    /// Creates `path`. Errors: the file system's.
    pub fn create(path: PathBuf) -> io::Result<Self> {
        let file = File::create(&path)?;
        Ok(SpillWriter {
            path,
            file,
            // Room for a record past `BUF` before the buffer is written.
            buf: Vec::with_capacity(BUF + 1024),
        })
    }

    /// Writes the buffer out once it holds `BUF` bytes or more.
    #[inline]
    fn spill(&mut self) -> io::Result<()> {
        if self.buf.len() >= BUF {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Appends one record: `bytes`, then the number `n`.
    pub fn record(&mut self, bytes: &[u8], n: u64) -> io::Result<()> {
        codec::put(&mut self.buf, bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
        codec::put(&mut self.buf, n);
        self.spill()
    }

    /// [`SpillWriter::record`] of the bytes `put` appends to the buffer:
    /// a record made where it is written, with no copy of its own.
    #[inline]
    pub fn record_with(&mut self, n: u64, put: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let at = self.buf.len();
        // Room for a one-byte length; a longer one is made room for below.
        self.buf.push(0);
        put(&mut self.buf);
        let len = self.buf.len() - at - 1;
        if len < 0x80 {
            self.buf[at] = len as u8;
        } else {
            let mut head = Vec::with_capacity(10);
            codec::put(&mut head, len as u64);
            self.buf.splice(at..at + 1, head);
        }
        codec::put(&mut self.buf, n);
        self.spill()
    }

    /// [`SpillWriter::record`] of the bytes of `parts`, one after another.
    pub fn record_parts(&mut self, parts: &[&[u8]], n: u64) -> io::Result<()> {
        codec::put(&mut self.buf, parts.iter().map(|p| p.len() as u64).sum());
        for p in parts {
            self.buf.extend_from_slice(p);
        }
        codec::put(&mut self.buf, n);
        self.spill()
    }

    /// Appends `bytes` as they are, with no length: a file of records of
    /// one fixed size (inlined: the size is then known, no copy call).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        self.spill()
    }

    /// Ends the file; returns its path. Errors: the write's.
    pub fn finish(mut self) -> io::Result<PathBuf> {
        self.file.write_all(&self.buf)?;
        self.buf = Vec::new();
        Ok(self.path)
    }
}

/// A temp file read back, record by record, each parsed where it lies in
/// the read buffer (no copy of its own).
pub struct SpillReader {
    file: File,
    buf: Vec<u8>,
    /// The bytes read and not yet parsed: `buf[at..end]`.
    at: usize,
    end: usize,
    eof: bool,
    /// The record [`SpillReader::peek`] parsed and nothing has taken yet:
    /// where its bytes lie in `buf`, and its number.
    current: Option<(std::ops::Range<usize>, u64)>,
}

impl SpillReader {
    /// Opens `path`. Errors: the file system's.
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(SpillReader {
            file: File::open(path)?,
            buf: Vec::new(),
            at: 0,
            end: 0,
            eof: false,
            current: None,
        })
    }

    /// Reads until `want` bytes are unparsed or the file ends.
    fn fill(&mut self, want: usize) -> io::Result<()> {
        while self.end - self.at < want && !self.eof {
            if self.at > 0 {
                self.buf.copy_within(self.at..self.end, 0);
                self.end -= self.at;
                self.at = 0;
            }
            if self.buf.len() < want.max(BUF) {
                self.buf.resize(want.max(BUF), 0);
            }
            match self.file.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The next record (its bytes and its number), None at the end.
    /// Errors: the read's, or a file cut short.
    pub fn next_record(&mut self) -> io::Result<Option<(&[u8], u64)>> {
        let next = match self.current.take() {
            Some(c) => Some(c),
            None => self.parse()?,
        };
        Ok(next.map(|(r, n)| (&self.buf[r], n)))
    }

    /// The number of the next record, None at the end; the record stays
    /// the next one ([`SpillReader::current`] holds its bytes) until
    /// [`SpillReader::advance`]. Errors: as [`SpillReader::next_record`].
    pub fn peek(&mut self) -> io::Result<Option<u64>> {
        if self.current.is_none() {
            self.current = self.parse()?;
        }
        Ok(self.current.as_ref().map(|c| c.1))
    }

    /// The bytes of the record [`SpillReader::peek`] found (empty if none).
    pub fn current(&self) -> &[u8] {
        self.current
            .as_ref()
            .map_or(&[], |(r, _)| &self.buf[r.clone()])
    }

    /// Moves past the record [`SpillReader::peek`] found.
    pub fn advance(&mut self) {
        self.current = None;
    }

    /// Parses the next record: where its bytes lie and its number. They
    /// stay in place until the next parse.
    fn parse(&mut self) -> io::Result<Option<(std::ops::Range<usize>, u64)>> {
        let cut = || io::Error::new(io::ErrorKind::UnexpectedEof, "a temp record cut short");
        // Most records lie whole in the buffer: parsed with no read.
        if let Some((len, head)) = codec::varint(&self.buf[self.at..self.end]) {
            let start = self.at + head;
            if let Some(stop) = usize::try_from(len).ok().and_then(|l| start.checked_add(l)) {
                if let Some((n, tail)) = self.buf.get(stop..self.end).and_then(codec::varint) {
                    self.at = stop + tail;
                    return Ok(Some((start..stop, n)));
                }
            }
        }
        // A record's length and number are varints of at most 10 bytes.
        self.fill(10)?;
        if self.at == self.end {
            return Ok(None);
        }
        let (len, head) = codec::varint(&self.buf[self.at..self.end]).ok_or_else(cut)?;
        let len = usize::try_from(len).map_err(|_| cut())?;
        self.fill(head + len + 10)?;
        let start = self.at + head;
        let stop = start + len;
        let (n, tail) = self
            .buf
            .get(stop..self.end)
            .and_then(codec::varint)
            .ok_or_else(cut)?;
        self.at = stop + tail;
        Ok(Some((start..stop, n)))
    }
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
