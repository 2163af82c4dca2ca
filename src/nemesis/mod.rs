//! The nemesis: the scenario's `[[faults]]` turned into decisions, and the
//! record of every injection. Per-op faults (crash, pause, proxy toxics)
//! are decided by [`FaultPlan`] from (seed, fault, op key, step) alone, never
//! from a shared random stream, so the same seed gives the same fault plan
//! whatever the timing; timed faults (kill, lock) run on their own threads
//! ([`kill`], [`lock`]) on the scenario's period.
//!
//! Layer: engine. May import the modules of its own layer and of the layers
//! below it (core, model and config).

pub mod kill;
pub mod lock;
pub mod proxy;
mod timed;

use crate::clock::Clock;
use crate::draws::draw_rng;
use crate::fault_kind::FaultKind;
use crate::history::writer::HistorySink;
use crate::history::{DroppedResponse, Entry, FaultAction, FaultEntry, OpKind};
use crate::scenario::{Fault, Toxic};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A duration of `base` plus a uniform jitter in `0..=jitter`.
fn jittered(rng: &mut ChaCha8Rng, base: Duration, jitter: Duration) -> Duration {
    let j = jitter.as_nanos() as u64;
    base + Duration::from_nanos(if j == 0 { 0 } else { rng.random_range(0..=j) })
}

/// What the nemesis does to one op between its steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpFaults {
    /// Abandon the op after this step index (crash), and the fault's index.
    pub crash_after: Option<(usize, u32)>,
    /// Wait before step index i: (step, delay, fault index).
    pub pauses: Vec<(usize, Duration, u32)>,
    /// The schedule fuzzer's points (`crate::fuzz`), by executed step:
    /// (n, delay). Not a fault of the schedule: never counted as one.
    pub fuzz: Vec<(usize, crate::fuzz::Delay)>,
}

impl OpFaults {
    /// Whether nothing is injected.
    pub fn is_empty(&self) -> bool {
        self.crash_after.is_none() && self.pauses.is_empty()
    }

    /// The pause before step `i`, if any.
    pub fn pause_before(&self, i: usize) -> Option<(Duration, u32)> {
        self.pauses
            .iter()
            .find(|(s, _, _)| *s == i)
            .map(|(_, d, f)| (*d, *f))
    }

    /// The fuzzer's delay before executed step `n`, if any.
    pub fn fuzz_before(&self, n: usize) -> Option<crate::fuzz::Delay> {
        self.fuzz.iter().find(|(at, _)| *at == n).map(|(_, d)| *d)
    }

    /// Whether the op is abandoned after step `i` (crash), with the fault index.
    pub fn crash_after(&self, i: usize) -> Option<u32> {
        self.crash_after.filter(|(s, _)| *s == i).map(|(_, f)| f)
    }
}

/// What the proxy does to one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProxyAction {
    /// Forward it untouched.
    Forward,
    /// Wait, then forward.
    Delay(Duration),
    /// Forward it, then drop the connection instead of answering.
    DropResponse,
    /// Reset the connection without forwarding.
    Reset,
    /// Answer this status without forwarding.
    Error(u16),
}

/// The scenario's faults with the seed: every per-op decision, and the
/// count of injections per fault (shared with the dashboard and summary).
#[derive(Debug)]
pub struct FaultPlan {
    seed: u64,
    faults: Vec<Fault>,
    injected: Vec<AtomicU64>,
    active: Vec<std::sync::atomic::AtomicBool>,
}

impl FaultPlan {
    /// The plan of a scenario's `faults` under `seed`.
    pub fn new(seed: u64, faults: &[Fault]) -> Self {
        FaultPlan {
            seed,
            faults: faults.to_vec(),
            injected: faults.iter().map(|_| AtomicU64::new(0)).collect(),
            active: faults
                .iter()
                .map(|_| std::sync::atomic::AtomicBool::new(false))
                .collect(),
        }
    }

    /// The faults, in scenario order.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// Whether any fault of `kind` is scheduled.
    pub fn has(&self, kind: FaultKind) -> bool {
        self.faults.iter().any(|f| f.kind == kind)
    }

