//! Input files read within a size cap. A scenario or statement file, or a
//! run folder's JSON file or latency log, larger than any the bench writes
//! or a person edits (a symlink to `/dev/zero`, say) is refused with its
//! cap named, instead of filling the memory. The read itself stops after
//! cap + 1 bytes: a device or a growing file may stat as empty, so the
//! size on disk decides nothing. Files the commands stream (the history,
//! `export.json`) have no cap in total, since a long run's are large; a
//! history line has one ([`lines`]), and an export is parsed as a stream
//! that refuses a non-JSON first byte. `docs/cli.md` lists the caps.
//!
//! Layer: core, the lowest. May import the modules of its own layer only.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::Path;

/// A size cap: at most `bytes`, for files of the kind `what` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// The largest size read.
    pub bytes: u64,
    /// The kind of file, as the refusal names it ("a scenario file").
    pub what: &'static str,
}

const MIB: u64 = 1 << 20;

/// A scenario file (a person writes it: a few KiB).
pub const SCENARIO: Cap = Cap {
    bytes: 4 * MIB,
    what: "a scenario file",
};
/// A statement file (a person writes it: a few KiB).
pub const STATEMENTS: Cap = Cap {
    bytes: 4 * MIB,
    what: "a statement file",
};
/// A run or compare folder's JSON file read whole (`summary.json`,
/// `checks.json`, `compare.json`): the bench keeps these to KiBs (a
/// checker keeps its first 50 findings).
pub const RUN_JSON: Cap = Cap {
    bytes: 256 * MIB,
    what: "a run folder's JSON file",
};
/// A run folder's `latency.hlog`, read whole by `report` and `merge`: a
/// few KiB per second of run, so this covers runs of days.
pub const LATENCY_LOG: Cap = Cap {
    bytes: 1024 * MIB,
    what: "a latency log",
};
/// One line of an earlier release's `history.jsonl` (one op's invoke,
/// step or completion), or one chunk of a `history.bin`.
pub const HISTORY_LINE: Cap = Cap {
    bytes: 64 * MIB,
    what: "a history line",
};

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes;
        if b >= 1024 * MIB && b % (1024 * MIB) == 0 {
            write!(f, "{} GiB", b / (1024 * MIB))
        } else if b >= MIB && b % MIB == 0 {
            write!(f, "{} MiB", b / MIB)
        } else {
            write!(f, "{b} bytes")
        }
    }
}

/// Why a capped read failed. The message names no file: callers put the
/// file before it (`file: reason`).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file cannot be opened or read, or is not UTF-8 text.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The file holds more than its cap; at most cap + 1 bytes were read.
    #[error("larger than {cap}, the cap of {}: refused", cap.what)]
    TooLarge {
        /// The cap it exceeds.
        cap: Cap,
    },
}

impl ReadError {
    /// Whether the file was refused for its size (the commands exit 2:
    /// a refused input), not for an I/O error.
    pub fn is_too_large(&self) -> bool {
        matches!(self, ReadError::TooLarge { .. })
    }

    /// This error, naming `file` (and line) before it.
    pub fn in_file(self, file: impl fmt::Display) -> FileReadError {
        FileReadError {
            file: file.to_string(),
            error: self,
        }
    }
}

/// A [`ReadError`] with the file (and line) it is about: `file: reason`.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {error}")]
pub struct FileReadError {
    /// The file, as named to the user (`path` or `path:line`).
    pub file: String,
    /// What went wrong.
    pub error: ReadError,
}

/// Whether `e` is, or wraps, a read refused for its size.
pub fn is_too_large(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<ReadError>()
            .is_some_and(ReadError::is_too_large)
            || c.downcast_ref::<FileReadError>()
                .is_some_and(|f| f.error.is_too_large())
    })
}

