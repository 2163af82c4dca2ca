//! The kill nemesis: SIGKILL the spawned reference server on the fault's
//! period, wait its down time, and start it again on the same address and
//! database file. Nothing committed may be lost across it (TypeOK checks
//! that every acknowledged event is in the final tables); requests in
//! flight at the kill end `info` (reset) and the client resends them.
//!
//! The history gets `start` once the process is gone (nothing of it runs
//! after that instant: the checkers close indeterminate ops' windows
//! there) and `stop` just before the new process is spawned.
//!
//! Layer: target and nemesis. May import the modules of its own layer and
//! of the layers below it (core, model, config and engine).

use super::timed::{sleep_until, Ticks, Timed};
use super::Recorder;
use crate::control::Control;
use crate::draws::ns;
use crate::history::FaultAction;
use crate::scenario::Fault;
use crate::target::http::spawn::SpawnedServer;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The running kill nemesis (one thread per kill fault).
pub struct KillNemesis {
    timed: Timed,
    /// Why a restart failed, if one did (the run then exits 3).
    pub failure: Arc<Mutex<Option<String>>>,
}

impl KillNemesis {
    /// Starts one thread per `(index, fault)` of kind kill; `load_start` is
    /// the clock ns at which the load started. The load's `control`: its
    /// stop ends the nemesis's waits at once (a server down is restarted
    /// first), and a failed restart stops the load (the target is gone:
    /// the run ends with exit 3).
    pub fn start(
        server: Arc<Mutex<SpawnedServer>>,
        faults: Vec<(u32, Fault)>,
        recorder: Recorder,
        load_start: u64,
        control: Arc<Control>,
    ) -> Self {
        let failure = Arc::new(Mutex::new(None));
        let body = {
            let (failure, control) = (failure.clone(), control.clone());
            move |i: u32, f: &Fault, stopping: &dyn Fn() -> bool| {
                run(
                    &server, i, f, &recorder, load_start, stopping, &failure, &control,
                )
            }
        };
        KillNemesis {
            timed: Timed::spawn("nemesis-kill", faults, control, body),
            failure,
        }
    }

    /// Stops the nemesis; a server it left down is started again first.
    /// Returns why a restart failed, if one did.
    pub fn stop(mut self) -> Option<String> {
        self.timed.stop();
        self.failure.lock().expect("failure").clone()
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    server: &Mutex<SpawnedServer>,
    index: u32,
    f: &Fault,
    recorder: &Recorder,
    load_start: u64,
    stopping: &dyn Fn() -> bool,
    failure: &Mutex<Option<String>>,
    control: &Control,
) {
    let every = f.every.unwrap_or(Duration::from_secs(5));
    let down = f.delay.unwrap_or(Duration::from_millis(500));
    let mut ticks = Ticks::new(f, every, recorder, load_start, stopping);
    while ticks.wait() {
        let pid = server.lock().expect("server").kill();
        recorder.record(
            index,
            FaultAction::Start,
            None,
            None,
            None,
            Some(format!("SIGKILL pid {}", pid.unwrap_or(0))),
        );
        // A stop cuts the down time short: the audit needs the server
        // back, and it comes back below.
        sleep_until(
            recorder,
            recorder.clock.now().saturating_add(ns(down)),
            stopping,
        );
        recorder.record(
            index,
            FaultAction::Stop,
            None,
            None,
            None,
            Some(format!("restart after {down:?}")),
        );
        if let Err(e) = server.lock().expect("server").restart() {
            *failure.lock().expect("failure") =
                Some(format!("the reference server could not be restarted: {e}"));
            // No target left: end the load now rather than at its duration.
            control.request_stop();
            return;
        }
    }
}
