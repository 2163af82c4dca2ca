//! Reads a history file back, one entry at a time (memory stays flat
//! whatever the history's length).

use super::Entry;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// Iterates the entries of a history file. Errors name the file and line.
pub fn read(path: &Path) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Entry>>> {
    let file = File::open(path)
        .map_err(|e| anyhow::anyhow!("cannot open history {}: {e}", path.display()))?;
    let display = path.display().to_string();
    Ok(BufReader::with_capacity(1 << 20, file)
        .lines()
        .enumerate()
        .filter(|(_, l)| !matches!(l, Ok(s) if s.trim().is_empty()))
        .map(move |(i, line)| {
            let line = line.map_err(|e| anyhow::anyhow!("{display}:{}: {e}", i + 1))?;
            serde_json::from_str(&line)
                .map_err(|e| anyhow::anyhow!("{display}:{}: not a history entry: {e}", i + 1))
        }))
}
