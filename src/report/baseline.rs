//! `specstorm report RUN_DIR --baseline OLD_DIR`: every figure of a run
//! against an earlier run, as Goose's baseline files do (old, new, change,
//! change in %), and each invariant's verdict change. The comparison is a
//! pure function over two `summary.json` values ([`compare`]), walked by
//! dotted path, so that no figure is dropped silently: a figure present in
//! one summary only is listed as added or removed.
//! Its folders are read by [`super::folder`]; the comparisons of two
//! folders ([`compared`]) are shown as tables ([`text`]) or as JSON
//! ([`json`], `report --format json`), and a regression in any makes
//! `report` exit 1.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use super::folder::{folder_error, label, read_json, Folder, FolderError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::PathBuf;

/// Subtrees of a summary that hold no figure to compare: identity,
/// provenance, the resolved scenario, the exit (its code is judged by the
/// verdicts), and arrays of examples.
const NOT_FIGURES: [&str; 7] = [
    "schema_version",
    "seed",
    "history",
    "provenance",
    "resolved_scenario",
    "exit",
    "coverage.gaps",
];

/// Order of the figures in the table, by their first path segment; any
/// other segment comes after these, alphabetically.
const ORDER: [&str; 15] = [
    "duration_s",
    "events",
    "events_per_s",
    "throughput_ops_per_s",
    "ops",
    "latency_us",
    "latency_us_not_ok",
    "latency_saturated",
    "duplicates",
    "resolves",
    "open_model",
    "stranded_events",
    "faults_injected",
    "invariants",
    "coverage",
];

/// One numeric figure in the old run, the new run, or both.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureDelta {
    /// Dotted path in `summary.json`, e.g. `latency_us.ingest.p99` (units
    /// are the summary's: µs, ops/s, s, counts).
    pub path: String,
    /// Value in the baseline; None: the figure is new (added).
    pub old: Option<f64>,
    /// Value in this run; None: the figure is gone (removed).
    pub new: Option<f64>,
}

impl FigureDelta {
    /// new - old, when both exist.
    pub fn change(&self) -> Option<f64> {
        Some(self.new? - self.old?)
    }

    /// Change in % of the old value; None when a side is missing or the old
    /// value is 0 and the new one is not (no finite percentage).
    pub fn percent(&self) -> Option<f64> {
        let (old, new) = (self.old?, self.new?);
        if old == 0.0 {
            return (new == 0.0).then_some(0.0);
        }
        Some((new - old) / old.abs() * 100.0)
    }
}

/// One invariant's verdict in both runs (`holds`, `violated`, `unknown`;
/// None: the invariant is absent from that summary).
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictChange {
    /// Invariant name.
    pub invariant: String,
    /// Verdict in the baseline.
    pub old: Option<String>,
    /// Verdict in this run.
    pub new: Option<String>,
}

impl VerdictChange {
    /// The invariant held in the baseline and is violated now.
    pub fn regressed(&self) -> bool {
        self.old.as_deref() == Some("holds") && self.new.as_deref() == Some("violated")
    }
}

/// The whole comparison of two summaries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Comparison {
    /// Every numeric figure of either summary, in report order.
    pub figures: Vec<FigureDelta>,
    /// Every invariant of either summary, by name.
    pub verdicts: Vec<VerdictChange>,
    /// The exit codes (baseline, this run), and this run's rule: a run
    /// that met its expectation and now does not is a change to show even
    /// when no verdict changed (a threshold, an expected violation).
    pub exit: (Option<i64>, Option<i64>, Option<String>),
}

impl Comparison {
    /// Invariants that held in the baseline and are violated now.
    pub fn regressions(&self) -> Vec<&VerdictChange> {
        self.verdicts.iter().filter(|v| v.regressed()).collect()
    }
}

