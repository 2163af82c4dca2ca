//! The architecture test: the modules of `src/` import only downward,
//! through the layers of [`LAYERS`], and never in a cycle.
//!
//! A module is a file of `src/` (a `mod.rs` is its folder's module;
//! `lib.rs` and `main.rs` are the crate's root and are left out). Module A
//! imports module B when A's code, outside its `#[cfg(test)]` items, names
//! an item of B by a path: `use crate::...` (grouped trees too), `use
//! self::...`, `use super::...`, an inline `crate::`, `self::` or `super::`
//! path, or a path through a name such a `use` brought in (`use
//! crate::client::sqlite;` then `sqlite::open`). A name a module re-exports
//! (`pub use x::Y`) is followed to the module that defines it. A folder
//! module's own children named by relative paths (`mod facts; pub use
//! facts::Facts; count_exact::check()`) are not imports of it: its
//! `mod.rs` declares them and speaks for them (their imports of it are).
//!
//! The test fails, naming the modules and the imports with the names they
//! use, on (a) any cycle (a strongly connected component of more than one
//! module), (b) any import from a lower layer to a higher one that
//! [`ALLOWED`] does not list, (c) a module that [`LAYERS`] does not place
//! (a new file must be placed), and on entries of [`LAYERS`] or
//! [`ALLOWED`] that no longer match a module or an upward import.
//!
//! The reader is a small tokenizer, not a Rust parser: comments, strings
//! and char literals are skipped, and only paths are read. Macros'
//! bodies are read as any code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of `src/`, by layer, bottom first. A module may import
/// modules of its own layer and of the layers below it.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "clock",
            "control",
            "draws",
            // The seeds of a series (`--seeds`).
            "seed_list",
            // cli.md's exit-code table: every error maps to it.
            "exit_code",
            "input",
            "run_dir",
            "sql_guard",
            "whole",
            // A SQL value: what every layer passes around (the design's
            // "SQL values" of the core); it imports nothing of the crate.
            "workload::value",
        ],
    ),
    (
        "model",
        &[
            "fault_kind",
            "figures",
            "history",
            // How much of a run a history holds (a cut history's rule):
            // every workload's checkers and the audit of a killed run read it.
            "history::binary",
            "history::codec",
            "history::completeness",
            "history::file",
            "history::part",
            "history::print",
            "history::reader",
            "history::writer",
            // What `check-target` is asked and finds: what every
            // workload's probe hands back.
            "probe_report",
            // What `specstorm run` was asked and why a run could fail:
            // what the pipeline hands every workload.
            "run_options",
            // What a scenario expects (`expect`, thresholds): the summary
            // records it and judges the run against it.
            "scenario::expect",
            // A series of seeds' rates, catch-rate thresholds and exit,
            // from saved summaries.
            "series_rates",
            "shard",
            // Counts ops by the history's kinds and completion types, so
            // it sits with the history, above the core.
            "stats",
            // summary.json's common figures and rules; a workload's own
            // figures are its figures module's, below the checkers that
            // fill them and the loader that checks thresholds on them.
            "summary",
            "verdict",
            "workload::groups::figures",
            "workload::outbox::figures",
            // The outbox's part of the history's header.
            "workload::outbox::header",
        ],
    ),
    (
        "config",
        &[
            "scenario",
            "scenario::api",
            "scenario::caps",
            "scenario::figures",
            "scenario::fuzz",
            "scenario::invariants",
            "scenario::key_schema",
            "scenario::load",
            "scenario::load::api_keys",
            "scenario::load::context",
            "scenario::load::defaults",
            "scenario::load::error",
            "scenario::load::expectations",
            "scenario::load::explore",
            "scenario::load::faults",
            "scenario::load::fuzz",
            "scenario::load::limits",
            "scenario::load::load_keys",
            "scenario::load::overrides",
            "scenario::load::schema",
            "scenario::load::target",
            "scenario::load::to_toml",
            "scenario::load::top",
            "scenario::load::values",
            "scenario::load::workload",
            // `[api]` compiled (templates, pointers, codes, secrets): the
            // loader checks it, the HTTP target sends through it.
            "scenario::mapping",
            "scenario::mapping::request_template",
            // What a workload plugs in for its own requests (their compile
            // and compiled type, erased), below the registry that names it.
            "scenario::mapping::requests",
            "scenario::mapping::template",
            "scenario::part",
            "scenario::parts",
            "scenario::registered",
            // The one registry of the workloads' own sections, and what
            // they plug in: each workload's config module sits here, below
            // its runtime, so that the loader reads it without an upward
            // import (it finds it through the registry's link-time list).
            "scenario::section",
            "scenario::stages",
            "scenario::serialize",
            "workload::groups::config",
            "workload::outbox::config",
            // Each workload's own `[api]` requests and their compile: the
            // loader reads and the mapping compiler compiles them through
            // the registry, beside the workload's sections.
            "workload::groups::api",
            "workload::groups::api_compile",
            "workload::outbox::api",
            "workload::outbox::statements",
            // Groups' statement compile and the rules on what its
            // statements do, beside its section, as the outbox's.
            "workload::groups::origin",
            "workload::groups::statements",
            "statements",
            "statements::check",
            "statements::origin",
            "statements::parse",
            "statements::scratch",
            "statements::sql_error",
            "variant",
        ],
    ),
    (
        "engine",
        &[
            // abort_on_fail thresholds judged on the live figures; the
            // scheduler asks them on its tick, through the live figures.
            "abort_on_fail",
            "fault_hook",
            "txn_backoff",
            "fuzz",
            "live",
            "nemesis",
            "scheduler",
            "workload::outbox::lease",
            // The outbox's live figures, as the watchers show them.
            "workload::outbox::live",
            // The workloads' ops as step machines (no I/O): the runtimes
            // drive them and the reference server runs them, so they sit
            // in the engine until the Workload trait (step 3) puts them
            // behind it.
            "workload",
            "workload::groups",
            // Its ops drawn from the seed.
            "workload::groups::generator",
            "workload::groups::id_bits",
            // The closed model's staged workers, the resolvers' open model.
            "workload::groups::pace",
            "workload::machine",
            // How a step program's attempt ended: the HTTP client carries it.
            "workload::attempt_end",
            "workload::outbox",
        ],
    ),
    (
        "target and nemesis",
        &[
            // The final tables' rows: what each workload's readers fill
            // (workload::<name>::{export, service_db, tables_read}) from
            // what the targets read back, and the checkers judge.
            "workload::outbox::checker::tables",
            // Each workload's readers of its final tables (an HTTP
            // target's export answer, a service's own database, a SQLite
            // file), beside the rows they fill.
            "workload::outbox::export",
            "workload::outbox::service_db",
            "workload::groups::checker::tables",
            "workload::groups::checker::id_set",
            "workload::groups::export",
            "workload::groups::service_db",
            "workload::groups::tables_read",
            "nemesis::kill",
            "nemesis::lock",
            "nemesis::proxy",
            "nemesis::timed",
            // The step drivers and schedulers of today's four workload x
            // target cells: each calls one concrete client (target::sqlite::client,
            // target::http::client), so they sit with the clients, above the
            // engine they belong to once it has a Client trait (step 4).
            "workload::groups::http_runtime",
            "workload::outbox::http_runtime",
            // Each workload's requests and answer readers on the generic
            // HTTP client (target::http::client), which its HTTP runtime calls.
            "workload::groups::http_client",
            "workload::outbox::http_client",
            "workload::outbox::runtime",
            "workload::groups::runtime",
            // Where ops run: the Target trait and its two targets, which
            // start and stop the nemeses their caps allow.
            "target",
            "target::http",
            "target::http::client",
            "target::http::nonconforming",
            "target::http::plain",
            "target::http::probe",
            "target::http::service",
            "target::http::service_db",
            "target::http::source",
            "target::http::spawn",
            "target::http::start",
            "target::http::tls",
            "target::http::watchdog",
            "target::sqlite",
            "target::sqlite::client",
            "target::sqlite::schema_fit",
            "target::sqlite::tables",
            // The one step driver (every op of every workload, in process
            // and in the reference server): it calls the SQLite client.
            "step_driver",
            // Keeps the target database's WAL bounded (its own connection
            // to the target's file); WalReport, the summary's figure, is
            // read by report from here, below it.
            "wal",
            // What a load phase produced on its target: below the
            // workloads' runtimes and tables, which implement its traits.
            "workload::ran",
        ],
    ),
    (
        "workload",
        &[
            "workload::groups::checker",
            "workload::groups::checker::count_exact",
            "workload::groups::checker::evidence",
            "workload::groups::checker::event_map",
            "workload::groups::checker::facts",
            "workload::groups::checker::legacy",
            "workload::groups::checker::no_missed_regression",
            "workload::groups::checker::one_group",
            "workload::outbox::checker",
            "workload::outbox::checker::at_most_one_out_queue_msg",
            "workload::outbox::checker::at_most_one_state_change",
            "workload::outbox::checker::consistent",
            "workload::outbox::checker::facts",
            "workload::outbox::checker::liveness",
            "workload::outbox::checker::no_lost_output",
            "workload::outbox::checker::shard",
            "workload::outbox::checker::type_ok",
            "workload::groups::checker::sharded",
            "workload::groups::checker::stranded",
            "workload::groups::checker::step_fact",
            "workload::groups::checker::op_assembly",
            "workload::groups::checker::op_fact",
            "workload::groups::checker::op_fact_codec",
            "workload::groups::checker::op_types",
            "workload::groups::checker::type_ok",
            "explore::db",
            "explore::cursor",
            "explore::machine",
            "workload::groups::explore",
            "workload::groups::explore_constants",
            "workload::groups::explore_invariants",
            "workload::outbox::explore",
            "workload::outbox::explore_constants",
            "workload::outbox::explore_invariants",
            "explore::options",
            "explore::search",
            "explore::trace",
            "explore::world",
            // The trait every workload implements and what it hands the
            // reports; each workload's own report lines.
            "workload::groups::compare",
            "workload::groups::coverage",
            "workload::groups::human",
            "workload::groups::judge_parts",
            "workload::outbox::compare",
            "workload::outbox::coverage",
            "workload::outbox::human",
            "workload::parts",
        ],
    ),
    (
        "report, ui and server",
        &[
            "dashboard",
            "dashboard::end",
            "dashboard::view",
            "dashboard::view::draw",
            "dashboard::view::panels",
            "dashboard::view::verdict",
            "metrics",
            "metrics::exporter",
            "metrics::exposition",
            "report",
            "report::baseline",
            "report::checks_json",
            "report::export",
            "report::folder",
            "report::hlog",
            "report::human",
            "report::junit",
            "report::plot",
            "report::precision",
            "report::results",
            "report::series",
            "report::summary",
            "report::target_curve",
            "report::summary_json",
            "server",
            "server::export",
            "server::part",
            "server::pool",
            "server::routes",
            "server::state",
            // Each workload's part of the reference server (its routes,
            // handlers and export), found by the server's link-time list.
            "workload::groups::server",
            "workload::groups::server_ops",
            "workload::outbox::server",
            "workload::outbox::server_handle",
            "watch",
        ],
    ),
    (
        "app",
        &[
            "audit",
            "audit_db",
            "audit_error",
            "audit_history",
            "workload::groups::audit",
            "workload::groups::audit_parts",
            "workload::groups::audit_route",
            "workload::groups::audit_spill",
            "audit_killed",
            "workload::outbox::audit",
            "audit_record",
            "audit_tables",
            "cli",
            "cli_meta",
            "compare",
            // The explore driver (`specstorm explore`); its worlds are
            // workload modules.
            "explore",
            "merge",
            "workload::groups::merge",
            // The outbox's judgement of a merged run.
            "workload::outbox::merge",
            // Each workload's `specstorm explore` entry.
            "workload::groups::explore_main",
            "workload::outbox::explore_main",
            // What every workload's merge shares (below merge and
            // merge_outbox, so that neither imports the other both ways).
            "merge_parts",
            "workload::outbox::http",
            // What a shard of an outbox run checks before it runs.
            "workload::outbox::shard",
            // The one pipeline of every run, and the Workload trait it
            // drives with its registry and the two workloads'
            // implementations: the trait names the summary (report) and
            // the run's errors (prepare), so it sits here until the
            // summary's types move down to the model.
            "pipeline",
            // `--seeds`: one pipeline run per seed, then the series.
            "series",
            "prepare",
            "workload::groups::probe",
            "workload::outbox::probe",
            "run_folder",
            // The JSON Schemas of the run folder's files, generated in its
            // tests from the types of every layer.
            "schemas",
            "workload::groups::load",
            "workload::groups::run",
            "workload::groups::prepare",
            "workload::outbox::prepare",
            "workload::outbox::run",
            "workload::registry",
            // The Workload trait names what audit and merge share
            // (audit_record, audit_error, merge_parts), which sit here.
            "workload::traits",
            // `specstorm validate`: a recorded run checked against the
            // spec by TLC (docs/validate.md).
            "validate",
            "workload::groups::validate",
            "workload::groups::validate::design",
            "workload::groups::validate::finding",
            "workload::groups::validate::module",
            "workload::groups::validate::states",
            "workload::groups::validate::tlc",
            "workload::groups::validate::trace",
            // `specstorm replay`: one finding of a recorded run
            // re-executed, shrunk, written as a script (docs/replay.md).
            "replay",
            "replay_order",
            "replay_script",
            "replay_step",
            "workload::groups::replay",
            "workload::groups::replay::judge",
            "workload::groups::replay::recording",
            "workload::groups::replay::rerun",
            "workload::groups::replay::script",
            "workload::groups::replay::search",
            "workload::outbox::replay",
            "workload::outbox::replay::judge",
            "workload::outbox::replay::recording",
            "workload::outbox::replay::search",
            "workload::outbox::replay::script",
        ],
    ),
];

