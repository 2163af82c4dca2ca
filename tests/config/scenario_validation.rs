//! Scenario loading: every refusal names the right line (or `--set`) and
//! reason; defaults, overrides, shipped files and the `to_toml` round trip.

use specstorm::fault_kind::FaultKind;
use specstorm::scenario::*;
use specstorm::workload::groups::api::GroupsApi;
use specstorm::workload::groups::config::*;
use specstorm::workload::outbox::config::OutboxConfig;
use std::path::{Path, PathBuf};
use std::time::Duration;

const FILE: &str = "scenarios/test.toml";

fn load_text(text: &str) -> Result<Scenario, ScenarioError> {
    load_str("test", Some(Path::new(FILE)), text, &[])
}

fn load_with(text: &str, overrides: &[&str]) -> Result<Scenario, ScenarioError> {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load_str("test", Some(Path::new(FILE)), text, &overrides)
}

/// Asserts that `text` is refused at `line` with a reason containing every
/// one of `needles`, and that Display is `FILE:LINE: reason`.
#[track_caller]
fn assert_refused(text: &str, line: usize, needles: &[&str]) {
    let err = match load_text(text) {
        Ok(s) => panic!("expected an error at line {line}, got {s:?}"),
        Err(e) => e,
    };
    assert_eq!(err.line(), Some(line), "wrong line in: {err}");
    let reason = err.reason();
    for needle in needles {
        assert!(reason.contains(needle), "{needle:?} not in: {err}");
    }
    assert_eq!(err.to_string(), format!("{FILE}:{line}: {reason}"));
}

/// Asserts that the override `set` is blamed, with `needle` in the reason.
#[track_caller]
fn assert_set_refused(text: &str, overrides: &[&str], set: &str, needle: &str) {
    let err = load_with(text, overrides).expect_err("expected an override error");
    assert!(
        matches!(&err, ScenarioError::Set { .. }),
        "not a --set error: {err}"
    );
    assert_eq!(err.line(), None);
    let shown = err.to_string();
    assert!(shown.starts_with(&format!("--set {set}: ")), "{shown}");
    assert!(shown.contains(needle), "{needle:?} not in: {shown}");
}

// ---------------------------------------------------------------- errors

#[test]
fn toml_syntax_error() {
    assert_refused(
        "seed = 1\n\n[load]\ningesters = = 4\n",
        4,
        &["invalid TOML"],
    );
}

#[test]
fn duplicate_key_is_a_syntax_error() {
    assert_refused(
        "[load]\ningesters = 4\ningesters = 5\n",
        3,
        &["invalid TOML"],
    );
}

#[test]
fn unknown_key_in_a_table_lists_the_valid_keys() {
    assert_refused(
        "[load]\ningesters = 4\nworkers = 3\n",
        3,
        &[
            "unknown key `workers` in [load]",
            "model, ingesters, resolvers, rate, late_after",
        ],
    );
}

#[test]
fn unknown_top_level_key_and_table() {
    assert_refused(
        "seed = 1\nsede = 2\n",
        2,
        &[
            "unknown key `sede`",
            "name, workload, variant, seed",
            "[retry]",
        ],
    );
    assert_refused(
        "seed = 1\n\n[loads]\ningesters = 4\n",
        3,
        &["unknown key `loads`"],
    );
}

#[test]
fn unknown_key_in_a_dotted_key_and_an_inline_table() {
    assert_refused(
        "seed = 1\nload.workers = 3\n",
        2,
        &["unknown key `workers` in [load]"],
    );
    assert_refused(
        "seed = 1\n\ntarget = { kind = \"sqlite\", file = \"x.db\" }\n",
        3,
        &["unknown key `file` in [target]", "journal_mode"],
    );
}

#[test]
fn wrong_type() {
    assert_refused(
        "[load]\n# workers\ningesters = \"many\"\n",
        3,
        &[
            "`load.ingesters` must be a whole number",
            "found string \"many\"",
        ],
    );
    assert_refused(
        "[target]\nreuse = \"yes\"\n",
        2,
        &["`target.reuse` must be true or false"],
    );
    assert_refused(
        "load = 4\n",
        1,
        &["`load` must be a table", "found integer 4"],
    );
    assert_refused(
        "[seed]\nx = 1\n",
        1,
        &["`seed` must be a whole number", "found a table"],
    );
    assert_refused(
        "[retry]\nprobability = \"high\"\n",
        2,
        &["`retry.probability` must be a number"],
    );
}

#[test]
fn ingesters_out_of_range() {
    assert_refused(
        "\n[load]\ningesters = 0\n",
        3,
        &["`load.ingesters` must be from 1 to 1024, found 0"],
    );
    assert_refused(
        "[load]\ningesters = 1025\n",
        2,
        &["from 1 to 1024, found 1025"],
    );
}

#[test]
fn resolvers_out_of_range() {
    assert_refused(
        "[load]\nresolvers = 2000\n",
        2,
        &["`load.resolvers` must be from 0 to 1024, found 2000"],
    );
    assert_refused(
        "[load]\nresolvers = -1\n",
        2,
        &["`load.resolvers`", "found -1"],
    );
    // 0 resolvers is allowed: an ingest-only run.
    assert_eq!(
        load_text("[load]\nresolvers = 0\n")
            .unwrap()
            .load()
            .resolvers,
        0
    );
}

#[test]
fn no_stop_condition() {
    assert_refused(
        "seed = 3\n\n[stop]\nevents = 0\n",
        3,
        &["never stop", "stop.duration"],
    );
    // "0s" means no time limit, so it is no stop condition either.
    assert_refused(
        "[stop]\nevents = 0\nduration = \"0s\"\n",
        1,
        &["never stop"],
    );
    let s = load_text("[stop]\nevents = 0\nduration = \"10s\"\n").unwrap();
    assert_eq!(s.stop.duration, Some(Duration::from_secs(10)));
}

#[test]
fn open_model_needs_a_rate() {
    assert_refused(
        "[load]\ningesters = 2\nmodel = \"open\"\n",
        3,
        &["model = \"open\" needs `load.rate` > 0"],
    );
    assert_refused(
        "[load]\nmodel = \"open\"\nrate = 0\n",
        3,
        &["needs `load.rate` > 0"],
    );
    let s = load_text("[load]\nmodel = \"open\"\nrate = 500\n").unwrap();
    assert_eq!((s.load().model, s.load().rate), (LoadModel::Open, 500.0));
}

#[test]
fn rate_with_closed_model() {
    assert_refused(
        "[load]\nrate = 100.0\n",
        2,
        &["rate only applies to model = open"],
    );
}

#[test]
fn rate_must_be_finite() {
    assert_refused(
        "[load]\nmodel = \"open\"\nrate = inf\n",
        3,
        &["`load.rate` must be a finite number >= 0"],
    );
    assert_refused("[load]\nmodel = \"open\"\nrate = -5\n", 3, &["found -5"]);
}

#[test]
fn probabilities_and_fractions_outside_0_1_or_nan() {
    assert_refused(
        "[retry]\nprobability = 1.5\n",
        2,
        &["`retry.probability` must be from 0 to 1, found 1.5"],
    );
    assert_refused(
        "[retry]\nsoon_fraction = -0.1\n",
        2,
        &["`retry.soon_fraction` must be from 0 to 1"],
    );
    assert_refused(
        "[keys]\nhot_fraction = nan\n",
        2,
        &["`keys.hot_fraction` must be from 0 to 1, found NaN"],
    );
    // Integers 0 and 1 are fractions too.
    assert_eq!(
        load_text("[keys]\nhot_fraction = 1\n")
            .unwrap()
            .keys()
            .hot_fraction,
        1.0
    );
}

