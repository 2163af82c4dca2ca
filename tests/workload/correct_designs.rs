//! Correct designs written differently from the shipped ones (the group row
//! inserted first, an UPSERT that creates and counts, a compare-and-swap
//! resolver, ids the design computes itself, a table of seen ids before or
//! after the event row, and the ingest in one transaction block written
//! four ways: `targets/sqlite/designs/`) are
//! never reported violated: on the in-process SQLite target under no fault,
//! crash, pause and lock, and over the spawned reference server under no
//! fault, crash, pause, lock, the fault proxy and kill, two seeds each;
//! the block designs also in `specstorm explore`.
//! And a design that answers "duplicate" to first-ever sends is caught on
//! both targets.
//!
//! Nothing here depends on the machine's speed: a correct design must hold
//! (or be `unknown`) whatever the interleaving, and the broken one loses
//! events in every run by construction (its CHECK rejects fixed
//! fingerprints), not by a race.

use serde_json::Value;
use std::path::Path;

use crate::common::command;
use crate::common::run::run_text;

/// A run of `scenario` (TOML text, written next to a copy of nothing: the
/// variant path is absolute) in a fresh folder: (exit code, summary).
fn run(scenario: &str, seed: u64) -> (i32, Value) {
    let r = run_text(scenario, &["--seed", &seed.to_string()]);
    (r.code(), r.summary())
}

fn design(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("targets/sqlite/designs")
        .join(format!("{name}.sql"))
        .to_string_lossy()
        .into_owned()
}

const LOAD: &str = r#"
[load]
ingesters = 8
resolvers = 4

[stop]
events = 3000

[keys]
projects = 2
fingerprints = 20
skew = "hot"
hot_groups = 2
hot_fraction = 0.5

[retry]
probability = 0.3
max_retries = 2
soon_fraction = 0.8

[resolve]
interval = "0s"
"#;

const CRASH: &str = "[[faults]]\nkind = \"crash\"\nops = \"ingest\"\nprobability = 0.03\n\
                     [[faults]]\nkind = \"crash\"\nops = \"resolve\"\nprobability = 0.03\n";
const PAUSE: &str = "[[faults]]\nkind = \"pause\"\nops = \"all\"\nprobability = 0.05\n\
                     delay = \"1ms\"\njitter = \"1ms\"\n";
const LOCK: &str = "[[faults]]\nkind = \"lock\"\nevery = \"100ms\"\nhold = \"20ms\"\n";

/// The fault cells of the in-process SQLite target.
const SQLITE_CELLS: [(&str, &str); 4] = [
    ("none", ""),
    ("crash", CRASH),
    ("pause", PAUSE),
    ("lock", LOCK),
];

/// The fault cells of the spawned reference server.
const HTTP_CELLS: [(&str, &str); 6] = [
    ("none", ""),
    ("crash", CRASH),
    ("pause", PAUSE),
    ("lock", LOCK),
    (
        "proxy",
        "[[faults]]\nkind = \"proxy\"\ntoxic = \"latency\"\nprobability = 0.05\ndelay = \"2ms\"\njitter = \"2ms\"\n\
         [[faults]]\nkind = \"proxy\"\ntoxic = \"drop_response\"\nprobability = 0.02\n\
         [[faults]]\nkind = \"proxy\"\ntoxic = \"reset\"\nprobability = 0.02\n\
         [[faults]]\nkind = \"proxy\"\ntoxic = \"error\"\nprobability = 0.02\n",
    ),
    (
        "kill",
        "[[faults]]\nkind = \"kill\"\nevery = \"150ms\"\ndelay = \"50ms\"\n",
    ),
];

fn sqlite_scenario(variant: &str, faults: &str) -> String {
    format!(
        "workload = \"groups\"\nvariant = \"{variant}\"\n[target]\nkind = \"sqlite\"\n\
         busy_timeout = \"5s\"\n{LOAD}\n{faults}"
    )
}

