//! `specstorm audit` of a run killed before it saved its verdicts (no
//! `checks.json`): SIGKILL, out of memory, a full disk. Its history may
//! have no footer (then it is cut: [`Completeness::Cut`], and the checkers
//! apply the rules for a cut history) and a last line cut mid-way (left
//! out, said so). There are no run verdicts to compare with: the audit
//! confirms nothing, it judges what the folder holds, and says so
//! ([`Killed`]). Both workloads share this; `docs/cli.md`, "A killed run",
//! states it for users.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::audit_error::AuditError;
use crate::history::completeness::Completeness;
use crate::history::writer::{lost_batches_bound, CHANNEL_CAPACITY, FLUSH_BYTES, MIN_RECORD_BYTES};
use crate::history::{reader, Entry};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What the audit of a run that saved no verdicts says of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Killed {
    /// In words: that the run was killed, what may be missing, and that
    /// nothing can be confirmed.
    pub note: String,
    /// The history has no footer: at most this many batches (each one
    /// op's records, or one fault record) may be missing from it, any of
    /// them. None: the history was written to its end.
    pub missing_batches: Option<u64>,
    /// Bytes of a last line cut mid-way, left out (0: none).
    pub cut_line_bytes: u64,
}

/// A history's entries, a last line cut mid-way left out
/// ([`reader::cut_tail`]), with how many bytes were left out. Errors: the
/// file cannot be read (exit 3).
pub fn entries(
    path: &Path,
) -> Result<(impl Iterator<Item = anyhow::Result<Entry>>, u64), AuditError> {
    let (whole, cut) = whole_len(path)?;
    Ok((reader::read_prefix(path, whole).map_err(unreadable)?, cut))
}

/// [`entries`] as the binary codec's payloads ([`reader::payloads_prefix`]).
pub fn payloads(path: &Path) -> Result<(reader::Payloads, u64), AuditError> {
    let (whole, cut) = whole_len(path)?;
    Ok((
        reader::payloads_prefix(path, whole).map_err(unreadable)?,
        cut,
    ))
}

fn unreadable(e: anyhow::Error) -> AuditError {
    AuditError::Unreadable(format!("{e:#}"))
}

/// How many bytes of the history are whole, and how many were left out.
fn whole_len(path: &Path) -> Result<(u64, u64), AuditError> {
    let len = std::fs::metadata(path)
        .map_err(|e| AuditError::Unreadable(format!("{}: {e}", path.display())))?
        .len();
    let whole = reader::cut_tail(path).map_err(unreadable)?.unwrap_or(len);
    Ok((whole, len - whole))
}

/// Whether a history read with [`entries`] is whole: a footer and no cut
/// line. Errors: a footer followed by a cut line, which no run writes
/// (exit 3).
pub fn completeness(
    path: &Path,
    footer: bool,
    cut_line_bytes: u64,
) -> Result<Completeness, AuditError> {
    match (footer, cut_line_bytes) {
        (true, 0) => Ok(Completeness::Whole),
        (true, _) => Err(AuditError::Unreadable(format!(
            "{}: a cut line after the footer: not a history a run wrote",
            path.display()
        ))),
        (false, _) => Ok(Completeness::Cut),
    }
}

/// The note of a run that saved no verdicts. `footer`: its history has
/// one; `cut_line_bytes`: a cut last line was left out; `in_flight`: see
/// [`crate::audit_record::Rejudged::in_flight`] (each workload's audit
/// counts them); `summary`: its `summary.json` (a run that failed,
/// e.g. its history could not be written, says why there).
pub fn killed(
    footer: bool,
    cut_line_bytes: u64,
    in_flight: u64,
    summary: &serde_json::Value,
) -> Killed {
    let mut note = if footer {
        "the run saved no verdicts (checks.json is missing): it stopped after its history was \
         written to the end"
            .to_string()
    } else {
        let n = lost_batches_bound(in_flight);
        format!(
            "the run was killed (its history has no footer): up to {n} batches may be missing \
             from it, each one op's records or one fault record, and any of them, not only the \
             last ({CHANNEL_CAPACITY} queued for the writer, up to {} in its {} KiB not yet \
             written out, up to {in_flight} not yet sent); the verdicts follow the rules for a \
             cut history",
            FLUSH_BYTES / MIN_RECORD_BYTES + 1,
            FLUSH_BYTES / 1024
        )
    };
    if cut_line_bytes > 0 {
        note.push_str(&format!(
            "; its last chunk (or line) was cut mid-way ({cut_line_bytes} bytes), left out"
        ));
    }
    if let Some(e) = summary.get("error").and_then(serde_json::Value::as_str) {
        note.push_str(&format!("; its summary.json says the run failed: {e}"));
    }
    note.push_str("; no run verdicts to compare with: nothing to confirm");
    Killed {
        note,
        missing_batches: (!footer).then(|| lost_batches_bound(in_flight)),
        cut_line_bytes,
    }
}
