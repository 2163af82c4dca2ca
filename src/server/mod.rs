//! `specstorm serve`: the reference HTTP server, speaking the HTTP target
//! contract, version 1 (`docs/http-contract.md`), over a
//! SQLite database and a statement-file variant: the endpoints of the
//! variant's workload, which each workload brings from its folder as a
//! [`part::ServerPart`] (its routes, request handlers and export).
//!
//! axum on tokio answers requests; SQLite never runs on the runtime's
//! threads. A workload's ops go to [`pool`]: N OS threads, each
//! owning one connection, fed by a bounded channel, each op run as a step
//! machine whose every step is its own autocommit statement (exactly as the
//! in-process SQLite target runs it). [`export`] streams a one-transaction
//! snapshot from a thread of its own. [`routes`] mounts every workload's
//! routes with what they share. SIGTERM or Ctrl-C stops accepting, lets
//! in-flight requests finish, drains the workers and returns.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

pub mod export;
pub mod part;
pub mod pool;
pub mod routes;
pub mod state;

use crate::exit_code::ExitCode;
use crate::scenario::SqliteTarget;
use crate::statements::FileError;
use crate::target::sqlite::client as sqlite;
use pool::Pool;
use state::AppState;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How verbose the request log on stderr is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    /// Warnings and errors only (the default).
    Warn,
    /// One line per request.
    Info,
    /// Also why an op was not `ok`.
    Debug,
    /// Also every op's outcome.
    Trace,
}

impl LogLevel {
    fn level(self) -> tracing::Level {
        match self {
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Trace => tracing::Level::TRACE,
        }
    }
}

/// Everything `specstorm serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// A statement file (`.sql`) or a built-in variant name.
    pub variant: String,
    /// The database file (created when missing).
    pub db: PathBuf,
    /// Address to listen on (port 0: any free port).
    pub addr: SocketAddr,
    /// Worker threads, one connection each.
    pub workers: usize,
    /// Log level of the request log (stderr).
    pub log_level: LogLevel,
    /// `PRAGMA journal_mode`.
    pub journal_mode: String,
    /// `PRAGMA synchronous`.
    pub synchronous: String,
    /// `PRAGMA busy_timeout`.
    pub busy_timeout: Duration,
    /// The transaction blocks' retry budget and backoff (its seed; each
    /// job's key is the pool's).
    pub txn: crate::txn_backoff::TxnPolicy,
    /// Honour the test-only `x-specstorm-fault` request header (crash and
    /// pause between steps, driven by the bench). Off by default: a server
    /// in production must never crash on a client's say-so.
    pub fault_hooks: bool,
}

/// Why the server could not run; maps to the CLI's exit codes.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The variant is invalid (exit 2).
    #[error("{0}")]
    Variant(#[from] FileError),
    /// The database or the address could not be used (exit 3).
    #[error("{0}")]
    Target(String),
}

impl ServeError {
    /// The exit code (`docs/cli.md`).
    pub fn exit_code(&self) -> ExitCode {
        match self {
            ServeError::Variant(_) => ExitCode::Usage,
            ServeError::Target(_) => ExitCode::Target,
        }
    }
}

/// The warning for fault hooks on an address others can reach: whoever
/// can send a request can then make the server abandon its ops between
/// two steps (half-done writes), or stall its workers. None on loopback.
pub fn exposed_hooks(opts: &ServeOptions) -> Option<String> {
    (opts.fault_hooks && !opts.addr.ip().to_canonical().is_loopback()).then(|| {
        format!(
            "--fault-hooks on {}, which is not a loopback address: anyone who can reach it can \
             make the server abandon ops between steps (half-done writes) or stall its \
             workers with the x-specstorm-fault header; for tests only, on 127.0.0.1",
            opts.addr
        )
    })
}

/// Runs the server until SIGTERM or Ctrl-C, then shuts down gracefully.
/// Prints exactly one line to stdout, `listening on http://ADDR` (the real
/// port), once the socket is bound and the database ready.
pub fn serve(opts: &ServeOptions) -> Result<(), ServeError> {
    // A second init (tests calling serve twice) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_max_level(opts.log_level.level())
        .try_init();
    let variant = part::load(&opts.variant)?;
    if opts.journal_mode.eq_ignore_ascii_case("off") {
        if let Some(why) = variant.variant().needs_journal() {
            return Err(ServeError::Target(why));
        }
    }
    if let Some(w) = exposed_hooks(opts) {
        let _ = writeln!(std::io::stderr(), "specstorm: warning: {w}");
    }
    // The address first: a port in use must not leave a database behind.
    let std_listener = std::net::TcpListener::bind(opts.addr)
        .and_then(|l| l.set_nonblocking(true).map(|_| l))
        .map_err(|e| ServeError::Target(format!("cannot listen on {}: {e}", opts.addr)))?;
    let target = SqliteTarget {
        path: Some(opts.db.clone()),
        journal_mode: opts.journal_mode.clone(),
        synchronous: opts.synchronous.clone(),
        busy_timeout: opts.busy_timeout,
        reuse: true,
    };
    let db_err = |e: &dyn std::fmt::Display| {
        ServeError::Target(format!("database {}: {e}", opts.db.display()))
    };
    let schema_conn = sqlite::open(&opts.db, &target).map_err(|e| db_err(&e))?;
    schema_conn
        .execute_batch(variant.variant().schema())
        .map_err(|e| db_err(&format!("schema failed: {e}")))?;
    crate::target::sqlite::schema_fit::check(&schema_conn, variant.variant().file())
        .map_err(|e| db_err(&e))?;
    drop(schema_conn);
    let workers = opts.workers.max(1);
    let conns = (0..workers)
        .map(|_| sqlite::open(&opts.db, &target))
        .collect::<anyhow::Result<Vec<_>>>()
        .map_err(|e| db_err(&e))?;
    let pool = Arc::new(Pool::start(conns, workers * 64, opts.txn));
    let state = Arc::new(AppState {
        variant,
        pool: pool.clone(),
        db: opts.db.clone(),
        target,
        fault_hooks: opts.fault_hooks,
    });
    let variant_workload = state.variant.workload();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("http")
        .build()
        .map_err(|e| ServeError::Target(format!("cannot start the runtime: {e}")))?;
    let served = rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(std_listener)
            .map_err(|e| ServeError::Target(format!("cannot listen on {}: {e}", opts.addr)))?;
        let local = listener
            .local_addr()
            .map_err(|e| ServeError::Target(format!("no local address: {e}")))?;
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "listening on http://{local}");
            let _ = out.flush();
        }
        tracing::info!(%local, variant = %opts.variant, workload = variant_workload, db = %opts.db.display(), workers, "serving");
        axum::serve(listener, routes::router(state))
            .with_graceful_shutdown({
                // Requests waiting on a paused op must end for the
                // shutdown to complete.
                let pool = pool.clone();
                async move {
                    shutdown_signal().await;
                    pool.end_pauses();
                }
            })
            .await
            .map_err(|e| ServeError::Target(format!("server failed: {e}")))
    });
    // Requests have ended: let the workers finish what is queued.
    rt.shutdown_timeout(Duration::from_secs(5));
    pool.shutdown();
    // Always on stderr, whatever the log level: how the server ended is
    // what its log (a spawned server's `server.log`) must say.
    eprintln!("specstorm serve: stopped");
    served
}

/// Resolves on the first Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => eprintln!("specstorm serve: Ctrl-C: shutting down"),
        _ = term => eprintln!("specstorm serve: SIGTERM: shutting down"),
    }
}
