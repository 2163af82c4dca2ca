#!/usr/bin/env bash
# Throughput of the same run with and without the live dashboard,
# alternating the two N times each (default 5), as the ratio of medians of
# `throughput_ops_per_s.total`. The dashboard runs in a detached tmux
# session (a real terminal, 160x48); "without" is `-q` (no watcher at all).
# Usage: bench/dashboard-ratio.sh [N] [SCENARIO]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
sc=${2:-scenarios/groups-atomic.toml}
bin=$PWD/target/release/specstorm
cargo build --release -q
command -v tmux > /dev/null || { echo "needs tmux" >&2; exit 2; }
tmp=$(mktemp -d)
tput() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput_ops_per_s"]["total"])' "$1/summary.json"; }
for i in $(seq 1 "$n"); do
  "$bin" run "$sc" -q --out "$tmp/plain-$i" > /dev/null || true
  echo "without dashboard run $i: $(tput "$tmp/plain-$i") ops/s"
  tmux new-session -d -s "ratio-$i" -x 160 -y 48 "$bin run $sc --out $tmp/tui-$i"
  until [ -f "$tmp/tui-$i/summary.json" ]; do sleep 0.2; done
  sleep 0.5
  tmux send-keys -t "ratio-$i" q   # leaves the verdict panel
  while tmux has-session -t "ratio-$i" 2> /dev/null; do sleep 0.2; done
  echo "with dashboard    run $i: $(tput "$tmp/tui-$i") ops/s"
done | tee "$tmp/runs.txt"
python3 - "$tmp/runs.txt" <<'PY'
import statistics, sys
w, wo = [], []
for line in open(sys.argv[1]):
    v = float(line.split(": ")[1].split()[0])
    (w if line.startswith("with ") else wo).append(v)
mw, mwo = statistics.median(w), statistics.median(wo)
print(f"median with dashboard {mw:.0f} ops/s, without {mwo:.0f} ops/s: ratio {mw / mwo:.3f}")
PY
rm -rf "$tmp"
