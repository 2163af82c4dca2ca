//! Why a scenario was refused: the one error type of the loader, shown as
//! `FILE:LINE: reason` or `--set KEY=VALUE: reason`.
//!
//! May import: `crate::input` (the read error it wraps).

/// Why a scenario was refused.
///
/// Display is `FILE:LINE: reason` (FILE is the scenario's path or
/// `<embedded default>`; LINE is 1-based, 0 when no line applies), or
/// `--set KEY=VALUE: reason` when an override caused the error.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The scenario file could not be read.
    #[error("{file}: cannot read the scenario: {source}")]
    Read {
        /// The file as named to the user (`<embedded default>` for the default).
        file: String,
        /// The I/O error, or the file is over its size cap.
        #[source]
        source: crate::input::ReadError,
    },
    /// The file is not valid TOML, holds an unknown key, a value of the
    /// wrong type, or an impossible value.
    #[error("{file}:{line}: {reason}")]
    File {
        /// The file as named to the user (`<embedded default>` for the default).
        file: String,
        /// 1-based line of the offending key; 0 when no line applies.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A `--set KEY=VALUE` override is malformed, names an unknown key, or
    /// sets a value of the wrong type or an impossible one.
    #[error("--set {set}: {reason}")]
    Set {
        /// The override as given (`KEY=VALUE`).
        set: String,
        /// What is wrong.
        reason: String,
    },
}

impl ScenarioError {
    /// The 1-based line of the offending key in the file (0: no line
    /// applies), or None when the error is not about a line of the file.
    pub fn line(&self) -> Option<usize> {
        match self {
            ScenarioError::File { line, .. } => Some(*line),
            _ => None,
        }
    }

    /// What is wrong, without the location.
    pub fn reason(&self) -> String {
        match self {
            ScenarioError::Read { source, .. } => source.to_string(),
            ScenarioError::File { reason, .. } | ScenarioError::Set { reason, .. } => {
                reason.clone()
            }
        }
    }
}
