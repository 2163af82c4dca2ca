//! Records the git commit the binary is built from (`specstorm --version`)
//! as `SPECSTORM_GIT_COMMIT`: the variable of that name when the build's
//! environment sets it (a container build has no `.git` to ask), else
//! git's answer, else `unknown`. Reruns when the variable changes or the
//! checkout's HEAD or the branch it names moves.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SPECSTORM_GIT_COMMIT");
    let commit = std::env::var("SPECSTORM_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SPECSTORM_GIT_COMMIT={commit}");
    // HEAD (a branch switch), the branch's ref (a commit) and packed-refs
    // (a ref packed away), each where this checkout keeps it.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(r);
    }
    for p in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &p]) {
            if std::path::Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}
