//! The command line: `specstorm run` (the main job), `specstorm check`
//! (validate without running), `specstorm serve` (the reference HTTP
//! target), `specstorm check-target` (a harmless contract probe of a
//! running service), `specstorm report` (summary, plots and baseline of a
//! finished run), `specstorm compare` (one scenario against several
//! variants), `specstorm audit` (the checkers again over a saved run
//! folder), `specstorm merge` (one run folder from the shards of a
//! sharded run), `specstorm history` (a run folder's history as JSON
//! lines) and `specstorm explore` (every interleaving of a small world,
//! checked after every step). Exit codes follow `docs/cli.md`.
//!
//! Layer: app. May import the modules of its own layer and of the layers
//! below it (core, model, config, engine, target and nemesis, workload and
//! report, ui and server).

use crate::compare::{compare, table, CompareOptions};
use crate::control::Control;
use crate::exit_code::ExitCode;
use crate::pipeline::run;
use crate::prepare::{RunError, RunOptions};
use crate::probe_report::ProbeOptions;
use crate::server::{serve, LogLevel, ServeOptions};
use crate::watch::Watch;
use crate::workload::registry;
use clap::{Args, Parser, Subcommand};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A load-generating chaos test bench: runs a scenario against a real
/// implementation, records the history, and audits the final tables against
/// the invariants of its TLA+ spec.
#[derive(Debug, Parser)]
#[command(name = "specstorm", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// More log lines on stderr (the nemeses, the fault proxy, the
    /// target): -v info, -vv debug, -vvv trace; warnings are always shown.
    /// RUST_LOG (e.g. RUST_LOG=specstorm::nemesis=debug) takes precedence.
    /// `serve` has --log-level instead.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

impl Cli {
    /// The command line as clap sees it, with the long `--version`
    /// ([`crate::cli_meta::long_version`]).
    pub fn command_with_version() -> clap::Command {
        use clap::CommandFactory;
        // Once per process: clap keeps a 'static text.
        let long: &'static str = Box::leak(crate::cli_meta::long_version().into_boxed_str());
        Cli::command().long_version(long)
    }

