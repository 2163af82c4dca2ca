//! `specstorm history RUN_DIR`: a history, in either format, as JSON
//! lines, one entry per line exactly as `history.jsonl` held it (the same
//! serde output), so that `jq` and other line tools read any history.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use super::{file, reader};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why a history could not be printed.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    /// No history at the path given (exit 2).
    #[error("{0}")]
    Input(String),
    /// The history cannot be read, or a record of it is broken (exit 3).
    #[error("{0:#}")]
    Unreadable(anyhow::Error),
}

/// What was printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Printed {
    /// Entries printed.
    pub entries: u64,
    /// Bytes of a last chunk or line cut mid-way, left out (0: none).
    pub cut_bytes: u64,
}

/// The history file `path` names: a run folder's, or the file itself.
/// Errors: neither is there.
pub fn history_path(path: &Path) -> Result<PathBuf, PrintError> {
    let p = if path.is_dir() {
        file::in_folder(path)
    } else {
        path.to_path_buf()
    };
    if p.is_file() {
        Ok(p)
    } else if path.is_dir() {
        Err(PrintError::Input(format!(
            "{} holds no history ({} or {})",
            path.display(),
            file::FILE,
            file::JSON_LINES_FILE
        )))
    } else {
        Err(PrintError::Input(format!(
            "{} is neither a run folder nor a history file",
            path.display()
        )))
    }
}

/// Prints the history at `path` (a run folder or a history file) to `out`
/// as JSON lines; a last chunk or line cut mid-way (a killed run's) is
/// left out and counted. A reader that stops reading (a closed pipe) ends
/// it without an error.
pub fn print(path: &Path, out: &mut impl Write) -> Result<Printed, PrintError> {
    let path = history_path(path)?;
    let len = std::fs::metadata(&path)
        .map_err(|e| PrintError::Unreadable(anyhow::anyhow!("{}: {e}", path.display())))?
        .len();
    let whole = reader::cut_tail(&path)
        .map_err(PrintError::Unreadable)?
        .unwrap_or(len);
    let mut printed = Printed {
        entries: 0,
        cut_bytes: len - whole,
    };
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    let mut line = Vec::with_capacity(1024);
    for e in reader::read_prefix(&path, whole).map_err(PrintError::Unreadable)? {
        let e = e.map_err(PrintError::Unreadable)?;
        line.clear();
        serde_json::to_writer(&mut line, &e).expect("history entries always serialize");
        line.push(b'\n');
        match out.write_all(&line) {
            Ok(()) => printed.entries += 1,
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(printed),
            Err(e) => return Err(PrintError::Unreadable(anyhow::anyhow!("stdout: {e}"))),
        }
    }
    match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(PrintError::Unreadable(anyhow::anyhow!("stdout: {e}")))
        }
        _ => Ok(printed),
    }
}
