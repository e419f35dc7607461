#!/usr/bin/env bash
# Every nvcc-built cudart program (static and shared cudart, default
# target and sm_90) runs all of cudart_probe's checks on a two-GPU sim:
# cudaMalloc/Pitch/Managed/Async/pools/3D arrays, cudaMemGetInfo, kernels
# through <<<>>> and cudaLaunchKernelEx, graphs, streams and events, two
# GPUs from two threads, cudaDeviceReset; with CUDA_MODULE_LOADING=EAGER;
# then (static and shared) with
# GPU 0 split into two MIG instances. In the ASan build the sanitizer
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
# Modules loaded eagerly (at the first context use) rather than lazily.
CUDA_MODULE_LOADING=EAGER "${pre[@]}" "${CUDART_BINS[0]}" all >"$WORK/eager.out" 2>&1 ||
	{ cat "$WORK/eager.out"; fail "CUDA_MODULE_LOADING=EAGER: checks failed"; }
grep -q '^all ok$' "$WORK/eager.out" || fail "CUDA_MODULE_LOADING=EAGER: did not finish"
echo "CUDA_MODULE_LOADING=EAGER: $(grep -c '^ok ' "$WORK/eager.out") checks ok"

# On MIG instances too: the runtime's integrity check covers each device's
# GPU (v1) UUID, which a MIG device shares with its GPU.
"$B/sim/nvidia-smi" -i 0 -mig 1 >/dev/null || fail "MIG mode"
"$B/sim/nvidia-smi" mig -i 0 -cgi 1g.10gb,1g.10gb -C >/dev/null || fail "MIG instances"
for prog in "${CUDART_BINS[0]}" "${CUDART_BINS[1]}"; do
	name=$(basename "$prog")
	"${pre[@]}" "$prog" all >"$WORK/$name.mig" 2>&1 ||
		{ cat "$WORK/$name.mig"; fail "$name on MIG: checks failed"; }
	grep -q '^device 0: .* MIG 1g.10gb' "$WORK/$name.mig" ||
		{ cat "$WORK/$name.mig"; fail "$name: device 0 is not the MIG instance"; }
	grep -q '^all ok$' "$WORK/$name.mig" || fail "$name on MIG: did not finish"
	echo "$name on MIG: $(grep -c '^ok ' "$WORK/$name.mig") checks ok"
done
# The sim's books are back to zero once they have exited.
[ "$(sim_mem_used)" = 0 ] || fail "memory left on the node: $(sim_mem_used)"
echo ok