#[test]
fn keys_that_would_make_the_bench_hold_too_much_are_refused_with_why() {
    // A billion retries were once queued at an event's first send.
    assert_refused(
        "[retry]\nprobability = 0.2\nmax_retries = 1000000000\n",
        3,
        &[
            "`retry.max_retries` must be from 0 to 100, found 1000000000",
            "queued until it is due, at most 20000 ops later",
        ],
    );
    assert_set_refused(
        "",
        &["retry.max_retries=101"],
        "retry.max_retries=101",
        "must be from 0 to 100",
    );
    assert_eq!(
        load_with("", &["retry.max_retries=100"])
            .unwrap()
            .retry()
            .max_retries,
        100
    );
    // SQLite's busy timeout is an int of milliseconds (once a panic).
    assert_refused(
        "[target]\nbusy_timeout = \"1000000h\"\n",
        2,
        &["`target.busy_timeout` may be at most 24days 20h 31m 23s 647ms"],
    );
    assert!(load_text("[target]\nbusy_timeout = \"24days\"\n").is_ok());
    // Over HTTP a slot per group is allocated before the load.
    assert_refused(
        "[target]\nkind = \"http\"\nspawn = true\n\n[keys]\nprojects = 4096\nfingerprints = 4097\n",
        7,
        &["at most 16777216 groups, found projects * fingerprints = 16781312"],
    );
    assert!(load_text(
        "[target]\nkind = \"http\"\nspawn = true\n\n[keys]\nprojects = 4096\nfingerprints = 4096\n"
    )
    .is_ok());
    // In-process, groups cost nothing until used.
    assert!(load_text("[keys]\nprojects = 4294967295\nfingerprints = 4294967295\n").is_ok());
    // The outbox queue holds every delivery from the start.
    assert_refused(
        "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n\n[outbox]\nmessages = 10000000\ndeliveries = 4\n",
        6,
        &["`outbox.messages` x `outbox.deliveries` may be at most 30000000, found 10000000 x 4 = 40000000"],
    );
    assert!(load_text(
        "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n\n[outbox]\nmessages = 10000000\n"
    )
    .is_ok());
}

#[test]
fn max_retries_zero_with_retries() {
    assert_refused(
        "[retry]\nprobability = 0.1\nmax_retries = 0\n",
        3,
        &["`retry.max_retries` must be at least 1 when `retry.probability` > 0"],
    );
    // Without retries, 0 is consistent.
    let s = load_text("[retry]\nprobability = 0\nmax_retries = 0\n").unwrap();
    assert_eq!(s.retry().max_retries, 0);
}

#[test]
fn hot_groups_zero_or_more_than_groups() {
    assert_refused(
        "[keys]\nskew = \"hot\"\nhot_groups = 0\n",
        3,
        &["`keys.hot_groups` must be from 1", "found 0"],
    );
    assert_refused(
        "[keys]\nprojects = 2\nfingerprints = 3\nskew = \"hot\"\nhot_groups = 7\n",
        5,
        &["projects * fingerprints = 6", "found 7"],
    );
    // The default hot_groups (4) is too many for 2 groups: blamed on [keys].
    assert_refused(
        "seed = 1\n[keys]\nprojects = 1\nfingerprints = 2\nskew = \"hot\"\n",
        2,
        &[
            "found 4",
            "`keys.hot_groups` is not set: its default applies",
        ],
    );
    // With uniform skew the hot set is unused.
    assert_eq!(
        load_text("[keys]\nhot_groups = 0\n")
            .unwrap()
            .keys()
            .hot_groups,
        0
    );
}

#[test]
fn projects_or_fingerprints_zero() {
    assert_refused(
        "[keys]\nprojects = 0\n",
        2,
        &["`keys.projects` must be at least 1, found 0"],
    );
    assert_refused(
        "[keys]\n\nfingerprints = 0\n",
        3,
        &["`keys.fingerprints` must be at least 1"],
    );
}

#[test]
fn invalid_journal_mode_and_synchronous() {
    assert_refused(
        "[target]\njournal_mode = \"wall\"\n",
        2,
        &[
            "invalid `target.journal_mode` \"wall\"",
            "\"wal\", \"delete\", \"truncate\", \"persist\", \"memory\", \"off\"",
        ],
    );
    assert_refused(
        "[target]\nsynchronous = \"fast\"\n",
        2,
        &[
            "invalid `target.synchronous` \"fast\"",
            "\"off\", \"normal\", \"full\", \"extra\"",
        ],
    );
}

#[test]
fn invalid_duration() {
    assert_refused(
        "[stop]\nduration = \"30 parsecs\"\n",
        2,
        &["invalid duration \"30 parsecs\" for `stop.duration`"],
    );
    assert_refused(
        "[target]\nbusy_timeout = \"5\"\n",
        2,
        &["for `target.busy_timeout`"],
    );
    assert_refused(
        "[resolve]\ninterval = 5\n",
        2,
        &["`resolve.interval` must be a duration string"],
    );
}

#[test]
fn workload_other_than_groups_and_outbox() {
    assert_refused(
        "seed = 1\nworkload = \"kafka\"\n",
        2,
        &["invalid `workload` \"kafka\"", "\"groups\"", "\"outbox\""],
    );
}

#[test]
fn target_kind_other_than_sqlite() {
    assert_refused(
        "[target]\nkind = \"postgres\"\n",
        2,
        &["invalid `target.kind` \"postgres\""],
    );
}

#[test]
fn variant_empty_or_unknown() {
    assert_refused("\nvariant = \"\"\n", 2, &["`variant` must not be empty"]);
    assert_refused(
        "variant = \"groups-atomc\"\n",
        1,
        &["unknown built-in variant \"groups-atomc\"", "groups-naive"],
    );
    let s = load_text("variant = \"mine/fast.sql\"\n").unwrap();
    assert_eq!(s.variant, "mine/fast.sql");
}

