//! `specstorm replay RUN_DIR --reruns N` on a groups run over HTTP. The
//! server's steps are not recorded there (the history holds each op's
//! request and answer, not its statements), so nothing can be re-executed;
//! the next best is to send the same ops again. Each rerun starts the
//! reference server (`specstorm serve`, the folder's `variant.sql`) on a
//! fresh database, sends every recorded op (retries included, as recorded)
//! in its recorded order per worker, each at its recorded offset from the
//! first, with the fault hook's crash and pause the run injected into that
//! op, reads the export, and is judged by the run's own checkers through
//! `specstorm audit`'s judge. Per invariant: in how many of the N reruns it
//! was violated. Whether a race recurs is chance: the answer is a count,
//! never a verdict on the design by itself (docs/replay.md).
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

use super::ReplayError;
use crate::audit_record::AuditFolder;
use crate::control::Control;
use crate::fault_kind::FaultKind;
use crate::history::{Completion, Entry, FaultAction, FaultEntry, Footer, Header, Invoke, OpKind};
use crate::scenario::Scenario;
use crate::target::http::client::{HttpClient, Tag};
use crate::target::http::spawn::SpawnedServer;
use crate::verdict::{CheckResult, Verdict};
use crate::workload::groups::http_client::{self, IngestEvent};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One recorded op to send again.
#[derive(Debug, Clone)]
pub struct RecordedOp {
    /// Its invoke as the run recorded it (its `t` is the offset sent at).
    pub invoke: Invoke,
    /// The fault hook's header for it: the crash and pauses the run
    /// injected into this op (None: none).
    pub hook: Option<String>,
    /// The fault entries of those injections (fault index, kind, step).
    pub faults: Vec<(u32, FaultKind, String)>,
}

/// What a run's history gives a rerun.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The run's header (a rerun's history starts with a copy).
    pub header: Header,
    /// Per worker, its ops in invoke order.
    pub workers: BTreeMap<u32, Vec<RecordedOp>>,
    /// The first invoke's time: offsets count from it.
    pub t0: u64,
    /// What of the run's faults a rerun does not reproduce, in words.
    pub not_reproduced: Vec<String>,
    /// Whether any op asks the fault hook for something.
    pub hooks: bool,
}

impl Plan {
    /// How many ops.
    pub fn ops(&self) -> usize {
        self.workers.values().map(Vec::len).sum()
    }
}

/// The plan of a run's `entries` under its `scenario`. Errors: no header
/// or no op (exit 2).
pub fn plan_of(entries: Vec<Entry>, scenario: &Scenario) -> Result<Plan, ReplayError> {
    let mut header = None;
    let mut invokes: Vec<Invoke> = Vec::new();
    let mut faults: BTreeMap<u64, Vec<(u32, FaultKind, String)>> = BTreeMap::new();
    let mut skipped: BTreeMap<&'static str, u64> = BTreeMap::new();
    for e in entries {
        match e {
            Entry::Header(h) => header = Some(h),
            Entry::Invoke(i) => invokes.push(i),
            Entry::Fault(f) => match (f.kind, f.action, f.op, f.step) {
                (FaultKind::Crash | FaultKind::Pause, FaultAction::Inject, Some(op), Some(s)) => {
                    faults.entry(op).or_default().push((f.fault, f.kind, s))
                }
                (FaultKind::Proxy, _, _, _) => *skipped.entry("proxy").or_default() += 1,
                (FaultKind::Kill, FaultAction::Start, _, _) => {
                    *skipped.entry("kill").or_default() += 1
                }
                (FaultKind::Lock, FaultAction::Start, _, _) => {
                    *skipped.entry("lock").or_default() += 1
                }
                _ => {}
            },
            _ => {}
        }
    }
    let header = header.ok_or_else(|| {
        ReplayError::Usage("the history has no header: not a history a run wrote".into())
    })?;
    if invokes.is_empty() {
        return Err(ReplayError::Usage(
            "the history records no op: nothing to send again".into(),
        ));
    }
    let t0 = invokes.iter().map(|i| i.t).min().unwrap_or(0);
    let mut workers: BTreeMap<u32, Vec<RecordedOp>> = BTreeMap::new();
    invokes.sort_by_key(|i| (i.t, i.op));
    let mut hooks = false;
    for invoke in invokes {
        let f = faults.remove(&invoke.op).unwrap_or_default();
        let hook = hook_header(&f, scenario);
        hooks |= hook.is_some();
        workers.entry(invoke.worker).or_default().push(RecordedOp {
            invoke,
            hook,
            faults: f,
        });
    }
    let mut not_reproduced: Vec<String> = skipped
        .into_iter()
        .map(|(kind, n)| {
            format!(
                "{n} {kind} fault(s) (the reference server's fault hook takes crash and pause \
                 only; no {kind} is injected)"
            )
        })
        .collect();
    if scenario
        .faults
        .iter()
        .any(|f| f.kind == FaultKind::Pause && f.jitter.is_some_and(|j| !j.is_zero()))
    {
        not_reproduced.push(
            "the pauses' jitter (each pause is its fault's `delay`: the drawn length is not \
             recorded as a number)"
                .into(),
        );
    }
    if scenario.fuzz.as_ref().is_some_and(|f| f.enabled) {
        not_reproduced.push("the schedule fuzzer's points".into());
    }
    Ok(Plan {
        header,
        workers,
        t0,
        not_reproduced,
        hooks,
    })
}

