#!/usr/bin/env bash
# The shim's cuGetProcAddress guard against future drivers: behind a fake
# newer driver (libgs-fake-newer-cuda.so over the sim) that answers
# cuMemAlloc at CUDA 13.0 with a new variant of another signature, the
# shim hands that variant out unwrapped (and it works when called with its
# own signature), while it still wraps cuMemAlloc asked at 12.0 (the
# sim's cuMemAlloc_v2), cuMemFree answered with an internal entry point
# that the driver confirms is the hooked variant, and cuMemGetInfo.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
FAKE=$B/tests/libgs-fake-newer-cuda.so
[ -e "$FAKE" ] || fail "missing $FAKE"
out=$(LD_PRELOAD=$B/lib/libgpuslice.so GPUSLICE_REAL_LIBCUDA=$FAKE \
	"$B/tests/gs-gpa-guard-probe") || fail "probe failed: $out"
echo "$out"
jcheck "$out" "d['cuMemAlloc@13000'] == 'libgs-fake-newer-cuda.so'"
jcheck "$out" "d['v3_call'] == 0"
jcheck "$out" "d['cuMemAlloc@12000'] == 'libgpuslice.so'"
jcheck "$out" "d['cuMemFree@13000'] == 'libgpuslice.so'"
jcheck "$out" "d['cuMemGetInfo@13000'] == 'libgpuslice.so'"
# Control: without the shim every answer is the driver's own.
bare=$(GPUSLICE_REAL_LIBCUDA=$FAKE LD_PRELOAD=$FAKE "$B/tests/gs-gpa-guard-probe")
jcheck "$bare" "d['cuMemAlloc@12000'] == 'libcuda.so.1' and d['cuMemFree@13000'] == 'libgs-fake-newer-cuda.so'"
echo ok
