//! The files of a run folder, read back: its JSON files, its history, the
//! names it holds, its verdicts; and a copy of its files for a test to
//! tamper with.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The JSON file at `path` (panics, naming it, if unreadable or not JSON).
pub fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The run folder's `summary.json`.
pub fn summary(dir: &Path) -> Value {
    json(&dir.join("summary.json"))
}

/// Every entry of the run folder's history, header and footer included.
pub fn history(dir: &Path) -> Vec<Value> {
    history_text(dir)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The history of run folder (or history file) `path`, in either format,
/// as JSON lines: what `specstorm history` prints.
pub fn history_text(path: &Path) -> std::io::Result<String> {
    let mut out = Vec::new();
    specstorm::history::print::print(path, &mut out).map_err(std::io::Error::other)?;
    Ok(String::from_utf8(out).expect("JSON is UTF-8"))
}

/// Replaces run folder `dir`'s history with `text`, JSON lines, as an
/// earlier release wrote it (`history.jsonl`): how a test tampers with a
/// history.
pub fn write_history_text(dir: &Path, text: impl AsRef<[u8]>) {
    let _ = std::fs::remove_file(dir.join(specstorm::history::file::FILE));
    std::fs::write(dir.join(specstorm::history::file::JSON_LINES_FILE), text).unwrap();
}

/// Run folder `dir`'s history file, in whichever format it is.
pub fn history_file(dir: &Path) -> PathBuf {
    specstorm::history::file::in_folder(dir)
}

/// The names in `dir`, sorted (panics if it cannot be read).
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The names in `dir`, sorted; none if there is no such folder.
pub fn names_if_any(dir: &Path) -> Vec<String> {
    if dir.exists() {
        names(dir)
    } else {
        Vec::new()
    }
}

/// Copies the regular files of `from` into `to` (made if missing).
/// A committed run folder under `tests/fixtures/` (`name` may name a
/// sub-folder, `naive-shards/0`), copied whole into `to` so a command may
/// write into the copy.
pub fn fixture(name: &str, to: &Path) -> PathBuf {
    copy_files(&super::bench::root().join("tests/fixtures").join(name), to);
    to.to_path_buf()
}

pub fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Asserts that a groups summary says `holds` for each of the workload's
/// four invariants.
pub fn groups_invariants_hold(s: &Value) {
    for inv in [
        "TypeOK",
        "OneGroupPerFingerprint",
        "CountExact",
        "NoMissedRegression",
    ] {
        assert_eq!(s["invariants"][inv]["verdict"], "holds", "{inv}");
    }
}

/// The verdict of invariant `name` in summary `s` (panics if it has none).
pub fn verdict(s: &Value, name: &str) -> String {
    s["invariants"][name]["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The dotted paths of every number in `v` under `prefix`, into `out`.
pub fn leaves(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaves(x, &p, out);
            }
        }
        Value::Number(_) => out.push(prefix.to_string()),
        _ => {}
    }
}

/// Every file under `dir`, recursively.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
