//! Reads a history file back, one entry at a time (memory stays flat
//! whatever the history's length; a line is read within
//! [`crate::input::HISTORY_LINE`]).

use super::Entry;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

/// Iterates the entries of a history file. Errors name the file and line
/// (a line over its cap: [`crate::input::is_too_large`] tells).
pub fn read(path: &Path) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Entry>>> {
    let file = File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot open history {}: {e}", path.display()))?;
    let display = path.display().to_string();
    let lines = crate::input::lines(
        BufReader::with_capacity(1 << 20, file),
        crate::input::HISTORY_LINE,
    );
    Ok(lines
        .enumerate()
        .filter(|(_, l)| !matches!(l, Ok(s) if s.trim().is_empty()))
        .map(move |(i, line)| {
            let line = line.map_err(|e| e.in_file(format!("{display}:{}", i + 1)))?;
            serde_json::from_str(&line)
                .map_err(|e| anyhow::anyhow!("{display}:{}: not a history entry: {e}", i + 1))
        }))
}
