#!/usr/bin/env bash
# The daemon scales what a limited slice is charged by NVML's GPU time
# over its books' (daemon/chargeratio.c), bounded to [1/4, 1]. A tenant
# who holds her books at 0 (gs-region-forge hide) makes that ratio
# unknowable, never above 1: Mallory's 30 % burn, lying so, keeps a
# charge ratio of 1 and gets no more than her share of the GPU by the
# sim's own count, while root's honest 40 % high-priority inference slice
# beside her still gets its 40 % (its ratio below 1).
. "$(dirname "$0")/lib.sh" "$1"
INFER=$B/bin/gs-infer
[ -x "$BURN" ] && [ -x "$INFER" ] || { echo "SKIP: no gs-burn or gs-infer"; exit 77; }
SETTLE=${GS_TEST_SETTLE:-15}
MEASURE=${GS_TEST_MEASURE:-10}
SECS=$((SETTLE + MEASURE + 2))

sim_node
daemon_up
chmod 755 "$RUNDIR"

api POST /v1/slices '{"name": "infer", "mode": "timeslice", "memory": "4GiB", "gpu": 0, "compute": 40, "priority": "high"}' >/dev/null
expect_status "create infer" 201
tenant_api $MALLORY POST /v1/slices '{"name": "liar", "mode": "timeslice", "memory": "2GiB", "gpu": 0, "compute": 30}' >/dev/null
expect_status "create liar" 201
as_uid $MALLORY "$FORGE" hide "$RUNDIR" liar $((SECS + 5)) >"$WORK/hide.out" 2>&1 &
PIDS+=($!)
wait_until 5 grep -q hiding "$WORK/hide.out" || fail "the forge did not reach Mallory's books: $(cat "$WORK/hide.out")"

"$G" run --slice infer -- "$INFER" --light --seconds "$SECS" >"$WORK/infer.out" 2>&1 &
r1=$!
PIDS+=($r1)
as_uid $MALLORY "$G" run --slice liar -- "$BURN" --seconds "$SECS" --memory 256MiB >"$WORK/liar.out" 2>&1 &
r2=$!
PIDS+=($r2)

busy_of() {
	"$G" sim status --json | python3 -c '
import json, sys, time
d = json.load(sys.stdin)
procs = [p for g in d["gpus"] for p in g["processes"]]
print(" ".join("%.6f" % sum(p["busy_s"] for p in procs if p["name"] == n)
               for n in sys.argv[1:]), "%.6f" % time.time())' "$@"
}
sleep "$SETTLE"
a=$(busy_of gs-infer gs-burn)
sleep "$MEASURE"
b=$(busy_of gs-infer gs-burn)
read -r got lied < <(python3 -c '
import sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
dt = b[-1] - a[-1]
print(" ".join("%.1f" % (100 * (y - x) / dt) for x, y in zip(a[:-1], b[:-1])))' "$a" "$b")
wait "$r1" || fail "the inference run failed: $(cat "$WORK/infer.out")"
wait "$r2" || fail "Mallory's burn failed: $(cat "$WORK/liar.out")"

ratio() {
	grep -o "slice=$1 charge ratio [0-9.]*" "$WORK/daemon.log" | tail -1 | awk '{print $4}'
}
echo "bench: charge ratio, 30 % burn with books held at 0 beside a 40 % high-priority gs-infer: ${lied} % and ${got} % of the GPU (sim's count), ratios $(ratio liar) and $(ratio infer)"
[ "$(grep -c "slice=liar charge ratio" "$WORK/daemon.log")" -ge 1 ] ||
	fail "no charge ratio was published for Mallory's slice"
[ -z "$(grep -o 'slice=liar charge ratio [0-9.]*' "$WORK/daemon.log" | grep -v ' 1.000$')" ] ||
	fail "Mallory's books held at 0 earned her a charge ratio below 1: $(grep 'slice=liar charge ratio' "$WORK/daemon.log")"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 33 else 1)' "$lied" ||
	fail "Mallory's 30 % slice got ${lied} % of the GPU"
python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - 40) <= 3 else 1)' "$got" ||
	fail "the honest 40 % slice beside her got ${got} %"
echo "ok: books held at 0 keep a charge ratio of 1 and gain nothing"
