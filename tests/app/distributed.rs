//! The shipped ways to run shards on other engines (examples/distributed/):
//! the Kubernetes manifests and the GitHub Actions workflow are read as
//! YAML, the fields their READMEs promise are checked (an Indexed Job whose
//! completions are the shard count its pods are told, one run id, one
//! volume, one image, the target's Service at the URL the shards load),
//! and then the very scripts they hold are run here, with only the
//! engine's part played by the test: four load pods (or matrix jobs) that
//! differ only in their index, then the merge, which must hold on the
//! reference server's atomic design. The Dockerfile is checked against
//! the crate (its Rust, the folders it copies, the uid the manifests use).

use crate::common::{root, Server};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use yaml_rust2::{Yaml, YamlLoader};

const K8S: &str = "examples/distributed/kubernetes";
const GHA: &str = "examples/distributed/github-actions/sharded-run.yml";
/// Events of the whole run in the tests' runs (the manifests say more).
const EVENTS: u64 = 4000;

fn yaml(path: &str) -> Vec<Yaml> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn one(path: &str) -> Yaml {
    let mut docs = yaml(path);
    assert_eq!(docs.len(), 1, "{path}: one document");
    docs.remove(0)
}

fn s(y: &Yaml) -> &str {
    y.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {y:?}"))
}

/// The one container of a pod template (or pod spec).
fn container(pod_spec: &Yaml) -> &Yaml {
    let cs = pod_spec["containers"].as_vec().unwrap();
    assert_eq!(cs.len(), 1);
    &cs[0]
}

