//! Why an audit could not be done ([`AuditError`]), for every audit
//! module: each kind maps to a cli.md exit code.
//!
//! App layer, the lowest of the audit's modules: imports only the core
//! (whole-file writes, input caps, exit codes).

use crate::exit_code::ExitCode;

/// Why an audit could not be done; each maps to a cli.md exit code.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// RUN_DIR is not a run folder, or lacks a file the audit needs (the
    /// message names it): exit 2.
    #[error("{0}")]
    Input(String),
    /// A file is there but cannot be read as what a run writes (a broken
    /// history, an unreadable database): exit 3, nothing can be judged.
    #[error("{0}")]
    Unreadable(String),
    /// `audit.json` could not be written (a full disk): exit 3. It is
    /// left as it was, or absent.
    #[error(transparent)]
    Write(#[from] crate::whole::WriteError),
}

impl AuditError {
    /// The exit code (cli.md): 2 for a folder that is no run folder or
    /// lacks a file, 3 for a file that cannot be read.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            AuditError::Input(_) => ExitCode::Usage,
            AuditError::Unreadable(_) | AuditError::Write(_) => ExitCode::Target,
        }
    }

    /// A file that could not be read: unreadable (exit 3), or refused for
    /// its size ([`crate::input`]), a refused input (exit 2).
    pub(crate) fn reading(e: anyhow::Error) -> AuditError {
        if crate::input::is_too_large(&e) {
            AuditError::Input(format!("{e:#}"))
        } else {
            AuditError::Unreadable(format!("{e:#}"))
        }
    }
}
