#!/usr/bin/env bash
# Is each naive outbox variant caught for its real defect, and the protocol
# never flagged, over seeds 1..N (default 10)? Runs each shipped naive
# scenario (at most 30 s each) and the protocol under the same load
# (outbox-protocol.toml with the naive scenarios' size), and prints per run
# the exit code and each invariant's verdict, then the counts.
#
#   bench/outbox-catch.sh [N] [OUT_DIR]
set -u
cd "$(dirname "$0")/.."
N=${1:-10}
OUT=${2:-$(mktemp -d /tmp/outbox-catch.XXXXXX)}
BIN=target/release/specstorm
cargo build --release -q || exit 2
declare -A caught
for seed in $(seq 1 "$N"); do
  for name in naive-no-outbox naive-no-redo protocol; do
    sc=scenarios/outbox-$name.toml
    extra=()
    if [ "$name" = protocol ]; then
      # The naive scenarios' load and time bound, the protocol's file.
      extra=(--set outbox.messages=20000 --set stop.duration=30s)
    fi
    dir=$OUT/$name-$seed
    "$BIN" run "$sc" --seed "$seed" "${extra[@]}" --out "$dir" >/dev/null 2>&1
    code=$?
    verdicts=$(python3 -c '
import json,sys
s=json.load(open(sys.argv[1]+"/summary.json"))
print(" ".join("%s=%s" % (k, v["verdict"]) for k, v in s["invariants"].items()), "dur=%.1fs" % s["duration_s"])
' "$dir")
    echo "seed $seed $name exit $code $verdicts"
    if [ "$code" = 0 ]; then caught[$name]=$(( ${caught[$name]:-0} + 1 )); fi
  done
done
echo "naive-no-outbox caught (expectation met, exit 0): ${caught[naive-no-outbox]:-0}/$N"
echo "naive-no-redo caught (expectation met, exit 0): ${caught[naive-no-redo]:-0}/$N"
echo "protocol not flagged (every invariant holds, exit 0): ${caught[protocol]:-0}/$N"
echo "run folders: $OUT"