#[test]
fn embedded_default_names_itself_in_errors() {
    let err = load(None, &["load.ingesters=many".to_string()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--set load.ingesters=many: `load.ingesters` must be a whole number, found string \"many\""
    );
    let err = load_str("default", None, "seed = -1\n", &[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "<embedded default>:1: `seed` must be at least 0, found -1"
    );
}

#[test]
fn unreadable_file() {
    let err = load(Some(Path::new("/nonexistent/x.toml")), &[]).unwrap_err();
    assert!(matches!(err, ScenarioError::Read { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("/nonexistent/x.toml: cannot read"),
        "{err}"
    );
}

// ---------------------------------------------------------------- defaults

#[test]
fn empty_file_gets_every_default() {
    let s = load_text("").unwrap();
    let mut expected = Scenario {
        name: "test".into(),
        workload: Workload::named("groups").unwrap(),
        variant: "groups-atomic".into(),
        seed: 1,
        target: Target {
            kind: TargetKind::Sqlite,
            path: None,
            journal_mode: "wal".into(),
            synchronous: "normal".into(),
            busy_timeout: Duration::from_secs(5),
            txn_retries: 16,
            txn_backoff: Duration::ZERO,
            txn_backoff_max: Duration::from_millis(100),
            reuse: false,
            url: None,
            spawn: false,
            connect_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(10),
            retries: 3,
            server_workers: 8,
            command: None,
            workdir: None,
            startup_timeout: Duration::from_secs(60),
            ca_file: None,
            insecure_skip_verify: false,
        },
        stop: Stop {
            events: 10000,
            duration: None,
            grace: Duration::from_secs(30),
        },
        explore: Explore::default(),
        parts: Default::default(),
        api: None,
        audit: None,
        faults: vec![],
        fuzz: Some(specstorm::scenario::Fuzz::default()),
        expect: Expect::holds(),
        thresholds: vec![],
        variants: vec![],
    };
    expected.set_part(Some(Load {
        model: LoadModel::Closed,
        ingesters: 8,
        resolvers: 1,
        rate: 0.0,
        late_after: Duration::from_millis(1),
        resolve_rate: None,
        stages: vec![],
    }));
    expected.set_part(Some(Keys {
        projects: 2,
        fingerprints: 100,
        skew: Skew::Uniform,
        hot_groups: 4,
        hot_fraction: 0.9,
        event_id: None,
    }));
    expected.set_part(Some(Retry {
        probability: 0.2,
        max_retries: 2,
        soon_fraction: 0.5,
    }));
    expected.set_part(Some(Resolve {
        interval: Duration::from_millis(1),
    }));
    expected.set_part(Some(MinEvidence::default()));
    assert_eq!(s, expected);
    assert_eq!(s.groups(), 200);
}

#[test]
fn name_from_file_or_stem() {
    assert_eq!(load_text("name = \"mine\"\n").unwrap().name, "mine");
    assert_refused("name = \"  \"\n", 1, &["`name` must not be empty"]);
    let (s, source) = load(None, &[]).unwrap();
    assert_eq!(s.name, "default");
    assert!(source.path.is_none());
    assert_eq!(source.text, DEFAULT_SCENARIO);
}

// ---------------------------------------------------------------- overrides

#[test]
fn overrides_are_applied() {
    let s = load_with(
        "[load]\ningesters = 16\n",
        &[
            "load.ingesters=4",
            "stop.duration=5s",
            "keys.skew=hot",
            "target.path=/tmp/x.db",
            "variant=groups-naive",
            "retry.probability = 0.5",
            "target.reuse=true",
            "resolve={ interval = \"3ms\" }",
            "name=true",
        ],
    )
    .unwrap();
    assert_eq!(s.load().ingesters, 4);
    assert_eq!(s.stop.duration, Some(Duration::from_secs(5)));
    assert_eq!(s.keys().skew, Skew::Hot);
    let t = &s.target;
    assert_eq!(t.path.as_deref(), Some(Path::new("/tmp/x.db")));
    assert!(t.reuse);
    assert_eq!(s.variant, "groups-naive");
    assert_eq!(s.retry().probability, 0.5);
    assert_eq!(s.resolve().interval, Duration::from_millis(3));
    // A key that holds a string takes the text as written.
    assert_eq!(s.name, "true");
}

#[test]
fn later_override_wins_and_reaches_into_inline_tables() {
    let s = load_with(
        "target = { journal_mode = \"delete\" }\n",
        &[
            "load.ingesters=4",
            "load.ingesters=6",
            "target.synchronous=full",
        ],
    )
    .unwrap();
    assert_eq!(s.load().ingesters, 6);
    let t = &s.target;
    assert_eq!(
        (t.journal_mode.as_str(), t.synchronous.as_str()),
        ("delete", "full")
    );
}

#[test]
fn override_errors() {
    assert_set_refused(
        "",
        &["load.ingesters"],
        "load.ingesters",
        "expected KEY=VALUE",
    );
    assert_set_refused("", &["=4"], "=4", "empty key");
    assert_set_refused("", &["load..x=4"], "load..x=4", "invalid key");
    assert_set_refused("seed = 1\n", &["seed.x=4"], "seed.x=4", "not a table");
    assert_set_refused(
        "",
        &["seed.x=4"],
        "seed.x=4",
        "`seed` must be a whole number, found a table",
    );
    assert_set_refused(
        "",
        &["load.workers=4"],
        "load.workers=4",
        "unknown key `workers` in [load]",
    );
    assert_set_refused(
        "[load]\ningesters = 4\n",
        &["load.ingesters=0"],
        "load.ingesters=0",
        "from 1 to 1024",
    );
    assert_set_refused("", &["stop.events=0"], "stop.events=0", "never stop");
    assert_set_refused(
        "",
        &["keys.skew=hot", "keys.hot_groups=0"],
        "keys.hot_groups=0",
        "found 0",
    );
    assert_set_refused(
        "",
        &["stop.duration=soon"],
        "stop.duration=soon",
        "invalid duration \"soon\"",
    );
    assert_set_refused("", &["variant="], "variant=", "must not be empty");
    // A malformed override is reported even when the file is broken too.
    assert_set_refused("[[[", &["nokey"], "nokey", "expected KEY=VALUE");
}

// ---------------------------------------------------------------- shipped files

fn shipped(name: &str) -> (Scenario, PathBuf) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name);
    let (s, source) = load(Some(&path), &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(source.path.as_deref(), Some(path.as_path()));
    (s, path)
}

#[test]
fn every_shipped_scenario_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "chaos-all.toml",
            "chaos-crash.toml",
            "chaos-kill.toml",
            "chaos-lock.toml",
            "chaos-pause-naive.toml",
            "chaos-pause.toml",
            "chaos-proxy.toml",
            "compare-groups.toml",
            "compare-outbox.toml",
            "default.toml",
            "groups-atomic.toml",
            "groups-naive.toml",
            "http-atomic.toml",
            "http-external.toml",
            "http-naive.toml",
            "nightly-outbox.toml",
            "nightly.toml",
            "outbox-http.toml",
            "outbox-lease.toml",
            "outbox-naive-no-outbox.toml",
            "outbox-naive-no-redo.toml",
            "outbox-protocol.toml",
            "smoke.toml",
            "validate-groups.toml"
        ]
    );
    for name in &names {
        let (s, path) = shipped(name);
        assert_eq!(s.name, name.trim_end_matches(".toml"));
        // With its statement file too (fault steps are checked against it).
        let checked = if s.workload.name() == "outbox" {
            specstorm::workload::outbox::prepare::prepare(Some(&path), &[]).map(|_| ())
        } else {
            specstorm::workload::groups::prepare::prepare(Some(&path), &[]).map(|_| ())
        };
        if let Err(e) = checked {
            panic!("{name}: {e}");
        }
    }
}

