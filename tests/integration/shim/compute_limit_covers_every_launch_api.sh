#!/usr/bin/env bash
# The compute limit covers cuLaunchKernelEx, cooperative launches and graph
# launches as well as cuLaunchKernel: four processes, one per API, each in
# a 20 % slice, keep the GPU busy with 2 ms kernels; each gets 20 % (within
# 3 points) over 6 s by the sim's own accounting.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
L=$B/tests/gs-shim-launcher

for api in plain ex coop graph; do
	"${RUN[@]}" --compute 20 --slice "$api" -- "$L" --api "$api" \
		--seconds 9 --ns 2000000 >"$WORK/$api" &
	PIDS+=($!); echo $! >"$WORK/r_$api"
done
sleep 2
for api in plain ex coop graph; do
	child_of "$(cat "$WORK/r_$api")" >"$WORK/pid_$api"
done
t1=$(date +%s.%N); sim_busy >"$WORK/b1"; t1b=$(date +%s.%N)
sleep 6
t2=$(date +%s.%N); sim_busy >"$WORK/b2"; t2b=$(date +%s.%N)
wait
"$PY" - "$WORK" "$t1" "$t1b" "$t2" "$t2b" <<'PY'
import json, sys
w, t1, t1b, t2, t2b = sys.argv[1], *map(float, sys.argv[2:])
def load(f):
    return {int(a): float(b) for a, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
window = (t2 + t2b) / 2 - (t1 + t1b) / 2
ok = True
for api in ("plain", "ex", "coop", "graph"):
    d = json.loads(open(f"{w}/{api}").read())
    pid = int(open(f"{w}/pid_{api}").read())
    share = (b2[pid] - b1[pid]) / window * 100
    print(f"{api:6}: {share:.2f}% of the GPU over {window:.2f} s (sim), {d['launches']} launches, error {d['error']}")
    ok = ok and d["error"] is None and abs(share - 20) <= 3
sys.exit(0 if ok else 1)
PY
echo ok
