#!/usr/bin/env bash
# The bench's HTTP target against wrk on the same reference server, same
# concurrency (64 connections), SECONDS s each, ROUNDS alternating rounds,
# a fresh database each time. Prints wrk's requests/s and the bench's
# ingest ops/s per round, then each side's median and spread (min..max)
# and the ratio of the medians (bench / wrk). Needs wrk (apt-get install
# wrk) and a release build. The schedule fuzzer ([fuzz]) does not run
# here: it is off by default, and the target is a server the bench did not
# spawn (its steps are its own), so wrk and the bench meet the same server.
# Both send the same requests: the same body layout, keys of the same
# length (wrk is given a namespace like the bench's) and the bench's three
# op headers (bench/wrk-ingest.lua).
#
#   bench/compare-wrk.sh                        # 5 rounds of 10 s
#   ROUNDS=1 SECONDS_EACH=2 bench/compare-wrk.sh  # a smoke test
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
SECS=${SECONDS_EACH:-10}
B=target/release/specstorm
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
start_server() {
  # The previous server's address must be gone before the next one
  # starts: the redirection below truncates the file only once the new
  # process runs, and the wait could read the old address meanwhile.
  rm -f "$T"/cmp.db* "$T/url"
  $B serve --variant groups-atomic --db "$T/cmp.db" --addr 127.0.0.1:0 --workers 8 > "$T/url" 2>/dev/null &
  SP=$!
  for _ in $(seq 50); do grep -qs listening "$T/url" && break; sleep 0.1; done
  URL=$(sed 's/listening on //' "$T/url")
}
for r in $(seq 1 "$ROUNDS"); do
  start_server
  # wrk sends the bench's request shape: the bench loads a server it did
  # not spawn in a namespace of its own (`r<ms>-<tag>.` before every
  # project and event id), so wrk gets one of the same length.
  NS="r$(date +%s%3N)-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')."
  echo "round $r wrk $(wrk -t2 -c64 -d"${SECS}s" -s bench/wrk-ingest.lua "$URL" -- "$NS" | grep Requests/sec | awk '{print $2}')" | tee -a "$T/all"
  kill -TERM $SP; wait $SP || true
  start_server
  rm -rf "$T/run"
  # Exit 4 (unknown) is expected: without resolvers NoMissedRegression
  # has no evidence.
  $B run scenarios/http-external.toml -q --no-tui --set "target.url=\"$URL\"" --set load.ingesters=64 \
     --set load.resolvers=0 --set retry.probability=0 --set stop.events=0 --duration "${SECS}s" --out "$T/run" > /dev/null || true
  kill -TERM $SP; wait $SP || true
  echo "round $r bench $(python3 -c "import json;print(json.load(open('$T/run/summary.json'))['throughput_ops_per_s']['ingest'])")" | tee -a "$T/all"
done
python3 bench/medians.py "$T/all" /s bench/wrk