#[test]
fn shipped_scenarios_say_what_the_docs_say() {
    let (d, _) = load(None, &[]).unwrap();
    assert_eq!(
        (
            d.variant.as_str(),
            d.stop.events,
            d.load().ingesters,
            d.load().resolvers
        ),
        ("groups-atomic", 20000, 8, 2)
    );
    assert_eq!((d.keys().skew, d.retry().probability), (Skew::Hot, 0.2));
    assert_eq!(
        shipped("default.toml").0,
        Scenario {
            name: "default".into(),
            ..d
        }
    );

    let (a, _) = shipped("groups-atomic.toml");
    assert_eq!(a.variant, "../targets/sqlite/groups-atomic.sql");
    assert_eq!((a.stop.events, a.stop.duration), (200000, None));
    assert_eq!((a.load().ingesters, a.load().resolvers), (32, 2));
    assert_eq!((a.retry().probability, a.retry().max_retries), (0.2, 2));
    assert_eq!(
        (a.keys().skew, a.keys().hot_groups, a.keys().hot_fraction),
        (Skew::Hot, 4, 0.5)
    );
    assert_eq!(
        (a.keys().projects, a.keys().fingerprints, a.groups()),
        (4, 250, 1000)
    );
    assert_eq!(a.resolve().interval, Duration::ZERO);

    let (n, _) = shipped("groups-naive.toml");
    assert_eq!(n.variant, "../targets/sqlite/groups-naive.sql");
    assert_eq!(
        (n.stop.events, n.stop.duration),
        (200000, Some(Duration::from_secs(30)))
    );
    // Same load as the atomic run, so the two compare.
    assert_eq!(
        (&n.load(), &n.keys(), &n.retry(), &n.resolve()),
        (&a.load(), &a.keys(), &a.retry(), &a.resolve())
    );

    let (s, _) = shipped("smoke.toml");
    assert_eq!(
        (
            s.stop.events,
            s.load().ingesters,
            s.load().resolvers,
            s.keys().skew
        ),
        (2000, 4, 1, Skew::Hot)
    );
}

#[test]
fn shipped_scenarios_stop_on_counts() {
    // A stop on a count makes a run's evidence, and so its exit code,
    // independent of the machine's speed; a duration only bounds it.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if !name.ends_with(".toml") {
            continue;
        }
        let (s, _) = shipped(&name);
        match s.workload.name() {
            // The outbox run ends when its queue (a count) drains.
            "outbox" => assert!(s.part::<OutboxConfig>().unwrap().messages > 0, "{name}"),
            "groups" => assert!(s.stop.events > 0, "{name} stops on a duration only"),
            w => panic!("{name}: a shipped scenario of workload {w:?}"),
        }
    }
}

// ---------------------------------------------------------- min_evidence

#[test]
fn min_evidence_defaults_and_partial_tables() {
    let s = load_text("").unwrap();
    assert_eq!(
        s.part::<MinEvidence>().copied(),
        Some(MinEvidence::default())
    );
    assert_eq!(
        MinEvidence::default(),
        MinEvidence {
            type_ok: 1,
            one_group_per_fingerprint: 1,
            count_exact: 20,
            no_missed_regression: 20,
        }
    );
    // Keys not given keep their defaults, inline or as a table.
    let s = load_text("min_evidence = { NoMissedRegression = 500 }\n").unwrap();
    assert_eq!(
        s.min_evidence(),
        MinEvidence {
            no_missed_regression: 500,
            ..MinEvidence::default()
        }
    );
    let s = load_with(
        "[min_evidence]\nTypeOK = 0\n",
        &["min_evidence.CountExact=7"],
    )
    .unwrap();
    assert_eq!(
        s.min_evidence(),
        MinEvidence {
            type_ok: 0,
            count_exact: 7,
            ..MinEvidence::default()
        }
    );
    assert_eq!(
        s.part::<MinEvidence>().copied().unwrap().of("CountExact"),
        Some(7)
    );
    // The saved scenario says it, and loads to the same.
    let text = s.to_toml();
    assert!(text.contains("[min_evidence]\nTypeOK = 0\n"), "{text}");
    let back = load_str("test", Some(Path::new("resolved.toml")), &text, &[]).unwrap();
    assert_eq!(
        back.part::<MinEvidence>().copied(),
        s.part::<MinEvidence>().copied()
    );
    // A scenario saved before it existed gets the defaults.
    let mut old = s.clone();
    old.set_part::<MinEvidence>(None);
    assert_eq!(old.min_evidence(), MinEvidence::default());
}

#[test]
fn min_evidence_errors_name_the_line() {
    assert_refused(
        "seed = 1\n[min_evidence]\nNoMissedRegresion = 5\n",
        3,
        &[
            "unknown key `NoMissedRegresion` in [min_evidence]",
            "TypeOK, OneGroupPerFingerprint, CountExact, NoMissedRegression",
        ],
    );
    assert_refused(
        "[min_evidence]\nCountExact = -1\n",
        2,
        &["`min_evidence.CountExact` must be at least 0, found -1"],
    );
    assert_refused(
        "min_evidence = { CountExact = \"many\" }\n",
        1,
        &["`min_evidence.CountExact` must be a whole number"],
    );
    assert_refused("min_evidence = 3\n", 1, &["must be a table"]);
    assert_refused(
        "workload = \"outbox\"\n[min_evidence]\nCountExact = 1\n",
        2,
        &["[min_evidence] applies to the groups workload"],
    );
    assert_set_refused(
        "",
        &["min_evidence.Nope=1"],
        "min_evidence.Nope=1",
        "unknown key `Nope` in [min_evidence]",
    );
    // An outbox scenario resolves without it.
    let s = load_text("workload = \"outbox\"\n").unwrap();
    assert_eq!(s.part::<MinEvidence>().copied(), None);
    assert!(!s.to_toml().contains("min_evidence"));
}

// ---------------------------------------------------------------- round trip

#[test]
fn to_toml_round_trips() {
    let mut cases: Vec<Scenario> = [
        "default.toml",
        "groups-atomic.toml",
        "groups-naive.toml",
        "smoke.toml",
    ]
    .iter()
    .map(|n| shipped(n).0)
    .collect();
    cases.push(
        load_with(
            "",
            &[
                "load.model=open",
                "load.rate=1234.5",
                "target.path=/tmp/a b.db",
                "stop.duration=1m 30s",
                "retry.soon_fraction=0.125",
                "seed=99",
            ],
        )
        .unwrap(),
    );
    for s in cases {
        let text = s.to_toml();
        let back = load_str("other-name", Some(Path::new("resolved.toml")), &text, &[])
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, s, "{text}");
    }
}

#[test]
fn to_toml_shows_unset_keys() {
    let text = load_text("").unwrap().to_toml();
    assert!(text.contains("name = \"test\""), "{text}");
    assert!(text.contains("busy_timeout = \"5s\""), "{text}");
    assert!(text.contains("# path: not set"), "{text}");
    assert!(text.contains("# duration: not set"), "{text}");
}

#[test]
fn http_target_needs_exactly_one_of_url_and_spawn() {
    let e = load_text("[target]\nkind = \"http\"\n").unwrap_err();
    assert_eq!(e.line(), Some(2), "{e}");
    assert!(e.reason().contains("needs `target.url`"), "{e}");
    let e = load_text("[target]\nkind = \"http\"\nspawn = true\nurl = \"http://127.0.0.1:1\"\n")
        .unwrap_err();
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(e.reason().contains("not both"), "{e}");
    let s = load_text("[target]\nkind = \"http\"\nspawn = true\n").unwrap();
    assert_eq!(s.target.kind, TargetKind::Http);
    assert!(s.target.spawn);
}

#[test]
fn http_url_must_be_http_or_https() {
    let e = load_text("[target]\nkind = \"http\"\nurl = \"ftp://example.com\"\n").unwrap_err();
    assert_eq!(e.line(), Some(3), "{e}");
    assert!(
        e.reason().contains("must start with http:// or https://"),
        "{e}"
    );
}