    /// Parses the process's arguments (exits on --help, --version or a
    /// usage error, as clap does).
    pub fn parse_args() -> Cli {
        use clap::FromArgMatches;
        let matches = Cli::command_with_version().get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// The scenario and its command-line overrides (shared by `run` and `check`).
#[derive(Debug, Args)]
pub struct ScenarioArgs {
    /// Scenario file (TOML). Without it, the default scenario embedded in
    /// the binary runs against a fresh SQLite file.
    pub scenario: Option<PathBuf>,
    /// Stop after this wall time (e.g. 30s, 2m); overrides stop.duration.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Seed of every random choice (0 to 2^63-1); overrides the scenario's seed.
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Override a scenario key, e.g. --set load.ingesters=4 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl ScenarioArgs {
    /// `--set` overrides, then `--duration` and `--seed` as overrides.
    fn overrides(&self) -> Vec<String> {
        let mut o = self.set.clone();
        if let Some(d) = self.duration {
            o.push(format!(
                "stop.duration=\"{}\"",
                humantime::format_duration(d)
            ));
        }
        if let Some(seed) = self.seed {
            o.push(format!("seed={seed}"));
        }
        o
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario (default: the embedded default scenario), audit, save results.
    #[command(after_long_help = crate::cli_meta::EXIT_CODES)]
    Run {
        /// Scenario file and its overrides.
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// Run folder (default results/UTC-TIME-SCENARIO-VARIANT/; with
        /// --seeds, the series' folder, default
        /// results/UTC-TIME-seeds-SCENARIO-VARIANT/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run once per seed, one after another, each into DIR/seed-N/
        /// (A..B inclusive, or a list A,B,C), then print each invariant's
        /// catch rate over the seeds and judge `catch_rate.<Invariant>`
        /// thresholds; writes DIR/series.json and DIR/junit.xml.
        #[arg(long, value_name = "A..B", value_parser = crate::seed_list::SeedList::parse,
              conflicts_with = "seed")]
        seeds: Option<crate::seed_list::SeedList>,
        /// Nothing while the run goes (no dashboard, no progress lines).
        #[arg(long, short)]
        quiet: bool,
        /// Plain progress lines on stderr instead of the live dashboard
        /// (also without a terminal, or with CI=true).
        #[arg(long)]
        no_tui: bool,
        /// Keep the dashboard's verdict panel open until a key is pressed
        /// (default: it closes after 5 s, or at a key, and the summary
        /// is printed).
        #[arg(long)]
        keep_open: bool,
        /// Run as runner i of n sharing one HTTP target (target.url): a
        /// disjoint part of the event ids, stop.events and load.rate.
        #[arg(long, value_name = "I/N", value_parser = crate::shard::Shard::parse,
              requires = "run_id", group = "sharding", conflicts_with = "seeds")]
        shard: Option<crate::shard::Shard>,
        /// Run as one of N shards, its index i read from the environment
        /// (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX, or the variable
        /// --shard-from-env names): the same as --shard i/N.
        #[arg(long, value_name = "N", requires = "run_id", group = "sharding",
              conflicts_with = "seeds", value_parser = clap::value_parser!(u32).range(1..))]
        shard_count: Option<u32>,
        /// The environment variable holding this runner's shard index, for
        /// --shard-count (default JOB_COMPLETION_INDEX).
        #[arg(
            long,
            value_name = "NAME",
            requires = "shard_count",
            conflicts_with = "shard"
        )]
        shard_from_env: Option<String>,
        /// Id shared by every shard of one run (letters, digits, - and _):
        /// the target's project namespace derives from it.
        #[arg(long, value_name = "ID", requires = "sharding")]
        run_id: Option<String>,
        /// Serve the live figures for Prometheus at http://ADDR/metrics
        /// while the run goes: PORT (on 127.0.0.1) or IP:PORT (port 0: any
        /// free port; the address is printed on stderr).
        #[arg(long, value_name = "ADDR", value_parser = crate::metrics::exporter::parse_addr,
              conflicts_with = "seeds")]
        metrics_addr: Option<SocketAddr>,
        /// Keep serving the final figures this long after the results are
        /// saved, so that a scraper reads them (Ctrl-C ends it sooner).
        #[arg(long, value_name = "DURATION", default_value = "0s",
              value_parser = humantime::parse_duration, requires = "metrics_addr")]
        metrics_linger: std::time::Duration,
        /// What goes to stdout: text (the summary), or json (summary.json's
        /// content; the summary and progress lines go to stderr, and no
        /// dashboard is drawn).
        #[arg(long, value_enum, default_value = "text")]
        format: OutputFormat,
    },
    /// Re-run the checkers offline over a run folder's saved history and
    /// final tables, and compare with the run's verdicts (writes audit.json).
    /// Exit 3 if they differ by the same checkers (other checkers: the new
    /// verdicts decide); 2 if RUN_DIR is no run folder. A folder where
    /// audit.json cannot be written: a warning, the verdicts' exit.
    Audit {
        /// The run folder.
        run_dir: PathBuf,
        /// SQLite virtual-machine steps all the audit's queries on the
        /// folder's database may take together; a query still running then
        /// is stopped (exit 3). A 2M-event run's exports take about 14
        /// million.
        #[arg(long, default_value_t = crate::audit_db::DEFAULT_MAX_STEPS,
              value_parser = clap::value_parser!(u64).range(1..))]
        max_steps: u64,
        /// The largest database (with its -wal and -journal files) the
        /// audit reads, in MiB; a larger one is refused (exit 2).
        #[arg(long, default_value_t = crate::audit_db::DEFAULT_MAX_DB_MIB,
              value_parser = clap::value_parser!(u64).range(1..=(u64::MAX >> 20)))]
        max_db_mib: u64,
        /// What goes to stdout: text (the audit in words), or json
        /// (audit.json's content; the words go to stderr).
        #[arg(long, value_enum, default_value = "text")]
        format: OutputFormat,
    },
    /// Print a run folder's history as JSON lines, one entry per line, in
    /// either format (`history.bin`, or an earlier release's
    /// `history.jsonl`): for `jq` and other line tools. A last chunk cut
    /// mid-way (a killed run's) is left out, with a warning. Exit 2 if
    /// there is no history; 3 if it cannot be read.
    History {
        /// The run folder, or a history file.
        path: PathBuf,
    },
    /// Merge the run folders of the shards of one run (`run --shard`) into
    /// one run folder: history, latency log, one audit, summary.
    Merge {
        /// The shards' run folders.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// The merged run folder (new, or empty).
        #[arg(long)]
        out: PathBuf,
        /// Bound on how far the runners' clocks may disagree (one machine:
        /// the default; across machines: the clock sync's error, doubled).
        #[arg(long, default_value = "2ms", value_parser = humantime::parse_duration)]
        clock_skew: Duration,
    },
    /// Run the same scenario, seed and load against several variants, one
    /// after the other, each judged against its own expectation; print a
    /// side-by-side table and write compare.json and junit.xml.
    Compare {
        /// Scenario file and its overrides (applied to every variant).
        #[command(flatten)]
        scenario: ScenarioArgs,
        /// A variant to run (statement file or built-in name), repeatable;
        /// replaces the scenario's [[variants]], each expected to hold
        /// unless the scenario's `expect` says otherwise.
        #[arg(long = "variant", value_name = "FILE")]
        variants: Vec<String>,
        /// Folder of the comparison (default results/UTC-TIME-compare-SCENARIO/).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run each variant once per seed (A..B inclusive, or A,B,C) into
        /// DIR/VARIANT/seed-N/, and print each variant's catch rates side
        /// by side (as `run --seeds`, per variant).
        #[arg(long, value_name = "A..B", value_parser = crate::seed_list::SeedList::parse,
              conflicts_with = "seed")]
        seeds: Option<crate::seed_list::SeedList>,
        /// Table format on stdout.
        #[arg(long, value_enum, default_value = "table")]
        format: TableFormat,
        /// Nothing while the runs go (no dashboard, no progress lines).
        #[arg(long, short)]
        quiet: bool,
        /// Plain progress lines on stderr instead of the live dashboard.
        #[arg(long)]
        no_tui: bool,
        /// Keep the dashboard's verdict panel of each variant open until a
        /// key is pressed (default: it closes after 5 s, or at a key).
        #[arg(long)]
        keep_open: bool,
    },
    /// Validate a scenario and its statement file and print the resolved
    /// configuration, without touching any target.
    Check {
        /// Scenario file and its overrides.
        #[command(flatten)]
        scenario: ScenarioArgs,
    },
    /// Serve a variant over HTTP (contract v1: the groups endpoints for a
    /// groups file, the outbox ones for an outbox file) until SIGTERM or
    /// Ctrl-C. Prints `listening on http://ADDR` on stdout.
    Serve(ServeArgs),
    /// Probe a running service for conformance to the HTTP target contract
    /// (v1, groups workload) with a short, harmless request sequence in a
    /// fresh project namespace; prints one line per check and a verdict.
    /// Exit 0: conforms; 3: unreachable or not conforming; 2: bad URL.
    /// `POST /v1/reset` (destructive) is never called.
    CheckTarget(CheckTargetArgs),
    /// Report on a finished run folder (or a compare folder): print its
    /// summary again, write SVG plots to DIR/plots/, and with --baseline
    /// print every figure's change against an earlier run. Exit 0: report
    /// made (also for a failed run's folder); 1: --baseline flags a
    /// regression (an invariant held in the baseline, violated now); 2: not
    /// a run/compare folder, or a file in it unreadable.
    Report(ReportArgs),
    /// Drive the scenario's `[explore]` world (default: the spec's own;
    /// an outbox scenario: M messages x D deliveries to H handlers, with
    /// Fail() at every step) through every interleaving, each step the variant's real statement
    /// on an in-memory SQLite database, checking the invariants after
    /// every step; print a shortest counterexample. Exit 0: none in the
    /// whole space; 1: a violation; 4: a bound cut the search short; 2:
    /// bad input; 130: Ctrl-C (the figures so far are printed).
    Explore(ExploreArgs),
    /// Check a recorded groups run (in-process SQLite) against the TLA+
    /// spec itself with TLC (trace validation): writes a trace module and
    /// TLC configs into RUN_DIR/validate/. Exit 0: consistent; 1: no order
    /// of the recorded steps is a behavior of the spec, or every one that
    /// is violates an invariant; 4: the run holds a step the spec has no
    /// action for (a failed statement, a crash), or --max-states cut TLC
    /// short; 2: a design that does not map onto the spec's actions, no
    /// run folder, or Java/TLC missing; 3: a file unreadable or TLC failed.
    Validate {
        /// The run folder.
        run_dir: PathBuf,
        /// The spec (default: the bundled specs/BacktalkGroups.tla),
        /// instantiated unchanged.
        #[arg(long, value_name = "FILE.tla")]
        spec: Option<PathBuf>,
        /// Stop TLC after N distinct states (then inconclusive, exit 4,
        /// unless a witness was already found).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_states: Option<u64>,
    },
    /// Re-execute the recorded steps behind one finding of a groups or
    /// outbox run of the in-process SQLite target on a fresh database (one
    /// connection per recorded worker, in an order the steps' intervals
    /// allow), check it again with the same checkers, shrink it to a
    /// minimal set of ops and steps, and write RUN_DIR/replay/finding-N/:
    /// a script for the sqlite3 shell and an explore world. Exit 0:
    /// reproduced (and shrunk); 1: no order the intervals allow
    /// reproduces it; 4: --max-steps cut the search short, or a step
    /// cannot be re-executed (a failed statement, a groups crash), or an
    /// outbox message's attempts alone give no reproducing order; 2: not
    /// a run of the in-process target, no step records, no such
    /// finding (or none at all); 3: a file unreadable or unwritable.
    /// An HTTP run records no server steps: with --reruns N its ops are
    /// sent again to the reference server N times instead.
    Replay {
        /// The run folder.
        run_dir: PathBuf,
        /// Which finding to replay (1-based, as replay lists them).
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        finding: u64,
        /// Most statements one search for an order may execute (each test
        /// of the shrinking has its own budget of this size).
        #[arg(long, value_name = "N", default_value_t = crate::replay::DEFAULT_MAX_STEPS, value_parser = clap::value_parser!(u64).range(1..))]
        max_steps: u64,
        /// An HTTP run (whose server's steps are not recorded): send its
        /// ops again, at their recorded offsets with their recorded
        /// crash and pause faults, to the reference server on a fresh
        /// database N times, and report per invariant in how many reruns
        /// it was violated (RUN_DIR/replay/rerun-K/). Exit 0: every
        /// finding of the run recurred at least once and no rerun
        /// violated an invariant the run did not; 1: otherwise; 4: only
        /// unknown verdicts decided it.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
        reruns: Option<u32>,
    },
    /// Print a shell completion script on stdout, e.g.
    /// `specstorm completions bash > /etc/bash_completion.d/specstorm`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on stdout, e.g. `specstorm man >
    /// specstorm.1; man ./specstorm.1`.
    Man,
}

