#!/usr/bin/env bash
# Every nvcc-built cudart program (static and shared cudart, default
# target and sm_90) runs all of cudart_probe's checks on a two-GPU sim:
# cudaMalloc/Pitch/Managed/Async/pools/3D arrays, cudaMemGetInfo, kernels
# through <<<>>> and cudaLaunchKernelEx, graphs, streams and events, two
# GPUs from two threads, cudaDeviceReset. In the ASan build the sanitizer
# runtime is preloaded (the programs are not instrumented, the sim is).
. "$(dirname "$0")/lib.sh" "$1"
sim_only_up 2xH100-SXM5-80GB
pre=()
if [ -n "${GS_ASAN_PRELOAD:-}" ]; then
	# the sanitizer runtime must come first in the process
	pre=(env LD_PRELOAD="$GS_ASAN_PRELOAD")
fi
for prog in "${CUDART_BINS[@]}"; do
	name=$(basename "$prog")
	"${pre[@]}" "$prog" all >"$WORK/$name.out" 2>&1 ||
		{ cat "$WORK/$name.out"; fail "$name: checks failed"; }
	grep -q '^all ok$' "$WORK/$name.out" || { cat "$WORK/$name.out"; fail "$name: did not finish"; }
	grep -q '^ok two_gpus_from_two_threads$' "$WORK/$name.out" ||
		fail "$name: the two-GPU check did not run"
	echo "$name: $(grep -c '^ok ' "$WORK/$name.out") checks ok"
done
# The sim's books are back to zero once they have exited.
[ "$(sim_mem_used)" = 0 ] || fail "memory left on the node: $(sim_mem_used)"
echo ok