#[test]
fn http_keys_on_a_sqlite_target_are_refused() {
    let e = load_text("[target]\nspawn = true\n").unwrap_err();
    assert_eq!(e.line(), Some(2), "{e}");
    assert!(
        e.reason().contains("only applies to kind = \"http\""),
        "{e}"
    );
}

#[test]
fn http_timeouts_must_be_positive() {
    let e = load_text("[target]\nkind = \"http\"\nspawn = true\nrequest_timeout = \"0s\"\n")
        .unwrap_err();
    assert_eq!(e.line(), Some(4), "{e}");
    assert!(e.reason().contains("must be more than 0s"), "{e}");
}

// ---------------------------------------------------------------- faults

/// A target that every fault kind accepts: the spawned reference server.
const SPAWNED: &str = "[target]\nkind = \"http\"\nspawn = true\n";

/// A fault with only `kind` set and every other key unset.
fn bare(kind: FaultKind) -> Fault {
    Fault {
        kind,
        start: Duration::ZERO,
        stop: None,
        probability: None,
        ops: None,
        per: None,
        step: None,
        delay: None,
        jitter: None,
        toxic: None,
        status: None,
        every: None,
        hold: None,
    }
}

fn ms(n: u64) -> Option<Duration> {
    Some(Duration::from_millis(n))
}

/// The faults of `text` (which must load).
#[track_caller]
fn faults_of(text: &str) -> Vec<Fault> {
    load_text(text).unwrap_or_else(|e| panic!("{e}")).faults
}

#[test]
fn no_faults_by_default() {
    assert!(load_text("").unwrap().faults.is_empty());
    assert!(load_text("faults = []\n").unwrap().faults.is_empty());
}

#[test]
fn crash_defaults() {
    assert_eq!(
        faults_of("[[faults]]\nkind = \"crash\"\n"),
        [Fault {
            probability: Some(0.01),
            ops: Some(FaultOps::Ingest),
            ..bare(FaultKind::Crash)
        }]
    );
    // Written keys are kept; crash and pause also run on the spawned server.
    let text = format!(
        "{SPAWNED}\n[[faults]]\nkind = \"crash\"\nstep = \"upsert\"\nops = \"all\"\n\
         probability = 1\nstart = \"1s\"\nstop = \"3s\"\n"
    );
    assert_eq!(
        faults_of(&text),
        [Fault {
            start: Duration::from_secs(1),
            stop: Some(Duration::from_secs(3)),
            probability: Some(1.0),
            ops: Some(FaultOps::All),
            step: Some("upsert".into()),
            ..bare(FaultKind::Crash)
        }]
    );
}

#[test]
fn pause_defaults() {
    assert_eq!(
        faults_of("[[faults]]\nkind = \"pause\"\n"),
        [Fault {
            probability: Some(0.1),
            ops: Some(FaultOps::All),
            delay: ms(2),
            jitter: ms(1),
            ..bare(FaultKind::Pause)
        }]
    );
    // A zero jitter is a value, not "unset".
    let f = &faults_of("[[faults]]\nkind = \"pause\"\njitter = \"0s\"\n")[0];
    assert_eq!(f.jitter, Some(Duration::ZERO));
}

#[test]
fn proxy_defaults_per_toxic() {
    let proxy = |toxic: &str| {
        faults_of(&format!(
            "{SPAWNED}[[faults]]\nkind = \"proxy\"\ntoxic = \"{toxic}\"\n"
        ))
    };
    assert_eq!(
        proxy("latency"),
        [Fault {
            toxic: Some(Toxic::Latency),
            probability: Some(1.0),
            ops: Some(FaultOps::All),
            delay: ms(5),
            jitter: ms(0),
            ..bare(FaultKind::Proxy)
        }]
    );
    assert_eq!(
        proxy("error"),
        [Fault {
            toxic: Some(Toxic::Error),
            probability: Some(0.01),
            ops: Some(FaultOps::All),
            status: Some(503),
            ..bare(FaultKind::Proxy)
        }]
    );
    for (name, toxic) in [
        ("reset", Toxic::Reset),
        ("drop_response", Toxic::DropResponse),
    ] {
        assert_eq!(
            proxy(name),
            [Fault {
                toxic: Some(toxic),
                probability: Some(0.01),
                ops: Some(FaultOps::All),
                ..bare(FaultKind::Proxy)
            }]
        );
    }
}

#[test]
fn kill_and_lock_defaults() {
    assert_eq!(
        faults_of(&format!(
            "{SPAWNED}[[faults]]\nkind = \"kill\"\n[[faults]]\nkind = \"lock\"\n"
        )),
        [
            Fault {
                every: Some(Duration::from_secs(5)),
                delay: ms(500),
                ..bare(FaultKind::Kill)
            },
            Fault {
                every: Some(Duration::from_secs(2)),
                hold: ms(200),
                ..bare(FaultKind::Lock)
            }
        ]
    );
    // Lock also runs on the sqlite target.
    assert_eq!(
        faults_of("[[faults]]\nkind = \"lock\"\nhold = \"1s\"\n")[0].hold,
        Some(Duration::from_secs(1))
    );
}

#[test]
fn faults_as_an_inline_array() {
    let text = "faults = [\n  { kind = \"crash\", step = \"insert\" },\n  { kind = \"lock\", every = \"1s\" },\n]\n";
    assert_eq!(
        faults_of(text),
        [
            Fault {
                probability: Some(0.01),
                ops: Some(FaultOps::Ingest),
                step: Some("insert".into()),
                ..bare(FaultKind::Crash)
            },
            Fault {
                every: Some(Duration::from_secs(1)),
                hold: ms(200),
                ..bare(FaultKind::Lock)
            }
        ]
    );
    // Errors name the line of the entry's inline table.
    assert_refused(
        "faults = [\n  { kind = \"crash\" },\n  { kind = \"crash\", hold = \"1s\" },\n]\n",
        3,
        &["`faults[1].hold` does not apply to kind = \"crash\""],
    );
    assert_refused(
        "faults = [\n  { kind = \"crash\" },\n  3,\n]\n",
        3,
        &["`faults[1]` must be a table", "found integer 3"],
    );
}

#[test]
fn fault_unknown_key_lists_the_keys_of_its_kind() {
    assert_refused(
        "seed = 1\n\n[[faults]]\nkind = \"crash\"\nprobabilty = 0.1\n",
        5,
        &[
            "unknown key `probabilty` in faults[0] (kind = \"crash\")",
            "valid keys: kind, start, stop, probability, ops, per, step",
        ],
    );
    assert_refused(
        "[[faults]]\nkind = \"lock\"\nperiod = \"1s\"\n",
        3,
        &["valid keys: kind, start, stop, every, hold"],
    );
}