/// The fault hook's header for the injections `f` of one op: each crash
/// after its step, each pause before its step for its fault's `delay`.
fn hook_header(f: &[(u32, FaultKind, String)], scenario: &Scenario) -> Option<String> {
    let parts: Vec<String> = f
        .iter()
        .map(|(fault, kind, step)| match kind {
            FaultKind::Crash => format!("crash-after={step}"),
            _ => {
                let d = scenario
                    .faults
                    .get(*fault as usize)
                    .and_then(|f| f.delay)
                    .unwrap_or_default();
                format!("pause={step}:{}", d.as_nanos())
            }
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(";"))
}

/// What one rerun gave.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Rerun {
    /// Its folder.
    pub dir: String,
    /// Per invariant, its verdict.
    pub verdicts: BTreeMap<String, String>,
}

/// Runs the plan once into the new folder `out` (a run folder the audit
/// reads: `scenario.toml`, `variant.sql`, `history.jsonl`, `export.json`,
/// the server's `target.db` and `server.log`) and judges it.
pub fn rerun(
    run_dir: &Path,
    scenario: &Scenario,
    plan: &Plan,
    out: &Path,
) -> Result<Vec<CheckResult>, ReplayError> {
    let unwritable =
        |p: &Path, e: std::io::Error| ReplayError::Unreadable(format!("{}: {e}", p.display()));
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| unwritable(out, e))?;
    }
    std::fs::create_dir_all(out).map_err(|e| unwritable(out, e))?;
    for f in ["scenario.toml", "variant.sql"] {
        std::fs::copy(run_dir.join(f), out.join(f)).map_err(|e| unwritable(&out.join(f), e))?;
    }
    let control = Control::default();
    let variant = out.join("variant.sql");
    let mut server = SpawnedServer::start(
        &variant.display().to_string(),
        &out.join("target.db"),
        &scenario.target,
        &out.join("server.log"),
        plan.hooks,
        &control,
    )
    .map_err(|e| ReplayError::Unreadable(format!("the reference server: {e}")))?;
    let t = &scenario.target;
    let client = HttpClient::new(&server.url, t.connect_timeout, t.request_timeout)
        .map_err(|e| ReplayError::Unreadable(format!("{}: {e}", server.url)))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ReplayError::Unreadable(format!("a runtime: {e}")))?;
    let start = Instant::now();
    let now = move || start.elapsed().as_nanos() as u64;
    let entries: Arc<Mutex<Vec<Entry>>> = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for ops in plan.workers.values() {
            let (client, entries, ops, t0) =
                (client.clone(), entries.clone(), ops.clone(), plan.t0);
            tasks.push(tokio::spawn(async move {
                for op in ops {
                    let due = op.invoke.t - t0;
                    let late = now();
                    if due > late {
                        tokio::time::sleep(Duration::from_nanos(due - late)).await;
                    }
                    send(&client, &op, &entries, &now).await;
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    let export = out.join("export.json");
    let read_start = now();
    let exported = rt.block_on(client.export_to(&client.mapping().export, &export));
    let read_end = now();
    server.stop();
    exported.map_err(|e| ReplayError::Unreadable(format!("the rerun's export: {e}")))?;

    let mut header = plan.header.clone();
    header.step_log = false;
    header.shard = None;
    header.merged = None;
    let mut all = vec![Entry::Header(header)];
    all.append(&mut entries.lock().expect("entries").clone());
    all.push(Entry::Footer(Footer {
        t: read_end,
        partial: false,
        ops: plan.ops() as u64,
        tables_read: Some([read_start, read_end]),
    }));
    let history = out.join("history.jsonl");
    let text: String = all
        .iter()
        .map(|e| serde_json::to_string(e).unwrap_or_default() + "\n")
        .collect();
    std::fs::write(&history, text).map_err(|e| unwritable(&history, e))?;
    let judged = crate::workload::groups::audit::judge(&AuditFolder {
        run_dir: out,
        history: &history,
        scenario: &out.join("scenario.toml"),
        killed: false,
        limits: Default::default(),
    })
    .map_err(|e| ReplayError::Unreadable(format!("{}: the audit: {e}", out.display())))?;
    Ok(judged.results)
}

/// Sends one op as the run recorded it, and records its invoke, the
/// fault hook's injections and its completion.
async fn send(
    client: &HttpClient,
    op: &RecordedOp,
    entries: &Mutex<Vec<Entry>>,
    now: &(dyn Fn() -> u64 + Sync),
) {
    let i = &op.invoke;
    let tag = Tag {
        op: i.op,
        key: 0,
        hook: op.hook.clone(),
    };
    let mut invoke = i.clone();
    invoke.t = now();
    invoke.intended = None;
    let mut recorded: Vec<Entry> = op
        .faults
        .iter()
        .filter(|(_, kind, _)| *kind == FaultKind::Pause)
        .map(|(fault, kind, step)| fault_entry(invoke.t, *fault, *kind, i.op, step))
        .collect();
    let answer = match i.f {
        OpKind::Ingest => {
            let event = IngestEvent {
                event_id: i.event_id.as_deref().unwrap_or_default(),
                project: &i.project,
                fingerprint: &i.fingerprint,
                message: "rerun",
            };
            http_client::ingest(client, event, Some(&tag)).await
        }
        _ => {
            http_client::resolve(client, &i.group_id, &i.project, &i.fingerprint, Some(&tag)).await
        }
    };
    let t = now();
    if let Some(step) = &answer.result.crashed_after {
        if let Some((fault, kind, _)) = op.faults.iter().find(|f| f.1 == FaultKind::Crash) {
            recorded.push(fault_entry(t, *fault, *kind, i.op, step));
        }
    }
    let completion = Entry::completion(
        answer.kind,
        Completion {
            t,
            op: i.op,
            worker: i.worker,
            f: i.f,
            result: answer.result,
        },
    );
    let mut e = entries.lock().expect("entries");
    e.push(Entry::Invoke(invoke));
    e.append(&mut recorded);
    e.push(completion);
}

fn fault_entry(t: u64, fault: u32, kind: FaultKind, op: u64, step: &str) -> Entry {
    Entry::Fault(FaultEntry {
        t,
        fault,
        kind,
        action: FaultAction::Inject,
        op: Some(op),
        step: Some(step.to_string()),
        forwarded: None,
        detail: Some(format!("{} at {step} (fault hook, rerun)", kind.name())),
        dropped: None,
    })
}

/// What `--reruns N` found, as `reruns.json` records it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reruns {
    /// N.
    pub reruns: u32,
    /// Ops sent per rerun.
    pub ops: usize,
    /// Per invariant: the run's verdict and in how many reruns it was
    /// violated (and unknown).
    pub invariants: Vec<InvariantCount>,
    /// The run's faults a rerun does not reproduce.
    pub not_reproduced: Vec<String>,
    /// Each rerun.
    pub runs: Vec<Rerun>,
}

/// One invariant over the reruns.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InvariantCount {
    /// Its name.
    pub invariant: String,
    /// The run's verdict.
    pub run: String,
    /// Reruns that found it violated.
    pub violated: u32,
    /// Reruns whose verdict was unknown.
    pub unknown: u32,
}

impl Reruns {
    /// The exit (docs/replay.md, "Over HTTP: reruns"): 1 when a finding of
    /// the run recurred in no rerun, or a rerun found violated an
    /// invariant the run did not; 4 when that is so only of unknown
    /// verdicts; else 0.
    pub fn exit(&self) -> crate::exit_code::ExitCode {
        use crate::exit_code::ExitCode;
        let n = self.reruns;
        let disagree = self.invariants.iter().any(|c| {
            (c.run == "violated" && c.violated == 0 && c.unknown < n)
                || (c.run != "violated" && c.violated > 0)
        });
        let undecided = self
            .invariants
            .iter()
            .any(|c| c.run == "violated" && c.violated == 0 && c.unknown > 0);
        if disagree {
            ExitCode::NotMet
        } else if undecided {
            ExitCode::Inconclusive
        } else {
            ExitCode::Met
        }
    }
}

/// Counts the reruns' verdicts per invariant of the run's `results`.
pub fn count(run: &[CheckResult], reruns: &[(PathBuf, Vec<CheckResult>)]) -> Vec<InvariantCount> {
    run.iter()
        .map(|r| {
            let of = |v: Verdict| {
                reruns
                    .iter()
                    .filter(|(_, rs)| {
                        rs.iter()
                            .any(|x| x.invariant == r.invariant && x.verdict == v)
                    })
                    .count() as u32
            };
            InvariantCount {
                invariant: r.invariant.clone(),
                run: r.verdict.to_string(),
                violated: of(Verdict::Violated),
                unknown: of(Verdict::Unknown),
            }
        })
        .collect()
}
