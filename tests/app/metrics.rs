//! `run --metrics-addr`: a Prometheus scrape mid-run shows the live
//! counters; after the run, while `--metrics-linger` keeps the endpoint
//! up, the counters equal the summary's (ops by kind and completion type,
//! the latency histograms' counts, faults by kind, events). The run is
//! stopped by an interrupt, not by time, and the linger by a second one,
//! so nothing here depends on the machine's speed. A bad or busy address
//! is bad input: exit 2 before anything runs.

use crate::common::{command, json, specstorm};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::thread::JoinHandle;

/// `GET /metrics` on `addr` (HOST:PORT): the body.
fn scrape(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("metrics endpoint");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    body.to_string()
}

/// Sample lines as name{labels} -> value.
fn samples(body: &str) -> BTreeMap<String, f64> {
    assert!(
        body.ends_with("# EOF\n"),
        "an OpenMetrics exposition ends with # EOF"
    );
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse::<f64>().unwrap())
        })
        .collect()
}

fn value(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    *m.get(key)
        .unwrap_or_else(|| panic!("no sample {key} in {m:#?}"))
}

fn interrupt(pid: u32) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
}

/// Scrapes until `done(samples)`; the cap only keeps a broken build from
/// hanging the suite.
fn scrape_until(
    addr: &str,
    done: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, f64> {
    for _ in 0..12_000 {
        let m = samples(&scrape(addr));
        if done(&m) {
            return m;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("the metrics never showed what was awaited");
}

/// Spawns `specstorm ARGS --no-tui --metrics-addr 0 --metrics-linger
/// LINGER` and reads the address it serves from stderr; stderr is then
/// drained on a thread so the run never blocks on a full pipe.
fn start(args: &[&str], linger: &str) -> (Child, String, JoinHandle<usize>) {
    let mut child = command()
        .args(args)
        .args([
            "--no-tui",
            "--metrics-addr",
            "0",
            "--metrics-linger",
            linger,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the metrics address on stderr")
            .unwrap();
        if let Some(rest) = line.strip_prefix("metrics: http://") {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).count());
    (child, addr, drain)
}

#[test]
fn an_open_model_run_shows_its_ingest_target_and_late_ops() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // The target ramps from 0 toward 50 ops/s over an hour: the interrupt
    // ends the run, and any scrape after the start shows it above 0.
    let (mut child, addr, drain) = start(
        &[
            "run",
            "scenarios/smoke.toml",
            "--set",
            "load.model=\"open\"",
            "--set",
            "load.stages=[{ duration = \"1h\", target = 50 }]",
            "--set",
            "stop.events=0",
            "--out",
            out.to_str().unwrap(),
        ],
        "1h",
    );
    let target = "specstorm_ingest_target_ops_per_second";
    let mid = scrape_until(&addr, |m| m.get(target).is_some_and(|&v| v > 0.0));
    assert!(value(&mid, target) <= 50.0);
    interrupt(child.id());
    let end = scrape_until(&addr, |m| {
        m.get("specstorm_phase{phase=\"done\"}") == Some(&1.0)
    });
    let s = json(&out.join("summary.json"));
    assert_eq!(
        value(&end, "specstorm_late_ops_total"),
        s["open_model"]["late"].as_f64().unwrap()
    );
    interrupt(child.id());
    assert_eq!(child.wait().unwrap().code(), Some(130));
    drain.join().unwrap();
}

#[test]
fn a_scrape_mid_run_shows_the_counters_and_at_the_end_they_equal_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let (mut child, addr, drain) = start(
        &[
            "run",
            "scenarios/chaos-lock.toml",
            "--set",
            "stop.events=0",
            "--duration",
            "1h",
            "--out",
            out.to_str().unwrap(),
        ],
        "1h",
    );
    let ingest_ok = "specstorm_ops_total{kind=\"ingest\",type=\"ok\"}";

    // Mid-run: the load phase, ops counted, a lock fault injected.
    let mid = scrape_until(&addr, |m| {
        m.get(ingest_ok).is_some_and(|&v| v > 0.0)
            && m.get("specstorm_faults_injected_total{kind=\"lock\"}")
                .is_some_and(|&v| v > 0.0)
    });
    assert_eq!(value(&mid, "specstorm_phase{phase=\"load\"}"), 1.0);
    assert_eq!(value(&mid, "specstorm_phase{phase=\"done\"}"), 0.0);
    assert!(value(&mid, "specstorm_events_generated_total") > 0.0);
    assert!(mid
        .keys()
        .any(|k| k.starts_with("specstorm_run_info{scenario=\"chaos-lock\"")));

    // Stop the load; the audit runs, the results are saved, then the
    // endpoint lingers with the final figures.
    interrupt(child.id());
    let end = scrape_until(&addr, |m| {
        m.get("specstorm_phase{phase=\"done\"}") == Some(&1.0)
    });
    let s = json(&out.join("summary.json"));
    for kind in ["ingest", "resolve"] {
        for ty in ["ok", "fail", "info"] {
            let key = format!("specstorm_ops_total{{kind=\"{kind}\",type=\"{ty}\"}}");
            assert_eq!(
                value(&end, &key),
                s["ops"][kind][ty].as_f64().unwrap(),
                "{key}"
            );
            let count =
                format!("specstorm_op_latency_seconds_count{{kind=\"{kind}\",type=\"{ty}\"}}");
            let inf = format!(
                "specstorm_op_latency_seconds_bucket{{le=\"+Inf\",kind=\"{kind}\",type=\"{ty}\"}}"
            );
            assert_eq!(
                value(&end, &count),
                s["ops"][kind][ty].as_f64().unwrap(),
                "{count}"
            );
            assert_eq!(value(&end, &inf), value(&end, &count), "{inf}");
        }
    }
    for (kind, n) in s["faults_injected"].as_object().unwrap() {
        let key = format!("specstorm_faults_injected_total{{kind=\"{kind}\"}}");
        assert_eq!(value(&end, &key), n.as_f64().unwrap(), "{key}");
    }
    assert_eq!(
        value(&end, "specstorm_events_generated_total"),
        s["events"].as_f64().unwrap()
    );
    assert!(value(&end, ingest_ok) >= value(&mid, ingest_ok));

    // A second interrupt ends the linger; the run was interrupted (130).
    interrupt(child.id());
    assert_eq!(child.wait().unwrap().code(), Some(130));
    drain.join().unwrap();
}

#[test]
fn a_bad_or_busy_metrics_address_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        "scenarios/smoke.toml",
        "-q",
        "--metrics-addr",
        "localhost:x",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected PORT or IP:PORT"));
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let o = specstorm(&[
        "run",
        "scenarios/smoke.toml",
        "-q",
        "--metrics-addr",
        &port,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--metrics-addr 127.0.0.1:"));
    assert!(!out.exists(), "nothing ran, no folder");
    // A linger without an address is a usage error too.
    let o = specstorm(&[
        "run",
        "scenarios/smoke.toml",
        "-q",
        "--metrics-linger",
        "5s",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// A client that sent half a request and never reads must not keep the
/// run alive once its results are saved (a graceful shutdown would wait
/// for it): the run ends on its own, with its own exit code.
#[test]
fn a_half_sent_scrape_does_not_keep_a_finished_run_alive() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let (mut child, addr, drain) = start(
        &[
            "run",
            "scenarios/smoke.toml",
            "-q",
            "--set",
            "stop.events=200",
            "--out",
            out.to_str().unwrap(),
        ],
        "0s",
    );
    let mut half = TcpStream::connect(&addr).unwrap();
    write!(half, "GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
    // The socket stays open (and unread) until the run has exited.
    let code = child.wait().unwrap().code();
    assert!(matches!(code, Some(0 | 4)), "{code:?}");
    drop(half);
    drain.join().unwrap();
}