#[test]
fn fault_key_of_another_kind_is_refused() {
    assert_refused(
        "[[faults]]\nkind = \"pause\"\n\n[[faults]]\nkind = \"crash\"\nhold = \"1s\"\n",
        6,
        &["`faults[1].hold` does not apply to kind = \"crash\" (its keys: kind, start, stop, probability, ops, per, step)"],
    );
    // A proxy's keys depend on its toxic.
    let text =
        format!("{SPAWNED}\n[[faults]]\nkind = \"proxy\"\ntoxic = \"reset\"\nstatus = 500\n");
    assert_refused(
        &text,
        8,
        &["`faults[0].status` does not apply to kind = \"proxy\" with toxic = \"reset\" (its keys: kind, start, stop, toxic, probability, ops)"],
    );
    let text =
        format!("{SPAWNED}\n[[faults]]\nkind = \"proxy\"\ndelay = \"1s\"\ntoxic = \"error\"\n");
    assert_refused(
        &text,
        7,
        &[
            "`faults[0].delay` does not apply to kind = \"proxy\" with toxic = \"error\"",
            "status",
        ],
    );
    assert_refused(
        "[[faults]]\nkind = \"kill\"\ntoxic = \"reset\"\n",
        3,
        &["`faults[0].toxic` does not apply to kind = \"kill\" (its keys: kind, start, stop, every, delay)"],
    );
}

#[test]
fn fault_probability_outside_0_1() {
    assert_refused(
        "[[faults]]\nkind = \"crash\"\nprobability = 1.5\n",
        3,
        &["`faults[0].probability` must be from 0 to 1, found 1.5"],
    );
    assert_refused(
        "[[faults]]\nkind = \"pause\"\n[[faults]]\nkind = \"pause\"\nprobability = -0.5\n",
        5,
        &["`faults[1].probability` must be from 0 to 1, found -0.5"],
    );
}

#[test]
fn fault_status_outside_5xx() {
    let text = format!("{SPAWNED}[[faults]]\nkind = \"proxy\"\ntoxic = \"error\"\nstatus = 404\n");
    assert_refused(
        &text,
        7,
        &["`faults[0].status` must be from 500 to 599, found 404"],
    );
    let text =
        format!("{SPAWNED}[[faults]]\nkind = \"proxy\"\ntoxic = \"error\"\nstatus = \"503\"\n");
    assert_refused(
        &text,
        7,
        &["`faults[0].status` must be a whole number, found string \"503\""],
    );
}

#[test]
fn fault_zero_every_or_hold() {
    assert_refused(
        "[[faults]]\nkind = \"lock\"\nevery = \"0s\"\n",
        3,
        &["`faults[0].every` must be more than 0s"],
    );
    assert_refused(
        "[[faults]]\nkind = \"lock\"\nhold = \"0ms\"\n",
        3,
        &["`faults[0].hold` must be more than 0s"],
    );
    let text = format!("{SPAWNED}[[faults]]\nkind = \"kill\"\nevery = \"0s\"\n");
    assert_refused(&text, 6, &["`faults[0].every` must be more than 0s"]);
}

#[test]
fn fault_stop_not_after_start() {
    assert_refused(
        "[[faults]]\nkind = \"crash\"\nstop = \"1s\"\nstart = \"2s\"\n",
        3,
        &["`faults[0].stop` (1s) must be later than `start` (2s)"],
    );
    assert_refused(
        "[[faults]]\nkind = \"crash\"\nstart = \"2s\"\nstop = \"2s\"\n",
        4,
        &["must be later than `start` (2s)"],
    );
    // start defaults to 0s, so stop = "0s" is an empty window.
    assert_refused(
        "[[faults]]\nkind = \"pause\"\nstop = \"0s\"\n",
        3,
        &["`faults[0].stop` (0s) must be later than `start` (0s)"],
    );
}

#[test]
fn lock_hold_must_be_shorter_than_its_period() {
    assert_refused(
        "[[faults]]\nkind = \"lock\"\nevery = \"1s\"\nhold = \"2s\"\n",
        4,
        &["`faults[0].hold` (2s) must be shorter than `every` (1s)"],
    );
    // Against the default period (2s) too.
    assert_refused(
        "[[faults]]\nkind = \"lock\"\nhold = \"2s\"\n",
        3,
        &["must be shorter than `every` (2s)"],
    );
}

#[test]
fn fault_without_kind() {
    assert_refused(
        "seed = 1\n\n[[faults]]\nprobability = 0.5\n",
        3,
        &[
            "`faults[0]` has no `kind`",
            "\"crash\", \"pause\", \"proxy\", \"kill\", \"lock\"",
        ],
    );
    assert_refused(
        "faults = [{ kind = \"crash\" },\n  { ops = \"all\" }]\n",
        2,
        &["`faults[1]` has no `kind`"],
    );
    assert_refused(
        "[[faults]]\nkind = \"crush\"\n",
        2,
        &["invalid `faults[0].kind` \"crush\"", "\"lock\""],
    );
}

#[test]
fn proxy_fault_without_toxic() {
    let text = format!("{SPAWNED}\n[[faults]]\nkind = \"proxy\"\nprobability = 0.1\n");
    assert_refused(
        &text,
        5,
        &[
            "`faults[0]` has kind = \"proxy\" but no `toxic`",
            "\"drop_response\"",
        ],
    );
    let text = format!("{SPAWNED}\n[[faults]]\nkind = \"proxy\"\ntoxic = \"slow\"\n");
    assert_refused(&text, 7, &["invalid `faults[0].toxic` \"slow\""]);
}

#[test]
fn fault_wrong_types() {
    assert_refused(
        "[[faults]]\nkind = \"pause\"\ndelay = 5\n",
        3,
        &[
            "`faults[0].delay` must be a duration string",
            "found integer 5",
        ],
    );
    assert_refused(
        "[[faults]]\nkind = \"pause\"\ndelay = \"soon\"\n",
        3,
        &["invalid duration \"soon\" for `faults[0].delay`"],
    );
    assert_refused(
        "[[faults]]\nkind = \"crash\"\nops = \"writes\"\n",
        3,
        &[
            "invalid `faults[0].ops` \"writes\"",
            "\"ingest\", \"resolve\", \"all\"",
        ],
    );
    assert_refused(
        "[[faults]]\nkind = \"crash\"\nstep = \" \"\n",
        3,
        &["`faults[0].step` must not be empty (leave it out for a random step)"],
    );
    assert_refused(
        "seed = 1\n[faults]\nkind = \"crash\"\n",
        2,
        &["`faults` must be an array of tables", "found a table"],
    );
    assert_refused(
        "faults = 3\n",
        1,
        &["`faults` must be an array of tables", "found integer 3"],
    );
}

#[test]
fn proxy_fault_needs_an_http_target() {
    assert_refused(
        "[[faults]]\nkind = \"crash\"\n\n[[faults]]\nkind = \"proxy\"\ntoxic = \"reset\"\n",
        5,
        &["`faults[1]` (kind = \"proxy\") needs target.kind = \"http\""],
    );
    // An external service is fine: the proxy sits in front of it.
    let text = "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:1\"\n[[faults]]\nkind = \"proxy\"\ntoxic = \"latency\"\n";
    assert_eq!(faults_of(text)[0].toxic, Some(Toxic::Latency));
}

#[test]
fn kill_fault_needs_the_spawned_server() {
    assert_refused(
        "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:1\"\n\n[[faults]]\nkind = \"kill\"\n",
        6,
        &["`faults[0]` (kind = \"kill\") needs `target.spawn = true`"],
    );
    assert_refused(
        "[[faults]]\nkind = \"kill\"\n",
        2,
        &["needs target.kind = \"http\" with `spawn = true`"],
    );
}

