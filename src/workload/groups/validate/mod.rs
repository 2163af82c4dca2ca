//! `specstorm validate RUN_DIR`: trace validation. A groups run of the
//! in-process SQLite target is checked against BacktalkGroups.tla itself,
//! by TLC: the run folder gets a TLA+ module holding the recorded steps
//! ([`module`]), mapped onto the spec's actions by their roles
//! ([`design`], [`trace`]), and TLC ([`tlc`]) is asked whether some order
//! the steps' intervals allow is a behavior of the spec that never
//! violates an invariant (consistent, exit 0); if none, whether some order
//! is a behavior at all (finding b, a faithful run of a broken design,
//! exit 1) or none is (finding a, the implementation did what the spec
//! does not allow, exit 1). docs/validate.md says why this is sound.
//!
//! Reached through the registry (`Workload::validate`); its options are
//! [`crate::validate`]'s.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it.

pub mod design;
pub mod finding;
pub mod module;
pub mod states;
pub mod tlc;
pub mod trace;

use crate::exit_code::ExitCode;
pub use crate::validate::ValidateOptions;
use crate::workload::groups::checker::tables::{GroupRow, RowSink};
use crate::workload::value::Value;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The spec validated against by default (specs/BacktalkGroups.tla).
pub const DEFAULT_SPEC: &str = include_str!("../../../../specs/BacktalkGroups.tla");

/// The answer, as `validate.json` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Some order is a behavior that reaches the final tables and never
    /// violates an invariant.
    Consistent,
    /// Finding (a): no order of the recorded steps is a behavior of the
    /// spec ending in the final tables.
    NoBehavior,
    /// Finding (b): orders that are behaviors exist, and every one of
    /// them violates an invariant.
    ViolatesInvariant,
    /// A bound stopped TLC before it could tell.
    Cut,
}

/// Why validation could not judge, with its exit code.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// Not a groups run folder of the in-process target, a file missing,
    /// a spec file without a module, a design refused, a tool missing:
    /// exit 2.
    #[error("{0}")]
    Usage(String),
    /// The history is outside the spec: exit 4.
    #[error("{0}")]
    Inconclusive(String),
    /// A file could not be read or written, or TLC failed: exit 3.
    #[error("{0}")]
    Unreadable(String),
}

impl ValidateError {
    /// cli.md's code.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ValidateError::Usage(_) => ExitCode::Usage,
            ValidateError::Inconclusive(_) => ExitCode::Inconclusive,
            ValidateError::Unreadable(_) => ExitCode::Target,
        }
    }
}

/// Runs `specstorm validate` and prints what it found; returns the exit code.
pub fn main(opts: &ValidateOptions) -> ExitCode {
    match validate(opts) {
        Ok(v) => match v {
            Verdict::Consistent => ExitCode::Met,
            Verdict::NoBehavior | Verdict::ViolatesInvariant => ExitCode::NotMet,
            Verdict::Cut => ExitCode::Inconclusive,
        },
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "specstorm: validate: {e}");
            e.exit_code()
        }
    }
}

#[derive(Default)]
struct Rows {
    t: module::FinalTables,
}

impl RowSink for Rows {
    fn event(&mut self, id: &Value, _: &Value, _: &Value) {
        self.t.events.push(text(id));
    }
    fn group(&mut self, row: GroupRow) {
        self.t.groups.push((
            text(&row.id),
            row.status.as_str().map(str::to_string),
            row.event_count.as_i64(),
        ));
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Text(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Null => "NULL".into(),
    }
}

/// The spec's module name: the word after `MODULE` on its first line.
fn module_name(spec: &str) -> Option<String> {
    let line = spec.lines().find(|l| l.contains("MODULE"))?;
    let name = line.split("MODULE").nth(1)?.trim().trim_matches('-').trim();
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| name.to_string())
}

