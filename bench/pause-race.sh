#!/usr/bin/env bash
# Time to the first violation of the naive variant, with and without the
# pause fault on its race (scenarios/chaos-pause-naive.toml), alternating
# the two over seeds 1..N (default 10). Prints one line per run and the
# medians. Usage: bench/pause-race.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
bin=target/release/specstorm
cargo build --release -q
tmp=$(mktemp -d)
# The same scenario without its [[faults]] (and the variant path made absolute).
sed -e '/^\[\[faults\]\]/,$d' \
    -e "s|^variant = \"../|variant = \"$PWD/|" scenarios/chaos-pause-naive.toml > "$tmp/no-pause.toml"
first() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); v=s["invariants"]["NoMissedRegression"]; print(v.get("first_violation_s") or "none", s["exit"]["code"])' "$1"; }
for seed in $(seq 1 "$n"); do
  for mode in no-pause pause; do
    sc=$([ $mode = pause ] && echo scenarios/chaos-pause-naive.toml || echo "$tmp/no-pause.toml")
    $bin run "$sc" -q --seed "$seed" --out "$tmp/$mode-$seed" > /dev/null || true
    echo "$mode seed $seed: first violation at $(first "$tmp/$mode-$seed/summary.json")"
  done
done | tee "$tmp/runs.txt"
python3 - "$tmp/runs.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    mode, rest = line.split(" seed ", 1)
    t = line.split("first violation at ")[1].split()[0]
    runs.setdefault(mode, []).append(float("inf") if t == "none" else float(t))
for mode, ts in runs.items():
    found = [t for t in ts if t != float("inf")]
    m = statistics.median(ts)
    median = f"{m:.3f}s" if m != float("inf") else "beyond the end of the run (found in half the runs or fewer)"
    print(f"{mode}: found in {len(found)}/{len(ts)} runs, median time to first violation {median}")
PY
rm -rf "$tmp"
