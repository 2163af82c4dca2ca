//! The files of a run's results, one [`Exporter`] per format (each in its
//! own small file: `checks_json`, `junit`, `summary_json`, `hlog`; the
//! list a run writes is `report::results`), and the one function that
//! writes them into a run folder, in order and each whole
//! ([`crate::whole`]): a file is there complete or not at all, and
//! `summary.json` goes last, so that a folder with it has every other
//! result too.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::summary::Summary;
use crate::verdict::CheckResult;
use crate::whole::{write_whole, WriteError};
use std::path::Path;

/// What a run's result files are made of.
pub struct RunResults<'a> {
    /// The summary (its common and its workload's figures).
    pub summary: &'a Summary,
    /// The checkers' results, with their evidence.
    pub results: &'a [CheckResult],
    /// The name of the JUnit report (`specstorm`, `specstorm merge`).
    pub junit_name: &'a str,
}

/// One result file of a run folder: its name, and its bytes from the run.
pub trait Exporter {
    /// Its file name in the run folder.
    fn file_name(&self) -> &str;

    /// Its whole content. Errors: the format cannot hold the run.
    fn serialize(&self, run: &RunResults<'_>) -> anyhow::Result<Vec<u8>>;
}

/// Why a result file is missing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Its content could not be made.
    #[error("{file} could not be made: {source}")]
    Serialize {
        /// The file's name.
        file: String,
        /// Why.
        source: anyhow::Error,
    },
    /// It could not be written (a full disk): nothing of it is there.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Writes each of `exporters`' files into `dir`, in that order, each
/// whole; stops at the first that cannot be made or written.
pub fn write_all(
    dir: &Path,
    exporters: &[&dyn Exporter],
    run: &RunResults<'_>,
) -> Result<(), ExportError> {
    for e in exporters {
        let bytes = e.serialize(run).map_err(|source| ExportError::Serialize {
            file: e.file_name().to_string(),
            source,
        })?;
        write_whole(&dir.join(e.file_name()), bytes)?;
    }
    Ok(())
}