/// [`main`] without the printing of errors.
pub fn validate(opts: &ValidateOptions) -> Result<Verdict, ValidateError> {
    let usage = ValidateError::Usage;
    let dir = &opts.run_dir;
    let scenario = dir.join("scenario.toml");
    let history = crate::history::file::in_folder(dir);
    for f in [&scenario, &history, &dir.join("target.db")] {
        if !f.is_file() {
            return Err(usage(format!(
                "{}: not found (validate takes the folder of a groups run of the in-process \
                 SQLite target)",
                f.display()
            )));
        }
    }
    let spec_text = match &opts.spec {
        Some(p) => {
            std::fs::read_to_string(p).map_err(|e| usage(format!("--spec {}: {e}", p.display())))?
        }
        None => DEFAULT_SPEC.to_string(),
    };
    let spec_name = module_name(&spec_text)
        .ok_or_else(|| usage("the spec file has no `---- MODULE Name ----` line".into()))?;
    let spec_hash = format!("{:x}", Sha256::digest(spec_text.as_bytes()));

    let p = crate::workload::groups::prepare::prepare_offline(Some(&scenario), &[])
        .map_err(|e| usage(format!("the saved scenario cannot be used: {e}")))?;
    if p.scenario.target.url.is_some() || p.scenario.target.command.is_some() {
        return Err(usage(
            "validate takes runs of the in-process SQLite target only (an HTTP run records no \
             statement intervals)"
                .into(),
        ));
    }
    let d = design::map(&p.variant)
        .and_then(|d| design::read_observes_status(&p.variant, &d).map(|()| d))
        .map_err(|r| {
            usage(format!(
                "design refused: {r}. Designs whose steps do not map one-to-one onto the spec's \
             actions need a refinement mapping (docs/validate.md)"
            ))
        })?;

    let entries = crate::history::reader::read(&history)
        .map_err(|e| ValidateError::Unreadable(format!("{e:#}")))?;
    let trace = trace::of_history(entries, &d)
        .map_err(|e| ValidateError::Unreadable(format!("{}: {e:#}", history.display())))?
        .map_err(|o| ValidateError::Inconclusive(o.to_string()))?;
    if let Some(o) = trace.unrecorded() {
        return Err(ValidateError::Inconclusive(o.to_string()));
    }

    let mut rows = Rows::default();
    let mut conn = crate::audit_db::open_untrusted(&dir.join("target.db"), Default::default())
        .map_err(|e| ValidateError::Unreadable(e.to_string()))?;
    crate::workload::groups::tables_read::read_rows_with(
        &mut conn,
        (&p.variant.export_events, &p.variant.export_groups),
        &trace.namespace,
        &|| 0,
        &mut rows,
    )
    .map_err(|e| ValidateError::Unreadable(conn.error(&e).to_string()))?;

    let name = format!("Trace_{spec_name}");
    let w = module::write(
        &name,
        &spec_name,
        &trace,
        d.variant.name(),
        &rows.t,
        opts.max_states,
    );
    let out = dir.join("validate");
    let written = write_files(&out, &spec_name, &spec_text, &name, &w)?;
    let tools = tlc::locate().map_err(|e| usage(e.to_string()))?;
    let tlc_err = |e: tlc::TlcError| match e {
        tlc::TlcError::Missing(_) => usage(e.to_string()),
        e => ValidateError::Unreadable(e.to_string()),
    };
    let cut = |a: &tlc::Answer| opts.max_states.is_some_and(|n| a.distinct >= n);

    println!(
        "spec: {spec_name} (sha256 {spec_hash}), variant {}; {} steps of {} ops mapped",
        d.variant.name(),
        w.steps,
        trace.queues.values().map(Vec::len).sum::<usize>() + trace.resolved_groups.len()
    );
    let good = tlc::run(
        &tools,
        &out,
        &name,
        &format!("{name}_good.cfg"),
        &out.join("tlc-good.out"),
    )
    .map_err(tlc_err)?;
    println!(
        "TLC, an order that never violates an invariant: {} ({} states generated, {} distinct)",
        if good.witness { "found" } else { "none" },
        good.generated,
        good.distinct
    );
    let mut any = None;
    let (mut every, mut undecided) = (Vec::new(), Vec::new());
    let mut named = finding::Named::default();
    let verdict = if good.witness {
        Verdict::Consistent
    } else if cut(&good) {
        Verdict::Cut
    } else {
        // Every reachable state, for naming the step of finding (a).
        let dump = out.join("tlc-any-states");
        let a = tlc::run_dumping(
            &tools,
            &out,
            &name,
            &format!("{name}_any.cfg"),
            &out.join("tlc-any.out"),
            &dump,
        )
        .map_err(tlc_err)?;
        let dumped = dump.with_extension("dump");
        println!(
            "TLC, any order that is a behavior: {} ({} states generated, {} distinct)",
            if a.witness { "found" } else { "none" },
            a.generated,
            a.distinct
        );
        let v = if a.witness {
            let (all, unsure) = violated_in_every_order(&tools, &out, &name, &cut)?;
            every = all;
            undecided = unsure;
            named = finding::where_violated(
                &tools,
                &out,
                &name,
                &w,
                &trace,
                &out.join("tlc-any.out"),
                &every,
            )?;
            Verdict::ViolatesInvariant
        } else if cut(&a) {
            Verdict::Cut
        } else {
            let file = std::fs::File::open(&dumped)
                .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", dumped.display())))?;
            let reach = states::reach(std::io::BufReader::new(file), w.steps)
                .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", dumped.display())))?;
            named = finding::why_no_behavior(&reach, &trace, &w, &rows.t);
            Verdict::NoBehavior
        };
        // The dump grows with the states (every variable of each): read, not kept.
        let _ = std::fs::remove_file(&dumped);
        any = Some(a);
        v
    };
    let words = match verdict {
        Verdict::Consistent => {
            "consistent: an order of the recorded steps is a behavior of the \
                                spec, ends in the final tables and violates no invariant"
        }
        Verdict::NoBehavior => {
            "finding (a): no order of the recorded steps is a behavior of the \
                                spec ending in the final tables: the implementation did \
                                something the spec does not allow"
        }
        Verdict::ViolatesInvariant => {
            "finding (b): the recorded steps are a behavior of the \
                                       spec, and every order of them that is one violates an \
                                       invariant: a faithful run of a broken design"
        }
        Verdict::Cut => "inconclusive: --max-states stopped TLC before it could tell",
    };
    println!("{words}");
    if verdict == Verdict::ViolatesInvariant {
        if every.is_empty() {
            println!(
                "no single invariant is violated by every such order (each violates one of \
                 them){}",
                if undecided.is_empty() {
                    String::new()
                } else {
                    format!("; --max-states stopped TLC on {}", undecided.join(", "))
                }
            );
        } else {
            println!("violated by every such order: {}", every.join(", "));
        }
    }
    for l in &named.lines {
        println!("{l}");
    }
    let record = serde_json::json!({
        "verdict": verdict,
        "spec": { "module": spec_name, "sha256": spec_hash,
                  "file": opts.spec.as_ref().map(|p| p.display().to_string()) },
        "variant": d.variant.name(),
        "steps": w.steps,
        "tlc": {
            "good_order": { "witness": good.witness, "generated": good.generated, "distinct": good.distinct },
            "violated_in_every_order": every,
            "named_steps": named.json,
            "any_order": any.map(|a| serde_json::json!({ "witness": a.witness, "generated": a.generated, "distinct": a.distinct })),
        },
        "overridden": module::OVERRIDES.iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        "files": written.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "names": w.names.iter().map(|(s, id)| serde_json::json!([s, id])).collect::<Vec<_>>(),
    });
    let json = out.join("validate.json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(&record).unwrap_or_default() + "\n",
    )
    .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", json.display())))?;
    println!("wrote {} and {}", out.display(), json.display());
    Ok(verdict)
}