/// Options of `specstorm explore`.
#[derive(Debug, Args)]
pub struct ExploreArgs {
    /// Scenario file (TOML; default: the embedded default scenario): its
    /// `variant` and `[explore]` world.
    pub scenario: Option<PathBuf>,
    /// Override a scenario key, e.g. --set explore.resolves=3 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Expand no state more than N steps from the initial one (0: no bound).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u64>,
    /// Keep at most N distinct states (0: no bound).
    #[arg(long, value_name = "N")]
    pub max_states: Option<u64>,
    /// How a state's database is restored: savepoint (the path to the
    /// state as nested savepoints, undone and run again in part), serialize
    /// (a snapshot per state) or replay (the path's steps again on a fresh
    /// database).
    #[arg(long, value_enum, default_value = "savepoint")]
    pub restore: crate::explore::Restore,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Options of `specstorm report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run folder, or a compare folder (compare.json and a run folder per variant).
    pub run_dir: PathBuf,
    /// An earlier folder of the same kind: print each figure's change against it.
    #[arg(long, value_name = "DIR")]
    pub baseline: Option<PathBuf>,
    /// Do not write the SVG plots.
    #[arg(long)]
    pub no_plots: bool,
    /// What goes to stdout: text (the report), or json (the summary, the
    /// plots written and, with --baseline, the comparison with each
    /// regression; the text goes to stderr).
    #[arg(long, value_enum, default_value = "text")]
    pub format: OutputFormat,
}

/// What `run`, `audit` and `report` print on stdout: the human text, or
/// the machine-readable result as JSON (the text then goes to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The human text (the default).
    Text,
    /// The result as one JSON document (docs/cli.md, "Machine-readable
    /// output").
    Json,
}

/// How `compare` prints its table.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TableFormat {
    /// Aligned plain text.
    Table,
    /// A GitHub Markdown table.
    Md,
}

/// Options of `specstorm check-target`.
#[derive(Debug, Args)]
pub struct CheckTargetArgs {
    /// Base URL of the service, http:// or https://, e.g.
    /// http://127.0.0.1:8080.
    pub url: String,
    /// An https:// service: a PEM file of CA certificates to trust besides
    /// the system's roots (the scenario's target.ca_file).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure_skip_verify")]
    pub ca_file: Option<PathBuf>,
    /// An https:// service: do not verify its certificate (staging only;
    /// the first line says so).
    #[arg(long)]
    pub insecure_skip_verify: bool,
    /// Connect timeout and total timeout of every request (e.g. 5s, 500ms).
    #[arg(long, default_value = "5s", value_parser = parse_timeout)]
    pub timeout: Duration,
    /// The workload whose endpoints to probe: groups (ingests and resolves
    /// in a fresh namespace of its own) or outbox (read-only: no delivery
    /// is sent).
    #[arg(
        long,
        default_value_t = crate::scenario::Workload::default_workload().name().to_owned(),
        value_name = "NAME"
    )]
    pub workload: String,
}

/// A positive duration (`humantime`).
fn parse_timeout(s: &str) -> Result<Duration, String> {
    match humantime::parse_duration(s) {
        Ok(d) if d.is_zero() => Err("must be positive".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

/// Options of `specstorm serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Statement file (.sql) or built-in variant (groups-atomic, groups-naive,
    /// outbox-protocol, outbox-naive-no-outbox, outbox-naive-no-redo).
    #[arg(long)]
    pub variant: String,
    /// Database file (created when missing; the schema is applied).
    #[arg(long)]
    pub db: PathBuf,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Worker threads, one SQLite connection each.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,
    /// Request log level (stderr).
    #[arg(long, value_enum, default_value = "warn")]
    pub log_level: LogLevel,
    /// PRAGMA journal_mode.
    #[arg(long, default_value = "wal", value_parser = ["wal", "delete", "truncate", "persist", "memory", "off"])]
    pub journal_mode: String,
    /// PRAGMA synchronous.
    #[arg(long, default_value = "normal", value_parser = ["off", "normal", "full", "extra"])]
    pub synchronous: String,
    /// PRAGMA busy_timeout (e.g. 5s, 250ms).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub busy_timeout: Duration,
    /// A transaction block rolled back as busy runs again up to this many
    /// times (the scenario's `target.txn_retries`).
    #[arg(long, default_value_t = crate::txn_backoff::DEFAULT_RETRIES)]
    pub txn_retries: u32,
    /// The wait before a busy block's first rerun, doubling per rerun
    /// (`target.txn_backoff`; 0s: none).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub txn_backoff: Duration,
    /// The cap of that wait (`target.txn_backoff_max`).
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration)]
    pub txn_backoff_max: Duration,
    /// Test only: obey the bench's `x-specstorm-fault` header (crash after
    /// a step, pause before one). Never use in production; on an address
    /// that is not loopback it starts with a warning.
    #[arg(long)]
    pub fault_hooks: bool,
}

