#!/usr/bin/env bash
# Programs built against the CUDA runtime (cudaMalloc through the driver's
# cuGetProcAddress, a device reset and reuse, a matmul) run unchanged on a
# slice run with --swap, whose allocations are movable; afterwards the
# sim's device memory is back to zero.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
D=$B/tests/cudart
[ -x "$D/gs-cudart-shared" ] || { echo "SKIP: no cudart test programs (built with nvcc)"; exit 77; }
for p in gs-cudart-shared gs-cudart-static; do
	out=$("${RUN[@]}" --swap --memory 4GiB -- "$D/$p" 2>&1) || fail "$p: $out"
	grep -q "^all ok" <<<"$out" || fail "$p: $out"
done
out=$("${RUN[@]}" --swap --memory 4GiB -- "$D/gs-cudart-matmul" 2>&1) || fail "matmul: $out"
jcheck "$(tail -1 <<<"$out")" 'd["error"] is None'
used=$("$B/bin/gpuslice" sim status --json --dir "$SIMDIR" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["gpus"][0]["memory_used_bytes"])')
[ "$used" = 0 ] || fail "device memory left in use: $used"
echo ok
