#!/usr/bin/env bash
# The bench's HTTP target against wrk on the same reference server, same
# concurrency (64 connections), 10 s each, 3 alternating rounds, a fresh
# database each time. Prints wrk's requests/s and the bench's ingest ops/s;
# compare medians. Needs wrk (apt-get install wrk) and a release build.
# The schedule fuzzer ([fuzz]) does not run here: it is off by default,
# and the target is a server the bench did not spawn (its steps are its
# own), so wrk and the bench meet the same server.
set -u
cd "$(dirname "$0")/.."
B=target/release/specstorm
T=$(mktemp -d)
start_server() {
  rm -f "$T"/cmp.db*
  $B serve --variant groups-atomic --db "$T/cmp.db" --addr 127.0.0.1:0 --workers 8 > "$T/url" 2>/dev/null &
  SP=$!
  for _ in $(seq 50); do grep -q listening "$T/url" && break; sleep 0.1; done
  URL=$(sed 's/listening on //' "$T/url")
}
for r in 1 2 3; do
  start_server
  echo "round $r wrk $(wrk -t2 -c64 -d10s -s bench/wrk-ingest.lua "$URL" | grep Requests/sec | awk '{print $2}')"
  kill -TERM $SP; wait $SP
  start_server
  rm -rf "$T/run"
  $B run scenarios/http-external.toml -q --set "target.url=\"$URL\"" --set load.ingesters=64 \
     --set load.resolvers=0 --set retry.probability=0 --set stop.events=0 --duration 10s --out "$T/run" > /dev/null
  kill -TERM $SP; wait $SP
  echo "round $r bench $(python3 -c "import json;print(json.load(open('$T/run/summary.json'))['throughput_ops_per_s']['ingest'])")"
done
rm -rf "$T"
