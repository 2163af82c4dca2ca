//! Golden output of the scenario loader, pinned so that a change to how
//! the loader is built (not to what it does) can be shown to change no
//! byte a user sees: the resolved `to_toml()` of every shipped scenario
//! (as saved in a run folder), alone and with overrides; and the whole
//! message of every refusal in a corpus that sets each key of a resolved
//! scenario, and each key of a fault of each kind, to a value of every
//! TOML type and to numbers at and past the usual bounds (in the file,
//! and with `--set`), plus the refusals that span several keys. A case
//! that loads is written as a digest of its resolved text, so that what
//! `--set` resolves to is pinned as well.
//!
//! A deliberate change of a message or a default updates the snapshots
//! (`INSTA_UPDATE=always cargo test --release --test scenario_golden`)
//! and says so in its commit.

use sha2::{Digest, Sha256};
use specstorm::scenario::{load, load_str, Scenario, ScenarioError};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item, Value};

/// How the corpus's scenarios are named in messages.
const FILE: &str = "scenarios/golden.toml";

/// A value of every TOML type, and numbers at and past the usual bounds.
const VALUES: &[&str] = &[
    "\"x\"",
    "\"0s\"",
    "-1",
    "0",
    "4294967296",
    "1.5",
    "true",
    "{ a = 1 }",
];

/// One line per case: `ok <digest of to_toml>` or the error as shown.
fn outcome(result: Result<Scenario, ScenarioError>) -> String {
    match result {
        Ok(s) => {
            let digest: String = Sha256::digest(s.to_toml().as_bytes())
                .iter()
                .take(8)
                .map(|b| format!("{b:02x}"))
                .collect();
            format!("ok {digest}")
        }
        Err(e) => e.to_string(),
    }
}

fn load_case(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    outcome(load_str("golden", Some(Path::new(FILE)), text, &sets))
}

/// `text` with the key at `path` set to `value` (tables created).
fn with_key(text: &str, path: &[String], value: &str) -> String {
    let mut doc: DocumentMut = text.parse().expect("a base parses");
    let mut item = doc.as_item_mut();
    for segment in &path[..path.len() - 1] {
        item = &mut item[segment.as_str()];
    }
    item[path[path.len() - 1].as_str()] = Item::Value(value.parse::<Value>().expect("a value"));
    doc.to_string()
}

/// Every leaf key of a resolved scenario (tables and inline tables are
/// walked, arrays are leaves; `[[faults]]` and `[[variants]]` are left
/// to their own corpus).
fn leaf_keys(text: &str) -> Vec<Vec<String>> {
    fn walk(item: &Item, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match item.as_table_like() {
            Some(table) if !item.is_array_of_tables() => {
                for (key, child) in table.iter() {
                    at.push(key.to_string());
                    walk(child, at, out);
                    at.pop();
                }
            }
            _ if item.is_array_of_tables() => {}
            _ => out.push(at.clone()),
        }
    }
    let doc: DocumentMut = text.parse().expect("a resolved scenario parses");
    let mut out = Vec::new();
    walk(doc.as_item(), &mut Vec::new(), &mut out);
    out
}

/// Each key of `base` (resolved), and `extra` keys serde leaves out when
/// unset, plus an unknown key in each table: set to each of [`VALUES`],
/// in the file and with `--set`.
fn key_corpus(out: &mut String, name: &str, base: &str, extra: &[&str], only: &[&str]) {
    let resolved = load_str("golden", Some(Path::new(FILE)), base, &[])
        .unwrap_or_else(|e| panic!("base {name}: {e}"))
        .to_toml();
    let mut paths = leaf_keys(&resolved);
    paths.extend(
        extra
            .iter()
            .map(|p| p.split('.').map(str::to_string).collect()),
    );
    let mut tables: Vec<Vec<String>> = Vec::new();
    for p in &paths {
        let table = p[..p.len() - 1].to_vec();
        if !tables.contains(&table) {
            tables.push(table);
        }
    }
    paths.extend(tables.into_iter().map(|mut t| {
        t.push("nokey".to_string());
        t
    }));
    paths.retain(|p| only.is_empty() || only.contains(&p[0].as_str()));
    for path in paths {
        let dotted = path.join(".");
        for value in VALUES {
            let file = load_case(&with_key(base, &path, value), &[]);
            let set = load_case(base, &[&format!("{dotted}={value}")]);
            writeln!(out, "{name} file {dotted} = {value}: {file}").unwrap();
            writeln!(out, "{name} set {dotted}={value}: {set}").unwrap();
        }
    }
}

