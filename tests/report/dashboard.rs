//! The dashboard's frame rendering (`dashboard::view::render`) on
//! ratatui's TestBackend, from hand-made snapshots: insta snapshots of the
//! text at a few sizes, content checks that can fail, no color under
//! NO_COLOR, no panic at any size, and a resize round trip.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;
use ratatui::Terminal;
use specstorm::dashboard::view::{render, UiState};
use specstorm::figures::{Counts, Latency};
use specstorm::live::{Phase, Rates, RunInfo, Snapshot, Verdicts};
use specstorm::verdict::Verdict;
use std::collections::BTreeMap;
use std::time::Duration;

const COLOR: UiState = UiState {
    help: false,
    color: true,
};

fn lat(p50: f64, p90: f64, p99: f64, p999: f64, max: f64, count: u64) -> Latency {
    Latency {
        count,
        p50,
        p90,
        p99,
        p999,
        max,
        mean: p50,
    }
}

/// A run 24.5 s into a 60 s load, with faults injected and a lock held.
fn mid_run() -> Snapshot {
    let mut ops = BTreeMap::new();
    ops.insert(
        "ingest".to_string(),
        Counts {
            ok: 18211,
            fail: 37,
            info: 12,
        },
    );
    ops.insert(
        "resolve".to_string(),
        Counts {
            ok: 2310,
            fail: 4,
            info: 3,
        },
    );
    let mut latency = BTreeMap::new();
    latency.insert(
        "ingest".to_string(),
        lat(412.0, 1830.0, 23456.0, 61234.0, 187654.3, 18211),
    );
    latency.insert(
        "resolve".to_string(),
        lat(655.0, 2950.0, 9870.0, 30120.0, 45100.0, 2310),
    );
    let faults_injected = [("crash", 14), ("lock", 3), ("pause", 22)]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
    Snapshot {
        info: RunInfo {
            scenario: "groups-race".into(),
            variant: "naive-upsert".into(),
            target: "sqlite /tmp/specstorm/run-42/target.db".into(),
            seed: 42,
            stop_events: 0,
            stop_duration: Some(Duration::from_secs(60)),
            ingest_target: None,
        },
        phase: Phase::Load,
        elapsed_s: 24.5,
        generated: 18342,
        ops,
        latency,
        duplicates: 131,
        resolved: 802,
        refused: 1508,
        regressed_seen: 2,
        faults_injected,
        faults_active: vec!["lock".into()],
        verdicts: None,
        workload: None,
    }
}

/// The same run once the audit is done: one invariant violated (with a
/// long explanation), one unknown.
fn after_verdict() -> Snapshot {
    let mut s = mid_run();
    s.phase = Phase::Done;
    s.elapsed_s = 60.0;
    s.faults_active.clear();
    s.verdicts = Some(Verdicts {
        invariants: vec![
            ("CountExact".into(), Verdict::Holds, 0, None),
            (
                "NoMissedRegression".into(),
                Verdict::Violated,
                3,
                Some(
                    "group acme/9f3c2e71 was read resolved at 12.402118s by a probe after \
                     event e-18223 of the same fingerprint had been accepted at 12.398551s: \
                     the resolve saw a stale last_seen and missed the regression, so the \
                     group stays resolved although a newer event arrived"
                        .into(),
                ),
            ),
            (
                "OneGroup".into(),
                Verdict::Unknown,
                2,
                Some(
                    "two ingests of fingerprint 77ab were indeterminate (info): \
                     whether a second group exists cannot be decided"
                        .into(),
                ),
            ),
            ("TypeOK".into(), Verdict::Holds, 0, None),
        ],
        stranded: Some(4),
        exit: (
            1,
            "expectation not met: every invariant should hold, but NoMissedRegression violated"
                .into(),
        ),
        run_dir: "results/20250101T000000Z-groups-race-naive-upsert-42".into(),
    });
    s
}

/// 30 s of throughput history: ingest near 750 ops/s with a dip while a
/// lock was held, resolve near 95 ops/s.
fn rates() -> Rates {
    let mut r = Rates::new(60);
    let mut s = mid_run();
    let (mut ingest, mut resolve) = (0u64, 0u64);
    for t in 0..=30u64 {
        s.elapsed_s = t as f64;
        s.ops.insert(
            "ingest".into(),
            Counts {
                ok: ingest,
                fail: 0,
                info: 0,
            },
        );
        s.ops.insert(
            "resolve".into(),
            Counts {
                ok: resolve,
                fail: 0,
                info: 0,
            },
        );
        r.push(&s);
        ingest += if (18..22).contains(&t) {
            120 + t * 5
        } else {
            700 + (t * 37) % 110
        };
        resolve += 80 + (t * 13) % 30;
    }
    r
}