/// Upward imports that are known and owned elsewhere: (from, to, why).
/// Nothing else belongs here; an entry that matches no upward import
/// fails the test, so the list only shrinks.
const ALLOWED: &[(&str, &str, &str)] = &[];

#[test]
fn src_imports_only_downward_and_without_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::read(&src);
    assert!(
        graph.modules.len() > 50,
        "read only {} modules from {}",
        graph.modules.len(),
        src.display()
    );
    let problems = problems(&graph, LAYERS, ALLOWED);
    assert!(
        problems.is_empty(),
        "{} architecture problem(s) in src/ (see tests/architecture.rs):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// Imports from one workload's folder into another's that are known and
/// owned elsewhere: (from, to, why). An entry that matches no such import
/// fails the test, so the list only shrinks.
const CROSS_WORKLOAD: &[(&str, &str, &str)] = &[];

/// No workload's module imports another workload's (`workload::<a>::..`
/// naming `workload::<b>::..`): what two workloads share sits below both
/// of them, outside `src/workload/<name>/`.
#[test]
fn no_workload_imports_another() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::read(&src);
    let problems = cross_workload(&graph, CROSS_WORKLOAD);
    assert!(
        problems.is_empty(),
        "{} cross-workload import(s) in src/ (see tests/architecture.rs):\n\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The workload folder a module sits in (`groups` for
/// `workload::groups::checker::facts`), if any: a module directly under
/// src/workload/ that is no folder (`workload::traits`) is shared.
fn workload_of<'m>(g: &Graph, m: &'m str) -> Option<&'m str> {
    let rest = m.strip_prefix("workload::")?;
    let name = rest.split("::").next()?;
    let folder = format!("workload::{name}::");
    g.modules
        .iter()
        .any(|x| x.starts_with(&folder))
        .then_some(name)
}

