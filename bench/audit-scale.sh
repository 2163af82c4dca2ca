#!/usr/bin/env bash
# The audit of a long run: CPU (user + system) per million events and peak
# resident memory of `specstorm audit`, for one build or two alternated
# (A B, B A, ...), on one run folder. Each audit runs on its own copy of the
# folder (hard links: the audit only replaces audit.json), and every audit's
# verdicts must equal the first one's (audit.json without run_dir), else the
# script stops with exit 1. Usage:
#   bench/audit-scale.sh RUN_DIR BINARY_A [BINARY_B] [PAIRS]
# PAIRS defaults to 3. Without RUN_DIR, it is made first (EVENTS, default
# 10000000, of scenarios/groups-atomic.toml; about 16 min and 2.3 GB of disk
# for 10M events on a 2-core machine):
#   EVENTS=1000000 bench/audit-scale.sh /tmp/r1m target/release/specstorm
# Needs GNU time (/usr/bin/time) and python3.
set -u
cd "$(dirname "$0")/.."
RUN=$1; A=$2; B=${3:-}; PAIRS=${4:-3}
EVENTS=${EVENTS:-10000000}
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
if [ ! -e "$RUN/summary.json" ]; then
  echo "making $RUN: $EVENTS events of scenarios/groups-atomic.toml" >&2
  "$A" run scenarios/groups-atomic.toml -q --set stop.events="$EVENTS" --out "$RUN" >/dev/null
  rc=$?
  [ $rc -eq 0 ] || { echo "the run exited $rc" >&2; exit 1; }
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/audit-scale.XXXXXX")
trap 'rm -rf "$T"' EXIT
FIG=$T/figures.tsv
one() { # label binary
  local d=$T/run-$1
  rm -rf "$d"
  cp -al "$RUN" "$d"
  rm -f "$d/audit.json"
  /usr/bin/time -f '%U %S %M' -o "$T/time" "$2" audit "$d" >/dev/null 2>"$T/err"
  local rc=$?
  python3 - "$d" "$RUN/summary.json" "$1" "$rc" "$T/time" "$T/first.json" <<'PY' | tee -a "$FIG"
import json, os, sys
d, summary, label, rc, timef, first = sys.argv[1:]
events = json.load(open(summary))["events"]
user, sys_, rss_kb = open(timef).read().split()[-3:]
cpu = float(user) + float(sys_)
audit = json.load(open(os.path.join(d, "audit.json")))
audit.pop("run_dir", None)
same = "first"
if os.path.exists(first):
    same = "same" if json.load(open(first)) == audit else "DIFFERENT"
else:
    json.dump(audit, open(first, "w"))
print(f"{label}\trc={rc}\tcpu_s={cpu:.2f}\tcpu_s_per_M={cpu / events * 1e6:.3f}"
      f"\tpeak_MB={int(rss_kb) / 1000:.1f}\tverdicts={same}")
PY
  rm -rf "$d"
}
for i in $(seq 1 "$PAIRS"); do
  if [ -z "$B" ]; then
    one A "$A"
  elif [ $((i % 2)) -eq 1 ]; then
    one A "$A"; one B "$B"
  else
    one B "$B"; one A "$A"
  fi
done
python3 - "$FIG" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
by = {}
for r in rows:
    f = dict(x.split("=", 1) for x in r[1:])
    by.setdefault(r[0], []).append(f)
for label, fs in sorted(by.items()):
    cpu = [float(f["cpu_s_per_M"]) for f in fs]
    mb = [float(f["peak_MB"]) for f in fs]
    print(f"{label}: median {statistics.median(cpu):.3f} s CPU per M events "
          f"(spread {min(cpu):.3f}..{max(cpu):.3f}), peak {statistics.median(mb):.1f} MB "
          f"(spread {min(mb):.1f}..{max(mb):.1f}), {len(fs)} audits")
if any(f["verdicts"] == "DIFFERENT" for fs in by.values() for f in fs):
    print("verdicts DIFFERENT between audits"); sys.exit(1)
if any(f["rc"] != "0" for fs in by.values() for f in fs):
    print("an audit exited with something other than 0"); sys.exit(1)
PY
