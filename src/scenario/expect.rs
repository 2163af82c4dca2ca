//! What a scenario expects of a run: its verdicts (`expect`) and its
//! figures (`thresholds`), per variant (`[[variants]]`), as k6 users know
//! them. A naive variant run in CI passes when its bug is found.
//!
//! The run's exit code (cli.md) is decided against these in
//! `crate::summary::exit`; this module only holds the types, parses the
//! threshold text and says which expectation applies to a variant.
//!
//! Layer: model. May import the modules of its own layer and of the layers
//! below it (core).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// `expect`: which invariants the run must find violated, and which it
/// does not judge.
///
/// `"holds"` (the default): every invariant holds. `{ violated = [A, B] }`:
/// exactly A and B are violated and every other invariant holds (cli.md).
/// `not_judged = [C]` (with or without `violated`): C's verdict, whatever
/// it is, decides nothing (a lost-update variant breaks CountExact, and
/// with it the premise NoMissedRegression rests on, which then says
/// `unknown`). The loader refuses an invariant named in both lists.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(try_from = "ExpectRepr", into = "ExpectRepr")]
pub struct Expect {
    /// Invariants (spec names) the run must find violated; empty: every
    /// judged invariant holds.
    pub violated: Vec<String>,
    /// Invariants whose verdicts do not decide the exit.
    pub not_judged: Vec<String>,
}

impl Expect {
    /// `"holds"`: every invariant holds, all judged.
    pub fn holds() -> Self {
        Expect::default()
    }

    /// `{ violated = [names] }`: exactly these violated, every other holds.
    pub fn violated<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        Expect {
            violated: names.into_iter().map(Into::into).collect(),
            not_judged: Vec::new(),
        }
    }

    /// The same expectation, with these invariants not judged.
    pub fn not_judging<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.not_judged = names.into_iter().map(Into::into).collect();
        self
    }

    /// Whether `invariant` is expected violated.
    pub fn violates(&self, invariant: &str) -> bool {
        self.violated.iter().any(|i| i == invariant)
    }

    /// Whether `invariant`'s verdict decides nothing (`not_judged`).
    pub fn ignores(&self, invariant: &str) -> bool {
        self.not_judged.iter().any(|i| i == invariant)
    }

    /// The expectation with every invariant a `catch_rate` threshold
    /// names moved to `not_judged`: whether one seed violates it is
    /// chance, and the rate over the seeds is what is asked of it, so a
    /// seed's verdict on it decides nothing (cli.md, "Catch rates").
    pub fn rated_by(mut self, thresholds: &[Threshold]) -> Expect {
        for name in thresholds.iter().filter_map(Threshold::catch_rate) {
            self.violated.retain(|v| v != name);
            if !self.ignores(name) {
                self.not_judged.push(name.to_string());
            }
        }
        self
    }

    /// Whether every judged invariant is expected to hold.
    pub fn is_holds(&self) -> bool {
        self.violated.is_empty()
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.violated.is_empty() {
            f.write_str("holds")?;
        } else {
            write!(f, "violated: {}", self.violated.join(", "))?;
        }
        if !self.not_judged.is_empty() {
            write!(f, "; not judged: {}", self.not_judged.join(", "))?;
        }
        Ok(())
    }
}

/// How `expect` is written in TOML and JSON.
#[derive(Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(untagged)]
enum ExpectRepr {
    Word(String),
    Table {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        violated: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_judged: Vec<String>,
    },
}

impl TryFrom<ExpectRepr> for Expect {
    type Error = String;
    fn try_from(r: ExpectRepr) -> Result<Self, String> {
        match r {
            ExpectRepr::Word(w) if w == "holds" => Ok(Expect::holds()),
            ExpectRepr::Word(w) => Err(format!(
                "expected \"holds\" or {{ violated = [...] }}, found {w:?}"
            )),
            ExpectRepr::Table {
                violated,
                not_judged,
            } => Ok(Expect {
                violated,
                not_judged,
            }),
        }
    }
}

impl From<Expect> for ExpectRepr {
    fn from(e: Expect) -> Self {
        if e == Expect::holds() {
            return ExpectRepr::Word("holds".into());
        }
        ExpectRepr::Table {
            violated: e.violated,
            not_judged: e.not_judged,
        }
    }
}

/// A comparison of a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Cmp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
        }
    }

    /// Whether `actual <op> limit` holds.
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Cmp::Lt => actual < limit,
            Cmp::Le => actual <= limit,
            Cmp::Gt => actual > limit,
            Cmp::Ge => actual >= limit,
            Cmp::Eq => actual == limit,
            Cmp::Ne => actual != limit,
        }
    }
}

/// One threshold: `"<figure> <op> <number>"`, where the figure is named by
/// its dotted path in `summary.json` (`latency_us.ingest.p99 < 20000`: µs;
/// `throughput_ops_per_s.total > 5000`: ops/s; `stranded_events.total == 0`).
///
/// Written as that string, or as a table `{ threshold = "...", abort_on_fail
/// = true, delay_abort_eval = "5s" }` (k6's `abortOnFail` and
/// `delayAbortEval`): such a threshold is judged while the load runs as
/// well, and its first breach stops the load (`crate::abort_on_fail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(try_from = "ThresholdRepr", into = "ThresholdRepr")]
pub struct Threshold {
    /// The figure's path in `summary.json`, split at dots.
    pub path: Vec<String>,
    /// The comparison.
    pub cmp: Cmp,
    /// The limit, in the figure's own unit.
    pub limit: f64,
    /// Judged on the live figures too while the load runs; the first
    /// breach stops the load (default false: judged at the end only).
    pub abort_on_fail: bool,
    /// Not judged live before this long after the load began (default 0).
    pub delay_abort_eval: Duration,
}