fn http_scenario(variant: &str, faults: &str) -> String {
    format!(
        "workload = \"groups\"\nvariant = \"{variant}\"\n[target]\nkind = \"http\"\nspawn = true\n\
         server_workers = 8\nrequest_timeout = \"5s\"\nretries = 3\nbusy_timeout = \"5s\"\n{LOAD}\n{faults}"
    )
}

/// Each invariant's verdict, as `Name=verdict` words.
fn verdicts(s: &Value) -> String {
    s["invariants"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v["verdict"].as_str().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Runs `name` in every cell of both targets with seeds 1 and 2; fails on
/// any `violated` verdict or an exit other than 0 or 4, after printing
/// every cell.
fn every_cell_holds(name: &str) {
    let variant = design(name);
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    let cells = SQLITE_CELLS
        .iter()
        .map(|(f, t)| ("sqlite", *f, sqlite_scenario(&variant, t)))
        .chain(
            HTTP_CELLS
                .iter()
                .map(|(f, t)| ("http", *f, http_scenario(&variant, t))),
        );
    for (target, fault, scenario) in cells {
        for seed in [1, 2] {
            let (code, s) = run(&scenario, seed);
            let v = verdicts(&s);
            let line = format!(
                "{name:<12} {target:<6} {fault:<6} seed {seed}: exit {code} {v} faults {}",
                s["faults_injected"]
            );
            if !(code == 0 || code == 4) || v.contains("violated") {
                bad.push(format!("{line}\n  {}", s["exit"]));
            }
            rows.push(line);
        }
    }
    eprintln!("{}", rows.join("\n"));
    assert!(
        bad.is_empty(),
        "a correct design judged wrong:\n{}",
        bad.join("\n")
    );
}

#[test]
fn group_row_first_holds_everywhere() {
    every_cell_holds("group-first");
}

#[test]
fn upsert_that_creates_and_counts_holds_everywhere() {
    every_cell_holds("upsert");
}

#[test]
fn compare_and_swap_resolver_holds_everywhere() {
    every_cell_holds("cas-resolve");
}

#[test]
fn own_group_ids_hold_everywhere() {
    every_cell_holds("own-ids");
}

#[test]
fn a_seen_ids_table_before_the_event_row_holds_everywhere() {
    every_cell_holds("seen-ids-first");
}

#[test]
fn a_seen_ids_table_after_the_event_row_holds_everywhere() {
    every_cell_holds("seen-ids-after");
}

/// `specstorm explore` of the groups-atomic world with design `name`:
/// every interleaving of its steps (a transaction block one atomic step)
/// keeps every invariant (exit 0).
fn explore_holds(name: &str) {
    let o = crate::common::specstorm(&[
        "explore",
        "scenarios/groups-atomic.toml",
        "-q",
        "--set",
        &format!("variant={:?}", design(name)),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{name}: {out}");
    assert!(out.contains("violations: 0"), "{name}: {out}");
}

#[test]
fn a_one_block_upsert_ingest_holds_everywhere_and_in_explore() {
    explore_holds("txn-upsert");
    every_cell_holds("txn-upsert");
}

#[test]
fn a_one_block_ingest_with_own_ids_holds_everywhere_and_in_explore() {
    explore_holds("txn-own-ids");
    every_cell_holds("txn-own-ids");
}

/// Its blocks read before they write: under load they meet SQLITE_BUSY
/// and BUSY_SNAPSHOT, are rolled back and run again (or end `fail` once
/// the budget is spent), none of which may read as a violation.
#[test]
fn a_deferred_block_that_reads_the_id_first_holds_everywhere_and_in_explore() {
    explore_holds("txn-read-first");
    every_cell_holds("txn-read-first");
}

#[test]
fn a_deferred_block_with_the_group_row_first_holds_everywhere_and_in_explore() {
    explore_holds("txn-group-first");
    every_cell_holds("txn-group-first");
}

/// `groups-atomic.sql` with `old` replaced by `new`, written into `dir`.
fn atomic_with(dir: &Path, old: &str, new: &str) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sqlite/groups-atomic.sql"),
    )
    .unwrap();
    assert!(text.contains(old), "{old}");
    let path = dir.join("variant.sql");
    std::fs::write(&path, text.replace(old, new)).unwrap();
    path.to_string_lossy().into_owned()
}

/// A resolve that resolves every group of its project may resolve groups
/// no resolve of theirs records: NoMissedRegression cannot judge their
/// probes, so it is `unknown`, never `violated`.
#[test]
fn a_resolve_that_changes_several_groups_leaves_no_missed_regression_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let variant = atomic_with(
        dir.path(),
        "WHERE id = :group_id AND status IN ('open', 'regressed')",
        "WHERE project = :project AND status IN ('open', 'regressed')",
    );
    let (code, s) = run(&sqlite_scenario(&variant, ""), 1);
    let nmr = &s["invariants"]["NoMissedRegression"];
    assert_eq!(nmr["verdict"], "unknown", "{nmr}");
    assert!(
        nmr["first"].to_string().contains("rows in one step"),
        "{nmr}"
    );
    assert_eq!(code, 4, "{}", s["exit"]);
}

/// A design whose trigger on the event insert changes the count, with
/// `counts: true` on another step, is refused before anything runs: the
/// checkers date every change of the count by the counting steps.
#[test]
fn a_count_changed_outside_the_counting_step_is_refused_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let variant = atomic_with(
        dir.path(),
        "  event_count INTEGER\n);\n",
        "  event_count INTEGER\n);\n\
         CREATE TRIGGER IF NOT EXISTS count_it AFTER INSERT ON error_events BEGIN\n\
           UPDATE error_groups SET event_count = event_count + 1 WHERE id = NEW.group_id;\n\
         END;\n",
    );
    let o = command()
        .args(["check", "scenarios/smoke.toml", "--set"])
        .arg(format!("variant={variant}"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("variant.sql:")
            && err.contains(
                "`ingest.s1` updates error_groups.event_count through trigger or view `count_it`"
            ),
        "{err}"
    );
}

/// A design whose event insert is `INSERT OR IGNORE` into a table with a
/// CHECK that every fingerprint ending in 3 fails: such events are answered
/// "duplicate" on their first-ever send and stored nowhere.
const SWALLOWS: &str = r#"
-- name: schema
CREATE TABLE IF NOT EXISTS error_events (
  id TEXT PRIMARY KEY, project TEXT,
  fingerprint TEXT CHECK (fingerprint NOT LIKE '%3'),
  group_id TEXT, received_at INTEGER);
CREATE TABLE IF NOT EXISTS error_groups (
  id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, status TEXT, event_count INTEGER);

-- name: ingest.s1
-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
-- counts: true
UPDATE error_groups SET event_count = event_count + 1,
  status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;

-- name: resolve.update
-- stop-if: rows > 0
UPDATE error_groups SET status = 'resolved'
WHERE id = :group_id AND status IN ('open', 'regressed') RETURNING event_count;

-- name: resolve.probe
SELECT status, event_count FROM error_groups WHERE id = :group_id;

-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
"#;

fn first_sends_answered_duplicate_are_caught(http: bool) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("swallows.sql");
    std::fs::write(&file, SWALLOWS).unwrap();
    let variant = file.to_string_lossy();
    // No retries: every duplicate answer is a first-ever send.
    let scenario = if http {
        http_scenario(&variant, "")
    } else {
        sqlite_scenario(&variant, "")
    }
    .replace("probability = 0.3", "probability = 0.0");
    let (code, s) = run(&scenario, 1);
    let type_ok = &s["invariants"]["TypeOK"];
    assert_eq!(code, 1, "{}: {}", verdicts(&s), s["exit"]);
    assert_eq!(type_ok["verdict"], "violated", "{type_ok}");
    assert!(
        type_ok["first"].to_string().contains("duplicate"),
        "the finding names the unexplained duplicate: {type_ok}"
    );
}

#[test]
fn first_sends_answered_duplicate_are_caught_in_process() {
    first_sends_answered_duplicate_are_caught(false);
}

#[test]
fn first_sends_answered_duplicate_are_caught_over_http() {
    first_sends_answered_duplicate_are_caught(true);
}
