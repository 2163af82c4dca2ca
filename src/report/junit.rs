//! `junit.xml`: a run's verdicts as JUnit XML, the format every CI reads.
//! One test suite per run (variant), one test case per invariant and per
//! threshold, and one `run` case for what stops a run from being judged
//! (an unusable target, an interruption). A case fails when the run's
//! expectation for it is not met; the failure message is the violation's
//! explanation (or why the expected violation was not found), and its
//! text the evidence as the terminal prints it (explanation and
//! timeline), because CI systems show the text, not the attribute.
//!
//! The file follows Jenkins' `junit-10.xsd`, the schema CI systems read
//! (a test validates it with `xmllint --schema`): a suite carries `time`,
//! `timestamp`, `hostname` and `<properties>` (scenario, variant, seed,
//! target). `quick-junit` writes the data model; it also writes a
//! `skipped` count on the root `<testsuites>`, which that schema does not
//! allow (the suites carry their own), so [`render`] drops that one
//! attribute.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::exit_code::ExitCode;
use crate::summary::Summary;
use crate::verdict::{CheckResult, Verdict};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

/// File name in a run folder (and in a compare folder, for all variants).
pub const FILE: &str = "junit.xml";

/// The `junit.xml` exporter: one suite, the run's
/// ([`super::export::RunResults::junit_name`] names the report).
pub struct Junit;

impl super::export::Exporter for Junit {
    fn file_name(&self) -> &str {
        FILE
    }

    fn serialize(&self, run: &super::export::RunResults<'_>) -> anyhow::Result<Vec<u8>> {
        Ok(render(run.junit_name, vec![suite(run.summary, run.results)])?.into_bytes())
    }
}

/// The test suite of one run: `<scenario>/<variant>`.
pub fn suite(summary: &Summary, results: &[CheckResult]) -> TestSuite {
    let mut suite = TestSuite::new(format!("{}/{}", summary.scenario, summary.variant));
    suite.set_time(std::time::Duration::from_secs_f64(
        summary.duration_s.max(0.0),
    ));
    describe_suite(
        &mut suite,
        &summary.provenance.started_utc,
        [
            ("scenario", summary.scenario.clone()),
            ("variant", summary.variant.clone()),
            ("seed", summary.seed.to_string()),
            ("target", summary.target.clone()),
        ],
    );
    let mut run = TestCase::new("run", run_status(summary));
    run.set_classname("specstorm");
    run.set_time(std::time::Duration::from_secs_f64(
        summary.duration_s.max(0.0),
    ));
    suite.add_test_case(run);
    for r in results {
        let mut case = TestCase::new(r.invariant.clone(), invariant_status(summary, r));
        case.set_classname("specstorm.invariants");
        suite.add_test_case(case);
    }
    for t in &summary.thresholds {
        let status = if t.passed {
            TestCaseStatus::success()
        } else {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(format!("threshold breached: {}", t.describe()));
            s.set_description(format!("threshold breached: {}", t.describe()));
            s.set_type("threshold");
            s
        };
        let mut case = TestCase::new(t.threshold.clone(), status);
        case.set_classname("specstorm.thresholds");
        suite.add_test_case(case);
    }
    suite
}

/// The test suite of a run that ended before its audit (a target that
/// could not be used, an interruption before the load): one `run` case in
/// error, with the reason.
pub fn failed_suite(scenario: &str, variant: &str, code: ExitCode, reason: &str) -> TestSuite {
    let mut suite = TestSuite::new(format!("{scenario}/{variant}"));
    describe_suite(
        &mut suite,
        &humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        [
            ("scenario", scenario.to_string()),
            ("variant", variant.to_string()),
        ],
    );
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_message(reason.to_string());
    status.set_description(reason.to_string());
    status.set_type(format!("exit {}", code.code()));
    let mut case = TestCase::new("run", status);
    case.set_classname("specstorm");
    suite.add_test_case(case);
    suite
}

/// A whole report of one or more runs (a compare writes one for all its
/// variants). Errors: none expected; XML serialization of plain strings.
pub fn render(name: &str, suites: Vec<TestSuite>) -> anyhow::Result<String> {
    let mut report = Report::new(name.to_string());
    report.add_test_suites(suites);
    Ok(without_root_skipped(&report.to_string()?))
}

/// The suite's `timestamp` (the run's UTC start), the `hostname` it ran
/// on, and its `<properties>`.
fn describe_suite<const N: usize>(
    suite: &mut TestSuite,
    started_utc: &str,
    properties: [(&str, String); N],
) {
    if !started_utc.is_empty() {
        suite.extra.insert("timestamp".into(), started_utc.into());
    }
    if let Ok(host) = nix::unistd::gethostname() {
        suite
            .extra
            .insert("hostname".into(), host.to_string_lossy().as_ref().into());
    }
    for (name, value) in properties {
        suite.add_property((name.to_string(), value));
    }
}