/// How a threshold is written in TOML and JSON: its text alone, or a
/// table with the live judgement's keys (the loader checks the table's
/// keys before serde reads it).
#[derive(Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(untagged)]
enum ThresholdRepr {
    Text(String),
    Table {
        threshold: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        abort_on_fail: bool,
        /// A duration string ("5s").
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delay_abort_eval: Option<String>,
    },
}

impl TryFrom<ThresholdRepr> for Threshold {
    type Error = String;
    fn try_from(r: ThresholdRepr) -> Result<Self, String> {
        match r {
            ThresholdRepr::Text(text) => Threshold::parse(&text),
            ThresholdRepr::Table {
                threshold,
                abort_on_fail,
                delay_abort_eval,
            } => {
                let delay = match delay_abort_eval {
                    Some(d) => humantime::parse_duration(&d)
                        .map_err(|e| format!("invalid duration {d:?}: {e}"))?,
                    None => Duration::ZERO,
                };
                Ok(Threshold {
                    abort_on_fail,
                    delay_abort_eval: delay,
                    ..Threshold::parse(&threshold)?
                })
            }
        }
    }
}

impl From<Threshold> for ThresholdRepr {
    fn from(t: Threshold) -> Self {
        // A plain threshold stays a string, as it was always written.
        if !t.abort_on_fail && t.delay_abort_eval.is_zero() {
            return ThresholdRepr::Text(t.to_string());
        }
        ThresholdRepr::Table {
            threshold: t.to_string(),
            abort_on_fail: t.abort_on_fail,
            delay_abort_eval: (!t.delay_abort_eval.is_zero())
                .then(|| humantime::format_duration(t.delay_abort_eval).to_string()),
        }
    }
}

impl Threshold {
    /// Parses `"<path> <op> <number>"` (spaces around the operator are
    /// optional). Errors: the reason, for the scenario loader to place.
    pub fn parse(text: &str) -> Result<Threshold, String> {
        let hint = "write it as \"<figure> <op> <number>\", e.g. \"latency_us.ingest.p99 < 20000\", with <op> one of <, <=, >, >=, ==, !=";
        let at = text
            .find(['<', '>', '=', '!'])
            .ok_or_else(|| format!("no comparison in {text:?}: {hint}"))?;
        let (left, rest) = text.split_at(at);
        let (cmp, right) = [
            ("<=", Cmp::Le),
            (">=", Cmp::Ge),
            ("==", Cmp::Eq),
            ("!=", Cmp::Ne),
            ("<", Cmp::Lt),
            (">", Cmp::Gt),
        ]
        .into_iter()
        .find_map(|(sym, cmp)| rest.strip_prefix(sym).map(|r| (cmp, r)))
        .ok_or_else(|| format!("unknown comparison in {text:?}: {hint}"))?;
        let left = left.trim();
        if left.is_empty() {
            return Err(format!(
                "no figure before the comparison in {text:?}: {hint}"
            ));
        }
        let path: Vec<String> = left.split('.').map(str::to_string).collect();
        if path.iter().any(|s| {
            s.is_empty()
                || !s
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        }) {
            return Err(format!(
                "{left:?} is not a figure's dotted path (letters, digits, `_`, `-` between dots): {hint}"
            ));
        }
        let right = right.trim();
        if right.starts_with(['<', '>', '=', '!']) {
            return Err(format!("unknown comparison in {text:?}: {hint}"));
        }
        let limit: f64 = right
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| format!("{right:?} is not a finite number in {text:?}: {hint}"))?;
        Ok(Threshold {
            path,
            cmp,
            limit,
            abort_on_fail: false,
            delay_abort_eval: Duration::ZERO,
        })
    }

    /// The invariant a `catch_rate.<Invariant>` threshold names: the
    /// share of a series' seeds (`--seeds`) that found it violated, a
    /// figure of the series rather than of one run (a run alone is a
    /// series of one: 1 when violated, else 0).
    pub fn catch_rate(&self) -> Option<&str> {
        match self.path.as_slice() {
            [head, invariant] if head == CATCH_RATE => Some(invariant),
            _ => None,
        }
    }

    /// The figure's dotted path.
    pub fn figure(&self) -> String {
        self.path.join(".")
    }

    /// The figure's value in a summary (JSON), if it is there and a number.
    pub fn actual(&self, summary: &serde_json::Value) -> Option<f64> {
        lookup(summary, &self.path)?.as_f64()
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.figure(), self.cmp.symbol(), self.limit)
    }
}

/// The first key of a catch-rate threshold's figure
/// ([`Threshold::catch_rate`]).
pub const CATCH_RATE: &str = "catch_rate";

/// The value at a dotted path in JSON, if any.
pub fn lookup<'v>(v: &'v serde_json::Value, path: &[String]) -> Option<&'v serde_json::Value> {
    path.iter().try_fold(v, |v, key| v.get(key))
}

/// One `[[variants]]` entry: a variant `compare` runs, with what is
/// expected of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct VariantEntry {
    /// A statement file (relative to the scenario's folder) or a built-in
    /// variant's name.
    pub variant: String,
    /// Name in tables and folder names (default: the file's stem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its expectation (default: the scenario's `expect`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// Thresholds of this variant, in addition to the scenario's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Threshold>,
}
