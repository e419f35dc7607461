#!/usr/bin/env bash
# gs-infer --light at high priority next to a saturating gs-burn at low
# priority keeps its p99 latency within 1.25x of its p99 alone. The
# requests are made GPU-bound (width 8192: ~2 ms of GPU per request on the
# sim) so that what is measured is the GPU, not the host: unprotected, the
# burn's time slices would double the latency (checked below as the
# control). On a loaded machine host jitter moves p99 from run to run, so
# up to five alone/with pairs are measured; one pair within the bound
# passes.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
INFER=("$B/bin/gs-infer" --light --width 8192 --seconds 4)

p99() { "$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["p99_ms"])' "$1"; }

# Control: without the shim the burn slows the server down.
"$B/bin/gs-burn" --seconds 7 >/dev/null &
PIDS+=($!)
sleep 1
bare=$("${INFER[@]}")
wait
ok=""
for attempt in 1 2 3 4 5; do
	alone=$("${RUN[@]}" --priority high -- "${INFER[@]}")
	"${RUN[@]}" --priority low --slice batch -- "$B/bin/gs-burn" --seconds 7 \
		>"$WORK/burn" &
	PIDS+=($!)
	sleep 1
	with=$("${RUN[@]}" --priority high -- "${INFER[@]}")
	wait
	a=$(p99 "$alone"); w=$(p99 "$with"); u=$(p99 "$bare")
	echo "attempt $attempt: p99 alone $a ms, next to a low-priority burn $w ms (unprotected: $u ms)"
	if awk -v a="$a" -v w="$w" 'BEGIN { exit !(w <= 1.25 * a) }'; then
		ok=1
		break
	fi
done
[ -n "$ok" ] || fail "p99 next to the burn above 1.25x alone in every attempt"
jcheck "$bare" "d['p50_ms'] > 1.5 * $(
	"$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["p50_ms"])' "$alone")"
jcheck "$(cat "$WORK/burn")" 'd["error"] is None and d["kernels"] > 0'
echo ok