/// A scenario's file, relative to the crate (as users name it), sorted.
fn shipped() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for (dir, prefix) in [("scenarios", ""), ("examples/d1-worker", "d1-")] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        for entry in std::fs::read_dir(&root).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".toml") && name.starts_with(prefix) {
                paths.push(Path::new(dir).join(name));
            }
        }
    }
    paths.sort();
    paths
}

#[test]
fn shipped_scenarios_resolve_to_the_same_text() {
    let mut out = String::new();
    let sets: [&[&str]; 3] = [
        &[],
        &["seed=7", "stop.duration=1m 30s", "name=true"],
        &["target.busy_timeout=250ms", "explore.fingerprints.e9=f9"],
    ];
    for path in shipped() {
        for set in sets {
            let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
            let shown = match load(Some(&path), &set) {
                Ok((s, _)) => s.to_toml(),
                Err(e) => format!("{e}\n"),
            };
            write!(out, "## {} {set:?}\n{shown}", path.display()).unwrap();
        }
    }
    insta::assert_snapshot!("resolved", out);
}

const SQLITE: &str = "";
const OUTBOX: &str = "workload = \"outbox\"\n";
const SPAWNED: &str = "[target]\nkind = \"http\"\nspawn = true\n";
const EXTERNAL: &str = "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n";

#[test]
fn every_key_refuses_the_same_values_with_the_same_words() {
    let mut out = String::new();
    let unset = [
        "target.path",
        "target.url",
        "target.command",
        "target.workdir",
        "stop.duration",
        "thresholds",
    ];
    key_corpus(&mut out, "groups", SQLITE, &unset, &[]);
    key_corpus(
        &mut out,
        "outbox",
        OUTBOX,
        &["outbox.lease", "load.ingesters", "keys.projects"],
        &[
            "name",
            "workload",
            "variant",
            "seed",
            "expect",
            "outbox",
            "explore",
            "stop",
            "load",
            "keys",
            "min_evidence",
        ],
    );
    let mapped = format!(
        "{EXTERNAL}[api]\nhealth = \"GET /up\"\n[api.lookup]\nrequest = \"GET /g\"\n\
         [audit]\nrequest = \"GET /v1/export\"\n"
    );
    key_corpus(
        &mut out,
        "mapped",
        &mapped,
        &[
            "audit.sqlite",
            "audit.export.events",
            "target.ca_file",
            "target.insecure_skip_verify",
        ],
        &["api", "audit", "target"],
    );
    insta::assert_snapshot!("keys", out);
}

#[test]
fn every_fault_key_refuses_the_same_values_with_the_same_words() {
    let mut out = String::new();
    let keys = [
        "kind",
        "start",
        "stop",
        "probability",
        "ops",
        "per",
        "step",
        "delay",
        "jitter",
        "toxic",
        "status",
        "every",
        "hold",
        "nokey",
    ];
    let bases = [
        ("crash", SQLITE, "kind = \"crash\"\n"),
        ("pause", SQLITE, "kind = \"pause\"\n"),
        ("lock", SQLITE, "kind = \"lock\"\n"),
        ("kill", SPAWNED, "kind = \"kill\"\n"),
        (
            "latency",
            SPAWNED,
            "kind = \"proxy\"\ntoxic = \"latency\"\n",
        ),
        ("error", SPAWNED, "kind = \"proxy\"\ntoxic = \"error\"\n"),
        ("reset", EXTERNAL, "kind = \"proxy\"\ntoxic = \"reset\"\n"),
        ("outbox-crash", OUTBOX, "kind = \"crash\"\n"),
    ];
    for (name, head, fault) in bases {
        for key in keys {
            for value in VALUES {
                let text = format!("{head}\n[[faults]]\n{fault}{key} = {value}\n");
                let text = if fault.contains(&format!("{key} =")) {
                    // Replace the kind's own key instead of repeating it.
                    format!(
                        "{head}\n[[faults]]\n{}{key} = {value}\n",
                        fault
                            .lines()
                            .filter(|l| !l.starts_with(&format!("{key} =")))
                            .map(|l| format!("{l}\n"))
                            .collect::<String>()
                    )
                } else {
                    text
                };
                writeln!(out, "{name} {key} = {value}: {}", load_case(&text, &[])).unwrap();
            }
        }
    }
    // Each kind on each target, for each workload.
    for (workload, w) in [("groups", ""), ("outbox", OUTBOX)] {
        for (target, t) in [("sqlite", ""), ("spawned", SPAWNED), ("external", EXTERNAL)] {
            for kind in ["crash", "pause", "lock", "kill", "proxy"] {
                let text = format!("{w}{t}\n[[faults]]\nkind = \"{kind}\"\ntoxic = \"reset\"\n");
                let text = if kind == "proxy" {
                    text
                } else {
                    text.replace("toxic = \"reset\"\n", "")
                };
                writeln!(out, "{workload} {target} {kind}: {}", load_case(&text, &[])).unwrap();
            }
        }
    }
    insta::assert_snapshot!("faults", out);
}