#[test]
fn crash_and_pause_on_http_need_the_spawned_server() {
    let external = "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:1\"\n";
    assert_refused(
        &format!("{external}[[faults]]\nkind = \"crash\"\n"),
        5,
        &[
            "`faults[0]` (kind = \"crash\") needs `target.spawn = true` on kind = \"http\"",
            "fault hook",
        ],
    );
    assert_refused(
        &format!("{external}[[faults]]\nkind = \"pause\"\n"),
        5,
        &["(kind = \"pause\") needs `target.spawn = true`"],
    );
}

#[test]
fn lock_fault_needs_a_local_database() {
    assert_refused(
        "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:1\"\n\n[[faults]]\n# hold the lock\nkind = \"lock\"\n",
        7,
        &["`faults[0]` (kind = \"lock\") needs a local database"],
    );
}

#[test]
fn faults_cannot_be_overridden() {
    for set in ["faults=[]", "faults.0.probability=0.5"] {
        assert_set_refused(
            "[[faults]]\nkind = \"crash\"\n",
            &[set],
            set,
            "faults cannot be set with --set; edit the scenario file",
        );
    }
}

#[test]
fn fault_line_names_entries_and_keys() {
    let text = "seed = 1\n\n[[faults]]\nkind = \"crash\"\nstep = \"a\"\n\n[[faults]]\n\nkind = \"pause\"\n";
    assert_eq!(fault_line(text, 0, None), Some(3));
    assert_eq!(fault_line(text, 0, Some("step")), Some(5));
    assert_eq!(fault_line(text, 1, None), Some(7));
    assert_eq!(fault_line(text, 1, Some("kind")), Some(9));
    assert_eq!(fault_line(text, 1, Some("step")), None);
    assert_eq!(fault_line(text, 2, None), None);
    let inline =
        "faults = [\n  { kind = \"crash\" },\n  { kind = \"pause\",\n    step = \"b\" },\n]\n";
    assert_eq!(fault_line(inline, 1, None), Some(3));
    assert_eq!(fault_line(inline, 1, Some("step")), Some(4));
    assert_eq!(fault_line("seed = 1\n", 0, None), None);
    assert_eq!(fault_line("[[[", 0, None), None);
}

#[test]
fn faults_round_trip_through_to_toml() {
    let text = format!(
        "{SPAWNED}\
         [[faults]]\nkind = \"crash\"\n\
         [[faults]]\nkind = \"crash\"\nstep = \"upsert\"\nstart = \"1s\"\nstop = \"1m 30s\"\nops = \"resolve\"\n\
         [[faults]]\nkind = \"pause\"\njitter = \"0s\"\n\
         [[faults]]\nkind = \"proxy\"\ntoxic = \"latency\"\n\
         [[faults]]\nkind = \"proxy\"\ntoxic = \"error\"\nstatus = 500\nprobability = 0.125\n\
         [[faults]]\nkind = \"proxy\"\ntoxic = \"drop_response\"\n\
         [[faults]]\nkind = \"kill\"\ndelay = \"0s\"\n\
         [[faults]]\nkind = \"lock\"\nhold = \"1s 500ms\"\n"
    );
    let s = load_text(&text).unwrap();
    assert_eq!(s.faults.len(), 8);
    let saved = s.to_toml();
    assert!(
        saved.contains("# stop: not set (active until the end)"),
        "{saved}"
    );
    assert!(saved.contains("# step: not set (a random step)"), "{saved}");
    assert!(saved.contains("# step: not set (every step)"), "{saved}");
    let back = load_str("other-name", Some(Path::new("resolved.toml")), &saved, &[])
        .unwrap_or_else(|e| panic!("{e}\n{saved}"));
    assert_eq!(back, s, "{saved}");
    // Saving again gives the same text.
    assert_eq!(back.to_toml(), saved);
}

// ---------------------------------------------------------------- [explore]

#[test]
fn explore_world_is_checked_with_lines() {
    assert_refused(
        "[explore]\nqueues = [[\"e1\"], [\"e1\", \"e7\"]]\n",
        2,
        &["event \"e7\" of `explore.queues[1]` has no fingerprint"],
    );
    assert_refused(
        "[explore]\nqueues = [[\"e1\"],\n  []]\n",
        3,
        &["`explore.queues[1]` must be a non-empty array of event ids"],
    );
    assert_refused(
        "[explore]\nresolves = -1\n",
        2,
        &["`explore.resolves` must be from 0 to 1000"],
    );
    assert_refused(
        "[explore]\nfingerprints = { e1 = 3 }\n",
        2,
        &["`explore.fingerprints.e1` must be a non-empty string"],
    );
    assert_refused(
        "[explore]\nmax_depth = \"x\"\n",
        2,
        &["`explore.max_depth` must be a whole number"],
    );
    assert_refused(
        "[explore]\nworkers = 3\n",
        2,
        &["unknown key `workers` in [explore]"],
    );
    // Given fingerprints add to the spec's map.
    let s = load_with(
        "",
        &[
            "explore.fingerprints.e4=f3",
            "explore.queues=[[\"e4\", \"e1\"]]",
        ],
    )
    .unwrap();
    assert_eq!(s.explore.fingerprints["e4"], "f3");
    assert_eq!(s.explore.fingerprints["e1"], "f1");
}

#[test]
fn explore_outbox_world_is_checked_with_lines() {
    const OUTBOX: &str = "workload = \"outbox\"\nvariant = \"outbox-protocol\"\n";
    assert_refused(
        &format!("{OUTBOX}[explore]\nhandlers = 2\nmessages = 12\n"),
        5,
        &["`explore.messages` must be from 1 to 9, found 12"],
    );
    assert_refused(
        &format!("{OUTBOX}[explore]\nfails = -1\n"),
        4,
        &["`explore.fails` must be from 0 to 20"],
    );
    assert_refused(
        &format!("{OUTBOX}[explore]\nresolves = 3\n"),
        4,
        &[
            "`explore.resolves` belongs to the groups world",
            "`explore.redeliveries`",
        ],
    );
    assert_refused(
        "[explore]\n\nhandlers = 3\n",
        3,
        &["`explore.handlers` belongs to the outbox world"],
    );
    // At its default (as a saved scenario.toml lists it), no mistake.
    load_text("[explore]\nhandlers = 2\n").unwrap();
    // The defaults: M = 2, D = 2, H = 2, one Fail(), no redelivery.
    let s = load_with(OUTBOX, &["explore.redeliveries=3"]).unwrap();
    let x = &s.explore;
    assert_eq!(
        (
            x.messages,
            x.deliveries,
            x.handlers,
            x.fails,
            x.redeliveries
        ),
        (2, 2, 2, 1, 3)
    );
}

// ---------------------------------------------------------------- [api], [audit]

const MAPPED: &str = "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:9\"\n";

