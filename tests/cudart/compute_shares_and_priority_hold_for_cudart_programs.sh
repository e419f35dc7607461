#!/usr/bin/env bash
# Compute shares and priority hold for cudart programs as for driver-API
# ones (tests/integration/shim): two saturating cudart burns in slices of
# 30 and 70 % get their shares within 3 percentage points over an 8 s
# window, measured by the sim's own accounting; and a latency-bound
# cudart program at high priority keeps its p99 near its p99 alone next
# to a low-priority cudart burn (unprotected, the burn slows it down about
# 1.9x: checked as the control). Usually within 1.25x; the bound here is
# generous (1.5x alone and 0.85x unprotected), as host jitter on a 2-core
# machine moves p99 (a CI run saw 1.30-1.86x): up to three alone/with
# pairs, one within the bound passes.
. "$(dirname "$0")/lib.sh" "$1"
shim_needs_plain_build
sim_up
S=$B/tests/cudart/gs-cudart-static
D=$B/tests/cudart/gs-cudart-shared

"${RUN[@]}" --compute 30 --slice s30 -- "$S" burn 11 >"$WORK/burn30" &
PIDS+=($!)
echo $! >"$WORK/runner30"
"${RUN[@]}" --compute 70 --slice s70 -- "$D" burn 11 >"$WORK/burn70" &
PIDS+=($!)
echo $! >"$WORK/runner70"
sleep 2
for pct in 30 70; do
	child_of "$(cat "$WORK/runner$pct")" >"$WORK/pid$pct"
done
t1=$(date +%s.%N); sim_busy >"$WORK/b1"; t1b=$(date +%s.%N)
sleep 8
t2=$(date +%s.%N); sim_busy >"$WORK/b2"; t2b=$(date +%s.%N)
wait
"$PY" - "$WORK" "$t1" "$t1b" "$t2" "$t2b" <<'PY' || fail "shares off by more than 3 points"
import sys
w, t1, t1b, t2, t2b = sys.argv[1], *map(float, sys.argv[2:])
def load(f):
    return {int(a): float(b) for a, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
window = (t2 + t2b) / 2 - (t1 + t1b) / 2
bad = []
for pct in (30, 70):
    pid = int(open(f"{w}/pid{pct}").read())
    share = (b2[pid] - b1[pid]) / window * 100
    print(f"cudart slice {pct}%: {share:.2f}% of the GPU over {window:.2f} s (sim)")
    if abs(share - pct) > 3:
        bad.append(pct)
sys.exit(1 if bad else 0)
PY
for pct in 30 70; do
	jcheck "$(cat "$WORK/burn$pct")" 'd["kernels"] > 0'
done

p() { "$PY" -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
"$S" burn 5 >/dev/null &
PIDS+=($!)
sleep 1
bare=$("$D" requests 3)
wait
ok=""
for attempt in 1 2 3; do
	alone=$("${RUN[@]}" --priority high -- "$D" requests 3)
	"${RUN[@]}" --priority low --slice batch -- "$S" burn 5 >"$WORK/burn" &
	PIDS+=($!)
	sleep 1
	with=$("${RUN[@]}" --priority high -- "$D" requests 3)
	wait
	a=$(p "$alone" p99_ms); w=$(p "$with" p99_ms); u=$(p "$bare" p99_ms)
	echo "attempt $attempt: p99 alone $a ms, next to a low-priority cudart burn $w ms (unprotected: $u ms)"
	if awk -v a="$a" -v w="$w" -v u="$u" \
		'BEGIN { exit !(w <= 1.5 * a && w <= 0.85 * u) }'; then
		ok=1
		break
	fi
done
[ -n "$ok" ] || fail "p99 next to the burn above 1.5x alone (or not clearly below unprotected) in every attempt"
jcheck "$bare" "d['p50_ms'] > 1.5 * $(p "$alone" p50_ms)"
echo ok
