#!/usr/bin/env bash
# A process of a slice gets no context on a GPU that gpusliced does not
# manage (one missing from the daemon's region GPU table, which only the
# daemon writes): nothing of it could be counted against the slice's cap,
# so the shim fails closed with CUDA_ERROR_DEVICE_UNAVAILABLE rather than
# running uncapped. Mallory reaches such a GPU by pointing her process,
# in her 1 GiB slice, at a simulated node of her own (on a real node: a
# GPU the daemon was not given). Before, her shim found no slot for it
# and allocated 4 GiB past the cap. A MIG instance the daemon makes for a
# slice is in the table when the create answers: a process started at
# once runs, capped by its instance.
. "$(dirname "$0")/lib.sh" "$1"

sim_node 2xH100-SXM5-80GB
node_up

tenant_api $MALLORY POST /v1/slices '{"name": "m", "memory": "1GiB", "gpu": 0}' >/dev/null
expect_status "create m" 201

# Her own node, where the daemon's region has no GPU.
mkdir "$WORK/mine"
chown $MALLORY "$WORK/mine"
as_uid $MALLORY "$G" sim init --gpus 1xH100-SXM5-80GB --dir "$WORK/mine" >/dev/null ||
	fail "Mallory could not make a node of her own"

# The shim says what it refuses in its log (GPUSLICE_LOG), never on
# the program's stderr.
SHIMLOG=$WORK/shim.log
install -m 666 /dev/null "$SHIMLOG"

# alloc_as_mallory SIMDIR: gs-alloc in her slice under the shim, up to 4 GiB.
alloc_as_mallory() {
	as_uid $MALLORY GPUSLICE_SIM_DIR="$1" GPUSLICE_SLICE=m \
		GPUSLICE_RUN_DIR="$RUNDIR" GPUSLICE_LOG="$SHIMLOG" LD_PRELOAD="$SHIM" \
		LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		timeout 30 "$ALLOC" --api plain --chunk 256MiB --limit 4GiB \
		2>"$WORK/alloc.err" || true
}

# Control: on the daemon's GPU her slice is capped at 1 GiB.
out=$(alloc_as_mallory "$GPUSLICE_SIM_DIR")
jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 0 < d["allocated_bytes"] <= 2**30'

out=$(alloc_as_mallory "$WORK/mine")
echo "on her own GPU: $out"
jcheck "$out" 'd["error"] == "CUDA_ERROR_DEVICE_UNAVAILABLE" and d.get("allocated_bytes", 0) == 0'
grep -q "is not a GPU gpusliced manages" "$SHIMLOG" ||
	fail "the shim did not say why: $(cat "$SHIMLOG")"
: >"$SHIMLOG"

# A MIG slice's process, started the moment the create answers.
tenant_api $MALLORY POST /v1/slices '{"name": "mg", "mode": "mig", "mig-profile": "1g.10gb", "gpu": 1}' >/dev/null
expect_status "create mg" 201
out=$(timeout 30 setpriv --reuid=$MALLORY --regid=$MALLORY --clear-groups \
	env HOME=/ GPUSLICE_SOCKET="$SOCK" GPUSLICE_LOG="$SHIMLOG" "$G" run --slice mg -- \
	"$ALLOC" --api plain --chunk 256MiB --limit 16GiB 2>"$WORK/mig.err") ||
	fail "the run in the MIG slice failed: $(cat "$WORK/mig.err")"
echo "in the new MIG instance: $out"
jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 2**30 < d["allocated_bytes"] <= 10 * 2**30'
grep -q "unknown to gpusliced\|not a GPU gpusliced manages" "$SHIMLOG" &&
	fail "the MIG slice's process waited for its instance to be registered: $(cat "$SHIMLOG")"
echo "ok: no context on a GPU the daemon does not manage; a new MIG instance is known at once"
