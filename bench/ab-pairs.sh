#!/usr/bin/env bash
# Two builds of specstorm, alternated: A B, B A, A B, ... for PAIRS pairs on
# one scenario, each run into a fresh folder that is deleted afterwards.
# Prints one line per run (events/s accepted, ops/s, WAL peak, checkpoint
# time, wall time) and, at the end, the medians and the ratio of medians
# B/A with each side's spread. Usage:
#   bench/ab-pairs.sh OLD_BINARY NEW_BINARY [PAIRS] [EVENTS] [SCENARIO]
# Defaults: 5 pairs, 2000000 events, scenarios/groups-atomic.toml.
# A_ARGS and B_ARGS (environment) are more arguments for A's and B's runs,
# so that one binary compares two settings, e.g. the schedule fuzzer off
# and on:
#   A_ARGS="--set fuzz.enabled=false" B_ARGS="--set fuzz.enabled=true" \
#     bench/ab-pairs.sh target/release/specstorm target/release/specstorm
# Measures whole runs (load + audit); the figures come from summary.json.
set -u
cd "$(dirname "$0")/.."
A=$1; B=$2; PAIRS=${3:-5}; EVENTS=${4:-2000000}; SCEN=${5:-scenarios/groups-atomic.toml}
T=$(mktemp -d "${TMPDIR:-/tmp}/ab-pairs.XXXXXX")
OUT=$T/figures.tsv
one() { # label binary
  local d=$T/run-$1-$2
  local t0=$(date +%s.%N)
  local extra=${A_ARGS:-}
  [ "$1" = B ] && extra=${B_ARGS:-}
  # shellcheck disable=SC2086 # the extra arguments are words
  "$3" run "$SCEN" -q --set stop.events="$EVENTS" $extra --out "$d" >/dev/null 2>"$d.err"
  local rc=$?
  local t1=$(date +%s.%N)
  python3 - "$d/summary.json" "$1" "$rc" "$t0" "$t1" <<'PY' | tee -a "$OUT"
import json, sys
p, label, rc, t0, t1 = sys.argv[1:]
s = json.load(open(p))
w = s.get("wal") or {}
print(f"{label}\trc={rc}\tevents/s={s['events_per_s']:.0f}\tops/s={s['throughput_ops_per_s']['total']:.0f}"
      f"\twal_peak_MB={(w.get('peak_bytes') or 0)/1e6:.1f}\tcheckpoints={w.get('checkpoints','-')}"
      f"\tcheckpoint_s={w.get('checkpoint_s','-')}\twall_s={float(t1)-float(t0):.1f}")
PY
  du -sh "$d" | sed 's/^/  folder /'
  rm -rf "$d" "$d.err"
}
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then one A "$i" "$A"; one B "$i" "$B"; else one B "$i" "$B"; one A "$i" "$A"; fi
done
python3 - "$OUT" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
for key in ("events/s", "ops/s"):
    v = {"A": [], "B": []}
    for r in rows:
        d = dict(x.split("=", 1) for x in r[1:])
        v[r[0]].append(float(d[key]))
    m = {k: statistics.median(x) for k, x in v.items()}
    spread = {k: f"{(min(x)/m[k]-1)*100:+.1f}%/{(max(x)/m[k]-1)*100:+.1f}%" for k, x in v.items()}
    print(f"{key}: median A {m['A']:.0f} (spread {spread['A']}), B {m['B']:.0f} (spread {spread['B']}), ratio B/A {m['B']/m['A']:.3f}")
PY
rm -rf "$T"
