//! Reads a binary history ([`super::file`]) chunk by chunk: memory holds
//! one chunk at a time whatever the history's length (a chunk's bytes
//! within [`crate::input::HISTORY_LINE`]), and finds where the whole chunks
//! of a history a killed run left end ([`whole_len`]).
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use super::codec::{self, varint};
use super::file::MAGIC;
use super::Entry;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

/// The entries of a binary history, read from its first `len` bytes.
pub struct Entries {
    file: io::Take<File>,
    /// The bytes read from the file; `input[in_at..in_end]` not yet
    /// taken. A chunk that lies whole in it is decompressed where it
    /// lies (no copy of its own).
    input: Vec<u8>,
    in_at: usize,
    in_end: usize,
    /// The file has no more bytes (within `len`).
    eof: bool,
    /// The file's name, for errors.
    display: String,
    dec: Decoder<'static>,
    /// A chunk larger than `input`, gathered whole.
    chunk: Vec<u8>,
    /// The records of the chunk read last, and how far they were read.
    records: Vec<u8>,
    at: usize,
    /// The file offsets of the chunk read last and of the next.
    start: u64,
    offset: u64,
    done: bool,
}

/// Bytes of [`Entries::input`]: a chunk's bytes (a few tens of KiB) lie
/// whole in it.
const INPUT: usize = 1 << 20;

/// Opens a binary history (its [`MAGIC`] already checked) for reading
/// its first `len` bytes. Errors: it cannot be opened.
pub fn open(path: &Path, len: u64) -> io::Result<Entries> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(MAGIC.len() as u64))?;
    let left = len.saturating_sub(MAGIC.len() as u64);
    Ok(Entries {
        file: file.take(left),
        input: vec![0; INPUT],
        in_at: 0,
        in_end: 0,
        eof: false,
        display: path.display().to_string(),
        dec: Decoder::new()?,
        chunk: Vec::new(),
        records: Vec::new(),
        at: 0,
        start: MAGIC.len() as u64,
        offset: MAGIC.len() as u64,
        done: false,
    })
}

/// The length at the start of a chunk. None: the input ends before it
/// (`Ok(None)`), or inside it (an error of kind `UnexpectedEof`).
fn chunk_len(input: &mut impl BufRead) -> io::Result<Option<(u64, usize)>> {
    let mut bytes = [0u8; 10];
    for i in 0..bytes.len() {
        let buf = input.fill_buf()?;
        let Some(&b) = buf.first() else {
            if i == 0 {
                return Ok(None);
            }
            return Err(io::ErrorKind::UnexpectedEof.into());
        };
        input.consume(1);
        bytes[i] = b;
        if b & 0x80 == 0 {
            return Ok(varint(&bytes[..=i]).map(|(n, _)| (n, i + 1)));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "a chunk length runs on",
    ))
}

/// Where the whole chunks of binary history `path` end, when its last
/// chunk was cut (its writer stopped in the middle of it): `Some(n)`, the
/// first `n` bytes hold every whole chunk. None when it ends with a whole
/// chunk. Reads the chunks' lengths only. Errors: the file cannot be read.
pub fn whole_len(path: &Path) -> io::Result<Option<u64>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(MAGIC.len() as u64))?;
    let mut input = BufReader::with_capacity(1 << 16, file);
    let mut at = MAGIC.len() as u64;
    loop {
        match chunk_len(&mut input) {
            Ok(None) => return Ok(None),
            Ok(Some((n, head))) if at + head as u64 + n <= len => {
                at += head as u64 + n;
                input.seek_relative(n as i64)?;
            }
            Ok(Some(_)) => return Ok(Some(at)),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Some(at)),
            Err(e) => return Err(e),
        }
    }
}

impl Entries {
    fn fail(&mut self, what: impl std::fmt::Display) -> anyhow::Error {
        self.done = true;
        anyhow::anyhow!("{}: chunk at byte {}: {what}", self.display, self.start)
    }