/// Runs the parsed command line; returns the process exit code.
pub fn main(cli: Cli) -> ExitCode {
    if !matches!(cli.command, Command::Serve(_)) {
        crate::cli_meta::init_logging(cli.verbose);
    }
    match cli.command {
        Command::Completions { shell } => {
            let mut cmd = Cli::command_with_version();
            crate::cli_meta::completions(shell, &mut cmd, &mut std::io::stdout());
            ExitCode::Met
        }
        Command::Man => {
            match crate::cli_meta::man(Cli::command_with_version(), &mut std::io::stdout()) {
                Ok(()) => ExitCode::Met,
                // A closed pipe (`| head`) is no failure of the page.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::Met,
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "specstorm: error: man: {e}");
                    ExitCode::Target
                }
            }
        }
        Command::Explore(a) => explore(&crate::explore::ExploreOptions {
            scenario: a.scenario,
            overrides: a.set,
            max_depth: a.max_depth,
            max_states: a.max_states,
            restore: a.restore,
            quiet: a.quiet,
        }),
        Command::Report(a) => match report(&a) {
            Ok(code) => code,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "specstorm: error: report: {e}");
                ExitCode::Usage
            }
        },
        Command::History { path } => print_history(&path),
        Command::Validate {
            run_dir,
            spec,
            max_states,
        } => validate(&crate::validate::ValidateOptions {
            run_dir,
            spec,
            max_states,
        }),
        Command::Replay {
            run_dir,
            finding,
            max_steps,
            reruns,
        } => replay(&crate::replay::ReplayOptions {
            run_dir,
            finding: finding as usize,
            max_steps,
            reruns,
        }),
        c @ (Command::Audit { .. } | Command::Merge { .. }) => audit_or_merge(c),
        Command::CheckTarget(a) => {
            let opts = ProbeOptions {
                url: a.url,
                timeout: a.timeout,
                ca_file: a.ca_file,
                insecure_skip_verify: a.insecure_skip_verify,
            };
            let mut out = std::io::stdout();
            let Some(workload) = registry::get(&a.workload) else {
                let _ = writeln!(
                    std::io::stderr(),
                    "specstorm: error: --workload {:?} is not a workload (one of: {})",
                    a.workload,
                    registry::names().join(", ")
                );
                return ExitCode::Usage;
            };
            let Some(probed) = workload.check_target(&opts, &mut out) else {
                let _ = writeln!(
                    std::io::stderr(),
                    "specstorm: error: the {} workload has no contract probe",
                    a.workload
                );
                return ExitCode::Usage;
            };
            match probed {
                Ok(report) => {
                    if let Some(why) = &report.unreachable {
                        let _ = writeln!(
                            std::io::stderr(),
                            "specstorm: error: target {} is unreachable: {why}",
                            report.base
                        );
                    }
                    report.exit_code()
                }
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "specstorm: error: {e}");
                    e.exit_code()
                }
            }
        }
        Command::Serve(a) => {
            let opts = ServeOptions {
                variant: a.variant,
                db: a.db,
                addr: a.addr,
                workers: a.workers as usize,
                log_level: a.log_level,
                journal_mode: a.journal_mode,
                synchronous: a.synchronous,
                busy_timeout: a.busy_timeout,
                txn: crate::txn_backoff::TxnPolicy {
                    retries: a.txn_retries,
                    backoff: a.txn_backoff,
                    backoff_max: a.txn_backoff_max.max(a.txn_backoff),
                    seed: 0,
                    key: 0,
                },
                fault_hooks: a.fault_hooks,
            };
            match serve(&opts) {
                Ok(()) => ExitCode::Met,
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "specstorm: error: {e}");
                    e.exit_code()
                }
            }
        }
        Command::Check { scenario } => {
            let path = scenario.scenario.as_deref();
            let overrides = scenario.overrides();
            match crate::workload::registry::of_scenario(path, &overrides)
                .and_then(|w| w.prepare(path, &overrides, false))
            {
                Ok(p) => {
                    // A closed pipe (`| head`) is no error worth a panic.
                    let _ = write!(
                        std::io::stdout(),
                        "# {} is valid; resolved configuration:\n{}",
                        describe(&scenario.scenario),
                        p.describe()
                    );
                    ExitCode::Met
                }
                Err(e) => report_error(&e),
            }
        }
        Command::Compare {
            scenario,
            variants,
            out,
            seeds,
            format,
            quiet,
            no_tui,
            keep_open,
        } => {
            let opts = CompareOptions {
                overrides: scenario.overrides(),
                scenario: scenario.scenario,
                variants,
                out,
                watch: Watch::choose(quiet, no_tui).keep_open(keep_open),
                markdown: matches!(format, TableFormat::Md),
            };
            let control = Arc::new(Control::default());
            install_signal_handler(control.clone());
            if let Some(seeds) = seeds {
                return match crate::compare::compare_seeds(&opts, &seeds, control) {
                    Ok(c) => {
                        let _ = write!(
                            std::io::stdout(),
                            "{}",
                            crate::report::series::side_by_side(&c.list)
                        );
                        let _ = writeln!(std::io::stdout(), "results: {}", c.dir.display());
                        exit_of(&c.exit)
                    }
                    Err(e) => report_error(&e),
                };
            }
            match compare(&opts, control) {
                Ok((c, dir)) => {
                    let _ = write!(std::io::stdout(), "{}", table(&c, opts.markdown));
                    let _ = writeln!(std::io::stdout(), "results: {}", dir.display());
                    exit_of(&c.exit)
                }
                Err(e) => report_error(&e),
            }
        }
        Command::Run {
            scenario,
            out,
            seeds,
            quiet,
            no_tui,
            keep_open,
            shard,
            shard_count,
            shard_from_env,
            run_id,
            metrics_addr,
            metrics_linger,
            format,
        } => {
            let shard = match (shard, shard_count) {
                (Some(s), _) => Some(s),
                (None, Some(n)) => {
                    let var = shard_from_env
                        .as_deref()
                        .unwrap_or(crate::shard::Shard::INDEX_VAR);
                    match crate::shard::Shard::from_env(var, n, |v| std::env::var(v).ok()) {
                        Ok(s) => Some(s),
                        Err(msg) => usage_error(&msg),
                    }
                }
                (None, None) => None,
            };
            let json = format == OutputFormat::Json;
            let opts = RunOptions {
                overrides: scenario.overrides(),
                scenario: scenario.scenario,
                out,
                // stdout is the JSON's: no dashboard, as without a terminal.
                watch: Watch::choose(quiet, no_tui || json).keep_open(keep_open),
                summary_on_stderr: json,
                shard,
                run_id,
                metrics_addr,
                metrics_linger,
                in_series: false,
            };
            let control = Arc::new(Control::default());
            install_signal_handler(control.clone());
            if let Some(seeds) = seeds {
                return run_seeds(opts, &seeds, control);
            }
            match run(&opts, control) {
                Ok((summary, _)) => {
                    if json {
                        print_json(&summary.to_json());
                    }
                    exit_of(&summary.exit)
                }
                Err(e) => report_error(&e),
            }
        }
    }
}

