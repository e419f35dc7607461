#!/usr/bin/env bash
# In the daemon's region the compute turns are given by gpusliced's
# arbiter (tenants only write their own slice's record and ring it). With
# real shims on the simulated GPU:
#  - two saturating gs-burn in time-sliced slices of weight 1 and 3 split
#    the GPU 25 / 75 (within 6 points, by the sim's own per-process busy
#    time over 8 s), and the GPU stays over 90 % busy;
#  - gs-infer (GPU-bound requests) at high priority next to a saturating
#    burn at low priority keeps its p99 within 1.25x of its p99 alone
#    once it runs (latency_pairs.sh: its first 0.5 s, when it shares the
#    GPU with the low kernel already running, are not counted; up to five
#    alone/with pairs for host jitter), where without the shim the burn
#    makes it 2.6x and doubles its median latency (the control).
. "$(dirname "$0")/lib.sh" "$1"
PY=python3
"$G" sim init --gpus 1xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
daemon_up
for s in '{"name": "w1", "weight": 1, "mode": "timeslice"}' \
	'{"name": "w3", "weight": 3, "mode": "timeslice"}' \
	'{"name": "hi", "priority": "high", "mode": "timeslice"}' \
	'{"name": "lo", "priority": "low", "mode": "timeslice"}'; do
	api POST /v1/slices "$s" >/dev/null
	expect_status "create $s" 201
done

# busy: pid -> busy seconds, by the sim.
busy() {
	"$G" sim status --json --dir "$GPUSLICE_SIM_DIR" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
seen = {e["pid"]: e["busy_s"] for e in d.get("exited", [])}
for g in d["gpus"]:
    for p in g["processes"]:
        seen[p["pid"]] = p["busy_s"]
for pid, b in seen.items():
    print(pid, b)'
}
# child_of PID: the burn the runner started.
child_of() {
	local c n=50
	while [ $n -gt 0 ]; do
		c=$(pgrep -P "$1" | head -1)
		[ -n "$c" ] && { echo "$c"; return; }
		sleep 0.1
		n=$((n - 1))
	done
	fail "no child of $1"
}

for w in 1 3; do
	"$G" run --slice "w$w" -- "$B/bin/gs-burn" --seconds 12 >"$WORK/burn$w" 2>&1 &
	PIDS+=($!)
	echo $! >"$WORK/runner$w"
done
sleep 2
for w in 1 3; do child_of "$(cat "$WORK/runner$w")" >"$WORK/pid$w"; done
t1=$(date +%s.%N); busy >"$WORK/b1"
sleep 8
t2=$(date +%s.%N); busy >"$WORK/b2"
wait "$(cat "$WORK/runner1")" "$(cat "$WORK/runner3")"
"$PY" - "$WORK" "$t1" "$t2" <<'PY' || fail "weights 1:3 did not split the GPU 25/75 under the arbiter"
import sys
w, t1, t2 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
load = lambda f: {int(a): float(b) for a, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
win, total, bad = t2 - t1, 0.0, False
for wt, want in ((1, 25), (3, 75)):
    pid = int(open(f"{w}/pid{wt}").read())
    share = (b2[pid] - b1[pid]) / win * 100
    total += share
    print(f"weight {wt}: {share:.1f}% of the GPU over {win:.1f} s (want {want})")
    bad = bad or abs(share - want) > 6
print(f"GPU busy: {total:.1f}%")
sys.exit(1 if bad or total < 90 else 0)
PY

. "$(dirname "$0")/../latency_pairs.sh"
high_infer() { "$G" run --slice hi -- "${INFER[@]}"; }
low_burn() { "$G" run --slice lo -- "$B/bin/gs-burn" --seconds 7; }
# Control: without the shim the burn slows the server down.
unprotected
latency_pairs 1.25 || fail "p99 next to the burn above 1.25x alone in every attempt"
jcheck "$bare" "d['p50_ms'] > 1.5 * $(json_field "$alone" p50_ms)" ||
	fail "the control did not slow down without the shim"
echo "ok: the arbiter's turns follow weights and priority"
