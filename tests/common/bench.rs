//! The `specstorm` binary under test, run from the crate's folder (where
//! the shipped `scenarios/` and `targets/` are), and its output as text.

use std::path::PathBuf;
use std::process::{Command, Output};

/// The crate's folder: every relative path of a test starts here.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary as a command to complete, in the crate's folder.
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_specstorm"));
    c.current_dir(root());
    c
}

/// `specstorm ARGS` in the crate's folder, run to its end.
pub fn specstorm(args: &[&str]) -> Output {
    command().args(args).output().expect("run specstorm")
}

/// Standard output then standard error.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The exit code, standard output and standard error, one per line.
pub fn exit_and_text(o: &Output) -> String {
    format!(
        "exit {:?}\n{}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `specstorm ARGS` in the crate's folder, run by `sh -c` after the shell
/// commands `limits` (e.g. `ulimit -v N`), which thus bind it.
pub fn specstorm_limited(limits: &str, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("{limits} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_specstorm"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run specstorm under sh")
}
