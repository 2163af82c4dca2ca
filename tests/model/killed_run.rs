//! A killed run can be salvaged: `specstorm audit` of a run folder whose
//! bench died (no `checks.json`, no `summary.json`, a history without a
//! footer, perhaps cut mid-line, with any ops missing) judges it by the
//! rules for a cut history and never reports a violation on a correct
//! design; a broken one is still caught where those rules can see it.
//!
//! Each correct run (groups in-process with and without crash faults,
//! groups on the spawned reference server with crash faults, outbox with
//! and without crash faults, in process and on the spawned server) is cut at 21 points across its history, most
//! of them mid-line, and has seeded random sets of whole op batches
//! dropped from its middle; each cut folder holds what a killed run leaves
//! (`scenario.toml`, `variant.sql`, the final `target.db`, the cut
//! history) and is audited. Then real runs are SIGKILLed mid-load and
//! audited. Nothing depends on the machine's speed: a correct design must
//! never be violated whatever was cut, and the broken designs break their
//! rule on every event by construction.

use specstorm::audit::judge;
use specstorm::audit_record::Audit;
use specstorm::verdict::Verdict;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::procs::wait_for_history;
use crate::common::run::{run_command, run_into};
use crate::common::{root, specstorm, text};

fn variant(name: &str) -> String {
    root()
        .join("targets/sqlite")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Runs `scenario` (TOML text) into `dir/run`, which must end with a
/// summary; returns the run folder.
fn run(dir: &Path, scenario: &str) -> PathBuf {
    let file = dir.join("scenario.toml");
    std::fs::write(&file, scenario).unwrap();
    let out = dir.join("run");
    let o = run_into(file.to_str().unwrap(), &out, &[]);
    assert!(out.join("summary.json").is_file(), "{}", text(&o));
    out
}

const GROUPS_LOAD: &str = r#"
seed = 3
[load]
ingesters = 8
resolvers = 2
[stop]
events = 4000
[keys]
projects = 2
fingerprints = 30
skew = "hot"
hot_groups = 3
hot_fraction = 0.5
[retry]
probability = 0.3
max_retries = 2
soon_fraction = 0.7
[resolve]
interval = "0s"
"#;

const CRASH_INGEST: &str = "[[faults]]\nkind = \"crash\"\nops = \"ingest\"\nprobability = 0.03\n\
                            [[faults]]\nkind = \"crash\"\nops = \"resolve\"\nprobability = 0.02\n";

fn groups_scenario(variant_file: &str, target: &str, faults: &str) -> String {
    format!(
        "workload = \"groups\"\nvariant = \"{variant_file}\"\n{GROUPS_LOAD}\n{target}\n{faults}"
    )
}

fn outbox_scenario(variant_file: &str, faults: &str) -> String {
    format!(
        "workload = \"outbox\"\nvariant = \"{variant_file}\"\nseed = 3\n\
         [outbox]\nmessages = 1500\ndeliveries = 3\nhandlers = 8\nmax_attempts = 1000\n\
         [stop]\nduration = \"5m\"\n{faults}"
    )
}

const CRASH_HANDLE: &str =
    "[[faults]]\nkind = \"crash\"\nops = \"handle\"\nper = \"step\"\nprobability = 0.05\n";

/// A small deterministic generator (splitmix64): the cuts are the same on
/// every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A history as the writer sent it: the header line, then one batch per
/// op (its invoke, steps, the faults injected into it, and its
/// completion, contiguous in the file) or per fault record sent alone;
/// the footer left out.
fn batches(history: &str) -> (String, Vec<String>) {
    let mut lines = history.lines();
    let header = format!("{}\n", lines.next().expect("a header"));
    let mut out: Vec<String> = Vec::new();
    // An op's batch is open from its invoke to its completion.
    let mut open = false;
    for l in lines {
        let kind = |k: &str| l.contains(&format!("\"type\":\"{k}\""));
        if kind("footer") {
            continue;
        }
        let starts = kind("invoke") || (kind("fault") && !open);
        match out.last_mut() {
            Some(b) if !starts => {
                b.push_str(l);
                b.push('\n');
            }
            _ => out.push(format!("{l}\n")),
        }
        if kind("invoke") {
            open = true;
        } else if kind("ok") || kind("fail") || kind("info") {
            open = false;
        }
    }
    (header, out)
}

/// What a killed run's history can be: the whole history without its
/// footer cut at 21 points across it (most mid-line; the last keeps every
/// batch), and, for six seeds, some whole batches dropped at random from
/// anywhere (a third of the time, half) and then cut at a random point of
/// the second half. Each with its label.
fn cut_histories(history: &str) -> Vec<(String, String)> {
    let (header, batches) = batches(history);
    let body: String = batches.concat();
    let mut out = Vec::new();
    for k in 1..=21u64 {
        let mut pos = (body.len() as u64 * k / 21) as usize;
        if k < 21 {
            // Off line boundaries, by a few bytes that vary.
            pos = (pos + (k as usize * 37) % 101).min(body.len());
        }
        while !body.is_char_boundary(pos) {
            pos -= 1;
        }
        out.push((
            format!("prefix {k}/21"),
            format!("{header}{}", &body[..pos]),
        ));
    }
    for seed in 1..=6u64 {
        let mut rng = Rng(seed);
        let p = [5, 20, 50][(seed % 3) as usize];
        let kept: String = batches
            .iter()
            .filter(|_| rng.below(100) >= p)
            .map(String::as_str)
            .collect();
        let half = kept.len() / 2;
        let mut pos = half + rng.below((kept.len() - half) as u64 + 1) as usize;
        while !kept.is_char_boundary(pos) {
            pos -= 1;
        }
        out.push((
            format!(
                "seed {seed}: {p}% of batches dropped, cut at {pos}/{}",
                kept.len()
            ),
            format!("{header}{}", &kept[..pos]),
        ));
    }
    out
}

/// A folder as a killed run leaves it: the saved scenario and statement
/// file, the final database (with its `-wal`, if any) and `history`.
fn killed_folder(from: &Path, to: &Path, history: &str) {
    std::fs::create_dir_all(to).unwrap();
    for f in ["scenario.toml", "variant.sql", "target.db", "target.db-wal"] {
        if from.join(f).is_file() {
            std::fs::copy(from.join(f), to.join(f)).unwrap();
        }
    }
    std::fs::write(to.join("history.jsonl"), history).unwrap();
}

/// What the audit says of a killed run (as `audit.json` holds it).
fn killed(a: &Audit) -> serde_json::Value {
    serde_json::to_value(a).unwrap()["killed"].clone()
}

/// Audits every cut of `run`'s history; each must be judged as a killed
/// run's. Returns (label, audit) per cut.
fn audit_cuts(run: &Path, scratch: &Path) -> Vec<(String, Audit)> {
    let history = crate::common::folder::history_text(run).unwrap();
    let mut out = Vec::new();
    for (i, (label, cut)) in cut_histories(&history).into_iter().enumerate() {
        let dir = scratch.join(format!("cut{i}"));
        killed_folder(run, &dir, &cut);
        let a = judge(&dir).unwrap_or_else(|e| panic!("{label}: {e}"));
        let k = killed(&a);
        let note = k["note"]
            .as_str()
            .unwrap_or_else(|| panic!("{label}: no killed note"));
        assert!(note.contains("the run was killed"), "{label}: {note}");
        assert!(
            k["missing_batches"].as_u64().is_some_and(|n| n > 8192),
            "{label}"
        );
        assert!(!a.same_as_run, "{label}: nothing to confirm");
        assert!(a.differences.is_empty(), "{label}: {:?}", a.differences);
        out.push((label, a));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    out
}

/// No verdict violated, in any cut; the exit is the verdicts' (0 or 4).
fn assert_never_violated(cuts: &[(String, Audit)]) {
    for (label, a) in cuts {
        for r in &a.results {
            assert_ne!(
                r.verdict,
                Verdict::Violated,
                "{label}: {} violated on a correct run: {:?}",
                r.invariant,
                r.first_explanation()
            );
        }
        assert!(matches!(a.exit.code, 0 | 4), "{label}: {:?}", a.exit);
    }
    // Mid-line cuts were met and left out.
    assert!(
        cuts.iter()
            .any(|(_, a)| killed(a)["cut_line_bytes"].as_u64().is_some_and(|n| n > 0)),
        "no cut fell mid-line"
    );
}

#[test]
fn cut_histories_of_correct_groups_runs_in_process_never_report_a_violation() {
    for (name, faults) in [("plain", ""), ("crash", CRASH_INGEST)] {
        let tmp = tempfile::tempdir().unwrap();
        let s = groups_scenario(&variant("groups-atomic.sql"), "", faults);
        let out = run(tmp.path(), &s);
        let cuts = audit_cuts(&out, tmp.path());
        assert_never_violated(&cuts);
        // The rules that stay are applied: the late cuts judged counted
        // events, and say what they left out. How many events are
        // certainly counted depends on how resolves interleave with
        // ingests (a loaded machine stretches those windows), so only
        // "some" is asked: a rule that judged nothing would give 0.
        let (_, last) = &cuts[20];
        let ce = &last.results[2];
        assert_eq!(ce.invariant, "CountExact");
        assert!(last.evidence.invariants["CountExact"] > 0, "{name}");
        assert!(
            ce.notes.iter().any(|n| n.contains("the history was cut")),
            "{name}: {:?}",
            ce.notes
        );
        assert_eq!(
            last.stranded.total, None,
            "{name}: a cut history cannot tell"
        );
    }
}

#[test]
fn the_rules_for_a_cut_history_are_what_keeps_a_correct_run_clean() {
    // One accepted ingest's batch taken out: judged by the rules for a
    // whole history (its footer kept), the count holds an increment no
    // recorded attempt can have made, a false violation; without the
    // footer, the same history is cut and CountExact holds.
    let tmp = tempfile::tempdir().unwrap();
    let out = run(
        tmp.path(),
        &groups_scenario(&variant("groups-atomic.sql"), "", ""),
    );
    let history = crate::common::folder::history_text(&out).unwrap();
    let footer = history.lines().last().unwrap().to_string();
    assert!(footer.contains("\"type\":\"footer\""), "{footer}");
    let (header, mut batches) = batches(&history);
    let counted = batches
        .iter()
        .position(|b| b.contains("\"f\":\"ingest\"") && b.contains("\"accepted\":true"))
        .expect("an accepted ingest");
    batches.remove(counted);
    let body = format!("{header}{}", batches.concat());
    for (name, history, violated) in [
        ("whole", format!("{body}{footer}\n"), true),
        ("cut", body.clone(), false),
    ] {
        let dir = tmp.path().join(name);
        killed_folder(&out, &dir, &history);
        let a = judge(&dir).unwrap();
        let ce = a
            .results
            .iter()
            .find(|r| r.invariant == "CountExact")
            .unwrap();
        assert_eq!(
            ce.verdict == Verdict::Violated,
            violated,
            "{name}: {:?}",
            ce.first_explanation()
        );
    }
}

#[test]
fn cut_histories_of_a_correct_groups_run_on_the_spawned_server_never_report_a_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let target = "[target]\nkind = \"http\"\nspawn = true\n";
    let s = groups_scenario(&variant("groups-atomic.sql"), target, CRASH_INGEST);
    let out = run(tmp.path(), &s);
    let cuts = audit_cuts(&out, tmp.path());
    assert_never_violated(&cuts);
    // The final tables are the server's own database.
    assert!(
        cuts[0].1.tables.contains("spawned reference server"),
        "{}",
        cuts[0].1.tables
    );

    killed_before_an_external_export_is_exit_3(&out, tmp.path());
}

/// The spawned-server run `out`, as if its service were one the bench did
/// not start: a service the bench did not start leaves nothing to read
/// when the run was killed before its export: exit 3, saying so.
fn killed_before_an_external_export_is_exit_3(out: &Path, scratch: &Path) {
    let dir = scratch.join("external");
    let history = crate::common::folder::history_text(out).unwrap();
    killed_folder(out, &dir, &cut_histories(&history)[10].1);
    std::fs::remove_file(dir.join("target.db")).unwrap();
    let scenario = std::fs::read_to_string(dir.join("scenario.toml")).unwrap();
    // Its faults went through the reference server's hook: none here.
    let scenario = scenario.split("[[faults]]").next().unwrap();
    let scenario = scenario.replace("spawn = true", "url = \"http://127.0.0.1:9\"");
    std::fs::write(dir.join("scenario.toml"), scenario).unwrap();
    let o = specstorm(&["audit", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("killed before it read the service's final tables"),
        "{}",
        text(&o)
    );
}

#[test]
fn cut_histories_of_a_correct_outbox_run_on_the_spawned_server_never_report_a_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let s = format!(
        "{}[target]\nkind = \"http\"\nspawn = true\n",
        outbox_scenario(&variant("outbox-protocol.sql"), CRASH_HANDLE)
    );
    let out = run(tmp.path(), &s);
    // A run that saved its verdicts is audited from the export it was
    // judged from, as a groups run is.
    let whole = judge(&out).unwrap();
    assert_eq!(whole.tables, "export.json");
    assert!(whole.same_as_run, "{:?}", whole.differences);
    let cuts = audit_cuts(&out, tmp.path());
    assert_never_violated(&cuts);
    // Killed, the final tables are the server's own database.
    assert!(
        cuts[0].1.tables.contains("spawned reference server"),
        "{}",
        cuts[0].1.tables
    );

    killed_before_an_external_export_is_exit_3(&out, tmp.path());
}

#[test]
fn cut_histories_of_correct_outbox_runs_never_report_a_violation() {
    for faults in ["", CRASH_HANDLE] {
        let tmp = tempfile::tempdir().unwrap();
        let out = run(
            tmp.path(),
            &outbox_scenario(&variant("outbox-protocol.sql"), faults),
        );
        let cuts = audit_cuts(&out, tmp.path());
        assert_never_violated(&cuts);
        let (_, last) = &cuts[20];
        assert!(last.coverage.events_counted > 0, "{:?}", last.coverage);
    }
}

/// The correct designs written differently from the shipped ones
/// (`targets/sqlite/designs/`: the group row first, an UPSERT, a
/// compare-and-swap resolver, the design's own ids, a seen-ids table
/// before or after the event row): their histories cut like a killed
/// run's are never judged violated either, under crashes.
#[test]
fn cut_histories_of_correct_designs_written_differently_never_report_a_violation() {
    let designs = root().join("targets/sqlite/designs");
    let mut names: Vec<_> = std::fs::read_dir(&designs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .filter(|p| !is_outbox_design(p))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for design in names {
        let tmp = tempfile::tempdir().unwrap();
        let s = groups_scenario(design.to_str().unwrap(), "", CRASH_INGEST);
        let out = run(tmp.path(), &s);
        let cuts = audit_cuts(&out, tmp.path());
        assert_never_violated(&cuts);
        // The late cuts still judged what they could.
        let (_, last) = &cuts[20];
        assert!(
            last.evidence.invariants["CountExact"] > 0,
            "{}: {:?}",
            design.display(),
            last.evidence.invariants
        );
    }
}

/// An outbox design of `targets/sqlite/designs/` (named `outbox-*.sql`).
fn is_outbox_design(p: &Path) -> bool {
    p.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("outbox-"))
}

/// The correct outbox designs written differently from the shipped
/// protocol (`targets/sqlite/designs/outbox-*.sql`: a head row moved by
/// compare-and-swap, the design's own tx ids): their histories cut like a
/// killed run's are never judged violated, under crashes at every step.
#[test]
fn cut_histories_of_correct_outbox_designs_never_report_a_violation() {
    let designs = root().join("targets/sqlite/designs");
    let mut names: Vec<_> = std::fs::read_dir(&designs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql") && is_outbox_design(p))
        .collect();
    names.sort();
    assert!(names.len() >= 2, "{names:?}");
    for design in names {
        let tmp = tempfile::tempdir().unwrap();
        let out = run(
            tmp.path(),
            &outbox_scenario(design.to_str().unwrap(), CRASH_HANDLE),
        );
        let cuts = audit_cuts(&out, tmp.path());
        assert_never_violated(&cuts);
        let (_, last) = &cuts[20];
        assert!(
            last.coverage.events_counted > 0,
            "{}: {:?}",
            design.display(),
            last.coverage
        );
    }
}

/// A design that loses increments by construction: its counting step sets
/// the count to 1, whatever it was.
fn count_stuck(dir: &Path) -> String {
    let atomic = std::fs::read_to_string(variant("groups-atomic.sql")).unwrap();
    let stuck = atomic.replace("SET event_count = event_count + 1,", "SET event_count = 1,");
    assert_ne!(stuck, atomic);
    let path = dir.join("count-stuck.sql");
    std::fs::write(&path, stuck).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn broken_designs_are_still_caught_on_cut_histories() {
    // Groups: CountExact's lower bound (events certainly counted) stands
    // on any subset of the ops.
    let tmp = tempfile::tempdir().unwrap();
    let out = run(
        tmp.path(),
        &groups_scenario(&count_stuck(tmp.path()), "", ""),
    );
    let cuts = audit_cuts(&out, tmp.path());
    for (label, a) in cuts
        .iter()
        .filter(|(l, _)| l.starts_with("prefix"))
        .skip(10)
    {
        let ce = a
            .results
            .iter()
            .find(|r| r.invariant == "CountExact")
            .unwrap();
        assert_eq!(ce.verdict, Verdict::Violated, "{label}: {:?}", ce.notes);
        assert!(
            ce.first_explanation().unwrap().contains("lost increment"),
            "{label}"
        );
        assert_eq!(a.exit.code, 1, "{label}");
    }

    // Outbox: the rules on the final tables stand whatever the history
    // lacks.
    let tmp = tempfile::tempdir().unwrap();
    let out = run(
        tmp.path(),
        &outbox_scenario(&variant("outbox-naive-no-outbox.sql"), ""),
    );
    let cuts = audit_cuts(&out, tmp.path());
    for (label, a) in &cuts {
        let r = a
            .results
            .iter()
            .find(|r| r.invariant == "AtMostOneStateChange")
            .unwrap();
        assert_eq!(r.verdict, Verdict::Violated, "{label}");
        assert_eq!(a.exit.code, 1, "{label}");
    }
}

/// Starts `specstorm run SCENARIO --out OUT` with `args`, waits until its
/// history holds `bytes`, SIGKILLs it and reaps it. Panics after a
/// generous bound (a hang, not a speed).
fn kill_mid_load(scenario: &str, out: &Path, args: &[&str], bytes: u64) {
    let mut bench = run_command(Path::new(scenario), out)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_history(&mut bench, out, bytes);
    bench.kill().unwrap();
    bench.wait().unwrap();
}

#[test]
fn a_sigkilled_run_is_audited_with_the_killed_note_and_no_false_violation() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, scenario, args) in [
        (
            "groups",
            "scenarios/groups-atomic.toml",
            &["--set", "stop.events=0", "--duration", "120s"][..],
        ),
        (
            "outbox",
            "scenarios/outbox-protocol.toml",
            &["--set", "outbox.messages=1000000"][..],
        ),
    ] {
        let out = tmp.path().join(name);
        kill_mid_load(scenario, &out, args, 512 << 10);
        assert!(!out.join("checks.json").exists() && !out.join("summary.json").exists());
        let o = specstorm(&["audit", out.to_str().unwrap()]);
        let t = text(&o);
        assert!(matches!(o.status.code(), Some(0 | 4)), "{name}: {t}");
        assert!(
            t.contains("the run was killed (its history has no footer)"),
            "{name}: {t}"
        );
        assert!(t.contains("nothing to confirm"), "{name}: {t}");
        let a: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("audit.json")).unwrap())
                .unwrap();
        // No verdict violated (read from audit.json: the text's "nothing
        // violated unexpectedly" of an exit 4 holds the word too).
        let results = a["results"].as_array().expect("audit.json results");
        assert!(!results.is_empty(), "{a}");
        for r in results {
            assert_ne!(r["verdict"], "violated", "{name}: {r}");
        }
        assert!(
            a["killed"]["missing_batches"].as_u64().unwrap() > 8192,
            "{a}"
        );
        assert_eq!(a["same_as_run"], false);

        // `report` has no figures to show, and says where to go.
        let o = specstorm(&["report", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains("specstorm audit"), "{}", text(&o));
    }
}
