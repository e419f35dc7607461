#!/usr/bin/env bash
# A fault in one MPS slice reaches the other slices on the same MPS server
# as an error, not a hang: next to gs-fault (which stores through a bad
# address after 300 ms), a burn meant to run 20 s in another MPS slice
# exits non-zero within 10 s with a CUDA error, and the faulting one exits
# with CUDA_ERROR_ILLEGAL_ADDRESS. New work proceeds: a matmul in a new
# MPS slice started right after the fault succeeds within 5 s (the run
# waits for the faulted server to recover, or restarts the daemon).
. "$(dirname "$0")/lib.sh" "$1"
sim_up
"${RUN[@]}" --mode mps -- "$B/bin/gs-burn" --seconds 20 --memory 256MiB \
	>"$WORK/burn" 2>"$WORK/burn.err" &
burn=$!
PIDS+=("$burn")
sleep 0.3
"${RUN[@]}" --mode mps -- "$B/bin/gs-fault" --after-ms 300 >"$WORK/fault" 2>&1 &&
	fail "gs-fault did not fail"
grep -q CUDA_ERROR_ILLEGAL_ADDRESS "$WORK/fault" ||
	fail "gs-fault: $(cat "$WORK/fault")"
t0=$(date +%s%N)
timeout 20 "${RUN[@]}" --mode mps -- "$B/bin/gs-matmul" --n 128 --iterations 1000 \
	>"$WORK/after" 2>&1 || fail "new work after the fault failed: $(cat "$WORK/after")"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -le 5000 ] || fail "new work after the fault took $ms ms"
echo "new work after the fault: ok in $ms ms"
for _ in $(seq 100); do
	kill -0 "$burn" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$burn" 2>/dev/null && fail "the neighbour still runs 10 s after the fault (a hang)"
rc=0
wait "$burn" || rc=$?
PIDS=()
[ "$rc" -ne 0 ] || fail "the neighbour exited 0 after its server faulted"
grep -q "CUDA_ERROR\|error" "$WORK/burn" "$WORK/burn.err" ||
	fail "the neighbour gave no error: $(cat "$WORK/burn" "$WORK/burn.err")"
echo "neighbour: exit $rc, $(grep -ho 'CUDA_ERROR_[A-Z_]*' "$WORK/burn" "$WORK/burn.err" | head -1)"