/// A container's env as (name, value) pairs.
fn env(c: &Yaml) -> Vec<(String, String)> {
    c["env"]
        .as_vec()
        .map(|v| {
            v.iter()
                .map(|e| (s(&e["name"]).to_string(), s(&e["value"]).to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn env_of<'a>(env: &'a [(String, String)], name: &str) -> &'a str {
    &env.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
}

/// The `sh -c` script of a container.
fn script(c: &Yaml) -> String {
    let cmd: Vec<&str> = c["command"].as_vec().unwrap().iter().map(s).collect();
    assert_eq!(cmd, ["/bin/sh", "-c"]);
    let args = c["args"].as_vec().unwrap();
    assert_eq!(args.len(), 1);
    s(&args[0]).to_string()
}

/// The pod spec's mount of the shared results volume: (mount path, claim).
fn results_mount(pod_spec: &Yaml) -> (String, String) {
    let c = container(pod_spec);
    let m = &c["volumeMounts"].as_vec().unwrap()[0];
    let v = &pod_spec["volumes"].as_vec().unwrap()[0];
    assert_eq!(s(&m["name"]), s(&v["name"]));
    (
        s(&m["mountPath"]).to_string(),
        s(&v["persistentVolumeClaim"]["claimName"]).to_string(),
    )
}

/// A folder whose `specstorm` is the binary under test, for PATH.
fn bin_dir(tmp: &Path) -> PathBuf {
    let d = tmp.join("bin");
    std::fs::create_dir_all(&d).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_specstorm"), d.join("specstorm")).unwrap();
    d
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn said(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn merged_holds(merged: &Path) {
    let s = crate::common::json(&merged.join("summary.json"));
    assert_eq!(s["events"], EVENTS);
    assert_eq!(s["merged"]["shards"].as_array().unwrap().len(), 4);
    assert_eq!(s["merged"]["clock_skew_ms"], 50.0);
    crate::common::folder::groups_invariants_hold(&s);
}

#[test]
fn the_kubernetes_manifests_agree_and_their_scripts_run_a_sharded_run_that_holds() {
    let load = one(&format!("{K8S}/load-job.yaml"));
    let merge = one(&format!("{K8S}/merge-job.yaml"));
    let pvc = one(&format!("{K8S}/results-pvc.yaml"));
    let reader = one(&format!("{K8S}/results-reader.yaml"));
    let target = yaml(&format!("{K8S}/target.yaml"));

    // The load: an Indexed Job whose pods are told the count it has.
    assert_eq!(s(&load["apiVersion"]), "batch/v1");
    assert_eq!(s(&load["kind"]), "Job");
    let spec = &load["spec"];
    assert_eq!(s(&spec["completionMode"]), "Indexed");
    let completions = spec["completions"].as_i64().unwrap();
    assert_eq!(spec["parallelism"].as_i64(), Some(completions));
    assert_eq!(
        spec["backoffLimit"].as_i64(),
        Some(0),
        "a shard is never retried"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(s(&pod["restartPolicy"]), "Never");
    let lc = container(pod);
    let lenv = env(lc);
    assert_eq!(env_of(&lenv, "SHARDS").parse::<i64>().unwrap(), completions);
    let load_script = script(lc);
    for part in [
        "--shard-count \"$SHARDS\"",
        "--run-id \"$RUN_ID\"",
        "--out \"/results/$RUN_ID/shard-$JOB_COMPLETION_INDEX\"",
    ] {
        assert!(load_script.contains(part), "load script lacks {part}");
    }

    // The merge: the same run id, every shard's folder, a clock-skew bound.
    assert_eq!(s(&merge["kind"]), "Job");
    let mpod = &merge["spec"]["template"]["spec"];
    let mc = container(mpod);
    let menv = env(mc);
    assert_eq!(env_of(&menv, "RUN_ID"), env_of(&lenv, "RUN_ID"));
    let merge_script = script(mc);
    assert!(merge_script.contains("specstorm merge /results/\"$RUN_ID\"/shard-*"));
    assert!(merge_script.contains("--clock-skew 50ms"));

    // One volume, mounted where the scripts write, shareable across nodes.
    let claim = s(&pvc["metadata"]["name"]).to_string();
    let modes: Vec<&str> = pvc["spec"]["accessModes"]
        .as_vec()
        .unwrap()
        .iter()
        .map(s)
        .collect();
    assert_eq!(modes, ["ReadWriteMany"]);
    for p in [pod, mpod, &reader["spec"]] {
        assert_eq!(results_mount(p), ("/results".to_string(), claim.clone()));
        assert_eq!(p["securityContext"]["fsGroup"].as_i64(), Some(10001));
    }

    // The target's Service is where the shards send their load.
    let svc = target.iter().find(|d| s(&d["kind"]) == "Service").unwrap();
    let dep = target
        .iter()
        .find(|d| s(&d["kind"]) == "Deployment")
        .unwrap();
    let port = svc["spec"]["ports"][0]["port"].as_i64().unwrap();
    let url = format!("http://{}:{port}", s(&svc["metadata"]["name"]));
    assert!(
        load_script.contains(&format!("target.url=\"{url}\"")),
        "{url}"
    );
    let dc = container(&dep["spec"]["template"]["spec"]);
    assert_eq!(s(&dc["args"][0]), "serve");

    // One image everywhere.
    let image = s(&lc["image"]);
    for c in [mc, container(&reader["spec"]), dc] {
        assert_eq!(s(&c["image"]), image);
    }

    // Play the Job controller: the load pods' script, pods differing only
    // in JOB_COMPLETION_INDEX, against a reference server; then the merge.
    let server = Server::start("groups-atomic");
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let results_str = results.to_str().unwrap();
    let bin = bin_dir(tmp.path());
    let local = |text: &str| {
        text.replace("/results", results_str)
            .replace(&url, &server.url)
            .replace("stop.events=400000", &format!("stop.events={EVENTS}"))
    };
    assert!(load_script.contains("stop.events=400000"));
    let pods: Vec<_> = (0..completions)
        .map(|i| {
            let mut c = Command::new("/bin/sh");
            c.arg("-c")
                .arg(local(&load_script))
                .current_dir(root())
                .env("PATH", path_with(&bin))
                .env("JOB_COMPLETION_INDEX", i.to_string());
            for (k, v) in &lenv {
                c.env(k, v);
            }
            c.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, mut p) in pods.into_iter().enumerate() {
        // The script turns a shard's own exit 4 (unknown alone) into 0.
        assert_eq!(p.wait().unwrap().code(), Some(0), "pod {i}");
    }
    let mut c = Command::new("/bin/sh");
    c.arg("-c")
        .arg(local(&merge_script))
        .current_dir(root())
        .env("PATH", path_with(&bin));
    for (k, v) in &menv {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    merged_holds(&results.join(env_of(&menv, "RUN_ID")).join("merged"));
}

#[test]
fn the_github_actions_workflow_agrees_and_its_scripts_run_a_sharded_run_that_holds() {
    let wf = one(GHA);
    let jobs = &wf["jobs"];
    let shards = wf["env"]["SHARDS"].as_i64().unwrap();
    let matrix: Vec<i64> = jobs["load"]["strategy"]["matrix"]["shard"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|y| y.as_i64().unwrap())
        .collect();
    assert_eq!(matrix, (0..shards).collect::<Vec<_>>());
    assert_eq!(jobs["load"]["strategy"]["fail-fast"].as_bool(), Some(false));
    let needs: Vec<&str> = jobs["merge"]["needs"]
        .as_vec()
        .unwrap()
        .iter()
        .map(s)
        .collect();
    assert!(needs.contains(&"load"));
    let run_id = s(&wf["env"]["RUN_ID"]);
    assert!(
        run_id.contains("${{ github.run_id }}") && run_id.contains("${{ github.run_attempt }}")
    );
    let step = |job: &str, needle: &str| -> Yaml {
        jobs[job]["steps"]
            .as_vec()
            .unwrap()
            .iter()
            .find(|st| st["run"].as_str().is_some_and(|r| r.contains(needle)))
            .unwrap_or_else(|| panic!("{job}: no step running {needle}"))
            .clone()
    };
    let load = step("load", "specstorm run");
    let merge = step("merge", "specstorm merge");
    let load_script = s(&load["run"]).to_string();
    let merge_script = s(&merge["run"]).to_string();
    assert!(load_script.contains("--shard-from-env SHARD_INDEX"));
    assert_eq!(s(&load["env"]["SHARD_INDEX"]), "${{ matrix.shard }}");
    // Inputs reach scripts as variables, never as pasted text.
    assert!(!load_script.contains("${{") && !merge_script.contains("${{"));
    // What the upload names is what the merge downloads and reads.
    let upload = jobs["load"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|st| {
            st["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact"))
        })
        .unwrap();
    assert_eq!(s(&upload["with"]["name"]), "shard-${{ matrix.shard }}");
    assert_eq!(s(&upload["with"]["path"]), "shard-${{ matrix.shard }}");
    assert!(merge_script.contains("shards/shard-*"));
    assert!(merge_script.contains("--clock-skew 50ms"));

    // Play the runners: each matrix job's step in its own checkout-like
    // folder, then the merge job's step on what download-artifact gives
    // (one folder per artifact under shards/, hidden files left out).
    let server = Server::start("groups-atomic");
    let tmp = tempfile::tempdir().unwrap();
    let run_id = run_id
        .replace("${{ github.run_id }}", "7")
        .replace("${{ github.run_attempt }}", "1");
    let workdir = |name: &str| {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::os::unix::fs::symlink(root().join("scenarios"), d.join("scenarios")).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_specstorm"), d.join("specstorm")).unwrap();
        d
    };
    let runners: Vec<_> = matrix
        .iter()
        .map(|i| {
            let d = workdir(&format!("runner{i}"));
            let child = Command::new("/bin/bash")
                .args(["-e", "-c", &load_script])
                .current_dir(&d)
                .env("SHARDS", shards.to_string())
                .env("RUN_ID", &run_id)
                .env("TARGET_URL", &server.url)
                .env("EVENTS", EVENTS.to_string())
                .env("SHARD_INDEX", i.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            (d, child)
        })
        .collect();
    let m = workdir("merge");
    std::fs::create_dir(m.join("shards")).unwrap();
    for (i, (d, mut child)) in runners.into_iter().enumerate() {
        assert_eq!(child.wait().unwrap().code(), Some(0), "shard {i}");
        let from = d.join(format!("shard-{i}"));
        let to = m.join("shards").join(format!("shard-{i}"));
        std::fs::rename(&from, &to).unwrap();
        std::fs::remove_file(to.join(".specstorm-claim")).unwrap();
    }
    let o = Command::new("/bin/bash")
        .args(["-e", "-c", &merge_script])
        .current_dir(&m)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    merged_holds(&m.join("merged"));
}

#[test]
fn the_dockerfile_builds_with_the_crates_rust_and_copies_what_exists() {
    let text = std::fs::read_to_string(root().join("Dockerfile")).unwrap();
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let msrv = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    assert!(
        text.contains(&format!("ARG RUST_VERSION={msrv}")),
        "the image's Rust is the crate's rust-version {msrv}"
    );
    for line in text
        .lines()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from"))
    {
        let words: Vec<&str> = line.split_whitespace().collect();
        for src in &words[1..words.len() - 1] {
            assert!(root().join(src).exists(), "{line}: {src} is missing");
        }
    }
    assert!(text.contains("USER 10001:10001"));
    assert!(text.contains("ENTRYPOINT [\"specstorm\"]"));
    assert!(text.contains("cargo build --release --locked"));
}