/// `xml` with the `skipped` attribute of its root `<testsuites>` start
/// tag removed (see the module doc). quick-junit writes that tag as one
/// line of plain attributes whose values are escaped, so no value holds
/// a `"` or a `>`.
fn without_root_skipped(xml: &str) -> String {
    let Some(open) = xml.find("<testsuites") else {
        return xml.to_string();
    };
    let end = open + xml[open..].find('>').unwrap_or(0);
    let tag = &xml[open..end];
    let Some(at) = tag.find(" skipped=\"") else {
        return xml.to_string();
    };
    let value_end =
        at + " skipped=\"".len() + tag[at + " skipped=\"".len()..].find('"').unwrap_or(0) + 1;
    format!("{}{}{}", &xml[..open + at], &tag[value_end..], &xml[end..])
}

/// Interrupted and unusable-target runs are errors: nothing was judged.
fn run_status(summary: &Summary) -> TestCaseStatus {
    match summary.exit.exit_code() {
        Some(code @ (ExitCode::Interrupted | ExitCode::Target)) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(summary.exit.rule.clone());
            s.set_description(summary.exit.rule.clone());
            s.set_type(if code == ExitCode::Interrupted {
                "interrupted"
            } else {
                "target"
            });
            s
        }
        // Inconclusive, whether from an unknown verdict or a coverage gap:
        // the run case says so, with the rule, every time.
        Some(ExitCode::Inconclusive) => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(summary.exit.rule.clone());
            s
        }
        _ => TestCaseStatus::success(),
    }
}

/// An invariant's case against the run's expectation: a violation where it
/// should hold fails with the violation's explanation; an expected
/// violation that was not found fails; `unknown` where it should hold is
/// skipped (inconclusive, exit 4), with the reason; an invariant the
/// expectation does not judge is skipped, saying so and its verdict.
fn invariant_status(summary: &Summary, r: &CheckResult) -> TestCaseStatus {
    if summary.expect.ignores(&r.invariant) {
        let mut s = TestCaseStatus::skipped();
        s.set_message(format!(
            "{} not judged (expect.not_judged): its verdict, {}, decides nothing",
            r.invariant, r.verdict
        ));
        return s;
    }
    let expected_violated = summary.expect.violates(&r.invariant);
    let explanation = r
        .first_explanation()
        .unwrap_or_else(|| "(no explanation recorded)".to_string());
    // The text CI systems show: the first finding with its timeline, as
    // the terminal prints it, then the notes the verdict rests on.
    let mut body = String::new();
    if let Some(f) = r.examples.first().or(r.unknown_examples.first()) {
        super::human::finding_lines(&mut body, f, "");
    }
    for n in &r.notes {
        body.push_str(&format!("note: {n}\n"));
    }
    if body.is_empty() {
        body = explanation.clone();
    }
    let failure = |message: String, ty: &str| {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(message);
        s.set_type(ty.to_string());
        s.set_description(body.clone());
        s
    };
    match (r.verdict, expected_violated) {
        // A `holds` over a run that left something unexercised rests on
        // nothing there (the run exits 4): say so instead of passing.
        (Verdict::Holds, false) if !summary.coverage.gaps.is_empty() => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!(
                "{} holds over a run that did not exercise: {}",
                r.invariant,
                summary.coverage.gaps.join("; ")
            ));
            s
        }
        (Verdict::Holds, false) | (Verdict::Violated, true) => TestCaseStatus::success(),
        (Verdict::Violated, false) => failure(
            format!("{} violated ({}): {explanation}", r.invariant, r.violations),
            "violated",
        ),
        (Verdict::Holds, true) => failure(
            format!(
                "{} was expected violated, but it holds: the bug was not found",
                r.invariant
            ),
            "expected-violation-not-found",
        ),
        (Verdict::Unknown, true) => failure(
            format!(
                "{} was expected violated, but the run could not decide: {explanation}",
                r.invariant
            ),
            "expected-violation-not-found",
        ),
        (Verdict::Unknown, false) => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("{} unknown: {explanation}", r.invariant));
            s.set_description(body.clone());
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::without_root_skipped;

    #[test]
    fn only_the_roots_skipped_attribute_goes() {
        let xml = "<?xml version=\"1.0\"?>\n<testsuites name=\"a&quot;b\" tests=\"2\" skipped=\"1\" failures=\"0\" errors=\"0\">\n<testsuite name=\"s\" tests=\"2\" skipped=\"1\">";
        assert_eq!(
            without_root_skipped(xml),
            "<?xml version=\"1.0\"?>\n<testsuites name=\"a&quot;b\" tests=\"2\" failures=\"0\" errors=\"0\">\n<testsuite name=\"s\" tests=\"2\" skipped=\"1\">"
        );
        let none = "<testsuites name=\"x\" tests=\"0\">";
        assert_eq!(without_root_skipped(none), none);
    }
}
