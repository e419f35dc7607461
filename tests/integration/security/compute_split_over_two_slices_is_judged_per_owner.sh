#!/usr/bin/env bash
# Issue #25, Why 6: compute over share split across two slices. Mallory
# has two 20 % slices and burns at 100 % (without the shim) in each in
# turn, 0.9 s at a time: each slice is over its share in one window and
# idle in the next, and the watchdog needed two bad windows running per
# slice, so it never acted. Now compute is also judged per owner across
# her slices on the GPU (shares summed): she is over in every window, and
# kill mode stops her burns.
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up kill
now_ms() { echo $(($(date +%s%N) / 1000000)); }

for s in c1 c2; do
	tenant_api $MALLORY POST /v1/slices '{"name": "'$s'", "mode": "timeslice", "compute": 20}' >/dev/null
	expect_status "create $s" 201
done
t0=$(now_ms)
(
	for i in $(seq 6); do
		for s in c1 c2; do
			as_uid $MALLORY "$G" run --slice $s -- env -u LD_PRELOAD \
				"$BURN" --seconds 0.9 --memory 64MiB >>"$WORK/burns.out" 2>&1 ||
				{ echo "stopped $s $i" >>"$WORK/stopped"; exit 0; }
		done
	done
) &
LOOP=$!
PIDS+=($LOOP)
wait_until 6 test -s "$WORK/stopped" ||
	fail "Mallory burned at 100 % in two 20 % slices in turn for 6 s and was not stopped"
ms=$(($(now_ms) - t0))
kills=$(( $(events_of c1 watchdog.kill) + $(events_of c2 watchdog.kill) ))
[ "$kills" -ge 1 ] || fail "no watchdog.kill event on c1 or c2"
api GET "/v1/events?limit=100" >/dev/null
grep -q "across its slices" "$WORK/body" || fail "the kill does not say it judged the owner: $(cat "$WORK/body")"
echo "ok: a burn split over two 20 % slices was stopped after ${ms} ms ($(cat "$WORK/stopped"))"
echo "bench: watchdog time to stop, compute split over two slices: ${ms} ms"
