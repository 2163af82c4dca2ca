//! `specstorm run` of a scenario (a shipped file or a test's own text)
//! into a run folder, and what it left there.

use super::bench::{command, exit_and_text};
use super::folder;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tempfile::TempDir;

/// `specstorm run SCENARIO -q --out OUT`, to complete with more arguments
/// (in the crate's folder, so a shipped scenario is `scenarios/NAME`).
pub fn run_command(scenario: &Path, out: &Path) -> Command {
    let mut c = command();
    c.arg("run").arg(scenario).arg("-q").arg("--out").arg(out);
    c
}

/// `specstorm run SCENARIO -q --out OUT ARGS`, run to its end.
pub fn run_into(scenario: &str, out: &Path, args: &[&str]) -> Output {
    run_command(Path::new(scenario), out)
        .args(args)
        .output()
        .expect("run specstorm")
}

/// `--set` before each of `sets`.
pub fn sets<'a>(sets: &[&'a str]) -> Vec<&'a str> {
    sets.iter().flat_map(|s| ["--set", s]).collect()
}

/// A finished run in a fresh temporary folder.
pub struct Ran {
    /// What the binary printed, and its exit status.
    pub output: Output,
    /// The run folder, `TMP/run`.
    pub out: PathBuf,
    /// The temporary folder: the run folder and the scenario file live as
    /// long as it does.
    pub tmp: TempDir,
}

/// `specstorm run ARGS -q --out TMP/run` (ARGS name the scenario, or
/// leave the default one).
pub fn run_args(args: &[&str]) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let output = command()
        .arg("run")
        .args(args)
        .arg("-q")
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run specstorm");
    Ran { output, out, tmp }
}

/// Runs `scenario` (a path from the crate's folder) with `args` into
/// `TMP/run`.
pub fn run(scenario: &str, args: &[&str]) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let output = run_into(scenario, &out, args);
    Ran { output, out, tmp }
}

/// Runs the scenario `text` (written to `TMP/scenario.toml`) with `args`
/// into `TMP/run`.
pub fn run_text(text: &str, args: &[&str]) -> Ran {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("scenario.toml");
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("run");
    let output = run_into(file.to_str().unwrap(), &out, args);
    Ran { output, out, tmp }
}

impl Ran {
    /// The exit code (-1 when a signal ended the run).
    pub fn code(&self) -> i32 {
        self.output.status.code().unwrap_or(-1)
    }

    /// The run's `summary.json`; panics with what the run printed when it
    /// left none.
    pub fn summary(&self) -> Value {
        let text = std::fs::read_to_string(self.out.join("summary.json"))
            .unwrap_or_else(|e| panic!("no summary.json ({e}): {}", exit_and_text(&self.output)));
        serde_json::from_str(&text).unwrap()
    }

    /// The run's `summary.json`, or null when it left none.
    pub fn summary_or_null(&self) -> Value {
        std::fs::read_to_string(self.out.join("summary.json"))
            .map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or(Value::Null)
    }

    /// Every entry of the run's history.
    pub fn history(&self) -> Vec<Value> {
        folder::history(&self.out)
    }
}

/// The scenario `text` as the loader reads it (from a file `t.toml`),
/// without running it; a refusal as its message.
pub fn load_text(text: &str) -> Result<specstorm::scenario::Scenario, String> {
    specstorm::scenario::load_str("t", Some(Path::new("t.toml")), text, &[])
        .map_err(|e| e.to_string())
}
