#!/usr/bin/env python3
"""Per-second ingest figures of a staged run against its target curve.

Usage: specstorm history RUN_DIR | bench/stages-table.py RUN_DIR

Reads the run's history (JSON lines on stdin) and its resolved scenario
(RUN_DIR/summary.json). Seconds count from the load's start (in the
open model, op 0's intended start less the time the stages take to make
it due; else the first invoke). Per second:
the target (the stages' mean over that second: ops/s in the open model,
active ingesters in the closed one), the ingest ops intended to start in
it (open model), those that started (invokes) and those that completed.
"""
import json
import re
import sys
from collections import Counter

UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(text):
    total = 0.0
    for number, unit in re.findall(r"([0-9.]+)\s*([a-zµ]+)", text):
        total += float(number) * UNITS[unit]
    return total


def curve(stages):
    """(start, length, from, to) per stage, as `crate::scenario::stages`."""
    out, start, prev = [], 0.0, 0.0
    for s in stages:
        length = seconds(s["duration"])
        out.append((start, length, prev, float(s["target"])))
        start += length
        prev = float(s["target"])
    return out, start, prev


def due_by(segments, end, last, t):
    """The curve's integral from 0 to t."""
    total = 0.0
    for start, length, a, b in segments:
        if t <= start:
            break
        x = min(t - start, length)
        at_x = a + (b - a) * (x / length) if length > 0 else b
        total += (a + at_x) / 2.0 * x
    return total + (last * (t - end) if t > end else 0.0)


def op0_due(segments):
    """When op 0 is due, s into the load: where the target first rises
    above 0 (the start of the first stage with ops in it)."""
    for start, length, a, b in segments:
        if (a + b) / 2.0 * length > 0:
            return start
    return 0.0


def main():
    run_dir = sys.argv[1]
    with open(f"{run_dir}/summary.json") as f:
        load = json.load(f)["resolved_scenario"]["load"]
    segments, end, last = curve(load.get("stages", []))
    if not segments and load.get("model") == "open":
        last = float(load.get("rate", 0.0))
    open_model = load.get("model") == "open"

    intended, started, completed = Counter(), Counter(), Counter()
    ingest_ops = set()
    invokes = []
    for line in sys.stdin:
        e = json.loads(line)
        kind = e.get("type")
        if kind == "invoke" and e.get("f") == "ingest":
            ingest_ops.add(e["op"])
            invokes.append((e["t"], e.get("intended")))
        elif kind in ("ok", "fail", "info") and e.get("op") in ingest_ops:
            completed[e["t"]] += 1
    if not invokes:
        sys.exit("no ingest ops in the history")
    origins = [i for _, i in invokes if i is not None]
    # The load's start: op 0's intended start, less the time the curve
    # takes to make op 0 due (stages may open with a target of 0).
    if origins:
        origin = min(origins) - round(op0_due(segments) * 1e9)
    else:
        origin = min(t for t, _ in invokes)
    for t, i in invokes:
        started[(t - origin) // 1_000_000_000] += 1
        if i is not None:
            intended[(i - origin) // 1_000_000_000] += 1
    done = Counter()
    for t, n in completed.items():
        done[(t - origin) // 1_000_000_000] += n

    unit = "ops/s" if open_model else "workers"
    print(f"{'second':>6} {'target ' + unit:>15} {'intended':>9} {'started':>8} {'completed':>10}")
    horizon = max(list(started) + list(done) + [int(end) - 1])
    for s in range(0, horizon + 1):
        target = due_by(segments, end, last, s + 1) - due_by(segments, end, last, s)
        print(f"{s:>6} {target:>15.1f} {intended[s]:>9} {started[s]:>8} {done[s]:>10}")
    due = f"{due_by(segments, end, last, horizon + 1):.1f}" if open_model else "-"
    print(f"{'total':>6} {due:>15} "
          f"{sum(intended.values()):>9} {sum(started.values()):>8} {sum(done.values()):>10}")


if __name__ == "__main__":
    main()
