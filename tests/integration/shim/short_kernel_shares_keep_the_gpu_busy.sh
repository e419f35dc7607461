#!/usr/bin/env bash
# Short kernels (#12 item 6): three saturating gs-burn with ~1 ms kernels
# (64 MiB, 64 FMAs per element) in slices of 20, 30 and 50 % get their
# shares within 2 percentage points each over a 16 s window, and the GPU
# stays at least 97 % busy, measured by the sim's own accounting (busy
# seconds per process), not by the shim's. The window starts 2 s in.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

for pct in 20 30 50; do
	"${RUN[@]}" --compute "$pct" --slice "s$pct" -- "$B/bin/gs-burn" \
		--seconds 20 --memory 64MiB --iters 64 >"$WORK/burn$pct" &
	PIDS+=($!)
	echo $! >"$WORK/runner$pct"
done
sleep 2
for pct in 20 30 50; do
	child_of "$(cat "$WORK/runner$pct")" >"$WORK/pid$pct"
done
t1=$(date +%s.%N); sim_busy >"$WORK/b1"; t1b=$(date +%s.%N)
sleep 16
t2=$(date +%s.%N); sim_busy >"$WORK/b2"; t2b=$(date +%s.%N)
wait
"$PY" - "$WORK" "$t1" "$t1b" "$t2" "$t2b" <<'PY' || fail "a share off by more than 2 points, or the GPU under 97 % busy"
import sys
w, t1, t1b, t2, t2b = sys.argv[1], *map(float, sys.argv[2:])
def load(f):
    return {int(a): float(b) for a, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
window = (t2 + t2b) / 2 - (t1 + t1b) / 2
bad, total = [], 0.0
for pct in (20, 30, 50):
    pid = int(open(f"{w}/pid{pct}").read())
    share = (b2[pid] - b1[pid]) / window * 100
    total += share
    print(f"slice {pct}%, ~1 ms kernels: {share:.2f}% of the GPU over {window:.2f} s (sim)")
    if abs(share - pct) > 2:
        bad.append(pct)
print(f"GPU busy: {total:.2f}%")
sys.exit(1 if bad or total < 97 else 0)
PY
for pct in 20 30 50; do
	jcheck "$(last_json "$WORK/burn$pct")" 'd["kernels"] > 100'
done
echo ok
