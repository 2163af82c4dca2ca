//! The outbox workload leaves what the groups workload leaves: on every
//! way a run ends (a target database that cannot be read, a target that
//! does not answer, a database that does not fit the statement file, an
//! expectation not met, an interruption) both leave the same files in the
//! run folder (`summary.json` and `junit.xml` among them), and the failed
//! runs' summaries carry the same keys. And `target.command` starts an
//! outbox service as it starts a groups one: the run is judged as the same
//! scenario in process is, the service's output is in `service.log`, it is
//! stopped after the run, and one that exits ends the run with exit 3.

use serde_json::Value;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A bound that only detects a hang.
const HANG: Duration = Duration::from_secs(120);

fn specstorm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_specstorm"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run specstorm")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn json(path: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// A free loopback port (released before use: a small race; the range is
/// large).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const GROUPS: &str = "workload = \"groups\"\nvariant = \"groups-atomic\"\nseed = 1\n\
                      [load]\ningesters = 2\nresolvers = 1\n[stop]\nevents = 300\n";
const OUTBOX: &str = "workload = \"outbox\"\nvariant = \"outbox-protocol\"\nseed = 1\n\
                      [outbox]\nmessages = 100\ndeliveries = 2\nhandlers = 2\n\
                      [stop]\nduration = \"60s\"\n";

/// How a run is made to end.
struct Ending {
    name: &'static str,
    /// Top-level keys, then a `[target]` table, for groups and outbox.
    groups: (String, String),
    outbox: (String, String),
    /// SIGINT once the run's history exists (the run is in its target
    /// phase: here, waiting for a target that never answers).
    interrupt: bool,
    code: i32,
}

/// Runs `base` with `top` keys and `target` in `dir/NAME/`; returns the
/// exit code and the run folder.
fn end_run(
    dir: &Path,
    name: &str,
    base: &str,
    (top, target): &(String, String),
    interrupt: bool,
) -> (Option<i32>, PathBuf, String) {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, format!("{top}{base}{target}")).unwrap();
    let out = dir.join(name);
    let mut child = Command::new(env!("CARGO_BIN_EXE_specstorm"))
        .arg("run")
        .arg(&file)
        .args(["-q", "--out"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    if interrupt {
        while !out.join("history.bin").exists() {
            assert!(child.try_wait().unwrap().is_none(), "{name}: ended early");
            assert!(t.elapsed() < HANG, "{name}: no history after {HANG:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        let ok = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > HANG {
            let _ = child.kill();
            panic!("{name}: still running after {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    (status.code(), out, err)
}

#[test]
fn every_end_of_an_outbox_run_leaves_the_files_a_groups_run_leaves() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A file at target.path that is no SQLite database.
    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, "not a database, ".repeat(64)).unwrap();
    // Databases whose tables do not have the statement file's shape.
    let misfit = |name: &str, table: &str| {
        let p = dir.join(name);
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch(&format!("CREATE TABLE {table} (x TEXT)"))
            .unwrap();
        p
    };
    let misfit_groups = misfit("misfit-groups.db", "error_groups");
    let misfit_outbox = misfit("misfit-outbox.db", "state_log");
    // A port nothing listens on, and a listener that never answers.
    let closed = free_port();
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    let sqlite = |path: &Path| {
        format!(
            "[target]\nkind = \"sqlite\"\npath = \"{}\"\n",
            path.display()
        )
    };
    let http = |port: u16, timeout: &str| {
        format!(
            "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:{port}\"\n\
             connect_timeout = \"1s\"\nrequest_timeout = \"{timeout}\"\n"
        )
    };
    let none = String::new;
    let endings = [
        Ending {
            name: "unreadable-database",
            groups: (none(), sqlite(&garbage)),
            outbox: (none(), sqlite(&garbage)),
            interrupt: false,
            code: 3,
        },
        Ending {
            name: "unreachable-target",
            groups: (none(), http(closed, "1s")),
            outbox: (none(), http(closed, "1s")),
            interrupt: false,
            code: 3,
        },
        Ending {
            name: "misfit-database",
            groups: (none(), sqlite(&misfit_groups)),
            outbox: (none(), sqlite(&misfit_outbox)),
            interrupt: false,
            code: 3,
        },
        Ending {
            name: "expectation-not-met",
            groups: ("thresholds = [\"events < 0\"]\n".into(), none()),
            outbox: ("thresholds = [\"outbox.attempts < 0\"]\n".into(), none()),
            interrupt: false,
            code: 1,
        },
        Ending {
            name: "interrupted",
            groups: (none(), http(silent_port, "60s")),
            outbox: (none(), http(silent_port, "60s")),
            interrupt: true,
            code: 130,
        },
    ];
    for e in &endings {
        let (gc, gdir, gerr) = end_run(
            dir,
            &format!("{}-groups", e.name),
            GROUPS,
            &e.groups,
            e.interrupt,
        );
        let (oc, odir, oerr) = end_run(
            dir,
            &format!("{}-outbox", e.name),
            OUTBOX,
            &e.outbox,
            e.interrupt,
        );
        assert_eq!(gc, Some(e.code), "{}: groups: {gerr}", e.name);
        assert_eq!(oc, Some(e.code), "{}: outbox: {oerr}", e.name);
        let (gf, of) = (files(&gdir), files(&odir));
        assert_eq!(gf, of, "{}: the folders differ ({oerr})", e.name);
        for f in ["summary.json", "junit.xml"] {
            assert!(of.iter().any(|x| x == f), "{}: no {f}: {of:?}", e.name);
        }
        let (gs, os) = (
            json(&gdir.join("summary.json")),
            json(&odir.join("summary.json")),
        );
        assert_eq!(os["exit"]["code"], e.code, "{}: {os}", e.name);
        assert_eq!(os["workload"], "outbox", "{}: {os}", e.name);
        let junit = std::fs::read_to_string(odir.join("junit.xml")).unwrap();
        assert!(junit.contains("name=\"run\""), "{}: {junit}", e.name);
        if gs.get("error").is_some() {
            // A failed run's summary: what it was and why it stopped,
            // with the same keys whatever the workload.
            let keys = |s: &Value| s.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(keys(&gs), keys(&os), "{}: {gs}\n{os}", e.name);
            assert_eq!(gs["workload"], "groups", "{}: {gs}", e.name);
            assert!(junit.contains("<error"), "{}: {junit}", e.name);
        }
    }
}

/// An outbox scenario against the service `target.command` starts on
/// `port` (`specstorm serve` with the run's variant, its database in the
/// run folder), or, with `port` None, in process. No faults: over HTTP
/// the crash and pause faults need the spawned server's hook.
fn outbox_scenario(variant: &str, port: Option<u16>) -> String {
    let exe = env!("CARGO_BIN_EXE_specstorm");
    let target = match port {
        Some(port) => format!(
            "[target]\nkind = \"http\"\nurl = \"http://127.0.0.1:{port}\"\n\
             command = \"'{exe}' serve --variant {{variant}} --db {{run_dir}}/svc.db \
             --addr 127.0.0.1:{port}\"\nstartup_timeout = \"30s\"\n"
        ),
        None => "[target]\nkind = \"sqlite\"\n".to_string(),
    };
    format!(
        "workload = \"outbox\"\nvariant = \"{variant}\"\nseed = 5\n\
         [outbox]\nmessages = 300\ndeliveries = 3\nhandlers = 4\nmax_attempts = 1000\n\
         [stop]\nduration = \"5m\"\n{target}"
    )
}

fn verdicts(s: &Value) -> Vec<(String, String)> {
    s["invariants"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["verdict"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn target_command_starts_an_outbox_service_judged_as_in_process() {
    let tmp = tempfile::tempdir().unwrap();
    for (variant, violated) in [
        ("outbox-protocol", None),
        // Every delivery changes the state: violated by construction.
        ("outbox-naive-no-outbox", Some("AtMostOneStateChange")),
    ] {
        let run = |name: &str, port: Option<u16>| {
            let file = tmp.path().join(format!("{name}.toml"));
            std::fs::write(&file, outbox_scenario(variant, port)).unwrap();
            let out = tmp.path().join(name);
            let o = specstorm(&[
                "run",
                file.to_str().unwrap(),
                "-q",
                "--out",
                out.to_str().unwrap(),
            ]);
            assert!(out.join("summary.json").is_file(), "{name}: {}", text(&o));
            (o, json(&out.join("summary.json")), out)
        };
        let (io, is, _) = run(&format!("{variant}-in-process"), None);
        let port = free_port();
        let (so, ss, out) = run(&format!("{variant}-service"), Some(port));
        assert_eq!(
            so.status.code(),
            io.status.code(),
            "{variant}: {}",
            text(&so)
        );
        assert_eq!(verdicts(&ss), verdicts(&is), "{variant}: {ss}");
        assert_eq!(ss["target"], format!("http http://127.0.0.1:{port}"));
        assert_eq!(ss["outbox"]["liveness"]["acked_messages"], 300, "{ss}");
        match violated {
            Some(name) => assert_eq!(ss["invariants"][name]["verdict"], "violated"),
            None => assert!(verdicts(&ss).iter().all(|(_, v)| v == "holds"), "{ss}"),
        }
        // The service wrote its database and its log into the run folder,
        // and was stopped after the final read: the port is free again.
        assert!(out.join("svc.db").is_file() && out.join("export.json").is_file());
        let log = std::fs::read_to_string(out.join("service.log")).unwrap();
        assert!(log.contains("listening on"), "{log}");
        assert!(TcpListener::bind(("127.0.0.1", port)).is_ok());
        // The saved scenario names the variant it ran with.
        let saved = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
        assert!(saved.contains(&format!("--variant {variant}")), "{saved}");
        // The folder audits to the run's verdicts, from its export.
        let a = specstorm(&["audit", out.to_str().unwrap()]);
        assert_eq!(a.status.code(), so.status.code(), "{}", text(&a));
        assert!(
            text(&a).contains("same verdicts as the run"),
            "{}",
            text(&a)
        );
    }
}

#[test]
fn an_outbox_target_command_that_exits_ends_the_run_with_exit_3() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let file = tmp.path().join("exits.toml");
    let scenario = outbox_scenario("outbox-protocol", Some(port));
    let scenario = scenario.replace(
        &scenario[scenario.find("command = ").unwrap()..scenario.find("startup_timeout").unwrap()],
        "command = \"echo the service gives up; exit 7\"\n",
    );
    std::fs::write(&file, scenario).unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        file.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("target.command exited"), "{t}");
    assert!(t.contains("service.log"), "{t}");
    let log = std::fs::read_to_string(out.join("service.log")).unwrap();
    assert!(log.contains("the service gives up"), "{log}");
    let s = json(&out.join("summary.json"));
    assert_eq!(s["exit"]["code"], 3, "{s}");
    assert!(out.join("junit.xml").is_file());
}
