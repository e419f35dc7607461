#!/usr/bin/env bash
# Fail closed in the shim: a process sent to a slice (GPUSLICE_SLICE) that
# it cannot join - the slice does not exist, or the region cannot be
# opened - gets CUDA_ERROR_NOT_PERMITTED from cuInit (whether it resolves
# the driver by dlsym or through cuGetProcAddress) and does no GPU work,
# instead of running without limits; the shim's log says why. A process
# that names no slice still runs.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
ALLOC=$B/bin/gs-alloc
SHIM=$B/lib/libgpuslice.so
[ -x "$ALLOC" ] || { echo "SKIP: no gs-alloc"; exit 77; }

# A region with one real slice, held by a `gpuslice run`.
"${RUN[@]}" --slice real --memory 1GiB -- sleep 60 &
PIDS+=($!)
has_real() { "$B/tests/gs-region-probe" "$RUNDIR" real | grep -q '"found":true'; }
for _ in $(seq 100); do has_real && break; sleep 0.1; done
has_real || fail "gpuslice run made no slice 'real' in $RUNDIR"

# refused TAG RUN_DIR SLICE REASON [ARGS...]
refused() {
	local tag=$1 dir=$2 slice=$3 reason=$4 out rc=0
	shift 4
	out=$(GPUSLICE_RUN_DIR=$dir GPUSLICE_SLICE=$slice GPUSLICE_LOG=$WORK/$tag.log \
		LD_PRELOAD=$SHIM "$ALLOC" --api plain --chunk 256MiB --limit 1GiB "$@") || rc=$?
	[ "$rc" -ne 0 ] || fail "$tag: the workload ran without its slice: $out"
	jcheck "$out" 'd["error"] == "CUDA_ERROR_NOT_PERMITTED" and d["call"] == "cuInit"'
	grep -q "slice=$slice .*$reason.*refusing GPU work (CUDA_ERROR_NOT_PERMITTED)" "$WORK/$tag.log" ||
		fail "$tag: no clear log line: $(cat "$WORK/$tag.log" 2>/dev/null)"
	[ "$(sim_mem_used)" = 0 ] || fail "$tag: memory was allocated on the GPU"
}

refused missing-slice "$RUNDIR" nope "no slice of that name"
refused missing-slice-gpa "$RUNDIR" nope "no slice of that name" --via-getprocaddress
refused no-region "$WORK/no-such-run" nope "cannot open its region"
chmod 000 "$RUNDIR/usage"
if [ "$(id -u)" -ne 0 ]; then
	refused unreadable-region "$RUNDIR" real "cannot open its region"
fi
chmod 666 "$RUNDIR/usage"

# Joining the slice that exists works, and no slice asked: no enforcement.
out=$(GPUSLICE_SLICE=real LD_PRELOAD=$SHIM "$ALLOC" --api plain --chunk 256MiB --limit 512MiB)
jcheck "$out" 'd.get("error") in (None, "") and d["allocated_bytes"] == 512 * 2**20'
out=$(LD_PRELOAD=$SHIM "$ALLOC" --api plain --chunk 256MiB --limit 512MiB)
jcheck "$out" 'd.get("error") in (None, "") and d["allocated_bytes"] == 512 * 2**20'
echo "ok: cuInit answers CUDA_ERROR_NOT_PERMITTED without the slice, with a log line"
