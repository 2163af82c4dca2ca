#!/usr/bin/env bash
# The bench against plain SQLite on this machine, in one sitting: ROUNDS
# alternating rounds of the plain loop on 1 and 32 threads (the ceiling,
# examples/ceiling.rs), the bench doing the same work (32 ingesters, no
# resolvers, no retries) and the bench as shipped (groups-atomic.toml).
# Prints each round's events/s, then per side the median and the spread
# (min..max), and the ratios of the same-work bench to both loops. The
# schedule fuzzer ([fuzz]) is off in every bench run here (its default):
# it would add its yields and sleeps to the bench's side only.
#
#   bench/compare-sqlite.sh                       # 5 rounds of 200000 events
#   ROUNDS=1 EVENTS=5000 bench/compare-sqlite.sh  # a smoke test
#
# Needs a release build (it builds the example itself).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
EVENTS=${EVENTS:-200000}
cargo build --release --quiet --bin specstorm --example ceiling
B=target/release/specstorm
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bench() { # NAME ARGS...: one bench run; exit 4 (unknown) is expected without resolvers
  local name=$1; shift
  local code=0
  $B run scenarios/groups-atomic.toml -q --no-tui "$@" --out "$T/$name-$r" > "$T/$name-$r.out" 2>&1 || code=$?
  if [ "$code" != 0 ] && [ "$code" != 4 ]; then
    echo "round $r: the bench run exited $code:" >&2; cat "$T/$name-$r.out" >&2; exit 1
  fi
  local v
  v=$(python3 -c "import json;print(json.load(open('$T/$name-$r/summary.json'))['events_per_s'])")
  echo "round $r $name events/s $v" | tee -a "$T/all"
  rm -rf "$T/$name-$r"
}
for r in $(seq 1 "$ROUNDS"); do
  for n in 1 32; do
    v=$(target/release/examples/ceiling "$n" "$EVENTS" "$T/c$n-$r.db" | sed -E 's/.*: ([0-9]+) events\/s$/\1/')
    echo "round $r loop-$n events/s $v" | tee -a "$T/all"
    rm -f "$T/c$n-$r.db"*
  done
  bench bench-shipped
  bench bench-same-work --set load.resolvers=0 --set retry.probability=0 --set stop.events="$EVENTS"
done
python3 bench/medians.py "$T/all" events/s bench-same-work/loop-32 bench-same-work/loop-1
