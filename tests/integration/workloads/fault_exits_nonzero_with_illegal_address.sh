#!/usr/bin/env bash
# gs-fault runs a few kernels, then stores through an unmapped address: it
# must exit non-zero with CUDA_ERROR_ILLEGAL_ADDRESS in its one JSON line,
# also after running for a while (--after-ms), and a program sharing the
# GPU by time-slicing must not be taken down with it.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

run_fault() {
	set +e
	out=$("$B/bin/gs-fault" "$@")
	rc=$?
	set -e
	[ "$rc" -ne 0 ] || fail "gs-fault $* exited 0: $out"
	jcheck "$out" 'd["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"' \
		'd["kernels_before"] >= 3'
}

run_fault
run_fault --via-getprocaddress
jcheck "$out" 'd["resolve"] == "cuGetProcAddress"'

# A neighbour keeps working while the faulting process dies.
"$B/bin/gs-matmul" --iterations 8000 --n 512 >"$WORK/mm.json" &
mm=$!
PIDS+=("$mm")
run_fault --after-ms 300
jcheck "$out" 'd["elapsed_ms"] >= 300'
wait "$mm" || fail "gs-matmul beside the fault failed: $(cat "$WORK/mm.json")"
jcheck "$(cat "$WORK/mm.json")" 'd["error"] is None and d["iterations"] == 8000'
echo "ok"