/// `run --seeds`: each seed's summary on stderr, the series' table (or,
/// with `--format json`, `series.json`) on stdout.
fn run_seeds(
    opts: RunOptions,
    seeds: &crate::seed_list::SeedList,
    control: Arc<Control>,
) -> ExitCode {
    let json = opts.summary_on_stderr;
    let opts = RunOptions {
        summary_on_stderr: true,
        ..opts
    };
    match crate::series::run_series(&opts, seeds, control) {
        Ok((series, dir)) => {
            let text = crate::report::series::text(&series, &dir.display().to_string());
            if json {
                let _ = write!(std::io::stderr(), "{text}");
                print_json(&serde_json::to_value(&series).expect("a series always serializes"));
            } else {
                let _ = write!(std::io::stdout(), "{text}");
            }
            exit_of(&series.exit)
        }
        Err(e) => report_error(&e),
    }
}

/// `specstorm report`: summary text, plots, then the baseline table (on
/// stderr with `--format json`, which prints [`report_json`]'s object on
/// stdout). Exit 1 when the baseline comparison flags a regression.
fn report(a: &ReportArgs) -> anyhow::Result<ExitCode> {
    use crate::report::baseline;
    use crate::report::folder::{self, Folder};
    use crate::report::plot;
    let folder = folder::open(&a.run_dir)?;
    let old = a.baseline.as_deref().map(folder::open).transpose()?;
    let json = a.format == OutputFormat::Json;
    let mut out: Box<dyn Write> = if json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let made = match &folder {
        Folder::Run { dir, summary } => {
            let parts = |s: &crate::summary::Summary| {
                crate::workload::registry::get(&s.workload)
                    .map(|w| w.human(s))
                    .unwrap_or_default()
            };
            let _ = write!(out, "{}", folder::run_text(dir, summary, parts)?);
            let title = folder::title(summary);
            (!a.no_plots).then(|| plot::run_plots(dir, &title))
        }
        Folder::Compare { dir, variants } => {
            for (name, vdir) in variants {
                let _ = write!(out, "{}", folder::variant_text(name, vdir)?);
            }
            (!a.no_plots).then(|| plot::compare_plots(dir, variants))
        }
    };
    let made = made.transpose()?;
    if let Some(made) = &made {
        for n in &made.notes {
            let _ = writeln!(out, "note: {n}");
        }
        for f in &made.files {
            let _ = writeln!(out, "plot: {}", f.display());
        }
    }
    let compared = old
        .as_ref()
        .map(|old| baseline::compared(&folder, old))
        .transpose()?;
    if let Some(list) = &compared {
        let _ = write!(out, "{}", baseline::text(list));
    }
    if json {
        print_json(&report_json(&folder, made.as_ref(), compared.as_deref())?);
    }
    let regressed = compared
        .iter()
        .flatten()
        .any(|c| !c.regressions().is_empty());
    Ok(if regressed {
        ExitCode::NotMet
    } else {
        ExitCode::Met
    })
}

