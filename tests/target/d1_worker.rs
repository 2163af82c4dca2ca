//! The D1 Worker example (examples/d1-worker): `specstorm compare
//! examples/d1-worker/d1-compare.toml` starts the Worker under `wrangler
//! dev` for each variant, loads it through its own API (the scenario's
//! `[api]` mapping, a bearer token from the environment), audits the local
//! D1 file, and must find the atomic variant keeping every invariant and the
//! naive one losing a regression.
//!
//! Gated: it needs Node.js 20 or newer and npm, runs `npm ci` (which
//! downloads wrangler and workerd) when `node_modules` is missing, and takes
//! about 70 s (two runs of 30 s each). It runs only with `SPECSTORM_D1=1`;
//! otherwise it says so and passes.

use std::path::Path;
use std::process::Command;

use crate::common::folder::files_under;
use crate::common::{command, json, text};

const SKIP: &str = "d1_worker: skipped (set SPECSTORM_D1=1 to run the D1 Worker example; \
                    it runs npm install, which downloads wrangler and workerd)";

/// The last lines of a variant's service.log, to explain a failure.
fn service_log_tail(run_dir: &Path) -> String {
    let log = std::fs::read_to_string(run_dir.join("service.log")).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// `npm ci` in the example's folder when wrangler is not installed there.
fn install(example: &Path) {
    if example.join("node_modules/.bin/wrangler").exists() {
        return;
    }
    eprintln!("d1_worker: npm ci in {}", example.display());
    let o = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(example)
        .output()
        .unwrap_or_else(|e| panic!("cannot run npm (Node.js 20 or newer and npm are needed): {e}"));
    assert!(o.status.success(), "npm ci failed:\n{}", text(&o));
    assert!(
        example.join("node_modules/.bin/wrangler").exists(),
        "npm ci installed no wrangler"
    );
}

#[test]
fn d1_worker_compare_holds_atomic_and_catches_naive() {
    if std::env::var("SPECSTORM_D1").as_deref() != Ok("1") {
        // Straight to the process's stderr: the test harness captures
        // eprintln!, and a skip must be seen in `cargo test`'s output.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{SKIP}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = root.join("examples/d1-worker");
    install(&example);

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cmp");
    // A token of this run only: the Worker requires it, the bench sends it.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let token = format!("d1-token-{}-{nanos}", std::process::id());
    let o = command()
        .args([
            "compare",
            "examples/d1-worker/d1-compare.toml",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("SPECSTORM_D1_TOKEN", &token)
        .env("WRANGLER_SEND_METRICS", "false")
        .output()
        .expect("run specstorm");
    let logs = ["groups-atomic", "groups-naive"]
        .iter()
        .map(|v| {
            format!(
                "--- {v}/service.log (tail)\n{}",
                service_log_tail(&out.join(v))
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(o.status.code(), Some(0), "{}\n{logs}", text(&o));

    let c = json(&out.join("compare.json"));
    assert_eq!(c["exit"]["code"], 0, "{c:#}");
    let variants = c["variants"].as_array().expect("variants");
    assert_eq!(variants.len(), 2, "{c:#}");
    for (v, name) in variants.iter().zip(["groups-atomic", "groups-naive"]) {
        assert_eq!(v["name"], name, "{c:#}");
        assert_eq!(v["exit"]["code"], 0, "{name}: {c:#}");
    }

    // The atomic variant keeps every invariant; the naive one loses a
    // regression and keeps the rest.
    let invariants = |i: usize| variants[i]["summary"]["invariants"].clone();
    let atomic = invariants(0);
    let naive = invariants(1);
    for name in [
        "TypeOK",
        "OneGroupPerFingerprint",
        "CountExact",
        "NoMissedRegression",
    ] {
        assert_eq!(
            atomic[name]["verdict"], "holds",
            "atomic {name}: {atomic:#}"
        );
        let expected = if name == "NoMissedRegression" {
            "violated"
        } else {
            "holds"
        };
        assert_eq!(naive[name]["verdict"], expected, "naive {name}: {naive:#}");
    }
    assert!(
        naive["NoMissedRegression"]["violations"].as_u64().unwrap() > 0,
        "{naive:#}"
    );

    // Throughput and latency, for both ops, in each variant's summary.
    for v in ["groups-atomic", "groups-naive"] {
        let s = json(&out.join(v).join("summary.json"));
        let total = s["throughput_ops_per_s"]["total"].as_f64();
        assert!(total.is_some_and(|t| t > 0.0), "{v}: {s:#}");
        for op in ["ingest", "resolve"] {
            assert!(
                s["throughput_ops_per_s"][op]
                    .as_f64()
                    .is_some_and(|t| t > 0.0),
                "{v}: no {op} throughput: {s:#}"
            );
            for p in ["p50", "p99", "max"] {
                assert!(
                    s["latency_us"][op][p].as_f64().is_some_and(|l| l > 0.0),
                    "{v}: no {op} latency {p}: {s:#}"
                );
            }
        }
        assert!(
            out.join(v).join("service.log").is_file(),
            "{v}: service.log"
        );
    }

    // The token went to the Worker and into every request, and into no file
    // the bench wrote (service.log included).
    for f in files_under(&out) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "the token is written in {}",
            f.display()
        );
    }
}

/// The batch variant (each event's statements in one `db.batch([...])`,
/// one D1 transaction): `specstorm run examples/d1-worker/d1-batch.toml`
/// keeps every invariant. Gated as the compare is (`SPECSTORM_D1=1`).
#[test]
fn d1_worker_batch_holds() {
    if std::env::var("SPECSTORM_D1").as_deref() != Ok("1") {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{SKIP}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    install(&root.join("examples/d1-worker"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("batch");
    let o = command()
        .args([
            "run",
            "examples/d1-worker/d1-batch.toml",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("WRANGLER_SEND_METRICS", "false")
        .output()
        .expect("run specstorm");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n--- service.log (tail)\n{}",
        text(&o),
        service_log_tail(&out)
    );
    let s = json(&out.join("summary.json"));
    for name in [
        "TypeOK",
        "OneGroupPerFingerprint",
        "CountExact",
        "NoMissedRegression",
    ] {
        assert_eq!(s["invariants"][name]["verdict"], "holds", "{name}: {s:#}");
    }
    assert!(s["events"].as_u64().is_some_and(|n| n > 0), "{s:#}");
}
