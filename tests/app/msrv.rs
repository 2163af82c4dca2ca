//! The minimum Rust version the project states (Cargo.toml's
//! `rust-version` and the README's "Build" line) is the true one: the
//! highest `rust-version` any locked dependency declares. A dependency
//! update that raises it fails here instead of in a user's older toolchain.

use std::path::Path;
use std::process::Command;

/// A `rust-version` as numbers, so "1.89" and "1.89.0" compare equal and
/// "1.100" sorts above "1.89".
fn version(text: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = text
        .split('.')
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("not a version: {text:?}"))
        })
        .collect();
    while parts.len() < 3 {
        parts.push(0);
    }
    parts
}

fn shown(v: &[u64]) -> String {
    format!("{}.{}", v[0], v[1])
}

/// The highest `rust-version` of the locked packages built on this
/// platform (dev-dependencies included: the README's test command builds
/// them), with the package that declares it.
fn locked_minimum() -> (Vec<u64>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let host = String::from_utf8(
        Command::new(env!("CARGO"))
            .args(["-vV"])
            .output()
            .expect("cargo -vV")
            .stdout,
    )
    .unwrap();
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("cargo -vV names the host")
        .to_string();
    let out = Command::new(env!("CARGO"))
        .current_dir(root)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--offline",
            "--filter-platform",
            &host,
        ])
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let resolved: std::collections::BTreeSet<&str> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| resolved.contains(p["id"].as_str().unwrap()))
        .filter(|p| p["name"] != "specstorm")
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            Some((
                version(v),
                format!("{} {}", p["name"].as_str()?, p["version"].as_str()?),
            ))
        })
        .max()
        .expect("some locked package declares a rust-version")
}

fn stated_in_cargo_toml() -> Vec<u64> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&text).unwrap();
    version(
        manifest["package"]["rust-version"]
            .as_str()
            .expect("Cargo.toml states a rust-version"),
    )
}

#[test]
fn the_stated_minimum_rust_version_is_the_locked_dependencies_highest() {
    let (needed, by) = locked_minimum();
    let stated = stated_in_cargo_toml();
    assert_eq!(
        stated[..2],
        needed[..2],
        "Cargo.toml says rust-version {}, but the locked {by} needs {}: state the true minimum \
         (Cargo.toml and README)",
        shown(&stated),
        shown(&needed)
    );
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let line = format!("Rust toolchain ({} or newer", shown(&needed));
    assert!(
        readme.contains(&line),
        "README.md should say \"{line}\" (the locked {by} needs it)"
    );
}

#[test]
fn versions_compare_as_numbers() {
    assert!(version("1.100") > version("1.89.0"));
    assert_eq!(version("1.89"), version("1.89.0"));
}
