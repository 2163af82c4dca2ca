//! Where a run folder's history is and which format it is in.
//!
//! A run writes `history.bin`: the text line [`MAGIC`], then chunks, each
//! its length (a LEB128 varint) and the compressed bytes of whole records
//! ([`super::codec`]). The chunks are pieces of one zstd stream, each
//! ending where the writer flushed it, so each decompresses to whole
//! records once the ones before it have been read: a bench killed while
//! writing leaves a last chunk shorter than its length, and every chunk
//! before it reads. Folders written before it hold `history.jsonl`, one
//! entry per JSON line, which is read as well; the format is told by the
//! file's first bytes, not its name.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use std::io::Read;
use std::path::{Path, PathBuf};

/// The history's file name in a run folder.
pub const FILE: &str = "history.bin";
/// The file name of a history written as JSON lines (folders of earlier
/// releases).
pub const JSON_LINES_FILE: &str = "history.jsonl";
/// The first bytes of a binary history: plain text, so that `head` tells
/// what the file is.
pub const MAGIC: &[u8] =
    b"specstorm history v1: compressed records, read with `specstorm history`\n";

/// A history file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// [`MAGIC`], then compressed chunks of records.
    Binary,
    /// One JSON entry per line.
    JsonLines,
}

/// The history file of run folder `dir`: `history.bin`, or `history.jsonl`
/// in a folder that holds only that (an earlier release's); `history.bin`
/// when neither is there (the name a message about it gives).
pub fn in_folder(dir: &Path) -> PathBuf {
    let new = dir.join(FILE);
    let old = dir.join(JSON_LINES_FILE);
    if !new.exists() && old.exists() {
        old
    } else {
        new
    }
}

/// The format of the history file `path`, from its first bytes. Errors:
/// it cannot be opened or read.
pub fn format_of(path: &Path) -> std::io::Result<Format> {
    let mut head = Vec::with_capacity(MAGIC.len());
    std::fs::File::open(path)?
        .take(MAGIC.len() as u64)
        .read_to_end(&mut head)?;
    Ok(if head == MAGIC {
        Format::Binary
    } else {
        Format::JsonLines
    })
}