/// Compares two `summary.json` values (baseline `old`, this run `new`):
/// every numeric leaf outside [`NOT_FIGURES`] by dotted path, and every
/// `invariants.<name>.verdict`. Never fails: a summary of a failed run
/// simply has few figures.
pub fn compare(old: &Value, new: &Value) -> Comparison {
    let (mut o, mut n) = (BTreeMap::new(), BTreeMap::new());
    leaves(old, String::new(), &mut o);
    leaves(new, String::new(), &mut n);
    let paths: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
    let mut figures: Vec<FigureDelta> = paths
        .into_iter()
        .map(|p| FigureDelta {
            path: p.clone(),
            old: o.get(p).copied(),
            new: n.get(p).copied(),
        })
        .collect();
    figures.sort_by_key(|f| (rank(&f.path), f.path.clone()));
    let verdict = |v: &Value, name: &str| {
        v.pointer(&format!("/invariants/{name}/verdict"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let names: BTreeSet<&String> = [old, new]
        .iter()
        .filter_map(|v| v.get("invariants").and_then(Value::as_object))
        .flat_map(|m| m.keys())
        .collect();
    let verdicts = names
        .into_iter()
        .map(|name| VerdictChange {
            invariant: name.clone(),
            old: verdict(old, name),
            new: verdict(new, name),
        })
        .collect();
    let code = |v: &Value| v.pointer("/exit/code").and_then(Value::as_i64);
    let rule = new
        .pointer("/exit/rule")
        .and_then(Value::as_str)
        .map(str::to_string);
    Comparison {
        figures,
        verdicts,
        exit: (code(old), code(new), rule),
    }
}

fn rank(path: &str) -> usize {
    let head = path.split('.').next().unwrap_or(path);
    ORDER.iter().position(|h| *h == head).unwrap_or(ORDER.len())
}

fn leaves(v: &Value, path: String, out: &mut BTreeMap<String, f64>) {
    if NOT_FIGURES.contains(&path.as_str()) {
        return;
    }
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.insert(path, x);
            }
        }
        Value::Object(m) => {
            for (k, child) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(child, p, out);
            }
        }
        // Arrays hold examples, not figures; strings and booleans are no figures.
        _ => {}
    }
}

/// A number as the table shows it: integers plain, others with up to 3
/// decimals.
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn signed(x: f64) -> String {
    if x > 0.0 {
        format!("+{}", num(x))
    } else {
        num(x)
    }
}

/// The comparison as a table: one line per figure (old, new, change,
/// change %), the added and removed figures, then the verdicts, with a
/// regression (holds -> violated) flagged loudly.
pub fn render(c: &Comparison, old_label: &str, new_label: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "baseline: {old_label}");
    let _ = writeln!(o, "this run: {new_label}");
    let w = c
        .figures
        .iter()
        .map(|f| f.path.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        o,
        "  {:<w$}  {:>14}  {:>14}  {:>14}  {:>9}",
        "figure", "baseline", "this run", "change", "change %"
    );
    for f in c
        .figures
        .iter()
        .filter(|f| f.old.is_some() && f.new.is_some())
    {
        let pct = match f.percent() {
            Some(p) => format!("{p:+.1}%"),
            None => "n/a".into(),
        };
        let _ = writeln!(
            o,
            "  {:<w$}  {:>14}  {:>14}  {:>14}  {:>9}",
            f.path,
            num(f.old.unwrap_or_default()),
            num(f.new.unwrap_or_default()),
            signed(f.change().unwrap_or_default()),
            pct
        );
    }
    for (title, pick) in [
        ("added (only in this run)", true),
        ("removed (only in the baseline)", false),
    ] {
        let only: Vec<_> = c
            .figures
            .iter()
            .filter(|f| {
                if pick {
                    f.old.is_none()
                } else {
                    f.new.is_none()
                }
            })
            .collect();
        if only.is_empty() {
            continue;
        }
        let _ = writeln!(o, "{title}:");
        for f in only {
            let _ = writeln!(
                o,
                "  {:<w$}  {}",
                f.path,
                num(f.new.or(f.old).unwrap_or_default())
            );
        }
    }
    let _ = writeln!(o, "invariants (baseline -> this run):");
    if c.verdicts.is_empty() {
        let _ = writeln!(o, "  none in either summary");
    }
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "absent".into());
    for v in &c.verdicts {
        let flag = if v.regressed() {
            "   <<< REGRESSION: held in the baseline, VIOLATED now"
        } else if v.old != v.new {
            "   (changed)"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  {:<24} {} -> {}{flag}",
            v.invariant,
            show(&v.old),
            show(&v.new).replace("violated", "VIOLATED")
        );
    }
    let code = |c: Option<i64>| c.map_or("absent".to_string(), |c| c.to_string());
    let (before, now, rule) = &c.exit;
    let flag = match (before, now) {
        (Some(0), Some(n)) if *n != 0 => "   <<< the expectation was met in the baseline, not now",
        (a, b) if a != b => "   (changed)",
        _ => "",
    };
    let _ = writeln!(
        o,
        "exit (baseline -> this run): {} -> {}{flag}{}",
        code(*before),
        code(*now),
        rule.as_deref()
            .map_or(String::new(), |r| format!("\n  this run: {r}"))
    );
    let regressions = c.regressions();
    if !regressions.is_empty() {
        let names: Vec<_> = regressions.iter().map(|v| v.invariant.as_str()).collect();
        let _ = writeln!(
            o,
            "!!! {} invariant(s) held in the baseline and are VIOLATED in this run: {}",
            names.len(),
            names.join(", ")
        );
    }
    o
}