/// Refusals that span several keys, or a shape the key corpus does not
/// reach (arrays of tables, expectations, thresholds, overrides).
const CASES: &[(&str, &[&str])] = &[
    ("seed = 1\n\n[load]\ningesters = = 4\n", &[]),
    ("[load]\ningesters = 4\ningesters = 5\n", &[]),
    ("seed = 1\nload.workers = 3\n", &[]),
    ("seed = 1\n\ntarget = { kind = \"sqlite\", file = \"x.db\" }\n", &[]),
    ("[load]\n# workers\ningesters = \"many\"\n", &[]),
    ("[seed]\nx = 1\n", &[]),
    ("seed = 3\n\n[stop]\nevents = 0\n", &[]),
    ("[stop]\nevents = 0\nduration = \"0s\"\n", &[]),
    ("[load]\ningesters = 2\nmodel = \"open\"\n", &[]),
    ("[load]\nmodel = \"open\"\nrate = 0\n", &[]),
    ("[load]\nrate = 100.0\n", &[]),
    ("[load]\nmodel = \"open\"\nrate = inf\n", &[]),
    ("[load]\nmodel = \"open\"\nrate = -5\n", &[]),
    ("[keys]\nhot_fraction = nan\n", &[]),
    ("[retry]\nprobability = 0.2\nmax_retries = 1000000000\n", &[]),
    ("[target]\nbusy_timeout = \"1000000h\"\n", &[]),
    (
        "[target]\nkind = \"http\"\nspawn = true\n\n[keys]\nprojects = 4096\nfingerprints = 4097\n",
        &[],
    ),
    ("[target]\nkind = \"http\"\nspawn = true\n", &["keys.projects=4096", "keys.fingerprints=4097"]),
    (
        "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n\n[outbox]\nmessages = 10000000\ndeliveries = 4\n",
        &[],
    ),
    ("workload = \"outbox\"\n", &["outbox.messages=10000000", "outbox.deliveries=4"]),
    ("[retry]\nprobability = 0.1\nmax_retries = 0\n", &[]),
    ("[keys]\nskew = \"hot\"\nhot_groups = 0\n", &[]),
    ("[keys]\nprojects = 2\nfingerprints = 3\nskew = \"hot\"\nhot_groups = 7\n", &[]),
    ("seed = 1\n[keys]\nprojects = 1\nfingerprints = 2\nskew = \"hot\"\n", &[]),
    ("\nvariant = \"\"\n", &[]),
    ("variant = \"groups-atomc\"\n", &[]),
    ("name = \"  \"\n", &[]),
    ("", &["load.ingesters"]),
    ("", &["=4"]),
    ("", &["load..x=4"]),
    ("seed = 1\n", &["seed.x=4"]),
    ("", &["seed.x=4"]),
    ("", &["stop.events=0"]),
    ("", &["keys.skew=hot", "keys.hot_groups=0"]),
    ("", &["variant="]),
    ("[[[", &["nokey"]),
    ("[[[", &[]),
    ("", &["load.ingesters=4", "load.ingesters=6", "target.synchronous=full"]),
    ("target = { journal_mode = \"delete\" }\n", &["target.synchronous=full", "target.x.y=1"]),
    ("", &["resolve={ interval = \"3ms\" }", "name=true", "retry.probability = 0.5"]),
    ("", &["stop.events=0", "stop.duration=0s"]),
    ("[stop]\nevents = 0\n", &["stop.duration=0s"]),
    ("[load]\nmodel = \"open\"\nrate = 5\n", &["load.rate=0"]),
    ("", &["load.model=open"]),
    ("[min_evidence]\nTypeOK = 0\n", &["min_evidence.CountExact=7"]),
    ("seed = 1\n[min_evidence]\nNoMissedRegresion = 5\n", &[]),
    ("workload = \"outbox\"\n[min_evidence]\nCountExact = 1\n", &[]),
    ("[target]\nkind = \"http\"\n", &[]),
    ("[target]\nkind = \"http\"\nspawn = true\nurl = \"http://127.0.0.1:1\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"https://example.com\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:1\"\npath = \"x.db\"\n", &[]),
    ("[target]\nspawn = true\n", &[]),
    ("[target]\nurl = \"http://x\"\n", &[]),
    ("[target]\nkind = \"http\"\nspawn = true\nrequest_timeout = \"0s\"\n", &[]),
    ("[target]\nkind = \"http\"\nspawn = true\nconnect_timeout = \"0s\"\n", &[]),
    ("[target]\npath = \"\"\n", &[]),
    ("faults = [\n  { kind = \"crash\" },\n  { kind = \"crash\", hold = \"1s\" },\n]\n", &[]),
    ("faults = [\n  { kind = \"crash\" },\n  3,\n]\n", &[]),
    ("faults = [{ kind = \"crash\" },\n  { ops = \"all\" }]\n", &[]),
    ("seed = 1\n\n[[faults]]\nprobability = 0.5\n", &[]),
    ("[target]\nkind = \"http\"\nspawn = true\n\n[[faults]]\nkind = \"proxy\"\nprobability = 0.1\n", &[]),
    ("[[faults]]\nkind = \"lock\"\nevery = \"1s\"\nhold = \"2s\"\n", &[]),
    ("[[faults]]\nkind = \"lock\"\nhold = \"2s\"\n", &[]),
    ("[[faults]]\nkind = \"crash\"\nstop = \"1s\"\nstart = \"2s\"\n", &[]),
    ("[[faults]]\nkind = \"crash\"\nstart = \"2s\"\nstop = \"2s\"\n", &[]),
    ("[[faults]]\nkind = \"pause\"\nstep = \"\"\n", &[]),
    ("seed = 1\n[faults]\nkind = \"crash\"\n", &[]),
    ("faults = 3\n", &[]),
    ("[[faults]]\nkind = \"crash\"\n", &["faults=[]"]),
    ("[[faults]]\nkind = \"crash\"\n", &["faults.0.probability=0.5"]),
    ("[[faults]]\nkind = \"crash\"\nper = \"step\"\n", &[]),
    ("[[faults]]\nkind = \"crash\"\nops = \"handle\"\n", &[]),
    ("workload = \"outbox\"\n[[faults]]\nkind = \"crash\"\nops = \"ingest\"\n", &[]),
    ("workload = \"outbox\"\n[[faults]]\nkind = \"crash\"\nper = \"step\"\nprobability = 0.5\n", &[]),
    ("[explore]\nqueues = [[\"e1\"], [\"e1\", \"e7\"]]\n", &[]),
    ("[explore]\nqueues = [[\"e1\"],\n  []]\n", &[]),
    ("[explore]\nqueues = []\n", &[]),
    ("[explore]\nqueues = [[\"e1\", 3]]\n", &[]),
    ("[explore]\nqueues = [[\"e1\", \" \"]]\n", &[]),
    ("[explore]\nfingerprints = { e1 = 3 }\n", &[]),
    ("[explore]\nfingerprints = { e1 = \"\" }\n", &[]),
    ("[explore]\nproject = \" \"\n", &[]),
    ("", &["explore.fingerprints.e4=f3", "explore.queues=[[\"e4\", \"e1\"]]"]),
    ("workload = \"outbox\"\n[explore]\nresolves = 3\n", &[]),
    ("workload = \"outbox\"\n[explore]\nresolves = 2\n", &[]),
    ("[explore]\n\nhandlers = 3\n", &[]),
    ("workload = \"outbox\"\n", &["explore.redeliveries=3"]),
    ("workload = \"outbox\"\n[load]\ningesters = 2\n", &[]),
    ("workload = \"outbox\"\n[stop]\nevents = 5\n", &[]),
    ("workload = \"outbox\"\n", &["stop.events=5"]),
    ("workload = \"outbox\"\nvariant = \"groups-naive\"\n", &[]),
    ("workload = \"outbox\"\n[outbox]\nlease = \"500us\"\n", &[]),
    ("[outbox]\nlease = \"1s\"\n", &[]),
    ("workload = \"outbox\"\nexpect = { violated = [\"CountExact\"] }\n", &[]),
    ("expect = { violated = [\"NoLostOutput\"] }\n", &[]),
    ("expect = \"violated\"\n", &[]),
    ("expect = { violated = [\"NoMissedRegresion\"] }\n", &[]),
    ("expect = { violated = [] }\n", &[]),
    ("expect = { violated = [\"TypeOK\"], also = 1 }\n", &[]),
    ("expect = { violated = \"TypeOK\" }\n", &[]),
    ("expect = { violated = [3] }\n", &[]),
    ("seed = 1\nexpect = { violated = [\"CountExact\"], not_judged = [\"CountExact\"] }\n", &[]),
    ("expect = { not_judged = [\"NoMissedRegresion\"] }\n", &[]),
    ("expect = { violated = [\"CountExact\"], not_judged = [] }\n", &[]),
    ("expect = { not_judged = [\"TypeOK\", \"TypeOK\"] }\n", &[]),
    ("expect = {}\n", &[]),
    ("expect = { violated = [\"CountExact\"], not_judged = [\"NoMissedRegression\"] }\n", &[]),
    ("seed = 1\nthresholds = [\n  \"stranded_events.total == 0\",\n  \"latency_us.ingest.p98 < 5\",\n]\n", &[]),
    ("thresholds = [\"faults_injected.kill > 0\"]\n", &[]),
    ("thresholds = [\"latency_us.ingest.p99 ~ 5\"]\n", &[]),
    ("thresholds = [\"invariants.CountExact.verdict == 0\"]\n", &[]),
    ("thresholds = [\"latency_us.ingest < 5\"]\n", &[]),
    ("thresholds = [\"nosuch < 5\"]\n", &[]),
    ("thresholds = [\"latency_us.ingest.p99.x < 5\"]\n", &[]),
    ("thresholds = [\"latency_us.ingest.p99 << 5\"]\n", &[]),
    ("thresholds = [3]\n", &[]),
    // Thresholds as tables: `abort_on_fail` and its delay.
    ("thresholds = [{ threshold = \"latency_us.ingest.p99 < 1000\", abort_on_fail = true, delay_abort_eval = \"5s\" }]\n", &[]),
    ("[[thresholds]]\nthreshold = \"throughput_ops_per_s.total > 1\"\nabort_on_fail = true\n", &[]),
    ("thresholds = [{ threshold = \"latency_us.ingest.p99 < 1000\", abort = true }]\n", &[]),
    ("thresholds = [{ threshold = \"latency_us.ingest.p99 < 1000\", abort_on_fail = true, delay_abort_eval = \"5\" }]\n", &[]),
    ("thresholds = [{ threshold = \"latency_us.ingest.p99 < 1000\", delay_abort_eval = \"5s\" }]\n", &[]),
    ("thresholds = [{ abort_on_fail = true }]\n", &[]),
    ("thresholds = [{ threshold = 5, abort_on_fail = true }]\n", &[]),
    ("thresholds = [{ threshold = \"stranded_events.total == 0\", abort_on_fail = true }]\n", &[]),
    ("thresholds = [{ threshold = \"invariants.CountExact.first_violation_s > 9\", abort_on_fail = true }]\n", &[]),
    ("workload = \"outbox\"\nthresholds = [{ threshold = \"outbox.errors < 10\", abort_on_fail = true }]\n", &[]),
    ("workload = \"outbox\"\nthresholds = [{ threshold = \"latency_us.handle.p99 < 1000\", abort_on_fail = true }]\n", &[]),
    ("seed = 1\n", &["thresholds=[{ threshold = \"latency_us.ingest.p99 < 1000\", abort_on_fail = true }]"]),
    ("[[variants]]\nvariant = \"groups-naive\"\nthresholds = [{ threshold = \"stranded_events.total == 0\", abort_on_fail = true }]\n", &[]),
    ("thresholds = [\"evidence.faults.0.invariants.CountExact > 0\"]\n[[faults]]\nkind = \"crash\"\n", &[]),
    ("thresholds = [\"evidence.faults.1.invariants.CountExact > 0\"]\n[[faults]]\nkind = \"crash\"\n[[faults]]\nkind = \"lock\"\n", &[]),
    ("workload = \"outbox\"\nthresholds = [\"duplicates == 0\"]\n", &[]),
    ("workload = \"outbox\"\nthresholds = [\"outbox.cas_lots < 10\"]\n", &[]),
    ("[[variants]]\nvariant = \"groups-naive\"\nthresholds = [\"throughput.total > 1\"]\n", &[]),
    ("[[variants]]\nvariant = \"groups-naive\"\nexpect = { violated = [\"TypeOK\"], not_judged = [\"AtMostOneStateChange\"] }\n", &[]),
    ("[[variants]]\nname = \"x\"\n", &[]),
    ("[[variants]]\nvariant = \"a.sql\"\ncolour = 1\n", &[]),
    ("[[variants]]\nvariant = \"a/x.sql\"\n[[variants]]\nvariant = \"b/x.sql\"\n", &[]),
    ("variants = 3\n", &[]),
    ("variants = [3]\n", &[]),
    ("[[variants]]\nvariant = 3\n", &[]),
    ("thresholds = [\"stranded_events.total == 0\"]\n[[variants]]\nvariant = \"groups-atomic\"\n[[variants]]\nvariant = \"x/naive.sql\"\nname = \"naive\"\nexpect = { violated = [\"NoMissedRegression\"] }\nthresholds = [\"events > 5\"]\n", &["variant=naive"]),
    ("[api]\nhealth = \"GET /up\"\n", &[]),
    ("[target]\nkind = \"http\"\nspawn = true\n\n[api]\nhealth = \"GET /up\"\n", &[]),
    ("workload = \"outbox\"\n[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api]\nhealth = \"GET /up\"\n", &[]),
    ("api = 3\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.ingest]\nrequest = \"POST /e\"\nbatchsize = 3\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.ingest]\nbatch = 0\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.ingest]\nrequest = \"FETCH /e\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.ingest]\naccepted = \"accepted\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.ingest]\nbody = '{\"id\": \"{evnt_id}\"}'\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.resolve]\nrequest = \"POST /g/{event_id}\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.resolve]\ncodes = { \"409\" = \"duplicate\" }\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.ingest]\ncodes = { \"6xx\" = \"ok\" }\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api.ingest]\nbatch = 5\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api]\ngroup_ids = \"lookup\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api]\ngroup_ids = \"audit\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[api]\nheaders = { authorization = \"Bearer ${BAD-NAME}\" }\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[audit]\nsqlite = \"x.db\"\nexport.events = \"SELECT 1\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[audit]\nsqlite = \"x.db\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[audit]\nsqlite = \" \"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[audit]\nexport.events = \"SELECT 1\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n[audit]\nexport = { events = \"SELECT 1\", other = \"x\" }\n", &[]),
    ("[target]\nkind = \"http\"\nspawn = true\ncommand = \"sleep 1\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\nworkdir = \"x\"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\ncommand = \" \"\n", &[]),
    ("[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\ncommand = \"echo {variant} {run_dir}\"\nworkdir = \"x\"\n", &[]),
];

#[test]
fn refusals_that_span_keys_keep_their_words() {
    let mut out = String::new();
    for (text, sets) in CASES {
        writeln!(out, "{text:?} {sets:?}: {}", load_case(text, sets)).unwrap();
    }
    // The embedded default, which has no path.
    for sets in [&["load.ingesters=many"][..], &[], &["stop.events=0"]] {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let shown = outcome(load(None, &sets).map(|(s, _)| s));
        writeln!(out, "<embedded> {sets:?}: {shown}").unwrap();
    }
    writeln!(
        out,
        "<embedded> seed = -1: {}",
        outcome(load_str("default", None, "seed = -1\n", &[]))
    )
    .unwrap();
    insta::assert_snapshot!("cases", out);
}