/// `report --format json`'s object (docs/cli.md): the folder, its summary
/// (a run folder) or its variants' summaries (a compare folder), the plots
/// written and their notes, and with `--baseline` the comparison
/// ([`crate::report::baseline::json`]). Errors: a variant's summary that
/// cannot be read.
fn report_json(
    folder: &crate::report::folder::Folder,
    made: Option<&crate::report::plot::Made>,
    compared: Option<&[crate::report::baseline::Compared]>,
) -> anyhow::Result<serde_json::Value> {
    use crate::report::folder::{read_json, Folder};
    use serde_json::json;
    let mut v = match folder {
        Folder::Run { dir, summary } => json!({
            "kind": "run",
            "run_dir": dir.display().to_string(),
            "summary": summary,
        }),
        Folder::Compare { dir, variants } => {
            let mut list = Vec::new();
            for (name, vdir) in variants {
                let summary = if vdir.join("summary.json").exists() {
                    read_json(vdir, "summary.json")?
                } else {
                    serde_json::Value::Null
                };
                list.push(json!({
                    "name": name,
                    "run_dir": vdir.display().to_string(),
                    "summary": summary,
                }));
            }
            json!({
                "kind": "compare",
                "run_dir": dir.display().to_string(),
                "variants": list,
            })
        }
    };
    let files: Vec<String> = made
        .map(|m| m.files.iter().map(|f| f.display().to_string()).collect())
        .unwrap_or_default();
    v["plots"] = json!(files);
    v["notes"] = json!(made.map(|m| m.notes.clone()).unwrap_or_default());
    if let Some(list) = compared {
        v["baseline"] = crate::report::baseline::json(list);
    }
    Ok(v)
}