fn cross_workload(g: &Graph, allowed: &[(&str, &str, &str)]) -> Vec<String> {
    unallowed_imports(g, allowed, "CROSS_WORKLOAD", |a, b| {
        let (wa, wb) = (workload_of(g, a)?, workload_of(g, b)?);
        (wa != wb).then_some(wb)
    })
}

/// The imports `a -> b` that `flagged` picks (it names the workload of
/// `b`), less those `allowed` lists; then each allowance that matches no
/// import, as stale, named by its `list`.
fn unallowed_imports<'g>(
    g: &'g Graph,
    allowed: &[(&str, &str, &str)],
    list: &str,
    flagged: impl Fn(&'g str, &'g str) -> Option<&'g str>,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut used = BTreeSet::new();
    for ((a, b), names) in &g.edges {
        let Some(wb) = flagged(a, b) else {
            continue;
        };
        if let Some(k) = allowed.iter().position(|(x, y, _)| x == a && y == b) {
            used.insert(k);
            continue;
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        out.push(format!(
            "{a} imports workload {wb}'s {b}: {}",
            names.join(", ")
        ));
    }
    for (k, (a, b, _)) in allowed.iter().enumerate() {
        if !used.contains(&k) {
            out.push(format!(
                "{list} lists {a} -> {b}, which it no longer imports: remove it"
            ));
        }
    }
    out
}

/// Imports of a workload's folder from outside it that are known and owned
/// elsewhere: (from, to, why). It is empty: every workload's own code sits
/// in its folder (its part of the reference server too), and only the
/// registry names a workload. An entry that matches no such import fails the test, so the
/// list only shrinks.
const FOLDER_IMPORTS: &[(&str, &str, &str)] = &[];

/// Modules outside every workload's folder that may import one: the one
/// registry names each workload.
fn may_import_a_folder(m: &str) -> bool {
    m == "workload::registry"
}

/// Outside `src/workload/<name>/` nothing names a workload except the one
/// registry: no other module imports a module of `workload::<name>`.
#[test]
fn only_the_registry_imports_a_workload_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = Graph::read(&src);
    let problems = folder_imports(&graph, FOLDER_IMPORTS);
    assert!(
        problems.is_empty(),
        "{} import(s) of a workload folder from outside it in src/ (see tests/architecture.rs):\n\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The folder check on a small tree: an import from outside is found, the
/// registry's and the folder's own are not, and a stale allowance is.
#[test]
fn the_folder_check_finds_an_outside_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |name: &str, text: &str| write_file(src, name, text);
    write("lib.rs", "pub mod workload; pub mod other;");
    write(
        "workload/mod.rs",
        "pub mod a; pub mod registry; pub mod shared;",
    );
    write("workload/a/mod.rs", "pub mod x;");
    write(
        "workload/a/x.rs",
        "use crate::workload::shared::S;\npub struct X;",
    );
    write("workload/shared.rs", "pub struct S;");
    write("workload/registry.rs", "use super::a::x::X;");
    write("other.rs", "use crate::workload::a::x::X;");
    let g = Graph::read(src);
    assert_eq!(
        folder_imports(&g, &[]),
        ["other imports workload a's workload::a::x: X"]
    );
    assert!(folder_imports(&g, &[("other", "workload::a::x", "why")]).is_empty());
    let stale = folder_imports(
        &g,
        &[
            ("other", "workload::a::x", "why"),
            ("workload::shared", "workload::a::x", "why"),
        ],
    );
    assert_eq!(
        stale,
        ["FOLDER_IMPORTS lists workload::shared -> workload::a::x, which it no longer imports: remove it"]
    );
}

