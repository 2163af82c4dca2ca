//! The rules a verdict rests on ship with the project: no tracked file
//! points at the helpers' reference folder outside the repository (the
//! needle is built below, so that this file does not match itself), and
//! every relative Markdown link in a tracked `.md` file points at a tracked
//! file or folder. Tracked means `git ls-files`: a link to a file that only
//! exists in one checkout would pass here and break for every user.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::common::root;

/// Every tracked file, as paths relative to the repository root.
fn tracked() -> Vec<String> {
    let o = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git must be installed to list the tracked files");
    assert!(
        o.status.success(),
        "git ls-files failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout)
        .expect("tracked paths are UTF-8")
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Tracked files and every folder that holds one.
fn tracked_paths(files: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in files {
        out.insert(f.clone());
        let mut p = Path::new(f);
        while let Some(parent) = p.parent() {
            if parent.as_os_str().is_empty() {
                break;
            }
            out.insert(parent.to_string_lossy().into_owned());
            p = parent;
        }
    }
    out
}

/// Lines (1-based) of `text` that mention `needle`.
fn mentions(text: &str, needle: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect()
}

/// The link targets of a Markdown text, with their lines: inline links and
/// images `[text](target)` and reference definitions `[label]: target`,
/// outside fenced code blocks and inline code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Inline code is no link: blank it out.
        let mut plain = String::with_capacity(line.len());
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                plain.push(' ');
            } else {
                plain.push(if in_code { ' ' } else { c });
            }
        }
        let mut rest = plain.as_str();
        while let Some(k) = rest.find("](") {
            let after = &rest[k + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((i + 1, after[..end].to_string()));
            rest = &after[end..];
        }
        let t = plain.trim_start();
        if t.starts_with('[') && !t.starts_with("[^") {
            if let Some(k) = t.find("]:") {
                out.push((i + 1, t[k + 2..].to_string()));
            }
        }
    }
    out
}

/// The file a link target names, relative to the repository root, or None
/// for a link that names no file of the repository (a URL, an anchor in
/// the same page). Errors: a path that leaves the repository.
fn link_path(md: &str, target: &str) -> Option<Result<String, String>> {
    let t = target.trim();
    let t = t.split_whitespace().next().unwrap_or("");
    let t = t.trim_start_matches('<').trim_end_matches('>');
    let t = t.split('#').next().unwrap_or("");
    let lower = t.to_ascii_lowercase();
    if t.is_empty()
        || lower.starts_with("http://")
        || lower.starts_with("https://")
        || lower.starts_with("mailto:")
    {
        return None;
    }
    let base = if t.starts_with('/') {
        PathBuf::new()
    } else {
        Path::new(md)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    };
    let mut parts: Vec<String> = Vec::new();
    for c in base.join(t.trim_start_matches('/')).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Some(Err(format!("{t} leaves the repository")));
                }
            }
            _ => {}
        }
    }
    Some(Ok(parts.join("/")))
}

/// Every relative link of the tracked `.md` files that points at nothing
/// tracked, as `file:line: target`.
fn broken_links(files: &[String], read: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let known = tracked_paths(files);
    let mut bad = Vec::new();
    for md in files.iter().filter(|f| f.ends_with(".md")) {
        let Some(text) = read(md) else { continue };
        for (line, target) in links(&text) {
            match link_path(md, &target) {
                None => {}
                Some(Err(why)) => bad.push(format!("{md}:{line}: {why}")),
                Some(Ok(p)) if p.is_empty() || known.contains(&p) => {}
                Some(Ok(p)) => bad.push(format!(
                    "{md}:{line}: ({target}) points at {p}, which is not a tracked file"
                )),
            }
        }
    }
    bad
}

fn read_tracked(path: &str) -> Option<String> {
    // Binary files (a database, an image) hold no links or paths to judge.
    std::fs::read(root().join(path))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

#[test]
fn no_tracked_file_mentions_the_shared_folder() {
    // Built so that this file does not match itself.
    let needle = ["shar", "ed/"].concat();
    let mut bad = Vec::new();
    for f in tracked() {
        if let Some(text) = read_tracked(&f) {
            for line in mentions(&text, &needle) {
                bad.push(format!("{f}:{line}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "these tracked files mention `{needle}`, which is no part of the repository; \
         point them at docs/ or specs/:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_relative_markdown_link_points_at_a_tracked_file() {
    let files = tracked();
    assert!(
        files.iter().any(|f| f == "README.md"),
        "git ls-files did not list README.md: not run in the repository?"
    );
    let bad = broken_links(&files, &read_tracked);
    assert!(
        bad.is_empty(),
        "relative Markdown links that point at nothing tracked:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_specs_and_rule_pages_are_tracked() {
    let files = tracked();
    for f in [
        "specs/BacktalkGroups.tla",
        "specs/exactly_once_none_atomic.tla",
        "docs/groups.md",
        "docs/outbox.md",
        "docs/http-contract.md",
        "docs/cli.md",
    ] {
        assert!(files.iter().any(|t| t == f), "{f} is not tracked");
    }
}

// The checks themselves must be able to fail: planted mentions and links.

#[test]
fn the_mention_check_finds_a_planted_mention() {
    let needle = ["shar", "ed/"].concat();
    let text = format!("fine\nsee ../{needle}reference/groups.md\n");
    assert_eq!(mentions(&text, &needle), vec![2]);
}

#[test]
fn the_link_check_finds_planted_broken_links() {
    let files: Vec<String> = ["README.md", "docs/a.md", "docs/b.md", "specs/S.tla"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let pages = |p: &str| -> Option<String> {
        Some(
            match p {
                "README.md" => {
                    "[ok](docs/a.md) [ok too](docs/b.md#part) [dir](docs/) [web](https://x.org/y.md)\n\
                     [anchor](#top) [mail](mailto:a@b.c) `[code](nowhere.md)`\n\
                     [missing](docs/nowhere.md#x)\n\
                     ```\n[in a fence](nowhere.md)\n```\n\
                     [ref]: docs/gone.md\n"
                }
                "docs/a.md" => "[up](../specs/S.tla) [out](../../outside.md) [side](b.md)\n",
                "docs/b.md" => "[bad](./c.md \"title\")\n",
                _ => return None,
            }
            .to_string(),
        )
    };
    let bad = broken_links(&files, &pages);
    assert_eq!(bad.len(), 4, "{bad:#?}");
    assert!(bad[0].starts_with("README.md:3:") && bad[0].contains("docs/nowhere.md"));
    assert!(bad[1].starts_with("README.md:7:") && bad[1].contains("docs/gone.md"));
    assert!(bad[2].starts_with("docs/a.md:1:") && bad[2].contains("leaves the repository"));
    assert!(bad[3].starts_with("docs/b.md:1:") && bad[3].contains("docs/c.md"));
}
