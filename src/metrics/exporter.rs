//! The metrics endpoint: `GET /metrics` on the address the user named,
//! served by axum on a thread of its own (its own small runtime, so the
//! load's workers never serve a scrape), from before the load until the
//! run's results are saved, and then for `--metrics-linger` more so that
//! a scraper can read the final figures; an interrupt ends the linger.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

use crate::control::Control;
use crate::live::Live;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::Router;
use std::future::IntoFuture;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;

/// The media type of the OpenMetrics text format (Prometheus negotiates
/// it, and reads it as its own text format's successor).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A running metrics endpoint; dropping it stops it.
pub struct Exporter {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Binds `addr` (before anything runs, so that an address in use is
    /// bad input, not a failed run). Port 0 takes a free port.
    pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
        TcpListener::bind(addr)
    }

    /// Serves `live` on `listener` until [`Exporter::finish`] or drop.
    pub fn start(listener: TcpListener, live: Arc<Live>) -> std::io::Result<Exporter> {
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let app = Router::new().route(
            "/metrics",
            get(move || {
                let live = live.clone();
                async move {
                    (
                        [(CONTENT_TYPE, OPENMETRICS)],
                        super::exposition::render(&live),
                    )
                }
            }),
        );
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                rt.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    // Not a graceful shutdown: that waits for every open
                    // connection, and one client that sent half a request
                    // (or never reads) would keep the finished run alive.
                    // Leaving the block drops the runtime, which cancels
                    // the connections' tasks.
                    tokio::select! {
                        _ = axum::serve(listener, app).into_future() => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(Exporter {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `linger` more (unless the user interrupts after `mark`, a
    /// [`Control::interrupts`] taken before the final figures were
    /// published), then stops.
    pub fn finish(self, linger: Duration, control: &Control, mark: u64) {
        control.wait_unless_interrupted(mark, linger);
        drop(self);
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `--metrics-addr`'s value: `PORT` (on 127.0.0.1: the figures stay on
/// this machine unless the user names another address) or `HOST:PORT`
/// with HOST an IP address.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        format!("{text:?}: expected PORT or IP:PORT, e.g. 9464 (on 127.0.0.1) or 0.0.0.0:9464")
    })
}
