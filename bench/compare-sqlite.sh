#!/usr/bin/env bash
# The bench against plain SQLite on this machine, in one session: 3
# alternating rounds of the plain loop on 1 and 32 threads (the ceiling,
# examples/ceiling.rs), the bench doing the same work (32 ingesters, no
# resolvers, no retries) and the bench as shipped (groups-atomic.toml).
# Prints events/s; compare medians. Needs a release build. The schedule
# fuzzer ([fuzz]) is off in every bench run here (its default): it would
# add its yields and sleeps to the bench's side only.
set -u
cd "$(dirname "$0")/.."
cargo build --release --quiet --example ceiling
B=target/release/specstorm
T=$(mktemp -d)
for r in 1 2 3; do
  target/release/examples/ceiling 1 200000 "$T/c1-$r.db" | sed "s/^/round $r /"
  target/release/examples/ceiling 32 200000 "$T/c32-$r.db" | sed "s/^/round $r /"
  $B run scenarios/groups-atomic.toml -q --out "$T/b-$r" > /dev/null
  echo "round $r bench-shipped events/s $(python3 -c "import json;print(json.load(open('$T/b-$r/summary.json'))['events_per_s'])")"
  $B run scenarios/groups-atomic.toml -q --set load.resolvers=0 --set retry.probability=0 --out "$T/bi-$r" > /dev/null
  echo "round $r bench-same-work events/s $(python3 -c "import json;print(json.load(open('$T/bi-$r/summary.json'))['events_per_s'])")"
done
rm -rf "$T"
