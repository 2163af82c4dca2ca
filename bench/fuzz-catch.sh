#!/usr/bin/env bash
# Does the schedule fuzzer ([fuzz]) find the races, and never a violation
# of a correct design? For seeds 1..N (default 20 for groups, 10 for the
# outbox), one after the other:
#   - groups-naive.toml with stop.events=4000 and no pause fault, over the
#     spawned reference server without and with the fuzzer, and in process
#     with it (caught: exit 1, NoMissedRegression violated);
#   - groups-atomic and the groups designs group-first and upsert, in
#     process and over the spawned server, with the fuzzer (the same load);
#   - the outbox naive variants (outbox-naive-*.toml, OUTBOX_MESSAGES
#     messages, default 5000) without and with it, and the protocol and
#     the outbox designs outbox-cas-head and outbox-own-tx with it.
# Prints one line per run: exit code, the violated invariants and the
# time to the first violation (the least `first_violation_s` of
# summary.json's invariants: seconds from the load's start to the earliest
# op of the first violation found), then the counts and medians.
#
#   bench/fuzz-catch.sh [N_GROUPS] [N_OUTBOX]
set -u
cd "$(dirname "$0")/.."
NG=${1:-20}
NO=${2:-10}
MSG=${OUTBOX_MESSAGES:-5000}
B=target/release/specstorm
T=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-catch.XXXXXX")
LOG=$T/runs.tsv
HTTP=(--set 'target.kind="http"' --set target.spawn=true)
ON=(--set fuzz.enabled=true)
one() { # label seed args...
  local label=$1 seed=$2
  shift 2
  local d=$T/run
  rm -rf "$d"
  "$B" run "$@" -q --seed "$seed" --out "$d" >/dev/null 2>&1
  local rc=$?
  python3 - "$d/summary.json" "$label" "$seed" "$rc" <<'PY' | tee -a "$LOG"
import json, sys
p, label, seed, rc = sys.argv[1:]
try:
    s = json.load(open(p))
except OSError:
    print(f"{label}\t{seed}\trc={rc}\tno summary")
    sys.exit()
inv = s["invariants"]
bad = sorted(k for k, v in inv.items() if v["verdict"] == "violated")
firsts = [v["first_violation_s"] for v in inv.values() if v.get("first_violation_s") is not None]
first = f"{min(firsts):.3f}" if firsts else "-"
print(f"{label}\t{seed}\trc={rc}\tviolated={','.join(bad) or '-'}\tfirst_s={first}\tload_s={s['duration_s']:.1f}")
PY
}
for seed in $(seq 1 "$NG"); do
  one naive-http-off "$seed" scenarios/groups-naive.toml --set stop.events=4000 "${HTTP[@]}"
  one naive-http-on "$seed" scenarios/groups-naive.toml --set stop.events=4000 "${HTTP[@]}" "${ON[@]}"
  one naive-sqlite-on "$seed" scenarios/groups-naive.toml --set stop.events=4000 "${ON[@]}"
  for v in groups-atomic ../targets/sqlite/designs/group-first.sql ../targets/sqlite/designs/upsert.sql; do
    name=$(basename "$v" .sql)
    one "$name-sqlite-on" "$seed" scenarios/groups-naive.toml --set "variant=\"$v\"" --set stop.events=4000 "${ON[@]}"
    one "$name-http-on" "$seed" scenarios/groups-naive.toml --set "variant=\"$v\"" --set stop.events=4000 "${HTTP[@]}" "${ON[@]}"
  done
done
for seed in $(seq 1 "$NO"); do
  for n in no-outbox no-redo; do
    one "outbox-naive-$n-off" "$seed" "scenarios/outbox-naive-$n.toml" --set outbox.messages="$MSG"
    one "outbox-naive-$n-on" "$seed" "scenarios/outbox-naive-$n.toml" --set outbox.messages="$MSG" "${ON[@]}"
  done
  for v in outbox-protocol ../targets/sqlite/designs/outbox-cas-head.sql ../targets/sqlite/designs/outbox-own-tx.sql; do
    name=$(basename "$v" .sql)
    # The naive scenarios' load (their crash faults included), a correct file.
    one "$name-on" "$seed" scenarios/outbox-naive-no-redo.toml --set "variant=\"$v\"" \
      --set 'expect="holds"' --set outbox.messages="$MSG" "${ON[@]}"
  done
done
python3 - "$LOG" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    d = dict(x.split("=", 1) for x in f[2:] if "=" in x)
    rows.setdefault(f[0], []).append(d)
for label, rs in rows.items():
    caught = sum(r.get("violated", "-") != "-" for r in rs)
    firsts = [float(r["first_s"]) for r in rs if r.get("first_s", "-") != "-"]
    med = f"{statistics.median(firsts):.3f}" if firsts else "-"
    print(f"{label}: violated in {caught}/{len(rs)}; median first violation {med} s")
PY
rm -rf "$T"
