//! Finding a scenario's variant: a statement file on disk (relative to the
//! scenario file's folder) or a built-in one compiled into the binary (the
//! files shipped in `targets/sqlite/`, each workload's listed in its
//! registry entry), so the embedded default scenario runs from any folder.
//!
//! Layer: config. May import the modules of its own layer and of the layers
//! below it (core and model).

use crate::statements::FileError;
use std::path::{Path, PathBuf};

/// The built-in variants, each workload's (`crate::scenario::section`):
/// (name, file path shown, text).
pub fn builtin() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    crate::scenario::section::built_in_variants().map(|b| (b.name, b.path, b.text))
}

/// Where a variant's text comes from.
pub fn locate(variant: &str, scenario_dir: Option<&Path>) -> Result<(PathBuf, String), FileError> {
    if !variant.ends_with(".sql") {
        if let Some((_, path, text)) = builtin().find(|(n, _, _)| *n == variant) {
            return Ok((
                PathBuf::from(format!("<built-in {variant}> {path}")),
                text.to_string(),
            ));
        }
        return Err(FileError {
            file: PathBuf::from(variant),
            line: 0,
            reason: format!(
                "no built-in variant named {variant:?} (built-in: {}); a statement file path must end in .sql",
                builtin().map(|b| b.0).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let path = match scenario_dir {
        Some(dir) if Path::new(variant).is_relative() => dir.join(variant),
        _ => PathBuf::from(variant),
    };
    let text =
        crate::input::read_to_string(&path, crate::input::STATEMENTS).map_err(|e| FileError {
            file: path.clone(),
            line: 0,
            reason: format!("cannot read statement file: {e}"),
        })?;
    Ok((path, text))
}

pub use crate::scenario::short_name;