/// For finding (b): the invariants that every complete order violates
/// (TLC finds no complete order that keeps that one), and those a bound
/// stopped TLC on. The reduction to one order per class keeps each
/// invariant on its own (docs/validate.md), so each answer holds of all
/// allowed orders.
fn violated_in_every_order(
    tools: &(PathBuf, PathBuf),
    out: &Path,
    name: &str,
    cut: &dyn Fn(&tlc::Answer) -> bool,
) -> Result<(Vec<&'static str>, Vec<&'static str>), ValidateError> {
    let (mut every, mut undecided) = (Vec::new(), Vec::new());
    for inv in module::INVARIANTS {
        let a = tlc::run(
            tools,
            out,
            name,
            &format!("{name}_keeps_{inv}.cfg"),
            &out.join(format!("tlc-keeps-{inv}.out")),
        )
        .map_err(|e| ValidateError::Unreadable(e.to_string()))?;
        if a.witness {
            continue;
        }
        if cut(&a) {
            undecided.push(inv);
        } else {
            every.push(inv);
        }
    }
    Ok((every, undecided))
}

fn write_files(
    out: &Path,
    spec_name: &str,
    spec_text: &str,
    name: &str,
    w: &module::Written,
) -> Result<Vec<PathBuf>, ValidateError> {
    std::fs::create_dir_all(out)
        .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", out.display())))?;
    let files = [
        (format!("{spec_name}.tla"), spec_text),
        (format!("{name}.tla"), w.module.as_str()),
        (format!("{name}_good.cfg"), w.good_cfg.as_str()),
        (format!("{name}_any.cfg"), w.any_cfg.as_str()),
    ];
    let keeps = w
        .keeps_cfgs
        .iter()
        .map(|(inv, cfg)| (format!("{name}_keeps_{inv}.cfg"), cfg.as_str()));
    let mut paths = Vec::new();
    for (f, text) in files.into_iter().chain(keeps) {
        let p = out.join(f);
        std::fs::write(&p, text)
            .map_err(|e| ValidateError::Unreadable(format!("{}: {e}", p.display())))?;
        paths.push(p);
    }
    Ok(paths)
}