/// One pair of runs in a baseline report: a run folder against its
/// baseline, or one variant of a compare folder against the variant of the
/// same name in the baseline folder (a variant in one folder only is
/// named, not dropped).
#[derive(Debug, Clone, PartialEq)]
pub enum Compared {
    /// Both runs, compared.
    Pair {
        /// The variant's name (None: two run folders).
        variant: Option<String>,
        /// The baseline run folder and this run's.
        dirs: (PathBuf, PathBuf),
        /// The head lines' labels (baseline, this run): [`label`].
        labels: (String, String),
        /// The comparison of their summaries.
        comparison: Comparison,
    },
    /// A variant of this compare folder that the baseline folder lacks.
    OnlyThisRun {
        /// The variant's name.
        variant: String,
        /// The baseline compare folder.
        baseline_dir: PathBuf,
    },
    /// A variant of the baseline compare folder that this one lacks.
    OnlyBaseline {
        /// The variant's name.
        variant: String,
    },
}

impl Compared {
    /// The invariants that held in the baseline and are violated now.
    pub fn regressions(&self) -> Vec<&VerdictChange> {
        match self {
            Compared::Pair { comparison, .. } => comparison.regressions(),
            _ => Vec::new(),
        }
    }
}

/// `new` against `old`: run against run, or a compare folder against
/// another, variant by variant of the same name, in `new`'s order, then
/// the baseline's variants `new` lacks. Errors: a run folder against a
/// compare folder, or a variant's summary unreadable.
pub fn compared(new: &Folder, old: &Folder) -> Result<Vec<Compared>, FolderError> {
    match (new, old) {
        (Folder::Run { dir, summary }, Folder::Run { dir: od, summary: os }) => {
            Ok(vec![Compared::Pair {
                variant: None,
                dirs: (od.clone(), dir.clone()),
                labels: (label(od, os), label(dir, summary)),
                comparison: compare(os, summary),
            }])
        }
        (Folder::Compare { variants, .. }, Folder::Compare { dir: od, variants: ov }) => {
            let mut list = Vec::new();
            for (name, vdir) in variants {
                let Some((_, odir)) = ov.iter().find(|(n, _)| n == name) else {
                    list.push(Compared::OnlyThisRun {
                        variant: name.clone(),
                        baseline_dir: od.clone(),
                    });
                    continue;
                };
                let (ns, os) = (read_json(vdir, "summary.json")?, read_json(odir, "summary.json")?);
                list.push(Compared::Pair {
                    variant: Some(name.clone()),
                    dirs: (odir.clone(), vdir.clone()),
                    labels: (label(odir, &os), label(vdir, &ns)),
                    comparison: compare(&os, &ns),
                });
            }
            for (name, _) in ov.iter().filter(|(n, _)| !variants.iter().any(|(m, _)| m == n)) {
                list.push(Compared::OnlyBaseline {
                    variant: name.clone(),
                });
            }
            Ok(list)
        }
        (_, Folder::Run { dir, .. }) | (_, Folder::Compare { dir, .. }) => Err(folder_error(
            dir,
            "the baseline must be the same kind of folder as RUN_DIR (run folder vs compare folder)",
        )),
    }
}