/// The bytes of `path`, at most `cap.bytes` of them.
///
/// # Errors
/// [`ReadError::Io`] when it cannot be opened or read;
/// [`ReadError::TooLarge`] when it holds more than the cap.
pub fn read(path: &Path, cap: Cap) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::new();
    File::open(path)?
        .take(cap.bytes.saturating_add(1))
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > cap.bytes {
        return Err(ReadError::TooLarge { cap });
    }
    Ok(buf)
}

/// The text of `path`, at most `cap.bytes` of it.
///
/// # Errors
/// As [`read`]; and [`ReadError::Io`] when it is not UTF-8.
pub fn read_to_string(path: &Path, cap: Cap) -> Result<String, ReadError> {
    String::from_utf8(read(path, cap)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text").into())
}

/// The first `n` bytes of `path` (fewer if it is shorter), to quote in an
/// error message. Errors: it cannot be opened or read.
pub fn head(path: &Path, n: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    File::open(path)?.take(n).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The lines of `reader` as [`BufRead::lines`] gives them (without `\n`
/// or `\r\n`), each at most `cap.bytes` long: a longer one is a
/// [`ReadError::TooLarge`] and ends the iteration (after reading at most
/// cap + 1 bytes of it).
pub fn lines<R: BufRead>(reader: R, cap: Cap) -> Lines<R> {
    Lines {
        reader,
        cap,
        done: false,
    }
}

/// The iterator of [`lines`].
pub struct Lines<R> {
    reader: R,
    cap: Cap,
    done: bool,
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = Result<String, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut buf = Vec::new();
        let limit = self.cap.bytes.saturating_add(1);
        match (&mut self.reader).take(limit).read_until(b'\n', &mut buf) {
            Ok(0) => {
                self.done = true;
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.done = true;
                return Some(Err(e.into()));
            }
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if buf.len() as u64 > self.cap.bytes {
            self.done = true;
            return Some(Err(ReadError::TooLarge { cap: self.cap }));
        }
        Some(String::from_utf8(buf).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
            .into()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: Cap = Cap {
        bytes: 8,
        what: "a test file",
    };

    #[test]
    fn a_file_over_its_cap_is_refused_after_cap_plus_one_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345678").unwrap();
        assert_eq!(read(&p, TINY).unwrap(), b"12345678");
        std::fs::write(&p, b"123456789").unwrap();
        let e = read(&p, TINY).unwrap_err();
        assert!(e.is_too_large());
        assert_eq!(
            e.in_file("f").to_string(),
            "f: larger than 8 bytes, the cap of a test file: refused"
        );
    }

    #[cfg(unix)]
    #[test]
    fn dev_zero_is_refused_not_read_forever() {
        let e = read_to_string(Path::new("/dev/zero"), SCENARIO).unwrap_err();
        assert!(e.is_too_large(), "{e}");
        assert!(e.to_string().contains("4 MiB"), "{e}");
        let r = std::io::BufReader::new(File::open("/dev/zero").unwrap());
        let mut it = lines(r, TINY);
        assert!(it.next().unwrap().unwrap_err().is_too_large());
        assert!(it.next().is_none());
    }

    #[test]
    fn lines_are_those_of_bufread() {
        let text = b"a\r\nbb\n\n12345678\nlast";
        let got: Vec<String> = lines(&text[..], TINY).map(Result::unwrap).collect();
        assert_eq!(got, ["a", "bb", "", "12345678", "last"]);
        let long = b"ok\n123456789\nnever";
        let mut it = lines(&long[..], TINY);
        assert_eq!(it.next().unwrap().unwrap(), "ok");
        assert!(it.next().unwrap().unwrap_err().is_too_large());
        assert!(it.next().is_none());
    }

    #[test]
    fn caps_print_in_binary_units() {
        assert_eq!(SCENARIO.to_string(), "4 MiB");
        assert_eq!(LATENCY_LOG.to_string(), "1 GiB");
        assert_eq!(HISTORY_LINE.to_string(), "64 MiB");
    }
}
