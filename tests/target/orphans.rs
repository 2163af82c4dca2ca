//! No service outlives a killed bench: SIGKILL of `specstorm run` mid-load
//! leaves neither the spawned reference server nor any process a
//! `target.command` started (here a shell that starts a grandchild, then
//! execs the reference server; for either workload), however deep. Each process is polled until
//! it is gone, with a generous bound that only detects a hang; whatever
//! is left at the end is killed, so that a failing run leaves no orphan.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::procs::{
    cmdline, descendants, free_port, history_len, running, wait_until as wait_for, Reaper,
};
use crate::common::run::run_command;

fn start(scenario: &Path, out: &Path) -> Child {
    run_command(scenario, out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGKILLs the bench, then waits until none of `pids` runs; panics with
/// those still running after a generous bound.
fn kill_and_expect_gone(mut bench: Child, pids: &[u32]) {
    bench.kill().unwrap();
    bench.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let left: Vec<String> = pids
            .iter()
            .filter(|&&p| running(p))
            .map(|&p| format!("{p} ({})", cmdline(p)))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < until,
            "still running 60 s after the bench was killed: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_killed_bench_leaves_no_process_of_its_target_command() {
    let variant = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sqlite/groups-atomic.sql");
    let_a_killed_bench_go_with_its_target_command(&format!(
        r#"
workload = "groups"
variant = "{}"

[load]
ingesters = 4
resolvers = 1

[stop]
events = 0
duration = "300s"
"#,
        variant.display()
    ));
}

#[test]
fn a_killed_outbox_bench_leaves_no_process_of_its_target_command() {
    let variant = Path::new(env!("CARGO_MANIFEST_DIR")).join("targets/sqlite/outbox-protocol.sql");
    let_a_killed_bench_go_with_its_target_command(&format!(
        r#"
workload = "outbox"
variant = "{}"

[outbox]
messages = 1000000
deliveries = 3
handlers = 4

[stop]
duration = "300s"
"#,
        variant.display()
    ));
}

/// Runs `workload` (a scenario's keys but `[target]`) against a
/// `target.command` service, kills the bench mid-load, and expects the
/// service and its grandchild gone.
fn let_a_killed_bench_go_with_its_target_command(workload: &str) {
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_specstorm");
    let port = free_port();
    // A grandchild in the background, then the server in the shell's
    // place: as `wrangler dev` leaves node and workerd under a shell.
    let scenario = format!(
        r#"{workload}
[target]
kind = "http"
url = "http://127.0.0.1:{port}"
command = "sleep 1000 & echo $! > {{run_dir}}/grandchild.pid; echo $$ > {{run_dir}}/service.pid; exec '{exe}' serve --variant {{variant}} --db {{run_dir}}/svc.db --addr 127.0.0.1:{port}"
startup_timeout = "30s"
"#
    );
    let file = dir.path().join("own.toml");
    std::fs::write(&file, scenario).unwrap();
    let out = dir.path().join("run");
    let mut bench = start(&file, &out);
    let pid = |name: &str| -> Option<u32> {
        std::fs::read_to_string(out.join(name))
            .ok()
            .and_then(|s| s.trim().parse().ok())
    };
    wait_for(&mut bench, "the load", || {
        pid("grandchild.pid").is_some()
            && pid("service.pid").is_some()
            && history_len(&out) > 1 << 13
    });
    let pids = vec![pid("grandchild.pid").unwrap(), pid("service.pid").unwrap()];
    let _reaper = Reaper(pids.clone());
    assert!(pids.iter().all(|&p| running(p)), "{pids:?}");
    assert!(cmdline(pids[1]).contains(" serve "), "{}", cmdline(pids[1]));
    kill_and_expect_gone(bench, &pids);
}

#[test]
fn a_killed_bench_leaves_no_spawned_reference_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/http-atomic.toml");
    let file = dir.path().join("spawned.toml");
    let text = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace(
            "variant = \"../targets/sqlite/groups-atomic.sql\"",
            &format!(
                "variant = \"{}\"",
                scenario
                    .parent()
                    .unwrap()
                    .join("../targets/sqlite/groups-atomic.sql")
                    .display()
            ),
        )
        .replace("events = 100000", "events = 0\nduration = \"300s\"");
    std::fs::write(&file, text).unwrap();
    let mut bench = start(&file, &out);
    let bench_pid = bench.id();
    wait_for(&mut bench, "the load", || history_len(&out) > 1 << 13);
    let servers: Vec<u32> = descendants(bench_pid)
        .into_iter()
        .filter(|&p| cmdline(p).contains(" serve "))
        .collect();
    assert_eq!(servers.len(), 1, "{servers:?}");
    let _reaper = Reaper(servers.clone());
    kill_and_expect_gone(bench, &servers);
}
