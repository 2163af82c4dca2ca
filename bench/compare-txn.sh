#!/usr/bin/env bash
# groups-txn.sql in the bench against a plain rusqlite loop running the same
# IMMEDIATE transactions (examples/ceiling.rs --txn: BEGIN IMMEDIATE, the
# three ingest statements, COMMIT, a busy one run again), at the same
# concurrency, on the same database settings (WAL, synchronous=NORMAL,
# busy_timeout 5s), in one sitting: ROUNDS alternating rounds, each a loop
# run then a bench run (32 ingesters, no resolvers, no retries: the same
# work). Prints each round's events/s, then the medians and their ratio
# (bench / loop). The schedule fuzzer is off (its default).
#
#   bench/compare-txn.sh                       # 5 rounds of 200000 events
#   ROUNDS=1 EVENTS=5000 bench/compare-txn.sh  # a smoke test
#
# Needs a release build (it builds the example itself).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
EVENTS=${EVENTS:-200000}
THREADS=${THREADS:-32}
cargo build --release --quiet --bin specstorm --example ceiling
B=target/release/specstorm
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  loop=$(target/release/examples/ceiling "$THREADS" "$EVENTS" "$T/c-$r.db" --txn \
    | sed -E 's/.*: ([0-9]+) events\/s$/\1/')
  echo "round $r loop-txn events/s $loop" | tee -a "$T/loop"
  # Exit 4 (unknown) is expected: without resolvers NoMissedRegression
  # has no evidence. A violation (1) or an error (2, 3) stops the script.
  code=0
  $B run scenarios/groups-atomic.toml -q --no-tui \
    --set variant=../targets/sqlite/groups-txn.sql \
    --set load.ingesters="$THREADS" --set load.resolvers=0 --set retry.probability=0 \
    --set stop.events="$EVENTS" --out "$T/b-$r" > "$T/b-$r.out" 2>&1 || code=$?
  if [ "$code" != 0 ] && [ "$code" != 4 ]; then
    echo "round $r: the bench run exited $code:" >&2; cat "$T/b-$r.out" >&2; exit 1
  fi
  bench=$(python3 -c "import json;print(json.load(open('$T/b-$r/summary.json'))['events_per_s'])")
  echo "round $r bench-txn events/s $bench" | tee -a "$T/bench"
done
python3 - "$T/loop" "$T/bench" <<'PY'
import statistics, sys
def med(p):
    return statistics.median(float(l.split()[-1]) for l in open(p))
loop, bench = med(sys.argv[1]), med(sys.argv[2])
print(f"median loop-txn {loop:.0f} events/s, bench-txn {bench:.0f} events/s, ratio {bench / loop:.3f}")
PY
