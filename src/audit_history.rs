//! What every workload's audit and merge read of a history the same way:
//! its header (the workload that wrote it) and the latest time an entry
//! carries.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::history::{reader, Entry, Header};
use std::path::Path;

/// The latest time an entry carries, ns since run start (0 for a header).
pub fn entry_time(e: &Entry) -> u64 {
    match e {
        Entry::Header(_) => 0,
        Entry::Invoke(i) => i.t.max(i.intended.unwrap_or(0)),
        Entry::Step(s) => s.end.unwrap_or(s.start).max(s.start),
        Entry::Ok(c) | Entry::Fail(c) | Entry::Info(c) => c.t,
        Entry::Fault(f) => f.t,
        Entry::Bench(b) => b.end.max(b.t),
        Entry::Footer(f) => f.t,
    }
}

/// The first line of a history, if it is a header. Errors: the file
/// cannot be read or its first line is not a history entry.
pub fn read_header(path: &Path) -> anyhow::Result<Option<Header>> {
    match reader::read(path)?.next() {
        Some(Ok(Entry::Header(h))) => Ok(Some(h)),
        Some(Err(e)) => Err(e),
        _ => Ok(None),
    }
}
