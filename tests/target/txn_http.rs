//! Transaction blocks over HTTP, on the reference server the bench spawns
//! (`target.kind = "http"`, `spawn = true`): the server runs the file's
//! blocks as the in-process target does, so the history's header says the
//! ingest is one block (`ingest_block`) and CountExact's one-block clause
//! applies; a crash the fault hook places inside the block (after any of
//! its steps, before COMMIT) rolls the block back on the server, so no
//! event is stranded, where the same crashes strand events of the
//! autocommit ingest (`http_target::ingests_crashed_by_the_hook_are_...`).
//! Counts only, no timing.

use crate::common::{root, specstorm, summary};

fn scenario(variant: &str, seed: u64) -> String {
    format!(
        "variant = {variant:?}\nseed = {seed}\n\
         [target]\nkind = \"http\"\nspawn = true\nrequest_timeout = \"10s\"\n\
         [load]\ningesters = 4\nresolvers = 1\n\
         [stop]\nevents = 1500\nduration = \"60s\"\n\
         [keys]\nprojects = 1\nfingerprints = 8\n\
         [min_evidence]\nNoMissedRegression = 0\n\
         [[faults]]\nkind = \"crash\"\nops = \"ingest\"\nprobability = 0.2\n"
    )
}

#[test]
fn the_one_block_ingest_holds_on_the_spawned_server_and_crashes_inside_it_strand_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = tmp.path().join("txn-http.toml");
    let txn = format!("{}/targets/sqlite/groups-txn.sql", root().display());
    std::fs::write(&sc, scenario(&txn, 3)).unwrap();
    let out = tmp.path().join("run");
    let o = specstorm(&[
        "run",
        sc.to_str().unwrap(),
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = summary(&out);
    assert_eq!(o.status.code(), Some(0), "{}", crate::common::text(&o));
    for name in [
        "TypeOK",
        "OneGroupPerFingerprint",
        "CountExact",
        "NoMissedRegression",
    ] {
        assert_eq!(s["invariants"][name]["verdict"], "holds", "{name}: {s}");
    }
    assert!(s["faults_injected"]["crash"].as_u64().unwrap() > 0, "{s}");
    let history = crate::common::folder::history_text(&out).unwrap();
    let header: serde_json::Value = serde_json::from_str(history.lines().next().unwrap()).unwrap();
    assert!(
        header.get("ingest_block").is_some(),
        "the spawned server runs the file's blocks: {header}"
    );
    // Crashes the hook placed inside the block: the block is s1..s3, so
    // a crash after any of its steps is before COMMIT.
    let inside = history
        .lines()
        .filter(|l| l.contains(r#""kind":"crash","action":"inject""#))
        .filter(|l| {
            ["s1", "s2", "s3"]
                .iter()
                .any(|s| l.contains(&format!(r#""step":"{s}""#)))
        })
        .count();
    assert!(inside > 0, "some crash landed inside the block");
    // The server rolled each back: its answer reports no step that ran.
    let crashed: Vec<&str> = history
        .lines()
        .filter(|l| l.contains(r#""f":"ingest""#) && l.contains(r#""crashed_after":"#))
        .collect();
    assert_eq!(crashed.len(), inside, "one answer per crash");
    for l in &crashed {
        assert!(
            l.contains(r#"\"steps\":[]"#),
            "a step survived the rollback: {l}"
        );
    }
    let stranded = &s["stranded_events"];
    assert_eq!(stranded["total"], 0, "{stranded}");
}