    /// Counts one injection of fault `i`.
    pub fn count(&self, i: u32) {
        self.injected[i as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The kinds of timed faults in effect now (a lock held, a server
    /// down), each once, in scenario order.
    pub fn active_kinds(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (f, a) in self.faults.iter().zip(&self.active) {
            let name = f.kind.name().to_string();
            if a.load(Ordering::Relaxed) && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// Injections so far per kind (every kind of the schedule listed, 0 included).
    pub fn injected_by_kind(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for (f, n) in self.faults.iter().zip(&self.injected) {
            *m.entry(f.kind.name().to_string()).or_default() += n.load(Ordering::Relaxed);
        }
        m
    }

    /// The crash and pause decisions for one op, drawn from (seed, fault,
    /// `key`, step). `steps` are the op program's step names; `ingest` says
    /// which op kind it is; `since_load` is when the op starts (for the
    /// faults' windows).
    pub fn for_op(&self, key: u64, ingest: bool, steps: &[&str], since_load: Duration) -> OpFaults {
        let mut out = OpFaults::default();
        for (i, f) in self.faults.iter().enumerate() {
            if !f.hits(ingest) || !f.active(since_load) {
                continue;
            }
            let fi = i as u32;
            let p = f.probability.unwrap_or(0.0);
            let named = |name: &String| steps.iter().position(|s| s == name);
            match f.kind {
                FaultKind::Crash if out.crash_after.is_none() => {
                    let mut rng = draw_rng(self.seed, fi, key, u32::MAX);
                    if !rng.random_bool(p) {
                        continue;
                    }
                    let at = match &f.step {
                        Some(name) => named(name),
                        None => Some(rng.random_range(0..steps.len())),
                    };
                    if let Some(at) = at {
                        out.crash_after = Some((at, fi));
                    }
                }
                FaultKind::Pause => {
                    for (s, name) in steps.iter().enumerate() {
                        if f.step.as_deref().is_some_and(|n| n != *name) {
                            continue;
                        }
                        let mut rng = draw_rng(self.seed, fi, key, s as u32);
                        if rng.random_bool(p) && out.pause_before(s).is_none() {
                            let d = jittered(
                                &mut rng,
                                f.delay.unwrap_or_default(),
                                f.jitter.unwrap_or_default(),
                            );
                            out.pauses.push((s, d, fi));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// What the proxy does to the request of the groups op with `key`
    /// (`ingest` or a resolve): [`FaultPlan::proxy_action_for`].
    pub fn proxy_action(
        &self,
        key: u64,
        ingest: bool,
        since_load: Duration,
    ) -> (ProxyAction, Option<u32>) {
        let kind = if ingest {
            OpKind::Ingest
        } else {
            OpKind::Resolve
        };
        self.proxy_action_for(key, kind, since_load)
    }

    /// What the proxy does to the request of the op of `kind` with `key`:
    /// the first proxy fault (in scenario order) that may hit the op and
    /// whose draw hits, with its index. The draw is (seed, fault, key)
    /// alone, whatever the op's kind: an outbox `handle` draws as a groups
    /// op does, from its own timing-free key.
    pub fn proxy_action_for(
        &self,
        key: u64,
        kind: OpKind,
        since_load: Duration,
    ) -> (ProxyAction, Option<u32>) {
        for (i, f) in self.faults.iter().enumerate() {
            if f.kind != FaultKind::Proxy || !hits_kind(f, kind) || !f.active(since_load) {
                continue;
            }
            let mut rng = draw_rng(self.seed, i as u32, key, u32::MAX - 1);
            if !rng.random_bool(f.probability.unwrap_or(0.0)) {
                continue;
            }
            let action = match f.toxic {
                Some(Toxic::Latency) => ProxyAction::Delay(jittered(
                    &mut rng,
                    f.delay.unwrap_or_default(),
                    f.jitter.unwrap_or_default(),
                )),
                Some(Toxic::DropResponse) => ProxyAction::DropResponse,
                Some(Toxic::Reset) => ProxyAction::Reset,
                Some(Toxic::Error) => ProxyAction::Error(f.status.unwrap_or(503)),
                None => continue,
            };
            return (action, Some(i as u32));
        }
        (ProxyAction::Forward, None)
    }
}

/// Whether the per-op fault `f` may hit an op of `kind` (its `ops`:
/// `ingest` and `resolve` are groups' ops, `handle` the outbox's, `all`
/// or unset every op, a registered workload's too).
fn hits_kind(f: &Fault, kind: OpKind) -> bool {
    use crate::scenario::FaultOps;
    match kind {
        OpKind::Ingest => f.hits(true),
        OpKind::Resolve => f.hits(false),
        OpKind::Handle => matches!(f.ops, None | Some(FaultOps::All | FaultOps::Handle)),
        _ => matches!(f.ops, None | Some(FaultOps::All)),
    }
}

/// Writes fault entries into the history and counts them.
#[derive(Clone)]
pub struct Recorder {
    /// The plan whose counters this recorder bumps.
    pub plan: Arc<FaultPlan>,
    /// The run's history.
    pub sink: HistorySink,
    /// The run's clock.
    pub clock: Clock,
}

impl Recorder {
    /// Records (and counts, for start and inject) one fault event now.
    pub fn record(
        &self,
        fault: u32,
        action: FaultAction,
        op: Option<u64>,
        step: Option<String>,
        forwarded: Option<bool>,
        detail: Option<String>,
    ) {
        if action != FaultAction::Stop {
            self.plan.count(fault);
        }
        match action {
            FaultAction::Start => self.plan.active[fault as usize].store(true, Ordering::Relaxed),
            FaultAction::Stop => self.plan.active[fault as usize].store(false, Ordering::Relaxed),
            FaultAction::Inject => {}
        }
        let kind = self.plan.faults[fault as usize].kind;
        self.sink.send_entry(&Entry::Fault(FaultEntry {
            t: self.clock.now(),
            fault,
            kind,
            action,
            op,
            step,
            forwarded,
            detail,
            dropped: None,
        }));
    }

    /// Records (and counts) the fault proxy's drop of the answer to op
    /// `op`, which the server gave (`dropped`) after the request was
    /// forwarded; `detail` says it in words.
    pub fn record_drop(&self, fault: u32, op: u64, dropped: DroppedResponse, detail: String) {
        self.plan.count(fault);
        self.sink.send_entry(&Entry::Fault(FaultEntry {
            t: self.clock.now(),
            fault,
            kind: self.plan.faults[fault as usize].kind,
            action: FaultAction::Inject,
            op: Some(op),
            step: None,
            forwarded: Some(true),
            detail: Some(detail),
            dropped: Some(dropped),
        }));
    }

    /// The fault entry of one injection into op `op`, for the op's own
    /// history batch (so it stays next to the op's steps); counts it.
    pub fn inject_entry(
        &self,
        fault: u32,
        op: u64,
        step: Option<String>,
        detail: Option<String>,
    ) -> Entry {
        self.plan.count(fault);
        Entry::Fault(FaultEntry {
            t: self.clock.now(),
            fault,
            kind: self.plan.faults[fault as usize].kind,
            action: FaultAction::Inject,
            op: Some(op),
            step,
            forwarded: None,
            detail,
            dropped: None,
        })
    }
}

/// Checks that every fault's `step` names a step of the ops it may hit
/// (crash, pause; the ops' programs are `ingest` and `resolve`). Errors:
/// the fault's index in `[[faults]]` and the reason, naming the steps
/// there are.
pub fn check_steps(
    faults: &[Fault],
    ingest: &crate::statements::OpProgram,
    resolve: &crate::statements::OpProgram,
) -> Result<(), (usize, String)> {
    use crate::scenario::FaultOps;
    for (i, f) in faults.iter().enumerate() {
        let Some(step) = &f.step else { continue };
        let programs: &[(&str, &crate::statements::OpProgram)] = match f.ops {
            Some(FaultOps::Ingest) => &[("ingest", ingest)],
            Some(FaultOps::Resolve) => &[("resolve", resolve)],
            _ => &[("ingest", ingest), ("resolve", resolve)],
        };
        let found = programs
            .iter()
            .any(|(_, p)| p.steps.iter().any(|s| &s.name == step));
        if !found {
            let names: Vec<String> = programs
                .iter()
                .map(|(op, p)| {
                    let steps: Vec<&str> = p.steps.iter().map(|s| s.name.as_str()).collect();
                    format!("{op}: {}", steps.join(", "))
                })
                .collect();
            return Err((
                i,
                format!(
                    "`faults[{i}].step` = {step:?} is no step of the ops it may hit (the variant's steps are {})",
                    names.join("; ")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::draws::op_key;
    use crate::scenario::FaultOps;

    fn fault(kind: FaultKind, p: f64, step: Option<&str>) -> Fault {
        Fault {
            kind,
            per: None,
            start: Duration::ZERO,
            stop: None,
            probability: Some(p),
            ops: Some(FaultOps::All),
            step: step.map(str::to_owned),
            delay: Some(Duration::from_millis(2)),
            jitter: Some(Duration::from_millis(1)),
            toxic: None,
            status: None,
            every: None,
            hold: None,
        }
    }

    const STEPS: [&str; 3] = ["s1", "s2", "s3"];

    fn plan_of(seed: u64, faults: &[Fault]) -> Vec<OpFaults> {
        let plan = FaultPlan::new(seed, faults);
        (0..2000)
            .map(|k| plan.for_op(op_key(0, k, 0), true, &STEPS, Duration::ZERO))
            .collect()
    }

    #[test]
    fn same_seed_same_plan_whatever_the_order() {
        let faults = [
            fault(FaultKind::Crash, 0.1, None),
            fault(FaultKind::Pause, 0.2, None),
        ];
        let a = plan_of(7, &faults);
        // Asking in reverse order gives the same decisions per op.
        let plan = FaultPlan::new(7, &faults);
        let mut b: Vec<_> = (0..2000)
            .rev()
            .map(|k| plan.for_op(op_key(0, k, 0), true, &STEPS, Duration::ZERO))
            .collect();
        b.reverse();
        assert_eq!(a, b);
        assert_ne!(a, plan_of(8, &faults));
        let crashes = a.iter().filter(|f| f.crash_after.is_some()).count();
        assert!(
            (100..300).contains(&crashes),
            "{crashes} crashes of 2000 at p = 0.1"
        );
        // Every step is chosen when no step is named.
        for s in 0..3 {
            assert!(a.iter().any(|f| f.crash_after == Some((s, 0))));
        }
    }

    #[test]
    fn named_step_window_and_ops_are_obeyed() {
        let mut crash = fault(FaultKind::Crash, 1.0, Some("s2"));
        crash.ops = Some(FaultOps::Resolve);
        let plan = FaultPlan::new(1, &[crash.clone()]);
        // Not an ingest fault.
        assert!(plan.for_op(1, true, &STEPS, Duration::ZERO).is_empty());
        assert_eq!(
            plan.for_op(1, false, &STEPS, Duration::ZERO).crash_after,
            Some((1, 0))
        );
        crash.start = Duration::from_secs(5);
        crash.stop = Some(Duration::from_secs(6));
        let plan = FaultPlan::new(1, &[crash]);
        assert!(plan
            .for_op(1, false, &STEPS, Duration::from_secs(4))
            .is_empty());
        assert!(!plan
            .for_op(1, false, &STEPS, Duration::from_secs(5))
            .is_empty());
        assert!(plan
            .for_op(1, false, &STEPS, Duration::from_secs(6))
            .is_empty());
        // Probability 0 never fires.
        let plan = FaultPlan::new(1, &[fault(FaultKind::Crash, 0.0, None)]);
        assert!((0..1000).all(|k| plan.for_op(k, true, &STEPS, Duration::ZERO).is_empty()));
    }

    #[test]
    fn proxy_faults_hit_handle_by_their_ops_and_draw_as_for_groups() {
        let mut f = fault(FaultKind::Proxy, 0.3, None);
        f.toxic = Some(Toxic::Reset);
        let draws = |plan: &FaultPlan, kind: OpKind| -> Vec<bool> {
            (0..500)
                .map(|k| plan.proxy_action_for(k, kind, Duration::ZERO).1.is_some())
                .collect()
        };
        // `all`: a delivery draws exactly as an ingest of the same key.
        let plan = FaultPlan::new(5, &[f.clone()]);
        let handle = draws(&plan, OpKind::Handle);
        assert_eq!(handle, draws(&plan, OpKind::Ingest));
        assert_eq!(
            (0..500)
                .map(|k| plan.proxy_action(k, true, Duration::ZERO).1.is_some())
                .collect::<Vec<_>>(),
            handle
        );
        assert!(handle.iter().any(|h| *h) && !handle.iter().all(|h| *h));
        // `handle` hits deliveries only; `ingest` never hits them.
        f.ops = Some(FaultOps::Handle);
        let plan = FaultPlan::new(5, &[f.clone()]);
        assert_eq!(draws(&plan, OpKind::Handle), handle);
        assert!(!draws(&plan, OpKind::Ingest).iter().any(|h| *h));
        f.ops = Some(FaultOps::Ingest);
        let plan = FaultPlan::new(5, &[f]);
        assert!(!draws(&plan, OpKind::Handle).iter().any(|h| *h));
    }

    #[test]
    fn pauses_stay_within_delay_plus_jitter() {
        let a = plan_of(3, &[fault(FaultKind::Pause, 0.5, Some("s3"))]);
        let pauses: Vec<_> = a.iter().flat_map(|f| f.pauses.clone()).collect();
        assert!(!pauses.is_empty());
        for (s, d, _) in pauses {
            assert_eq!(s, 2);
            assert!(
                d >= Duration::from_millis(2) && d <= Duration::from_millis(3),
                "{d:?}"
            );
        }
    }
}
