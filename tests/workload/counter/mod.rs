//! A third workload, written only for the test suite: a counter that
//! concurrent workers increment, with one invariant, `NoLostIncrement`
//! (the final count is at least the increments acknowledged and at most
//! those that may have happened). It lives here, in its own files, and
//! registers itself at run time; it shows that a workload plugs into
//! specstorm's one pipeline (verdict, `junit.xml`, exit code) through the
//! `Workload` trait alone, and that `specstorm audit` judges a folder of
//! it again through the same trait ([`audit`]).

mod audit;
mod checker;
mod load;

pub use load::ROUNDS_NAIVE_COUNT;

use specstorm::history::{Entry, Header, OpKind};
use specstorm::prepare::{RunError, RunOptions};
use specstorm::report::summary::Summary;
use specstorm::scenario::Scenario;
use specstorm::statements::StatementFile;
use specstorm::verdict::CheckResult;
use specstorm::workload::traits::{LoadCx, Loaded, SummaryCx, Workload, WorkloadRun};
use std::path::Path;
use std::time::SystemTime;

/// The invariant, by the name an `expect` uses.
pub const NO_LOST_INCREMENT: &str = "NoLostIncrement";

/// The counter workload.
pub struct Counter;

/// Registers the counter workload (again: a no-op) and returns its op kind.
pub fn register() -> OpKind {
    specstorm::workload::registry::register(&Counter).expect("the counter registers");
    OpKind::register("increment").expect("the increment op kind registers")
}

impl Workload for Counter {
    fn name(&self) -> &'static str {
        "counter"
    }

    fn invariants(&self) -> &'static [&'static str] {
        &[NO_LOST_INCREMENT]
    }

    fn prepare(
        &self,
        path: Option<&Path>,
        overrides: &[String],
        _offline: bool,
    ) -> Result<Box<dyn WorkloadRun>, RunError> {
        let (scenario, _) = specstorm::scenario::load(path, overrides)
            .map_err(|e| RunError::Input(e.to_string()))?;
        let dir = path.and_then(Path::parent);
        let (file, text) = specstorm::variant::locate(&scenario.variant, dir)
            .map_err(|e| RunError::Input(e.to_string()))?;
        let file = specstorm::statements::parse(&file, &text)
            .map_err(|e| RunError::Input(e.to_string()))?;
        let statements = load::Statements::of(&file)?;
        Ok(Box::new(CounterRun {
            scenario,
            file,
            statements,
            outcome: None,
            judged: None,
        }))
    }

    fn audit(
        &self,
        f: &specstorm::audit_record::AuditFolder<'_>,
    ) -> Result<specstorm::audit_record::Rejudged, specstorm::audit_error::AuditError> {
        audit::judge(f)
    }

    fn explore(
        &self,
        _opts: &specstorm::explore::ExploreOptions,
    ) -> specstorm::exit_code::ExitCode {
        eprintln!("specstorm: error: the counter workload has no explore world");
        specstorm::exit_code::ExitCode::Usage
    }
}

/// One counter scenario.
struct CounterRun {
    scenario: Scenario,
    file: StatementFile,
    statements: load::Statements,
    outcome: Option<load::Outcome>,
    judged: Option<checker::Facts>,
}

impl WorkloadRun for CounterRun {
    fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    fn file(&self) -> &StatementFile {
        &self.file
    }

    fn describe(&self) -> String {
        format!(
            "{}# variant: {} (sha256 {}): increment {} steps\n",
            self.scenario.to_toml(),
            self.file.path.display(),
            self.file.sha256,
            self.statements.increment.len()
        )
    }

    fn take_shard(&mut self, opts: &RunOptions) -> Result<(), RunError> {
        match opts.shard {
            Some(_) => Err(RunError::Input("the counter workload has no shards".into())),
            None => Ok(()),
        }
    }

    fn claim_target(&mut self, _started: SystemTime) -> Result<(), RunError> {
        match &self.scenario.target.path {
            Some(p) if p.exists() => Err(RunError::Input(format!(
                "{} exists: the counter needs a fresh database",
                p.display()
            ))),
            _ => Ok(()),
        }
    }

    fn header(&self, _h: &mut Header) {}

    fn workers(&self) -> usize {
        load::WORKERS
    }

    fn op_kinds(&self) -> &'static [OpKind] {
        static KINDS: std::sync::OnceLock<[OpKind; 1]> = std::sync::OnceLock::new();
        KINDS.get_or_init(|| [register()])
    }

    fn load(&mut self, cx: &LoadCx<'_>) -> Result<Loaded, RunError> {
        let (outcome, loaded) =
            load::run(&self.scenario, &self.statements, self.op_kinds()[0], cx)?;
        self.outcome = Some(outcome);
        Ok(loaded)
    }

    fn judge(
        &mut self,
        history: &Path,
        feed: &mut dyn FnMut(&Entry),
        target_error: Option<&str>,
    ) -> Result<Vec<CheckResult>, RunError> {
        let facts = checker::Facts::read(history, feed)?;
        let result = match self.outcome.as_ref().and_then(|o| o.final_count) {
            Some(n) if target_error.is_none() => checker::no_lost_increment(&facts, n),
            _ => {
                let mut r = CheckResult::new(NO_LOST_INCREMENT);
                r.unknown(checker::finding(
                    "the final count",
                    &format!("not read ({})", target_error.unwrap_or("no final count")),
                    "without the final count nothing can be judged",
                ));
                r
            }
        };
        self.judged = Some(facts);
        Ok(vec![result])
    }

    fn fill_summary(&mut self, s: &mut Summary, _cx: &SummaryCx<'_>) {
        let facts = self.judged.as_ref().expect("filled after the audit");
        s.history.extend([
            ("ops".to_string(), serde_json::json!(facts.ops)),
            (
                "final_count".to_string(),
                serde_json::json!(self.outcome.as_ref().and_then(|o| o.final_count)),
            ),
        ]);
    }

    fn stranded(&self, _s: &Summary) -> Option<u64> {
        None
    }
}
