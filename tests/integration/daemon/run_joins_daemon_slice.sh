#!/usr/bin/env bash
# `gpuslice run --slice NAME` joins a slice the daemon created: it takes the
# daemon's environment for the slice (its run directory and GPU), the
# daemon's memory cap applies (the tenant cannot set its own), and the
# process is attached to the slice for the watchdog and on_exit policy.
. "$(dirname "$0")/lib.sh" "$1"

"$G" sim init --gpus 2xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
daemon_up
out=$(api POST /v1/slices '{"name": "nb", "memory": "2GiB", "compute": 50, "gpu": 1}')
expect_status "create nb" 201

# The daemon's cap (2 GiB, context included) applies, not --memory.
res=$("$G" run --slice nb --memory 8GiB -- "$B/bin/gs-alloc" --api plain \
	--chunk 128MiB 2>"$WORK/run.err")
jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and d["allocated_bytes"] <= 2 * 2**30'
grep -q "its own limits apply" "$WORK/run.err" ||
	fail "run did not say the slice's own limits apply: $(cat "$WORK/run.err")"

# The workload ran on the slice's GPU (1) and was attached while it ran.
"$G" run --slice nb -- "$B/bin/gs-alloc" --api plain --chunk 256MiB \
	--limit 512MiB --hold 3 >"$WORK/hold.out" 2>&1 &
PIDS+=($!)
wait_until 10 eval '[ "$(api GET /v1/slices/nb | python3 -c "import json,sys; print(len(json.load(sys.stdin).get(\"pids\", [])))")" -gt 0 ]' ||
	fail "the run's process was not attached: $(api GET /v1/slices/nb)"
on1=$("$G" sim status --dir "$GPUSLICE_SIM_DIR" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(1 for p in d["gpus"][1]["processes"] if p["memory_bytes"] > 0))')
expect_eq "processes on GPU 1" "$on1" "1"

echo "ok"