/// One JSON document on stdout, pretty-printed, with a final newline (a
/// closed pipe is no error worth a panic).
fn print_json(v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).expect("a JSON value always serializes");
    let _ = writeln!(std::io::stdout(), "{text}");
}

/// `specstorm audit` and `specstorm merge`: the logic is in
/// [`crate::audit`] and [`crate::merge`]; here, printing and exit codes.
fn audit_or_merge(command: Command) -> ExitCode {
    let err = |e: &dyn std::fmt::Display, code: ExitCode| {
        let _ = writeln!(std::io::stderr(), "specstorm: error: {e}");
        code
    };
    match command {
        Command::Audit {
            run_dir,
            max_steps,
            max_db_mib,
            format,
        } => match crate::audit::audit_with(
            &run_dir,
            crate::audit_db::Limits {
                max_steps,
                max_db_bytes: max_db_mib << 20,
            },
        ) {
            Ok((a, unsaved)) => {
                let text = crate::audit::render(&a);
                if format == OutputFormat::Json {
                    let _ = writeln!(std::io::stderr(), "{text}");
                    print_json(&serde_json::to_value(&a).expect("an audit always serializes"));
                } else {
                    let _ = writeln!(std::io::stdout(), "{text}");
                }
                if let Some(why) = unsaved {
                    let _ = writeln!(
                        std::io::stderr(),
                        "specstorm: warning: {why}; the verdicts above are not saved (the exit \
                         is theirs)"
                    );
                }
                exit_of(&a.exit)
            }
            Err(e) => err(&e, e.exit_code()),
        },
        Command::Merge {
            runs,
            out,
            clock_skew,
        } => {
            let opts = crate::merge::MergeOptions {
                runs,
                out,
                clock_skew,
            };
            match crate::merge::merge(&opts) {
                Ok(s) => exit_of(&s.exit),
                Err(e) => err(&e, e.exit_code()),
            }
        }
        _ => unreachable!("only audit and merge"),
    }
}

