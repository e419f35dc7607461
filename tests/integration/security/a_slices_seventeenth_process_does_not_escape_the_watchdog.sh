#!/usr/bin/env bash
# Issue #25, Why 1: the watchdog recorded at most 16 processes per slice
# and acted once per episode. Mallory starts 16 decoys (a context each) in
# her 2 GiB slice (without the shim, whose cap counts contexts), then a
# 17th that takes 8 GiB: before,
# the watchdog killed the decoys and never acted again, and the 8 GiB
# process ran on. Now every process NVML lists is judged, kill mode acts
# again while the slice stays over, and a process's context allowance is
# never more than it holds (decoys add nothing): the 17th is killed.
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up kill
now_ms() { echo $(($(date +%s%N) / 1000000)); }

tenant_api $MALLORY POST /v1/slices '{"name": "m", "mode": "timeslice", "memory": "2GiB"}' >/dev/null
expect_status "create m" 201
# The decoys wait on one pipe the test holds open (and closes at its end).
mkfifo -m 666 "$WORK/decoys.in"
for i in $(seq 16); do
	as_uid $MALLORY "$G" run --slice m -- env -u LD_PRELOAD \
		LD_LIBRARY_PATH="$LD_LIBRARY_PATH" python3 "$TENANT" \
		<"$WORK/decoys.in" >"$WORK/d$i.out" 2>&1 &
	PIDS+=($!)
done
exec {DIN}>"$WORK/decoys.in"
wait_until 90 eval '[ "$(cat "$WORK"/d*.out 2>/dev/null | grep -c "^pid ")" -ge 16 ]' ||
	fail "the 16 decoys did not start: $(cat "$WORK"/d*.out)"
for i in $(seq 16); do PIDS+=("$(awk '/^pid /{print $2; exit}' "$WORK/d$i.out")"); done
sleep 1
# The 17th: in the slice through `gpuslice run`, without the shim.
mkfifo -m 666 "$WORK/big.in"
as_uid $MALLORY "$G" run --slice m -- env -u LD_PRELOAD LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
	python3 "$TENANT" <"$WORK/big.in" >"$WORK/big.out" 2>"$WORK/big.err" &
PIDS+=($!)
exec {BIG}>"$WORK/big.in"
wait_until 10 grep -q '^pid ' "$WORK/big.out" || fail "the 17th did not start: $(cat "$WORK/big.out" "$WORK/big.err")"
BPID=$(awk '/^pid /{print $2; exit}' "$WORK/big.out")
PIDS+=("$BPID")
echo "alloc $((8 << 30))" >&$BIG
wait_until 5 grep -q '^alloc ' "$WORK/big.out" || kill -0 "$BPID" 2>/dev/null ||
	fail "the 17th died before it allocated: $(cat "$WORK/big.err")"
grep -q "^alloc $((8 << 30)) 0" "$WORK/big.out" || fail "the 17th could not take 8 GiB: $(cat "$WORK/big.out")"
t0=$(now_ms)
wait_until 8 eval '! kill -0 '"$BPID"' 2>/dev/null' ||
	fail "the 17th process of the slice, holding 8 GiB in a 2 GiB slice, was never stopped"
ms=$(($(now_ms) - t0))
exec {BIG}>&- {DIN}>&-
[ "$(events_of m watchdog.kill)" -ge 1 ] || fail "no watchdog.kill event on m"
echo "ok: the 17th process (8 GiB in a 2 GiB slice) was killed ${ms} ms after it allocated"
echo "bench: watchdog time to stop, 17th process of a slice: ${ms} ms"