fn folder_imports(g: &Graph, allowed: &[(&str, &str, &str)]) -> Vec<String> {
    unallowed_imports(g, allowed, "FOLDER_IMPORTS", |a, b| {
        let wb = workload_of(g, b)?;
        (workload_of(g, a).is_none() && !may_import_a_folder(a)).then_some(wb)
    })
}

/// String literals outside every workload's folder that name a built-in
/// workload or one of its variants (`"groups"`, `"outbox-protocol"`,
/// `workload = \"outbox\"` in a message), known and owned elsewhere:
/// (file under src/, the literal as written between its quotes, why). An
/// entry that matches no literal fails the test, so the list only shrinks.
const NAME_LITERALS: &[(&str, &str, &str)] = &[
    (
        "compare.rs",
        "groups",
        "a compare.json without `workload` was written when groups was the only \
         workload: the literal, not the registry's default, reads it",
    ),
    (
        "scenario/load/expectations.rs",
        "`variants[{index}]` must be a table such as {{ variant = \\\"groups-naive\\\" }}, found {found}",
        "an example in an error text that must stay as it is",
    ),
];

/// The names a literal may not hold outside their folders: each folder of
/// src/workload/ (a built-in workload).
fn built_in_names(src: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(src.join("workload"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("mod.rs").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Whether `text` (a literal as written) names the workload `name`: it is
/// the name or one of its variants' (`groups`, `groups-atomic`), or holds
/// it quoted (`workload = \"groups\"`).
fn names_workload(text: &str, name: &str) -> bool {
    let variant = |t: &str| {
        t == name
            || t.strip_prefix(name).is_some_and(|rest| {
                rest.starts_with('-')
                    && rest[1..]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
    };
    variant(text) || text.split("\\\"").skip(1).step_by(2).any(variant)
}

/// The string literals of `text`'s code (comments left out), each with
/// its line: what sits between the quotes, escapes as written. Raw
/// strings (`r"..."`, `r#"..."#`) too; a char literal `'"'` is no quote.
fn string_literals(text: &str) -> Vec<(usize, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    line += usize::from(b[i] == b'\n');
                    i += 1;
                }
                i += 2;
                continue;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                // A char literal ('"', '\"', '\n'); a lifetime has no
                // closing quote two bytes on and is read as code.
                let end = if b[i + 1] == b'\\' { i + 3 } else { i + 2 };
                if b.get(end) == Some(&b'\'') {
                    i = end + 1;
                    continue;
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (starts_token(b, i) || (b[i - 1] == b'b' && starts_token(b, i - 1))) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) == Some(&b'"') {
                    let start = i + 2 + hashes;
                    let close: Vec<u8> = std::iter::once(b'"')
                        .chain(std::iter::repeat_n(b'#', hashes))
                        .collect();
                    let len = b[start..]
                        .windows(close.len())
                        .position(|w| w == close.as_slice())
                        .unwrap_or(b.len() - start);
                    let lit = &text[start..start + len];
                    out.push((line, lit.to_string()));
                    line += lit.matches('\n').count();
                    i = start + len + close.len();
                    continue;
                }
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let lit = &text[start..j.min(b.len())];
                out.push((line, lit.to_string()));
                line += lit.matches('\n').count();
                i = j + 1;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether the byte at `i` starts a token (no identifier runs into it).
fn starts_token(b: &[u8], i: usize) -> bool {
    i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Every literal of `src` outside the workloads' folders and the registry
/// that names a built-in workload, less `allowed`; and the
/// entries of `allowed` that match none.
fn name_literals(src: &Path, allowed: &[(&str, &str, &str)]) -> Vec<String> {
    let names = built_in_names(src);
    let mut used = BTreeSet::new();
    let mut out = Vec::new();
    let mut files = rust_files(src);
    files.sort();
    for path in files {
        let rel = path
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let exempt = rel == "workload/registry.rs"
            || names
                .iter()
                .any(|n| rel.starts_with(&format!("workload/{n}/")));
        if exempt {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, lit) in string_literals(&text) {
            let Some(name) = names.iter().find(|n| names_workload(&lit, n)) else {
                continue;
            };
            if let Some(k) = allowed.iter().position(|(f, l, _)| *f == rel && *l == lit) {
                used.insert(k);
                continue;
            }
            out.push(format!("src/{rel}:{line}: {lit:?} names workload {name}"));
        }
    }
    for (k, (f, l, _)) in allowed.iter().enumerate() {
        if !used.contains(&k) {
            out.push(format!(
                "NAME_LITERALS lists {l:?} in src/{f}, which no longer holds it: remove it"
            ));
        }
    }
    out
}

/// Outside `src/workload/<name>/` and the registry, no code
/// names a built-in workload (or its variants) in a string literal: the
/// workloads are found through the registries (`scenario::Workload`,
/// `scenario::section`), so a new workload changes no module outside its
/// folder.
#[test]
fn no_module_outside_a_workload_folder_names_one() {
    let problems = name_literals(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        NAME_LITERALS,
    );
    let listed: String = problems.iter().map(|p| format!("\n{p}")).collect();
    assert_eq!(
        problems.len(),
        0,
        "literal(s) naming a workload outside its folder (see tests/architecture.rs):\n{listed}"
    );
}

/// The name check on a small tree: a literal outside a folder is found
/// (the name, a variant, a quoted name in a message), comments, the
/// folder's own and the registry's are not, and a stale allowance is.
#[test]
fn the_name_check_finds_a_planted_literal() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |name: &str, text: &str| write_file(src, name, text);
    write("workload/a/mod.rs", "pub const N: &str = \"a\";");
    write("workload/registry.rs", "const N: [&str; 1] = [\"a\"];");
    write(
        "other.rs",
        "// \"a\" in a comment\nconst C: char = '\"';\nconst S: &str = \"ab\";\n\
         const L: &[&str] = &[\"a\", r#\"a-atomic\"#];\n\
         fn f() -> String { format!(\"workload = \\\"a\\\" only\") }\n",
    );
    assert_eq!(
        name_literals(src, &[]),
        [
            "src/other.rs:4: \"a\" names workload a",
            "src/other.rs:4: \"a-atomic\" names workload a",
            "src/other.rs:5: \"workload = \\\\\\\"a\\\\\\\" only\" names workload a",
        ]
    );
    assert_eq!(
        name_literals(
            src,
            &[
                ("other.rs", "a", "why"),
                ("other.rs", "a-atomic", "why"),
                ("other.rs", "workload = \\\"a\\\" only", "why"),
                ("other.rs", "a-naive", "why"),
            ]
        ),
        ["NAME_LITERALS lists \"a-naive\" in src/other.rs, which no longer holds it: remove it"]
    );
}

/// The reference server is no exception: each workload brings its part
/// of it from its folder, so the server's own modules neither import a
/// folder nor name a workload.
#[test]
fn the_server_may_not_name_a_workload() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |name: &str, text: &str| write_file(src, name, text);
    write("lib.rs", "pub mod workload; pub mod server;");
    write("workload/mod.rs", "pub mod a;");
    write("workload/a/mod.rs", "pub mod x;");
    write("workload/a/x.rs", "pub struct X;");
    write(
        "server/mod.rs",
        "use crate::workload::a::x::X;\nconst N: &str = \"a-naive\";",
    );
    let g = Graph::read(src);
    assert_eq!(
        folder_imports(&g, &[]),
        ["server imports workload a's workload::a::x: X"]
    );
    assert_eq!(
        name_literals(src, &[]),
        ["src/server/mod.rs:2: \"a-naive\" names workload a"]
    );
}

/// Every module opens with a doc comment that says what it holds and what
/// it may import; one that names its layer (`Layer: NAME.`) names the one
/// [`LAYERS`] gives it.
#[test]
fn every_module_says_what_it_may_import() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let layer_of: BTreeMap<&str, &str> = LAYERS
        .iter()
        .flat_map(|(layer, mods)| mods.iter().map(move |m| (*m, *layer)))
        .collect();
    let mut problems = Vec::new();
    let mut files = vec![src.clone()];
    while let Some(dir) = files.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files.push(path);
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts == ["lib"] || parts == ["main"] {
                continue;
            }
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            let module = parts.join("::");
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: String = text
                .lines()
                .take_while(|l| l.starts_with("//!"))
                .map(|l| format!("{}\n", l.trim_start_matches("//!").trim()))
                .collect();
            if doc.trim().is_empty() {
                problems.push(format!("{module}: no opening doc comment"));
                continue;
            }
            if !doc.to_lowercase().contains("import") {
                problems.push(format!("{module}: its doc does not say what it may import"));
            }
            let flat = doc.replace('\n', " ");
            if let Some(at) = flat.find("Layer: ") {
                let named = flat[at + 7..]
                    .split(['.', ';'])
                    .next()
                    .unwrap_or("")
                    .replace(", the lowest", "");
                let placed = layer_of.get(module.as_str()).copied().unwrap_or("none");
                if named != placed {
                    problems.push(format!(
                        "{module}: its doc says layer {named:?}, LAYERS places it in {placed:?}"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The test's own reader and checks, on a small tree built to break every
/// rule: the test above can fail.
#[test]
fn the_check_finds_cycles_upward_imports_and_unplaced_modules() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |name: &str, text: &str| write_file(src, name, text);
    write(
        "lib.rs",
        "pub mod low; pub mod high; pub mod folder; pub mod stray;",
    );
    write(
        "low.rs",
        r##"//! Names `crate::stray` only in words: "crate::stray::Words".
use crate::{folder::Facade, high::{self, Top as Renamed}};
/* crate::stray::Comment /* nested */ crate::stray::Comment */
pub fn f<'a>(x: &'a str) -> u32 {
    let _ = ('"', '\'', b'x', r#"crate::stray::Raw"#, x);
    high::g() + crate::folder::inner::h()
}
#[cfg(test)]
#[allow(unused)]
mod tests {
    use crate::stray::Tested;
}
"##,
    );
    write(
        "high.rs",
        "pub struct Top;\npub fn g() -> u32 { super::low::f(\"\") }\n",
    );
    write(
        "folder/mod.rs",
        "mod inner;\npub use inner::Facade;\npub fn k() -> u32 { inner::h() }\n",
    );
    write(
        "folder/inner.rs",
        "use super::super::low;\npub struct Facade;\npub fn h() -> u32 { low::f(\"\") }\n",
    );
    write("stray.rs", "use self::nothing::*;\npub struct Tested;\n");

    let g = Graph::read(src);
    let edges: BTreeMap<(&str, &str), Vec<&str>> = g
        .edges
        .iter()
        .map(|((a, b), names)| {
            (
                (a.as_str(), b.as_str()),
                names.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let want: BTreeMap<(&str, &str), Vec<&str>> = [
        (("folder::inner", "low"), vec!["f", "low"]),
        (("high", "low"), vec!["f"]),
        (("low", "folder::inner"), vec!["Facade", "h"]),
        (("low", "high"), vec!["Top", "g", "high"]),
    ]
    .into_iter()
    .collect();
    assert_eq!(edges, want);
    assert_eq!(
        g.modules.iter().map(String::as_str).collect::<Vec<_>>(),
        ["folder", "folder::inner", "high", "low", "stray"]
    );

    let layers: &[(&str, &[&str])] = &[
        ("bottom", &["folder", "folder::inner", "low"]),
        ("top", &["gone", "high"]),
    ];
    let found = problems(&g, layers, &[]);
    let text = found.join("\n");
    assert_eq!(found.len(), 4, "{text}");
    assert!(
        text.contains("cycle of 3 modules: folder::inner, high, low"),
        "{text}"
    );
    assert!(text.contains("low -> high: Top, g, high"), "{text}");
    assert!(
        text.contains("upward import: low (bottom) -> high (top): Top, g, high"),
        "{text}"
    );
    assert!(text.contains("`stray` is in no layer"), "{text}");
    assert!(text.contains("`gone`, which is no module"), "{text}");

    // An allowed upward import is no problem; an allowance that matches
    // no upward import is.
    let allowed: &[(&str, &str, &str)] = &[("low", "high", "why"), ("high", "low", "why")];
    let found = problems(&g, layers, allowed).join("\n");
    assert!(!found.contains("upward import: "), "{found}");
    assert!(
        found.contains("ALLOWED lists high -> low, which is no upward import"),
        "{found}"
    );
}

/// The modules of a source tree and the imports between them.
#[derive(Debug, Default)]
struct Graph {
    /// Every module, `a::b`.
    modules: BTreeSet<String>,
    /// (from, to) -> the names `from` uses of `to`.
    edges: BTreeMap<(String, String), BTreeSet<String>>,
}

/// One `use` path: its segments as written (`crate`, `super`, a name; the
/// last may be `self`), its `as` name, and whether it ends in `*`.
#[derive(Debug, Clone)]
struct UsePath {
    path: Vec<String>,
    alias: Option<String>,
    glob: bool,
}

/// One `use` of a file: the path, whether it is `pub` (a re-export), and
/// the module (inline modules included) it is written in.
#[derive(Debug, Clone)]
struct Use {
    path: UsePath,
    public: bool,
    scope: Vec<String>,
}

/// What the reader takes from one file.
#[derive(Debug, Default)]
struct File {
    module: Vec<String>,
    uses: Vec<Use>,
    /// Inline paths (`a::b::c`, at least two segments) and their scope.
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// Modules declared here (`mod x;`, `mod x { }`), as full paths.
    children: BTreeSet<Vec<String>>,
    /// Names its `use`s bring in, and the crate path each stands for
    /// (None: not the crate's).
    aliases: BTreeMap<String, Option<Vec<String>>>,
}

impl Graph {
    /// Reads every `.rs` file under `src`.
    fn read(src: &Path) -> Graph {
        let mut files: BTreeMap<String, File> = BTreeMap::new();
        let mut test_only: BTreeSet<String> = BTreeSet::new();
        for path in rust_files(src) {
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|l| l == "mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let (tokens, tests) = without_tests(&tokenize(&text));
            for t in tests {
                test_only.insert(join(&module, &t));
            }
            let file = read_file(module, &tokens);
            files.insert(file.module.join("::"), file);
        }
        files.retain(|m, _| !test_only.contains(m) && !test_only.iter().any(|t| is_below(m, t)));
        for f in files.values_mut() {
            // Twice: a `use` may start with a name an earlier one brought in.
            for _ in 0..2 {
                let file: &File = f;
                let aliases: BTreeMap<String, Option<Vec<String>>> = file
                    .uses
                    .iter()
                    .filter(|u| !u.path.glob)
                    .map(|u| {
                        let to = absolute(file, &u.path.path, &u.scope, false);
                        (use_name(&u.path), to)
                    })
                    .collect();
                f.aliases = aliases;
            }
        }
        let modules: BTreeSet<String> = files.keys().cloned().collect();
        // What each module re-exports: name -> crate path.
        let reexports: BTreeMap<String, BTreeMap<String, Vec<String>>> = files
            .iter()
            .map(|(m, f)| {
                let names = f
                    .uses
                    .iter()
                    .filter(|u| u.public && !u.path.glob && u.scope == f.module)
                    .filter_map(|u| {
                        let to = absolute(f, &u.path.path, &u.scope, true)?;
                        Some((use_name(&u.path), to))
                    })
                    .collect();
                (m.clone(), names)
            })
            .collect();
        let resolver = Resolver {
            modules: &modules,
            reexports: &reexports,
        };
        let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
        for (m, f) in &files {
            let mut add = |to: String, name: String| {
                if &to != m {
                    edges.entry((m.clone(), to)).or_default().insert(name);
                }
            };
            for u in &f.uses {
                let Some(abs) = absolute(f, &u.path.path, &u.scope, false) else {
                    continue;
                };
                let Some((to, name)) = resolver.resolve(&abs) else {
                    continue;
                };
                // A folder module re-exporting its own children speaks for
                // them: that is no import of them.
                if u.public && is_below(&to, m) {
                    continue;
                }
                add(to, if u.path.glob { "*".into() } else { name });
            }
            for (path, scope) in &f.paths {
                if let Some((to, name)) = absolute(f, path, scope, false)
                    .as_deref()
                    .and_then(|abs| resolver.resolve(abs))
                {
                    add(to, name);
                }
            }
        }
        Graph { modules, edges }
    }
}

/// Resolves crate paths to the module that defines the item they name.
struct Resolver<'a> {
    modules: &'a BTreeSet<String>,
    reexports: &'a BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

impl Resolver<'_> {
    /// The module of `abs` (a path from the crate root) and the name used
    /// of it, through re-exports; None for the root's own items.
    fn resolve(&self, abs: &[String]) -> Option<(String, String)> {
        self.resolve_within(abs, 0)
    }

    fn resolve_within(&self, abs: &[String], depth: usize) -> Option<(String, String)> {
        for k in (1..=abs.len()).rev() {
            let m = abs[..k].join("::");
            if !self.modules.contains(&m) {
                continue;
            }
            if k < abs.len() && depth < 8 {
                if let Some(to) = self.reexports.get(&m).and_then(|r| r.get(&abs[k])) {
                    let mut next = to.clone();
                    next.extend_from_slice(&abs[k + 1..]);
                    if let Some(found) = self.resolve_within(&next, depth + 1) {
                        return Some(found);
                    }
                }
            }
            let name = abs.get(k).unwrap_or(&abs[k - 1]).clone();
            return Some((m, name));
        }
        None
    }
}

/// The name a `use` path brings into scope.
fn use_name(u: &UsePath) -> String {
    if let Some(a) = &u.alias {
        return a.clone();
    }
    match u.path.as_slice() {
        [.., before, last] if last == "self" => before.clone(),
        [.., last] => last.clone(),
        [] => String::new(),
    }
}

/// The crate path (from the root, without `crate`) of `path` as written in
/// `scope` of file `f`; None when it is not the crate's (std, another
/// crate, a local item). `children`: a relative path into one of the
/// file's own child modules counts (for re-exports only).
fn absolute(f: &File, path: &[String], scope: &[String], children: bool) -> Option<Vec<String>> {
    let mut path: Vec<String> = path.to_vec();
    if path.last().is_some_and(|l| l == "self") {
        path.pop();
    }
    let first = path.first()?.as_str();
    let abs = match first {
        "crate" => path[1..].to_vec(),
        "self" => [scope, &path[1..]].concat(),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = scope.get(..scope.len().checked_sub(ups)?)?;
            [base, &path[ups..]].concat()
        }
        _ => {
            let child: Vec<String> = [scope, &path[..1]].concat();
            if f.children.contains(&child) {
                if !children {
                    return None;
                }
                [scope, &path[..]].concat()
            } else {
                let to = f.aliases.get(first)?.as_ref()?;
                [to.as_slice(), &path[1..]].concat()
            }
        }
    };
    Some(abs)
}

/// Reads the `use`s, inline paths and child modules of one file's tokens.
fn read_file(module: Vec<String>, t: &[String]) -> File {
    let mut f = File {
        module,
        ..File::default()
    };
    // Inline modules open here: (name, brace depth outside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let at = |i: usize| t.get(i).map_or("", String::as_str);
    let scope_of = |module: &[String], inline: &[(String, usize)]| -> Vec<String> {
        let inner = inline.iter().map(|(n, _)| n.clone());
        module.iter().cloned().chain(inner).collect()
    };
    while i < t.len() {
        match at(i) {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if is_ident(at(i + 1)) && matches!(at(i + 2), ";" | "{") => {
                let mut child = scope_of(&f.module, &inline);
                child.push(t[i + 1].clone());
                f.children.insert(child);
                if at(i + 2) == "{" {
                    inline.push((t[i + 1].clone(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            "use" if is_ident(at(i + 1)) || matches!(at(i + 1), "::" | "{") => {
                let public = is_public(t, i);
                let scope = scope_of(&f.module, &inline);
                let mut paths = Vec::new();
                let mut j = use_tree(t, i + 1, Vec::new(), &mut paths);
                while j < t.len() && t[j] != ";" {
                    j += 1;
                }
                f.uses.extend(paths.into_iter().map(|path| Use {
                    path,
                    public,
                    scope: scope.clone(),
                }));
                i = j + 1;
                continue;
            }
            w if is_ident(w) && at(i + 1) == "::" && (i == 0 || at(i - 1) != "::") => {
                let mut path = vec![w.to_string()];
                let mut j = i + 1;
                while at(j) == "::" && is_ident(at(j + 1)) {
                    path.push(t[j + 1].clone());
                    j += 2;
                }
                if path.len() > 1 {
                    f.paths.push((path, scope_of(&f.module, &inline)));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    f
}

/// Reads one use tree at `t[i]` under `prefix` into `out`; returns the
/// index after it.
fn use_tree(t: &[String], mut i: usize, prefix: Vec<String>, out: &mut Vec<UsePath>) -> usize {
    let at = |i: usize| t.get(i).map_or("", String::as_str);
    let mut path = prefix;
    if at(i) == "::" {
        // `use ::name`: another crate.
        path.push("::".into());
        i += 1;
    }
    loop {
        match at(i) {
            "{" => {
                i += 1;
                while i < t.len() && at(i) != "}" {
                    let before = i;
                    i = use_tree(t, i, path.clone(), out);
                    if at(i) == "," {
                        i += 1;
                    }
                    if i == before {
                        i += 1;
                    }
                }
                return i + 1;
            }
            "*" => {
                out.push(UsePath {
                    path,
                    alias: None,
                    glob: true,
                });
                return i + 1;
            }
            w if is_ident(w) => {
                path.push(w.to_string());
                i += 1;
                if at(i) == "::" {
                    i += 1;
                    continue;
                }
                let alias = (at(i) == "as").then(|| at(i + 1).to_string());
                if alias.is_some() {
                    i += 2;
                }
                out.push(UsePath {
                    path,
                    alias,
                    glob: false,
                });
                return i;
            }
            _ => return i,
        }
    }
}

/// Whether the `use` at `t[i]` is `pub` or `pub(...)`.
fn is_public(t: &[String], i: usize) -> bool {
    match i.checked_sub(1).map(|j| t[j].as_str()) {
        Some("pub") => true,
        Some(")") => {
            let mut j = i - 1;
            while j > 0 && t[j] != "(" {
                j -= 1;
            }
            j > 0 && t[j - 1] == "pub"
        }
        _ => false,
    }
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Whether module `m` lies inside module `parent` (below it, not it).
fn is_below(m: &str, parent: &str) -> bool {
    m.len() > parent.len() + 2 && m.starts_with(parent) && m[parent.len()..].starts_with("::")
}

fn join(module: &[String], name: &str) -> String {
    module
        .iter()
        .map(String::as_str)
        .chain([name])
        .collect::<Vec<_>>()
        .join("::")
}

/// The tokens without `#[cfg(test)]` items, and the names of the test-only
/// modules declared as files (`#[cfg(test)] mod tests;`).
fn without_tests(t: &[String]) -> (Vec<String>, Vec<String>) {
    const CFG_TEST: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    let mut out = Vec::new();
    let mut files = Vec::new();
    let mut i = 0;
    while i < t.len() {
        if t.len() - i < CFG_TEST.len() || !t[i..i + 7].iter().map(String::as_str).eq(CFG_TEST) {
            out.push(t[i].clone());
            i += 1;
            continue;
        }
        i += CFG_TEST.len();
        // Further attributes of the item.
        while i + 1 < t.len() && t[i] == "#" && t[i + 1] == "[" {
            i = past_group(t, i + 1);
        }
        let start = i;
        let mut depth = 0usize;
        while i < t.len() {
            let tok = t[i].as_str();
            i += 1;
            match tok {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" => depth = depth.saturating_sub(1),
                "}" => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                ";" if depth == 0 => {
                    let item = &t[start..i];
                    if let Some(k) = item.iter().position(|x| x == "mod") {
                        if item.len() == k + 3 {
                            files.push(item[k + 1].clone());
                        }
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    (out, files)
}

/// The index after the bracketed group that opens at `t[i]`.
fn past_group(t: &[String], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < t.len() {
        match t[i].as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The tokens of Rust source that matter for paths: identifiers, `::` and
/// single punctuation characters (numbers become `0`). Comments, strings
/// and char literals are left out, but a string that is exactly a crate
/// path (`#[serde(with = "crate::a::b")]`) is read as that path.
fn tokenize(src: &str) -> Vec<String> {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let ident_start = |ch: char| ch.is_alphabetic() || ch == '_';
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0usize;
            while i < n {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ident_start(ch) {
            let start = i;
            while i < n && ident_char(c[i]) {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if matches!(word.as_str(), "r" | "br" | "cr") && matches!(c.get(i), Some('"' | '#')) {
                let mut j = i;
                while j < n && c[j] == '#' {
                    j += 1;
                }
                let hashes = j - i;
                if c.get(j) == Some(&'"') {
                    // A raw string: up to `"` and as many `#`.
                    j += 1;
                    while j < n
                        && !(c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')))
                    {
                        j += 1;
                    }
                    i = j + 1 + hashes;
                    continue;
                }
                if word == "r" && hashes == 1 && c.get(j).is_some_and(|&x| ident_start(x)) {
                    // A raw identifier, `r#name`.
                    let s = j;
                    while j < n && ident_char(c[j]) {
                        j += 1;
                    }
                    out.push(c[s..j].iter().collect());
                    i = j;
                    continue;
                }
            }
            if matches!(word.as_str(), "b" | "c") && matches!(c.get(i), Some('"' | '\'')) {
                // A byte or C string or byte char: the literal follows.
                continue;
            }
            out.push(word);
        } else if ch.is_ascii_digit() {
            while i < n && ident_char(c[i]) {
                i += 1;
            }
            out.push("0".into());
        } else if ch == '"' {
            i += 1;
            let start = i;
            while i < n && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            let body: String = c[start..i.min(n)].iter().collect();
            i += 1;
            if body.starts_with("crate::") && body.chars().all(|x| ident_char(x) || x == ':') {
                out.extend(tokenize(&body));
            }
        } else if ch == '\'' {
            if next == Some('\\') {
                // An escaped char: '\n', '\'', '\u{..}'.
                i += 3;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                // A lifetime or a label: its name follows.
                i += 1;
            }
        } else if ch == ':' && next == Some(':') {
            out.push("::".into());
            i += 2;
        } else {
            out.push(ch.to_string());
            i += 1;
        }
    }
    out
}

/// Every `.rs` file under `dir`, sorted.
/// Writes `text` to `name` below `src`, making its folders: a file of a
/// small tree the checks' own tests build.
fn write_file(src: &Path, name: &str, text: &str) {
    let p = src.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn rust_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// What is wrong with `g` against `layers` and `allowed`, one entry each.
fn problems(g: &Graph, layers: &[(&str, &[&str])], allowed: &[(&str, &str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut layer_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (l, (name, mods)) in layers.iter().enumerate() {
        for &m in *mods {
            if let Some(before) = layer_of.insert(m, l) {
                out.push(format!(
                    "LAYERS places `{m}` twice ({} and {name})",
                    layers[before].0
                ));
            }
        }
    }
    for m in &g.modules {
        if !layer_of.contains_key(m.as_str()) {
            out.push(format!(
                "`{m}` is in no layer of LAYERS: place it (tests/architecture.rs)"
            ));
        }
    }
    for m in layer_of.keys() {
        if !g.modules.contains(*m) {
            out.push(format!(
                "LAYERS places `{m}`, which is no module of src/: remove it"
            ));
        }
    }
    let names = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>().join(", ");
    let mut used = BTreeSet::new();
    for ((a, b), used_names) in &g.edges {
        let (Some(&la), Some(&lb)) = (layer_of.get(a.as_str()), layer_of.get(b.as_str())) else {
            continue;
        };
        if la >= lb {
            continue;
        }
        if let Some(k) = allowed
            .iter()
            .position(|(x, y, _)| *x == a.as_str() && *y == b.as_str())
        {
            used.insert(k);
            continue;
        }
        out.push(format!(
            "upward import: {a} ({}) -> {b} ({}): {}",
            layers[la].0,
            layers[lb].0,
            names(used_names)
        ));
    }
    for (k, (a, b, _)) in allowed.iter().enumerate() {
        if !used.contains(&k) {
            out.push(format!(
                "ALLOWED lists {a} -> {b}, which is no upward import now: remove it"
            ));
        }
    }
    for scc in cycles(g) {
        let members: BTreeSet<&str> = scc.iter().map(String::as_str).collect();
        let mut text = format!(
            "cycle of {} modules: {}\n  for example: {}",
            scc.len(),
            scc.join(", "),
            one_cycle(g, &members).join(" -> ")
        );
        for ((a, b), used_names) in &g.edges {
            if members.contains(a.as_str()) && members.contains(b.as_str()) {
                text.push_str(&format!("\n  {a} -> {b}: {}", names(used_names)));
            }
        }
        out.push(text);
    }
    out
}

/// The strongly connected components of more than one module (Tarjan),
/// each sorted.
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        next: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.next.get(v).cloned().unwrap_or_default() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(w);
                    scc.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.found.push(scc);
                }
            }
        }
    }
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in g.edges.keys() {
        next.entry(a.as_str()).or_default().push(b.as_str());
    }
    let mut t = Tarjan {
        next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for m in &g.modules {
        if !t.index.contains_key(m.as_str()) {
            t.visit(m);
        }
    }
    t.found.sort();
    t.found
}

/// A shortest cycle through the first of `members` (a strongly connected
/// component), found breadth first within it: `a -> b -> ... -> a`.
fn one_cycle<'a>(g: &'a Graph, members: &BTreeSet<&'a str>) -> Vec<&'a str> {
    let start = *members.iter().next().unwrap();
    let mut parent: BTreeMap<&'a str, &'a str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for (a, b) in g.edges.keys() {
            let (a, b) = (a.as_str(), b.as_str());
            if a != v || !members.contains(b) {
                continue;
            }
            if b == start {
                let mut back = vec![start];
                let mut at = v;
                while at != start {
                    back.push(at);
                    at = parent[at];
                }
                back.push(start);
                back.reverse();
                return back;
            }
            if !parent.contains_key(b) {
                parent.insert(b, v);
                queue.push_back(b);
            }
        }
    }
    vec![start]
}
