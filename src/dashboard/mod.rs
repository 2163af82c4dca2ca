//! The live terminal dashboard (ratatui + crossterm): it only reads
//! [`crate::live::Snapshot`]s, a few times a second, on its own thread, so
//! rendering never slows the load.
//!
//! Layer: report, ui and server. May import the modules of its own layer
//! and of the layers below it (core, model, config, engine, target and
//! nemesis and workload).

pub mod end;
pub mod view;

use crate::control::Control;
use crate::live::{Live, Phase, Rates};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use view::UiState;

/// Frames per second while the run goes.
const FPS: u32 = 4;

/// Runs the dashboard on the terminal until the run is over and the
/// verdict panel ended (`end`: its time is over, or a key was pressed), or
/// `done` is set (the run ended without verdicts), or a signal stopped the
/// run (then nothing waits for a key). Keys: `q` and Ctrl-C stop the run
/// gracefully (a second Ctrl-C aborts), `?` toggles help. The terminal is
/// restored on the way out, also after a panic (ratatui's hook).
pub fn run(live: &Live, control: &Control, color: bool, done: &AtomicBool, mut end: end::EndWait) {
    let mut terminal = ratatui::init();
    let mut ui = UiState { help: false, color };
    let mut rates = Rates::new(60);
    let frame = Duration::from_secs(1) / FPS;
    let mut next_sample = Instant::now();
    loop {
        let snap = live.snapshot();
        if Instant::now() >= next_sample {
            rates.push(&snap);
            next_sample = Instant::now() + frame;
        }
        let finished = snap.phase == Phase::Done && snap.verdicts.is_some();
        if terminal
            .draw(|f| view::render(f, &snap, &rates, &ui))
            .is_err()
        {
            break;
        }
        if done.load(Ordering::Acquire) && !finished {
            break;
        }
        // Stopped by a signal (a supervisor, `kill`): the verdicts were
        // drawn; nobody may be there to press a key.
        if finished && control.by_signal.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(500));
            break;
        }
        if finished && end.over(Instant::now(), false) {
            break;
        }
        // Waits for a key at most one frame (on the verdict panel, no
        // longer than it has left); a resize just redraws.
        let wait = if finished {
            end.poll_for(Instant::now(), frame)
        } else {
            frame
        };
        let Ok(true) = event::poll(wait) else {
            continue;
        };
        let Ok(ev) = event::read() else { continue };
        let Event::Key(key) = ev else { continue };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        if finished && end.over(Instant::now(), true) {
            break;
        }
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            _ if ctrl_c => {
                control.interrupt();
            }
            // q stops gracefully; only Ctrl-C escalates to an abort.
            KeyCode::Char('q') | KeyCode::Esc if !control.interrupted.load(Ordering::Acquire) => {
                control.interrupt();
            }
            KeyCode::Char('?') => ui.help = !ui.help,
            _ => {}
        }
    }
    ratatui::restore();
}
