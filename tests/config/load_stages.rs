//! `[[load.stages]]` and `load.resolve_rate`: what the loader takes, and
//! every refusal at its `file:line`.

use specstorm::scenario::*;
use specstorm::workload::groups::config::*;
use std::path::Path;
use std::time::Duration;

const FILE: &str = "scenarios/test.toml";

fn load_text(text: &str) -> Result<Scenario, ScenarioError> {
    load_str("test", Some(Path::new(FILE)), text, &[])
}

/// `text` is refused at `line`, its reason holding `needle`, shown as
/// `FILE:LINE: reason`.
#[track_caller]
fn refused(text: &str, line: usize, needle: &str) {
    let err = load_text(text).expect_err("refused");
    assert_eq!(err.line(), Some(line), "wrong line in: {err}");
    assert!(err.reason().contains(needle), "{needle:?} not in: {err}");
    assert_eq!(err.to_string(), format!("{FILE}:{line}: {}", err.reason()));
}

const OPEN: &str = "[load]\nmodel = \"open\"\n";

#[test]
fn open_stages_are_read_and_set_the_run_length() {
    let text = format!(
        "{OPEN}\n[[load.stages]]\nduration = \"10s\"\ntarget = 2000\n\n\
         [[load.stages]]\nduration = \"10s\"\ntarget = 2000\n\n\
         [[load.stages]]\nduration = \"10s\"\ntarget = 0\n\n[stop]\nevents = 0\n"
    );
    let s = load_text(&text).unwrap();
    let stages = &s.load().stages;
    assert_eq!(stages.len(), 3);
    assert_eq!(stages[0].duration, Duration::from_secs(10));
    assert_eq!(stages[1].target, 2000.0);
    // No `stop.duration`: the stages' total is the load's length.
    assert_eq!(s.stop.duration, None);
    assert_eq!(section::load_duration(&s), Some(Duration::from_secs(30)));
    // An explicit duration wins.
    let s = load_str(
        "test",
        Some(Path::new(FILE)),
        &text,
        &["stop.duration=\"5s\"".to_owned()],
    )
    .unwrap();
    assert_eq!(section::load_duration(&s), Some(Duration::from_secs(5)));
    // Inline tables read the same.
    let inline = "[load]\nmodel = \"open\"\nstages = [{ duration = \"1s\", target = 10 }]\n";
    assert_eq!(load_text(inline).unwrap().load().stages.len(), 1);
}

#[test]
fn a_stage_is_a_duration_and_a_target() {
    refused(
        &format!("{OPEN}\n[[load.stages]]\nduration = \"10s\"\n"),
        4,
        "`load.stages[0]` needs `target`",
    );
    refused(
        &format!("{OPEN}\n[[load.stages]]\ntarget = 5\n"),
        4,
        "`load.stages[0]` needs `duration`",
    );
    refused(
        &format!(
            "{OPEN}\n[[load.stages]]\nduration = \"1s\"\ntarget = 5\n\n\
             [[load.stages]]\nduration = \"1s\"\ntarget = 5\nhold = true\n"
        ),
        11,
        "unknown key `hold` in `load.stages[1]`",
    );
    refused(
        &format!("{OPEN}\n[[load.stages]]\nduration = \"ten\"\ntarget = 5\n"),
        5,
        "invalid duration \"ten\" for `load.stages[0].duration`",
    );
    refused(
        &format!("{OPEN}\n[[load.stages]]\nduration = \"1s\"\ntarget = -5\n"),
        6,
        "`load.stages[0].target` must be a finite number >= 0",
    );
    refused(
        &format!("{OPEN}stages = 3\n"),
        3,
        "`load.stages` must be an array of tables",
    );
    refused(
        &format!("{OPEN}stages = []\n"),
        3,
        "needs at least one stage",
    );
}

#[test]
fn open_stages_replace_the_rate_and_must_start_something() {
    refused(
        "[load]\nmodel = \"open\"\nrate = 100\n\n[[load.stages]]\nduration = \"1s\"\ntarget = 5\n",
        3,
        "`load.rate` and `[[load.stages]]` both set the ingest rate",
    );
    refused(
        &format!("{OPEN}\n[[load.stages]]\nduration = \"1s\"\ntarget = 0\n"),
        4,
        "every stage's target is 0",
    );
}

#[test]
fn closed_stages_count_whole_ingesters() {
    let closed = "[load]\ningesters = 4\n";
    let s = load_text(&format!(
        "{closed}\n[[load.stages]]\nduration = \"1s\"\ntarget = 4\n"
    ))
    .unwrap();
    assert_eq!(s.load().model, LoadModel::Closed);
    refused(
        &format!("{closed}\n[[load.stages]]\nduration = \"1s\"\ntarget = 5\n"),
        6,
        "a whole number from 0 to `load.ingesters` (4), found 5",
    );
    refused(
        &format!(
            "{closed}\n[[load.stages]]\nduration = \"1s\"\ntarget = 1\n\n\
             [[load.stages]]\nduration = \"1s\"\ntarget = 2.5\n"
        ),
        10,
        "`load.stages[1].target` is a number of active ingesters",
    );
    // No ingester ever active: nothing would run, as in the open model.
    refused(
        &format!(
            "{closed}\n[[load.stages]]\nduration = \"1s\"\ntarget = 0\n\n\
             [[load.stages]]\nduration = \"2s\"\ntarget = 0\n"
        ),
        4,
        "every stage's target is 0: no op would ever start (the targets are active ingesters",
    );
}

#[test]
fn the_stages_alone_may_stop_the_run() {
    // No event limit, no duration, no stages: never stops.
    refused("[stop]\nevents = 0\n", 1, "the run would never stop");
    let s = load_text(&format!(
        "{OPEN}\n[[load.stages]]\nduration = \"2s\"\ntarget = 10\n\n[stop]\nevents = 0\n"
    ))
    .unwrap();
    assert_eq!(section::load_duration(&s), Some(Duration::from_secs(2)));
}

#[test]
fn resolve_rate_paces_open_resolvers_only() {
    let s = load_text("[load]\nmodel = \"open\"\nrate = 10\nresolve_rate = 50\n").unwrap();
    assert_eq!(s.load().resolve_rate, Some(50.0));
    refused(
        "[load]\nresolve_rate = 50\n",
        2,
        "`load.resolve_rate` only applies to model = open",
    );
    refused(
        "[load]\nmodel = \"open\"\nrate = 10\nresolve_rate = 0\n",
        4,
        "`load.resolve_rate` must be > 0",
    );
    refused(
        "[load]\nmodel = \"open\"\nrate = 10\nresolvers = 0\nresolve_rate = 5\n",
        5,
        "needs `load.resolvers` >= 1",
    );
}

#[test]
fn the_outbox_refuses_load_stages() {
    let err =
        load_text("workload = \"outbox\"\n\n[[load.stages]]\nduration = \"1s\"\ntarget = 1\n")
            .expect_err("refused");
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(
        err.reason()
            .contains("does not apply to workload = \"outbox\""),
        "{err}"
    );
}

#[test]
fn the_saved_scenario_keeps_the_stages() {
    let s = load_text(&format!(
        "{OPEN}resolve_rate = 20\n\n[[load.stages]]\nduration = \"3s\"\ntarget = 7\n"
    ))
    .unwrap();
    let text = s.to_toml();
    let again = load_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.load().stages, s.load().stages);
    assert_eq!(again.load().resolve_rate, Some(20.0));
}