/// The baseline table(s) of [`compared`]'s list: one table for two run
/// folders; per variant, under `== variant NAME`, for compare folders.
pub fn text(list: &[Compared]) -> String {
    let mut o = String::new();
    for c in list {
        match c {
            Compared::Pair {
                variant,
                labels,
                comparison,
                ..
            } => {
                if let Some(name) = variant {
                    let _ = writeln!(o, "== variant {name}");
                }
                o.push_str(&render(comparison, &labels.0, &labels.1));
            }
            Compared::OnlyThisRun {
                variant,
                baseline_dir,
            } => {
                let _ = writeln!(o, "== variant {variant}");
                let _ = writeln!(o, "  not in the baseline {}", baseline_dir.display());
            }
            Compared::OnlyBaseline { variant } => {
                let _ = writeln!(
                    o,
                    "== variant {variant}: only in the baseline, not in this run"
                );
            }
        }
    }
    o
}

/// The baseline table(s) of `new` against `old` ([`compared`], [`text`]).
/// Errors: as [`compared`]'s.
pub fn report(new: &Folder, old: &Folder) -> Result<String, FolderError> {
    Ok(text(&compared(new, old)?))
}

/// One comparison as JSON (`report --baseline --format json`, docs/cli.md):
/// every figure (`figure`, `baseline`, `this_run`, `change`,
/// `change_percent`; null where a side or the percentage is missing),
/// every invariant's verdicts with `regression`, the exit codes, and the
/// names of the regressed invariants.
pub fn comparison_json(c: &Comparison) -> Value {
    let figures: Vec<Value> = c
        .figures
        .iter()
        .map(|f| {
            json!({
                "figure": f.path,
                "baseline": f.old,
                "this_run": f.new,
                "change": f.change(),
                "change_percent": f.percent(),
            })
        })
        .collect();
    let verdicts: Vec<Value> = c
        .verdicts
        .iter()
        .map(|v| {
            json!({
                "invariant": v.invariant,
                "baseline": v.old,
                "this_run": v.new,
                "regression": v.regressed(),
            })
        })
        .collect();
    let (before, now, rule) = &c.exit;
    let regressions: Vec<&str> = c
        .regressions()
        .iter()
        .map(|v| v.invariant.as_str())
        .collect();
    json!({
        "figures": figures,
        "verdicts": verdicts,
        "exit": {
            "baseline": before,
            "this_run": now,
            "this_run_rule": rule,
            "no_longer_met": *before == Some(0) && now.is_some_and(|n| n != 0),
        },
        "regressions": regressions,
    })
}

/// [`compared`]'s list as JSON: for two run folders, the one comparison
/// with its folders; for compare folders, `variants`, each with its
/// `name` and either its comparison or `only_in` (`this_run`,
/// `baseline`). `regressions` lists every regressed invariant (prefixed
/// `VARIANT/` for a compare folder's).
pub fn json(list: &[Compared]) -> Value {
    let pair = |dirs: &(PathBuf, PathBuf), c: &Comparison| {
        let mut v = comparison_json(c);
        v["baseline_dir"] = json!(dirs.0.display().to_string());
        v["run_dir"] = json!(dirs.1.display().to_string());
        v
    };
    if let [Compared::Pair {
        variant: None,
        dirs,
        comparison,
        ..
    }] = list
    {
        return pair(dirs, comparison);
    }
    let mut regressions = Vec::new();
    let variants: Vec<Value> = list
        .iter()
        .map(|c| match c {
            Compared::Pair {
                variant,
                dirs,
                comparison,
                ..
            } => {
                let name = variant.clone().unwrap_or_default();
                for r in comparison.regressions() {
                    regressions.push(format!("{name}/{}", r.invariant));
                }
                let mut v = pair(dirs, comparison);
                v["name"] = json!(name);
                v
            }
            Compared::OnlyThisRun { variant, .. } => {
                json!({ "name": variant, "only_in": "this_run" })
            }
            Compared::OnlyBaseline { variant } => {
                json!({ "name": variant, "only_in": "baseline" })
            }
        })
        .collect();
    json!({ "variants": variants, "regressions": regressions })
}
