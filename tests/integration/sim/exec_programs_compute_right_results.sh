#!/usr/bin/env bash
# CUDA runtime programs built with nvcc (-arch=sm_90 and nvcc's default
# target) run their kernels on the sim's PTX interpreter and check every
# result on the host (exec/exec_basic.cu): vector add, SAXPY, a
# shared-memory + atomics reduction, a warp-shuffle scan, a histogram
# with shared atomics, a tiled matmul, warp votes, sqrt/div/cvt, a struct
# by value with a local array, libdevice math, warp and cooperative-groups
# reductions with double atomics, a call made by half a warp before a
# shuffle and a barrier, async copies to shared memory, cuda::barrier
# phases (mbarrier on sm_90), a warp spinning on another warp's flag,
# kernels captured in a graph and replayed,
# device printf, and a failed device
# assert giving cudaErrorAssert. With GPUSLICE_SIM_EXEC=0 kernels are only
# timed: the vector add's output stays as it was.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/exec_check.sh"
run_checks exec_basic "vector_add saxpy reduction_shared_atomics scan_shuffles histogram tiled_matmul warp_votes sqrt_div_cvt struct_param_local_array math_library_functions warp_reductions_cg_tiles divergent_call_reconverges async_copy_to_shared barrier_phases warp_waits_for_another_warp graph_replays_kernels device_assert"
# device printf: one line per thread, formatted as the host would
[ "$(grep -c '^printf block [01] thread [01]: 2.50 x$' "$WORK/out")" = 4 ] ||
	{ cat "$WORK/out"; fail "device printf did not print its 4 lines"; }
# GPUSLICE_SIM_EXEC=0: kernels are timed only, so the results are not there
GPUSLICE_SIM_EXEC=0 timeout 60 "$OUT/exec_basic-sm90" >"$WORK/off" 2>&1 || true
grep -q '^FAIL vector_add$' "$WORK/off" || { cat "$WORK/off"; fail "GPUSLICE_SIM_EXEC=0 still ran the kernels"; }
echo ok