#[test]
fn api_keys_and_values_are_checked_with_their_lines() {
    assert_refused(
        &format!("{MAPPED}[api.ingest]\nrequest = \"POST /e\"\nbatchsize = 3\n"),
        6,
        &["unknown key `batchsize` in [api.ingest]", "batch"],
    );
    assert_refused(
        &format!("{MAPPED}[api.ingest]\nbatch = 0\n"),
        5,
        &["api.ingest.batch"],
    );
    assert_refused(
        &format!("{MAPPED}[api.ingest]\nrequest = \"FETCH /e\"\n"),
        5,
        &["FETCH", "GET, POST"],
    );
    assert_refused(
        &format!("{MAPPED}[api.ingest]\naccepted = \"accepted\"\n"),
        5,
        &["JSON pointer"],
    );
    assert_refused(
        &format!("{MAPPED}[api.ingest]\nbody = '{{\"id\": \"{{evnt_id}}\"}}'\n"),
        5,
        &["unknown placeholder `{evnt_id}`"],
    );
    assert_refused(
        &format!("{MAPPED}[api.resolve]\nrequest = \"POST /g/{{event_id}}\"\n"),
        5,
        &["`{event_id}` cannot be used here"],
    );
    assert_refused(
        &format!("{MAPPED}[api.resolve]\ncodes = {{ \"409\" = \"duplicate\" }}\n"),
        5,
        &["`duplicate` is no meaning of this request", "\"refused\""],
    );
    assert_refused(
        &format!("{MAPPED}[api.ingest]\ncodes = {{ \"6xx\" = \"ok\" }}\n"),
        5,
        &["no status code"],
    );
    assert_refused(
        &format!("{MAPPED}[api.ingest]\nbatch = 5\n"),
        5,
        &["needs an `envelope`"],
    );
    assert_refused(
        &format!("{MAPPED}[api]\ngroup_ids = \"lookup\"\n"),
        5,
        &["[api.lookup]"],
    );
    assert_refused(
        &format!("{MAPPED}[api]\ngroup_ids = \"audit\"\n"),
        5,
        &["[audit] sqlite"],
    );
}

#[test]
fn json_pointers_with_a_bad_escape_are_refused_at_check() {
    // RFC 6901 knows `~0` and `~1` only; any other `~` makes every lookup
    // miss, which a run would only show as non-conforming answers.
    assert_refused(
        &format!("{MAPPED}[api.ingest]\nitem_id = \"/event~2id\"\n"),
        5,
        &["`/event~2id`", "`~0`", "`~1`"],
    );
    assert_refused(
        &format!("{MAPPED}[api.ingest]\naccepted = \"/status~ == created\"\n"),
        5,
        &["`/status~`", "RFC 6901"],
    );
    assert_refused(
        &format!("{MAPPED}[api.resolve]\nevent_count = \"/c~\"\n"),
        5,
        &["`/c~`"],
    );
    // The escapes themselves are pointers.
    load_text(&format!("{MAPPED}[api.ingest]\nitem_id = \"/a~1b/c~0d\"\n")).unwrap();
}

#[test]
fn api_and_audit_apply_to_an_external_http_groups_service() {
    assert_refused(
        "[api]\nhealth = \"GET /up\"\n",
        1,
        &["target.kind = \"http\""],
    );
    assert_refused(
        "[target]\nkind = \"http\"\nspawn = true\n\n[api]\nhealth = \"GET /up\"\n",
        5,
        &["spawned reference server speaks the contract"],
    );
    assert_refused(
        &format!("{MAPPED}[audit]\nsqlite = \"x.db\"\nexport.events = \"SELECT 1\"\n"),
        5,
        &["needs `export.groups`"],
    );
    assert_refused(
        &format!("{MAPPED}[audit]\nexport.events = \"SELECT 1\"\n"),
        5,
        &["give `audit.sqlite` too"],
    );
    assert_refused(
        "[target]\nkind = \"http\"\nspawn = true\ncommand = \"sleep 1\"\n",
        4,
        &["target.url"],
    );
    // A secret is read when the run starts, not when the file loads: an
    // offline audit needs none. The template itself is checked here.
    let s = load_text(&format!(
        "{MAPPED}[api]\nheaders = {{ authorization = \"Bearer ${{SPECSTORM_NOT_SET_ANYWHERE}}\" }}\n"
    ))
    .unwrap();
    assert!(s.api.is_some());
    assert_refused(
        &format!("{MAPPED}[api]\nheaders = {{ authorization = \"Bearer ${{BAD-NAME}}\" }}\n"),
        5,
        &["no environment variable name"],
    );
}

#[test]
fn a_mapped_scenario_round_trips_through_to_toml() {
    let text = format!(
        "{MAPPED}command = \"echo {{variant}} {{run_dir}}\"\n\n[api]\nhealth = \"GET /up\"\n\
         [api.ingest]\nrequest = \"POST /api/{{project}}/envelope\"\nbatch = 3\n\
         envelope = '{{\"events\": [{{items}}]}}'\nitems = \"/items\"\naccepted = \"/status == created\"\n\
         codes = {{ \"201\" = \"accepted\" }}\n[api.lookup]\nrequest = \"GET /g?p={{project}}\"\n\
         [audit]\nsqlite = \"{{run_dir}}/x/*.sqlite\"\nevents = \"pruned\"\n\
         export.events = \"SELECT id, project, fingerprint, 0, 0 FROM e\"\n\
         export.groups = \"SELECT id, project, fingerprint, status, n FROM g\"\n"
    );
    let s = load_text(&text).unwrap();
    let again = load_text(&s.to_toml()).unwrap();
    assert_eq!(s, again);
    let groups = s.api.as_ref().unwrap().part::<GroupsApi>().unwrap();
    assert_eq!(groups.ingest.batch, 3);
    assert_eq!(
        s.audit.as_ref().unwrap().events,
        specstorm::scenario::api::EventRows::Pruned
    );
}

#[test]
fn the_d1_worker_example_scenarios_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/d1-worker");
    for name in [
        "d1-atomic.toml",
        "d1-naive.toml",
        "d1-compare.toml",
        "d1-batch.toml",
    ] {
        let (s, _) = load(Some(&dir.join(name)), &[]).unwrap_or_else(|e| panic!("{e}"));
        let api = s.api.as_ref().expect("a mapping");
        let groups = api.part::<GroupsApi>().expect("groups' requests");
        assert!(
            groups.ingest.batch > 1,
            "{name}: the envelope carries several events"
        );
        assert!(
            s.audit.as_ref().is_some_and(|a| a.sqlite.is_some()),
            "{name}"
        );
        assert!(s.target.command.is_some(), "{name}");
    }
}

/// The loader accepts a fault kind on a target exactly when the target's
/// caps (`scenario::Caps`, which the targets also start their nemeses
/// from) support it: the sqlite target, the spawned server, an external
/// service, each with every kind.
#[test]
fn a_fault_kind_is_accepted_exactly_where_the_targets_caps_support_it() {
    let targets = [
        ("", Caps::SQLITE),
        ("[target]\nkind = \"http\"\nspawn = true\n", Caps::SPAWNED),
        (
            "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:1\"\n",
            Caps::EXTERNAL,
        ),
    ];
    for (target, caps) in targets {
        for kind in FaultKind::ALL {
            let extra = if kind == FaultKind::Proxy {
                "toxic = \"reset\"\n"
            } else {
                ""
            };
            let text = format!("{target}[[faults]]\nkind = \"{}\"\n{extra}", kind.name());
            let loaded = load_text(&text);
            assert_eq!(
                loaded.is_ok(),
                caps.supports(kind),
                "{text}: {:?}",
                loaded.err().map(|e| e.to_string())
            );
            if let Ok(s) = loaded {
                assert_eq!(s.target.caps(), caps, "{text}");
            }
        }
    }
}