fn draw_on(term: &mut Terminal<TestBackend>, snap: &Snapshot, rates: &Rates, ui: UiState) {
    term.draw(|f| render(f, snap, rates, &ui)).expect("draw");
}

fn draw(w: u16, h: u16, snap: &Snapshot, rates: &Rates, ui: UiState) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    draw_on(&mut term, snap, rates, ui);
    term.backend().buffer().clone()
}

/// The buffer as text, one line a row, trailing blanks trimmed.
fn text(buf: &Buffer) -> String {
    let a = buf.area;
    let mut out = String::new();
    for y in a.top()..a.bottom() {
        let mut line = String::new();
        for x in a.left()..a.right() {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn row(buf: &Buffer, y: u16) -> String {
    text(buf).lines().nth(y as usize).unwrap_or("").to_string()
}

#[test]
fn mid_run_80x24() {
    let buf = draw(80, 24, &mid_run(), &rates(), COLOR);
    let t = text(&buf);
    // The scenario and variant, the phase, what is left.
    assert!(row(&buf, 0).contains("groups-race / naive-upsert"), "{t}");
    assert!(row(&buf, 0).contains("phase load"), "{t}");
    assert!(row(&buf, 1).contains("35.5s left"), "{t}");
    assert!(row(&buf, 1).contains("40%"), "{t}");
    // Ingest's p99 (23456 µs) and resolve's p50.
    assert!(t.contains("23.5ms"), "{t}");
    assert!(t.contains("655µs"), "{t}");
    // Counts, duplicates, resolves.
    assert!(t.contains("18211"), "{t}");
    assert!(t.contains("duplicates rejected 131"), "{t}");
    assert!(t.contains("refused 1508"), "{t}");
    // Faults, the held lock marked active.
    assert!(t.contains("pause 22"), "{t}");
    assert!(t.contains("lock 3  ACTIVE NOW"), "{t}");
    // Throughput: the latest rate, and sparkline bars.
    assert!(t.contains("783/s"), "{t}");
    assert!(t.contains('█'), "{t}");
    // The keys.
    assert!(row(&buf, 23).contains("q  stop"), "{t}");
    assert!(row(&buf, 23).contains("?  help"), "{t}");
    insta::assert_snapshot!("mid_run_80x24", t);
}

#[test]
fn mid_run_160x48() {
    let buf = draw(160, 48, &mid_run(), &rates(), COLOR);
    let t = text(&buf);
    assert!(t.contains("sqlite /tmp/specstorm/run-42/target.db"), "{t}");
    assert!(t.contains("23.5ms"), "{t}");
    // Wide: counts and latency side by side on the same rows.
    let counts_row = t.lines().position(|l| l.contains("18211")).expect("counts");
    assert!(t.lines().nth(counts_row).unwrap().contains("23.5ms"), "{t}");
    assert!(t.contains("regressions seen 2"), "{t}");
    assert!(t.contains("ACTIVE NOW"), "{t}");
    insta::assert_snapshot!("mid_run_160x48", t);
}

#[test]
fn verdict_80x24() {
    let buf = draw(80, 24, &after_verdict(), &rates(), COLOR);
    let t = text(&buf);
    assert!(row(&buf, 0).contains("phase done"), "{t}");
    assert!(t.contains("CountExact"), "{t}");
    assert!(t.contains("holds"), "{t}");
    assert!(t.contains("NoMissedRegression  VIOLATED 3"), "{t}");
    assert!(t.contains("OneGroup"), "{t}");
    assert!(t.contains("unknown 2"), "{t}");
    // The explanation is wrapped, not cut: its last words are there.
    assert!(t.contains("newer event arrived"), "{t}");
    assert!(t.contains("stranded events 4"), "{t}");
    assert!(t.contains("exit 1: expectation not met"), "{t}");
    assert!(
        t.contains("results/20250101T000000Z-groups-race-naive-upsert-42"),
        "{t}"
    );
    assert!(t.contains("press any key to exit"), "{t}");
    // The live panels are gone.
    assert!(!t.contains("p99.9"), "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 80));
    insta::assert_snapshot!("verdict_80x24", t);
}

#[test]
fn verdict_160x48() {
    let buf = draw(160, 48, &after_verdict(), &rates(), COLOR);
    let t = text(&buf);
    assert!(t.contains("VIOLATED 3"), "{t}");
    assert!(t.contains("unknown 2"), "{t}");
    assert!(t.contains("cannot be decided"), "{t}");
    assert!(t.contains("press any key to exit"), "{t}");
    insta::assert_snapshot!("verdict_160x48", t);
}

#[test]
fn small_verdict_keeps_the_verdicts_and_the_way_out() {
    // 12 rows: no room for the explanations, but every invariant's line,
    // the exit code and the key to leave stay.
    let buf = draw(60, 12, &after_verdict(), &rates(), COLOR);
    let t = text(&buf);
    for want in [
        "CountExact",
        "VIOLATED 3",
        "unknown 2",
        "TypeOK",
        "exit 1",
        "press any key to exit",
    ] {
        assert!(t.contains(want), "{want} missing:\n{t}");
    }
}

#[test]
fn help_80x24() {
    let ui = UiState {
        help: true,
        color: true,
    };
    let buf = draw(80, 24, &mid_run(), &rates(), ui);
    let t = text(&buf);
    assert!(t.contains("q, Ctrl-C"), "{t}");
    assert!(t.contains("stop gracefully"), "{t}");
    assert!(t.contains("audit still runs"), "{t}");
    assert!(t.contains("results are saved"), "{t}");
    assert!(t.contains("Ctrl-C again"), "{t}");
    assert!(t.contains("abort at once"), "{t}");
    assert!(t.contains("toggle this help"), "{t}");
    // Drawn over the dashboard, which still shows around it.
    assert!(row(&buf, 0).contains("groups-race"), "{t}");
    insta::assert_snapshot!("help_80x24", t);
}

#[test]
fn no_color_80x24() {
    let plain = UiState {
        help: false,
        color: false,
    };
    let buf = draw(80, 24, &mid_run(), &rates(), plain);
    for (i, c) in buf.content().iter().enumerate() {
        assert_eq!(c.fg, Color::Reset, "fg of cell {i} {:?}", c.symbol());
        assert_eq!(c.bg, Color::Reset, "bg of cell {i} {:?}", c.symbol());
    }
    // Same text as with colors: only the styles differ.
    let colored = draw(80, 24, &mid_run(), &rates(), COLOR);
    assert_eq!(text(&buf), text(&colored));
    // And with colors there are some (so the check above means something).
    assert!(colored.content().iter().any(|c| c.fg != Color::Reset));
    // The verdict panel and the help overlay stay plain too.
    let ui = UiState {
        help: true,
        color: false,
    };
    let buf = draw(80, 24, &after_verdict(), &rates(), ui);
    assert!(buf
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    insta::assert_snapshot!(
        "no_color_80x24",
        text(&draw(80, 24, &mid_run(), &rates(), plain))
    );
}

#[test]
fn tiny_20x5() {
    let buf = draw(20, 5, &mid_run(), &rates(), COLOR);
    let t = text(&buf);
    // Header, progress and the counts come first.
    assert!(row(&buf, 0).contains("load"), "{t}");
    assert!(row(&buf, 1).contains("40% · 35.5s left"), "{t}");
    assert!(t.contains("ingest"), "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 20), "{t}");
    insta::assert_snapshot!("tiny_20x5", t);
}

#[test]
fn one_by_one_and_zero() {
    for (w, h) in [(1, 1), (0, 0), (1, 0), (0, 1), (2, 1), (1, 2)] {
        for snap in [mid_run(), after_verdict()] {
            for help in [false, true] {
                let ui = UiState { help, color: true };
                let buf = draw(w, h, &snap, &rates(), ui);
                assert_eq!((buf.area.width, buf.area.height), (w, h));
            }
        }
    }
}

#[test]
fn panels_go_by_priority() {
    let r = rates();
    let s = mid_run();
    // Plenty of rows: everything.
    let t = text(&draw(80, 24, &s, &r, COLOR));
    for want in ["ok", "p99.9", "throughput", "faults", "?  help"] {
        assert!(t.contains(want), "{want}:\n{t}");
    }
    // 13 rows: counts, keys and latency, no throughput or faults.
    let t = text(&draw(80, 13, &s, &r, COLOR));
    assert!(
        t.contains("18211") && t.contains("p99.9") && t.contains("?  help"),
        "{t}"
    );
    assert!(!t.contains("throughput") && !t.contains("faults"), "{t}");
    // 17 rows: throughput too (its least: a row per kind), no faults.
    let t = text(&draw(80, 17, &s, &r, COLOR));
    assert!(t.contains("throughput") && !t.contains("faults"), "{t}");
    // 16 rows: too few for the throughput, but the faults fit in 3.
    let t = text(&draw(80, 16, &s, &r, COLOR));
    assert!(!t.contains("throughput") && t.contains("ACTIVE NOW"), "{t}");
    // 20 rows: both.
    let t = text(&draw(80, 20, &s, &r, COLOR));
    assert!(t.contains("throughput") && t.contains("ACTIVE NOW"), "{t}");
    // 7 rows: header, progress, counts; the keys only from 8 rows on.
    let t = text(&draw(80, 7, &s, &r, COLOR));
    assert!(
        t.contains("18211") && !t.contains("help") && !t.contains("p99"),
        "{t}"
    );
    let t = text(&draw(80, 8, &s, &r, COLOR));
    assert!(
        t.contains("18211") && t.contains("help") && !t.contains("p99"),
        "{t}"
    );
    // Without a fault schedule, no faults panel; throughput takes the room.
    let mut s2 = s.clone();
    s2.faults_injected.clear();
    s2.faults_active.clear();
    let t = text(&draw(80, 24, &s2, &r, COLOR));
    assert!(!t.contains("faults") && t.contains("throughput"), "{t}");
}

#[test]
fn long_texts_are_cut_not_spilled() {
    let mut s = mid_run();
    s.info.target = format!("http http://{}/ingest", "very-long-host-name.".repeat(12));
    let buf = draw(80, 24, &s, &rates(), COLOR);
    let head = row(&buf, 0);
    // The target is cut, the phase and seed stay.
    assert!(head.contains("on http http://very"), "{head}");
    assert!(head.contains("…  seed 42  phase load"), "{head}");
    // No room for a target at all: the name, seed and phase.
    s.info.scenario = "a-scenario-with-a-rather-long-name".into();
    let buf = draw(80, 24, &s, &rates(), COLOR);
    let head = row(&buf, 0);
    assert!(!head.contains("http"), "{head}");
    assert!(
        head.contains("a-scenario-with-a-rather-long-name / naive-upsert"),
        "{head}"
    );
    assert!(head.contains("seed 42  phase load"), "{head}");
    // At 30 columns the name still shows, cut, and the phase first.
    let buf = draw(30, 10, &s, &rates(), COLOR);
    let head = row(&buf, 0);
    assert!(head.starts_with("load a-scenario"), "{head}");
    assert!(head.ends_with('…'), "{head}");
}

#[test]
fn no_stop_limit_and_odd_figures() {
    let mut s = mid_run();
    s.info.stop_duration = None;
    s.info.stop_events = 0;
    let t = text(&draw(80, 24, &s, &rates(), COLOR));
    assert!(t.contains("no stop limit"), "{t}");
    // Zero everything, no history, NaN elapsed: no panic, dashes.
    let mut z = mid_run();
    z.ops.clear();
    z.latency.clear();
    z.elapsed_s = f64::NAN;
    z.info.stop_duration = Some(Duration::ZERO);
    let t = text(&draw(80, 24, &z, &Rates::new(60), COLOR));
    assert!(t.contains("groups-race"), "{t}");
    let mut e = mid_run();
    e.latency.get_mut("resolve").unwrap().count = 0;
    let t = text(&draw(80, 24, &e, &Rates::new(60), COLOR));
    let resolve_lat = t
        .lines()
        .filter(|l| l.contains("resolve"))
        .nth(1)
        .expect("latency row");
    assert!(resolve_lat.contains('-'), "{t}");
}

#[test]
fn sweep_never_panics() {
    let r = rates();
    let empty = Rates::new(60);
    // Also: draining, no limit, no faults, nothing yet, no history.
    let mut quiet = mid_run();
    quiet.phase = Phase::Draining;
    quiet.info.stop_duration = None;
    quiet.ops.clear();
    quiet.latency.clear();
    quiet.faults_injected.clear();
    quiet.faults_active.clear();
    let snaps = [(mid_run(), &r), (after_verdict(), &r), (quiet, &empty)];
    for w in 1..=100u16 {
        for h in 1..=40u16 {
            for (s, r) in &snaps {
                for help in [false, true] {
                    let ui = UiState {
                        help,
                        color: w % 2 == 0,
                    };
                    let buf = draw(w, h, s, r, ui);
                    // Nothing drawn outside: every row fits the width.
                    for l in text(&buf).lines() {
                        assert!(l.chars().count() <= w as usize, "{w}x{h}: {l}");
                    }
                }
            }
        }
    }
}

#[test]
fn resize_round_trip() {
    let (s, r) = (mid_run(), rates());
    let mut term = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    draw_on(&mut term, &s, &r, COLOR);
    let first = term.backend().buffer().clone();
    term.backend_mut().resize(40, 12);
    draw_on(&mut term, &s, &r, COLOR);
    let small = term.backend().buffer().clone();
    assert_eq!((small.area.width, small.area.height), (40, 12));
    assert_eq!(small, draw(40, 12, &s, &r, COLOR));
    term.backend_mut().resize(80, 24);
    draw_on(&mut term, &s, &r, COLOR);
    assert_eq!(term.backend().buffer(), &first);
}

#[test]
fn same_arguments_same_frame() {
    let (s, r) = (mid_run(), rates());
    let a = draw(80, 24, &s, &r, COLOR);
    let b = draw(80, 24, &s, &r, COLOR);
    assert_eq!(a, b);
    let a = draw(160, 48, &after_verdict(), &r, COLOR);
    let b = draw(160, 48, &after_verdict(), &r, COLOR);
    assert_eq!(a, b);
}

/// An outbox run 3.5 s in: one op kind (`handle`), the queue's figures,
/// leases that overlapped.
fn outbox_mid_run() -> Snapshot {
    let mut s = mid_run();
    s.info.scenario = "outbox-lease".into();
    s.info.variant = "outbox-protocol".into();
    s.info.stop_duration = Some(Duration::from_secs(300));
    s.elapsed_s = 3.5;
    s.generated = 0;
    s.duplicates = 0;
    s.resolved = 0;
    s.refused = 0;
    s.regressed_seen = 0;
    s.faults_active.clear();
    s.faults_injected = [("crash", 412), ("pause", 97)]
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
    s.ops = BTreeMap::from([(
        "handle".to_string(),
        Counts {
            ok: 9120,
            fail: 118,
            info: 412,
        },
    )]);
    s.latency = BTreeMap::from([(
        "handle".to_string(),
        lat(38.0, 81.0, 9100.0, 151000.0, 201000.0, 9120),
    )]);
    s.workload = Some(
        specstorm::workload::outbox::live::OutboxLive {
            deliveries: 12000,
            attempts: 9650,
            acked: 9002,
            redelivered: 655,
            given_up: 0,
            cas_lost: 118,
            crashed: 412,
            overlapping: 101,
        }
        .to_live(),
    );
    s
}

#[test]
fn outbox_mid_run_120x30() {
    let snap = outbox_mid_run();
    let t = text(&draw(120, 30, &snap, &Rates::new(60), COLOR));
    // Outbox figures under outbox headings; no groups figure.
    assert!(t.contains("outbox: 9002/12000 deliveries acked"), "{t}");
    for want in [
        "acked 9002/12000",
        "attempts 9650",
        "redelivered 655",
        "cas lost 118",
        "crashed 412",
    ] {
        assert!(t.contains(want), "{want} missing:\n{t}");
    }
    assert!(t.contains("overlapping 101"), "{t}");
    for groups_only in ["duplicates", "events generated", "resolved", "ingest"] {
        assert!(!t.contains(groups_only), "{groups_only} shown:\n{t}");
    }
    insta::assert_snapshot!("outbox_mid_run_120x30", t);
    // Once judged: the verdicts, and no stranded events line.
    let mut done = snap.clone();
    done.phase = Phase::Done;
    done.verdicts = Some(Verdicts {
        invariants: vec![("AtMostOneStateChange".into(), Verdict::Holds, 0, None)],
        stranded: Some(0),
        exit: (0, "every invariant holds, as expected".into()),
        run_dir: "results/outbox-lease".into(),
    });
    let t = text(&draw(120, 30, &done, &Rates::new(60), COLOR));
    assert!(t.contains("AtMostOneStateChange"), "{t}");
    assert!(!t.contains("stranded"), "{t}");
}

#[test]
fn plain_progress_lines_carry_the_outbox_figures() {
    let line = specstorm::watch::line(&outbox_mid_run(), &Rates::new(60));
    assert!(line.contains("handle "), "{line}");
    assert!(
        line.contains("outbox acked 9002/12000 attempts 9650 redelivered 655 cas lost 118 crashed 412 overlapping 101"),
        "{line}"
    );
    let groups = specstorm::watch::line(&mid_run(), &Rates::new(60));
    assert!(!groups.contains("outbox"), "{groups}");
}
