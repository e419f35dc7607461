#!/usr/bin/env bash
# Three saturating gs-burn in slices of 20, 30 and 50 % on one GPU: each
# gets its share within 3 percentage points over a 10 s window, measured
# by the sim's own accounting (busy seconds per process from `gpuslice
# sim status --json`), not by the shim's. The window starts 2 s in, when
# all three are running.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

for pct in 20 30 50; do
	"${RUN[@]}" --compute "$pct" --slice "s$pct" -- "$B/bin/gs-burn" \
		--seconds 14 >"$WORK/burn$pct" &
	PIDS+=($!)
	echo $! >"$WORK/runner$pct"
done
sleep 2
for pct in 20 30 50; do
	child_of "$(cat "$WORK/runner$pct")" >"$WORK/pid$pct"
done
t1=$(date +%s.%N); sim_busy >"$WORK/b1"; t1b=$(date +%s.%N)
sleep 10
t2=$(date +%s.%N); sim_busy >"$WORK/b2"; t2b=$(date +%s.%N)
wait
"$PY" - "$WORK" "$t1" "$t1b" "$t2" "$t2b" <<'PY'
import sys
w, t1, t1b, t2, t2b = sys.argv[1], *map(float, sys.argv[2:])
def load(f):
    return {int(a): float(b) for a, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
window = (t2 + t2b) / 2 - (t1 + t1b) / 2
bad = []
for pct in (20, 30, 50):
    pid = int(open(f"{w}/pid{pct}").read())
    share = (b2[pid] - b1[pid]) / window * 100
    print(f"slice {pct}%: {share:.2f}% of the GPU over {window:.2f} s (sim)")
    if abs(share - pct) > 3:
        bad.append(pct)
sys.exit(1 if bad else 0)
PY
echo ok
