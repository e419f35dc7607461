#!/usr/bin/env bash
# A program that resolves every driver entry point through
# cuGetProcAddress_v2 (as CUDA 12+ runtimes do) is limited exactly like one
# that links the driver directly: two gs-burn in 30 % slices, one each way,
# both get 30 % (within 3 points) of the GPU over 6 s by the sim's
# accounting. Their 60 % together leave the GPU idle 40 % of the time, so
# neither is held back by the other.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

"${RUN[@]}" --compute 30 --slice direct -- "$B/bin/gs-burn" --seconds 9 \
	>"$WORK/direct" &
PIDS+=($!); echo $! >"$WORK/r_direct"
"${RUN[@]}" --compute 30 --slice gpa -- "$B/bin/gs-burn" --seconds 9 \
	--via-getprocaddress >"$WORK/gpa" &
PIDS+=($!); echo $! >"$WORK/r_gpa"
sleep 2
for k in direct gpa; do
	child_of "$(cat "$WORK/r_$k")" >"$WORK/pid_$k"
done
t1=$(date +%s.%N); sim_busy >"$WORK/b1"; t1b=$(date +%s.%N)
sleep 6
t2=$(date +%s.%N); sim_busy >"$WORK/b2"; t2b=$(date +%s.%N)
wait
jcheck "$(cat "$WORK/gpa")" 'd["resolve"] == "cuGetProcAddress" and d["error"] is None'
"$PY" - "$WORK" "$t1" "$t1b" "$t2" "$t2b" <<'PY'
import sys
w, t1, t1b, t2, t2b = sys.argv[1], *map(float, sys.argv[2:])
def load(f):
    return {int(a): float(b) for a, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
window = (t2 + t2b) / 2 - (t1 + t1b) / 2
ok = True
for k in ("direct", "gpa"):
    pid = int(open(f"{w}/pid_{k}").read())
    share = (b2[pid] - b1[pid]) / window * 100
    print(f"{k}: {share:.2f}% of the GPU over {window:.2f} s (sim)")
    ok = ok and abs(share - 30) <= 3
sys.exit(0 if ok else 1)
PY
echo ok