    /// Reads until `want` bytes (at most [`INPUT`]) are not yet taken
    /// or the file ends.
    fn fill(&mut self, want: usize) -> io::Result<()> {
        while self.in_end - self.in_at < want && !self.eof {
            if self.in_at + want > self.input.len() {
                self.input.copy_within(self.in_at..self.in_end, 0);
                self.in_end -= self.in_at;
                self.in_at = 0;
            }
            match self.file.read(&mut self.input[self.in_end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.in_end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The length at the start of the next chunk, taken: as
    /// [`chunk_len`]'s.
    fn chunk_head(&mut self) -> io::Result<Option<(u64, usize)>> {
        self.fill(10)?;
        let ahead = &self.input[self.in_at..self.in_end];
        if ahead.is_empty() {
            return Ok(None);
        }
        match varint(ahead) {
            Some((n, head)) => {
                self.in_at += head;
                Ok(Some((n, head)))
            }
            // Ten bytes, each with more to come.
            None if ahead.len() >= 10 => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a chunk length runs on",
            )),
            None => Err(io::ErrorKind::UnexpectedEof.into()),
        }
    }

    /// Reads and decompresses the next chunk; false at the end of the
    /// input.
    fn next_chunk(&mut self) -> anyhow::Result<bool> {
        let cut = "cut short (its writer stopped in the middle of it)";
        self.start = self.offset;
        let (len, head) = match self.chunk_head() {
            Ok(None) => return Ok(false),
            Ok(Some(l)) => l,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(self.fail(cut)),
            Err(e) => return Err(self.fail(e)),
        };
        let cap = crate::input::HISTORY_LINE;
        if len > cap.bytes {
            let e = crate::input::ReadError::TooLarge { cap };
            return Err(anyhow::Error::new(e.in_file(format!(
                "{}: chunk at byte {}",
                self.display, self.offset
            ))));
        }
        let n = len as usize;
        let inflated = if n <= self.input.len() {
            if let Err(e) = self.fill(n) {
                return Err(self.fail(e));
            }
            if self.in_end - self.in_at < n {
                return Err(self.fail(cut));
            }
            let chunk = &self.input[self.in_at..self.in_at + n];
            self.in_at += n;
            inflate(&mut self.dec, chunk, &mut self.records)
        } else {
            // Rare: gathered whole first, what is read already then the
            // rest.
            self.chunk.clear();
            self.chunk
                .extend_from_slice(&self.input[self.in_at..self.in_end]);
            self.in_at = self.in_end;
            let had = self.chunk.len();
            self.chunk.resize(n, 0);
            if let Err(e) = self.file.read_exact(&mut self.chunk[had..]) {
                return Err(match e.kind() {
                    io::ErrorKind::UnexpectedEof => self.fail(cut),
                    _ => self.fail(e),
                });
            }
            let r = inflate(&mut self.dec, &self.chunk, &mut self.records);
            self.chunk = Vec::new();
            r
        };
        self.at = 0;
        if let Err(e) = inflated {
            return Err(self.fail(format!("cannot decompress it: {e}")));
        }
        self.offset += head as u64 + len;
        Ok(true)
    }

    /// Where the payload of the record at [`Entries::at`] lies in
    /// [`Entries::records`], moving past it.
    fn payload(&mut self) -> anyhow::Result<std::ops::Range<usize>> {
        let rest = &self.records[self.at..];
        match varint(rest).filter(|(n, h)| *n <= (rest.len() - h) as u64) {
            Some((len, head)) => {
                let start = self.at + head;
                self.at = start + len as usize;
                Ok(start..self.at)
            }
            None => Err(self.fail("a record runs past the chunk's end")),
        }
    }

    /// The record at [`Entries::at`].
    fn record(&mut self) -> anyhow::Result<Entry> {
        let at = self.at;
        let range = self.payload()?;
        codec::decode(&self.records[range]).map_err(|e| self.fail(format!("record at {at}: {e}")))
    }

    /// The next record's payload undecoded (what [`codec::decode`] takes),
    /// None at the end; errors as [`Iterator::next`]'s but a record's own.
    /// Inlined, a record of under 128 bytes in the chunk read: one per
    /// record of the history.
    #[inline]
    pub fn next_payload(&mut self) -> Option<anyhow::Result<&[u8]>> {
        if !self.done {
            if let Some(&len) = self.records.get(self.at) {
                let start = self.at + 1;
                let end = start + usize::from(len);
                if len < 0x80 && end <= self.records.len() {
                    self.at = end;
                    return Some(Ok(&self.records[start..end]));
                }
            }
        }
        self.next_payload_slow()
    }

    /// [`Entries::next_payload`] of any record, the next chunk read if
    /// need be.
    #[inline(never)]
    fn next_payload_slow(&mut self) -> Option<anyhow::Result<&[u8]>> {
        while !self.done {
            if self.at < self.records.len() {
                return Some(match self.payload() {
                    Ok(range) => Ok(&self.records[range]),
                    Err(e) => Err(e),
                });
            }
            match self.next_chunk() {
                Ok(true) => {}
                Ok(false) => self.done = true,
                Err(e) => return Some(Err(e)),
            }
        }
        None
    }
}

/// Decompresses `chunk` into `records` (emptied first).
fn inflate(dec: &mut Decoder<'static>, chunk: &[u8], records: &mut Vec<u8>) -> io::Result<()> {
    records.clear();
    let mut input = InBuffer::around(chunk);
    loop {
        let len = records.len();
        records.reserve((chunk.len() * 4).max(64 << 10));
        let mut out = OutBuffer::around_pos(records, len);
        dec.run(&mut input, &mut out)?;
        let full = out.pos() == out.capacity();
        if input.pos() == chunk.len() && !full {
            return Ok(());
        }
        if records.len() as u64 > 2 * crate::input::HISTORY_LINE.bytes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "it decompresses to more than a chunk holds",
            ));
        }
    }
}

impl Iterator for Entries {
    type Item = anyhow::Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if self.at < self.records.len() {
                return Some(self.record());
            }
            match self.next_chunk() {
                Ok(true) => {}
                Ok(false) => self.done = true,
                Err(e) => return Some(Err(e)),
            }
        }
        None
    }
}
