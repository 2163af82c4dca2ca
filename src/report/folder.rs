//! The folders `specstorm report` reads ([`open`]): a run folder
//! (`summary.json`, ...) or a compare folder (`compare.json` and one run
//! folder per variant), and their text: a run's summary again, a failed
//! run's error, a compare variant in a few lines.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use serde_json::Value;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// A folder `specstorm report` can read.
#[derive(Debug, Clone)]
pub enum Folder {
    /// A run folder: its `summary.json` as read.
    Run {
        /// The folder.
        dir: PathBuf,
        /// `summary.json`.
        summary: Value,
    },
    /// A compare folder: `compare.json`'s variants, each `(name, run folder)`
    /// with the folder resolved against the compare folder.
    Compare {
        /// The folder.
        dir: PathBuf,
        /// `(variant name, run folder)`, in `compare.json`'s order.
        variants: Vec<(String, PathBuf)>,
    },
}

/// Why a folder is no report's input: the message names the folder and
/// the reason (the command exits 2 with it).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {reason}", dir.display())]
pub struct FolderError {
    /// The folder.
    pub dir: PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

pub(crate) fn folder_error(dir: &Path, reason: impl Into<String>) -> FolderError {
    FolderError {
        dir: dir.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads a JSON file of a folder. Errors: unreadable or not JSON.
pub fn read_json(dir: &Path, file: &str) -> Result<Value, FolderError> {
    let text = crate::input::read_to_string(&dir.join(file), crate::input::RUN_JSON)
        .map_err(|e| folder_error(dir, format!("cannot read {file}: {e}")))?;
    serde_json::from_str(&text).map_err(|e| folder_error(dir, format!("{file} is not JSON: {e}")))
}

/// Opens a run folder (it has `summary.json`) or a compare folder (it has
/// `compare.json` with `variants[].name` and `variants[].run_dir`; other
/// keys are ignored). Errors: no such folder, neither file, or a file that
/// cannot be read or parsed.
pub fn open(dir: &Path) -> Result<Folder, FolderError> {
    if !dir.is_dir() {
        let why = if dir.exists() {
            "not a folder"
        } else {
            "no such folder"
        };
        return Err(folder_error(dir, why));
    }
    if dir.join("compare.json").exists() {
        let c = read_json(dir, "compare.json")?;
        let Some(list) = c.get("variants").and_then(Value::as_array) else {
            return Err(folder_error(dir, "compare.json has no `variants` list"));
        };
        let mut variants = Vec::new();
        for (i, v) in list.iter().enumerate() {
            let name = v.get("name").and_then(Value::as_str);
            let run_dir = v.get("run_dir").and_then(Value::as_str);
            let (Some(name), Some(run_dir)) = (name, run_dir) else {
                return Err(folder_error(
                    dir,
                    format!("compare.json: variants[{i}] lacks `name` or `run_dir`"),
                ));
            };
            variants.push((name.to_string(), dir.join(run_dir)));
        }
        return Ok(Folder::Compare {
            dir: dir.to_path_buf(),
            variants,
        });
    }
    if dir.join("summary.json").exists() {
        let summary = read_json(dir, "summary.json")?;
        if !summary.is_object() {
            return Err(folder_error(dir, "summary.json is not a JSON object"));
        }
        return Ok(Folder::Run {
            dir: dir.to_path_buf(),
            summary,
        });
    }
    // A run killed before it saved its summary still has its history: the
    // audit judges what it holds; a report has no figures to show.
    if crate::history::file::in_folder(dir).exists() {
        return Err(folder_error(
            dir,
            format!(
                "a run that was killed before it saved its results (no summary.json, only its \
                 history): no figures to report; `specstorm audit {}` judges what its history \
                 and database hold",
                dir.display()
            ),
        ));
    }
    Err(folder_error(
        dir,
        "not a run folder (no summary.json) nor a compare folder (no compare.json)",
    ))
}

/// `scenario / variant, seed N` of a summary, for the table's head.
pub fn label(dir: &Path, summary: &Value) -> String {
    let s = |k: &str| summary.get(k).and_then(Value::as_str).unwrap_or("?");
    let seed = summary
        .get("seed")
        .map(|v| v.to_string())
        .unwrap_or_else(|| "?".into());
    let failed = if summary.get("error").is_some() {
        " (a FAILED run: few figures)"
    } else {
        ""
    };
    format!(
        "{} ({} / {}, seed {seed}){failed}",
        dir.display(),
        s("scenario"),
        s("variant")
    )
}

/// `scenario / variant, seed N` of a summary (plot titles).
pub fn title(summary: &Value) -> String {
    let s = |k: &str| summary.get(k).and_then(Value::as_str).unwrap_or("?");
    let seed = summary
        .get("seed")
        .map(|v| v.to_string())
        .unwrap_or_else(|| "?".into());
    format!("{} / {}, seed {seed}", s("scenario"), s("variant"))
}

/// A run folder's human summary again (as printed at the end of the run,
/// from `summary.json` and `checks.json`); a failed run's error and exit.
/// A missing `checks.json` leaves out the evidence (verdicts come from the
/// summary), with a note. `parts` gives the workload's own lines of the
/// summary (`Workload::human`). Errors: `summary.json` is no run summary,
/// or `checks.json` exists but cannot be read.
pub fn run_text(
    dir: &Path,
    summary: &Value,
    parts: impl FnOnce(&super::Summary) -> crate::workload::parts::HumanParts,
) -> Result<String, FolderError> {
    use super::human;
    use crate::verdict::CheckResult;
    if let Some(text) = failed_text(summary) {
        return Ok(text);
    }
    let s: super::Summary = serde_json::from_value(summary.clone())
        .map_err(|e| folder_error(dir, format!("summary.json is not a run summary: {e}")))?;
    let mut notes = String::new();
    let results: Vec<CheckResult> = if dir.join("checks.json").exists() {
        serde_json::from_value(read_json(dir, "checks.json")?)
            .map_err(|e| folder_error(dir, format!("checks.json is not a list of checks: {e}")))?
    } else {
        notes.push_str("note: no checks.json: verdicts from summary.json, without evidence\n");
        s.invariants
            .iter()
            .map(|(name, i)| {
                let mut r = CheckResult::new(name);
                r.verdict = i.verdict;
                r.violations = i.violations;
                r.unknowns = i.unknowns;
                r
            })
            .collect()
    };
    Ok(human::render(&s, &results, &dir.display().to_string(), &parts(&s)) + &notes)
}

/// A failed run's lines (its summary has `error`), else None.
fn failed_text(summary: &Value) -> Option<String> {
    let error = summary.get("error")?;
    let error = error
        .as_str()
        .map(str::to_string)
        .unwrap_or(error.to_string());
    let mut o = format!("specstorm: {}: the run FAILED: {error}\n", title(summary));
    if let Some(c) = summary
        .pointer("/provenance/command")
        .and_then(Value::as_str)
    {
        let _ = writeln!(o, "reproduce: {c}");
    }
    if let Some(e) = summary.get("exit") {
        let _ = writeln!(
            o,
            "exit {}: {}",
            e.get("code").map(|c| c.to_string()).unwrap_or_default(),
            e.get("rule").and_then(Value::as_str).unwrap_or("")
        );
    }
    Some(o)
}

/// A compare folder's variant in a few lines: exit, load, p99 latencies,
/// verdicts. A missing folder or summary is said, not an error. Errors:
/// `summary.json` exists but cannot be read.
pub fn variant_text(name: &str, dir: &Path) -> Result<String, FolderError> {
    let mut o = format!("== variant {name} ({})\n", dir.display());
    if !dir.join("summary.json").exists() {
        let _ = writeln!(o, "  no summary.json (missing or unfinished run)");
        return Ok(o);
    }
    let s = read_json(dir, "summary.json")?;
    if let Some(text) = failed_text(&s) {
        return Ok(o + "  " + &text.replace('\n', "\n  ").trim_end_matches(' '));
    }
    let f = |p: &str| s.pointer(p).and_then(Value::as_f64).unwrap_or(0.0);
    let _ = writeln!(
        o,
        "  {} events in {:.1}s, {:.0} ops/s{}",
        f("/events"),
        f("/duration_s"),
        f("/throughput_ops_per_s/total"),
        if s.get("partial") == Some(&Value::Bool(true)) {
            " (PARTIAL: interrupted)"
        } else {
            ""
        }
    );
    if let Some(lat) = s.get("latency_us").and_then(Value::as_object) {
        let parts: Vec<_> = lat
            .iter()
            .map(|(k, l)| {
                let p99 = l.get("p99").and_then(Value::as_f64).unwrap_or(0.0);
                format!("{k} p99 {}", super::human::duration_us(p99))
            })
            .collect();
        let _ = writeln!(o, "  ok latency: {}", parts.join(", "));
    }
    if let Some(inv) = s.get("invariants").and_then(Value::as_object) {
        let parts: Vec<_> = inv
            .iter()
            .map(|(k, v)| {
                let verdict = v.get("verdict").and_then(Value::as_str).unwrap_or("?");
                match verdict {
                    "violated" => format!(
                        "{k} VIOLATED ({})",
                        v.get("violations").cloned().unwrap_or_default()
                    ),
                    _ => format!("{k} {verdict}"),
                }
            })
            .collect();
        let _ = writeln!(o, "  invariants: {}", parts.join(", "));
    }
    if let Some(e) = s.get("exit") {
        let _ = writeln!(
            o,
            "  exit {}: {}",
            e.get("code").map(|c| c.to_string()).unwrap_or_default(),
            e.get("rule").and_then(Value::as_str).unwrap_or("")
        );
    }
    Ok(o)
}