fn describe(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "the embedded default scenario".into())
}

/// `specstorm validate`: the run's workload (its saved scenario's) checks
/// the run against its spec.
fn validate(opts: &crate::validate::ValidateOptions) -> ExitCode {
    let scenario = opts.run_dir.join("scenario.toml");
    if !scenario.is_file() {
        let _ = writeln!(
            std::io::stderr(),
            "specstorm: validate: {}: not found (validate takes a run folder)",
            scenario.display()
        );
        return ExitCode::Usage;
    }
    match crate::workload::registry::of_scenario(Some(&scenario), &[]) {
        Ok(w) => w.validate(opts),
        Err(e) => report_error(&e),
    }
}

/// `specstorm replay`: the run's workload (its saved scenario's) replays
/// one finding of the run.
fn replay(opts: &crate::replay::ReplayOptions) -> ExitCode {
    let scenario = opts.run_dir.join("scenario.toml");
    if !scenario.is_file() {
        let _ = writeln!(
            std::io::stderr(),
            "specstorm: replay: {}: not found (replay takes a run folder)",
            scenario.display()
        );
        return ExitCode::Usage;
    }
    match crate::workload::registry::of_scenario(Some(&scenario), &[]) {
        Ok(w) => w.replay(opts),
        Err(e) => report_error(&e),
    }
}

/// `specstorm explore`: the scenario's workload explores its own world.
fn explore(opts: &crate::explore::ExploreOptions) -> ExitCode {
    match crate::workload::registry::of_scenario(opts.scenario.as_deref(), &opts.overrides) {
        Ok(w) => w.explore(opts),
        Err(e) => report_error(&e),
    }
}

/// A usage error found after parsing (in clap's words and with its exit
/// code, 2, as the errors it finds itself).
fn usage_error(msg: &str) -> ! {
    Cli::command_with_version()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

fn report_error(e: &RunError) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "specstorm: error: {e}");
    e.exit_code()
}

/// The exit code a summary's `exit` holds. Every summary this process
/// made holds a row of the table ([`crate::summary::Exit::new`]);
/// were a number outside it to come, 3 (the bench could not judge) says
/// so rather than a success.
fn exit_of(exit: &crate::summary::Exit) -> ExitCode {
    exit.exit_code().unwrap_or(ExitCode::Target)
}

/// Ctrl-C / SIGTERM: the first stops the load gracefully (ops in flight
/// finish, the audit runs, results are saved, exit 130); the second
/// abandons ops in flight between steps (recorded as indeterminate).
fn install_signal_handler(control: Arc<Control>) {
    let _ = ctrlc::set_handler(move || {
        control.by_signal.store(true, Ordering::Release);
        let msg = control.interrupt();
        // Under the dashboard the screen is its own; it shows the phase.
        if !control.quiet_signals.load(Ordering::Acquire) {
            let _ = writeln!(std::io::stderr(), "specstorm: {msg}");
        }
    });
}

/// `specstorm history PATH`.
fn print_history(path: &std::path::Path) -> ExitCode {
    use crate::history::print::{print, PrintError};
    match print(path, &mut std::io::stdout().lock()) {
        Ok(p) => {
            if p.cut_bytes > 0 {
                let _ = writeln!(
                    std::io::stderr(),
                    "specstorm: warning: {}: its last chunk was cut mid-way ({} bytes: its \
                     writer was stopped), left out",
                    path.display(),
                    p.cut_bytes
                );
            }
            ExitCode::Met
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "specstorm: error: history: {e}");
            match e {
                PrintError::Input(_) => ExitCode::Usage,
                PrintError::Unreadable(_) => ExitCode::Target,
            }
        }
    }
}
