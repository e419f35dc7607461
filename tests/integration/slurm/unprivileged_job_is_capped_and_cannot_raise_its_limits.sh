#!/usr/bin/env bash
# A job of an ordinary user (nobody): its tasks run as that user, under
# the shim, in a slice the plugin (root) made. The cap holds (out of
# memory at --gpu-mem) and the slice's limits are read-only to the task.
. "$(dirname "$0")/lib.sh"

id nobody >/dev/null 2>&1 || fail "no user 'nobody' on this machine"
runuser -u nobody -- test -x "$B/bin/gs-alloc" ||
	fail "user nobody cannot run $B/bin/gs-alloc (the build directory must be readable by all)"
# The simulated GPUs are a state file; a real node's are /dev/nvidia*.
chmod 755 "$SIMDIR"
chmod 666 "$SIMDIR"/*

env_line=$(env | grep -E '^(SLURM_CONF|GPUSLICE_SIM_DIR|LD_LIBRARY_PATH|PATH)=' | sed 's/^/export /; s/=/="/; s/$/"/')
cat >"$W/as_nobody.sh" <<EOF
$env_line
cd /tmp
exec srun --immediate=20 --gres=shard:1 --gpu-mem=2G sh -c '
	echo uid=\$(id -u) slice=\$GPUSLICE_SLICE
	if [ -w "\$GPUSLICE_RUN_DIR/limits" ]; then echo limits=writable; else echo limits=read-only; fi
	exec $B/bin/gs-alloc --api plain --chunk 512MiB'
EOF
chmod 755 "$W/as_nobody.sh"
runuser -u nobody -- bash "$W/as_nobody.sh" >"$W/out" 2>"$W/err" ||
	fail "the job of nobody failed: $(cat "$W/out" "$W/err")"
grep -q '^uid=65534 slice=slurm-[0-9]*$' "$W/out" || fail "the task: $(cat "$W/out")"
grep -q '^limits=read-only$' "$W/out" || fail "the task may write its limits: $(cat "$W/out")"
a=$(json_line "$W/out")
py 'json.loads(a[0])["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and json.loads(a[0])["allocated_bytes"] <= 2 << 30' "$a" | grep -q True ||
	fail "the cap did not hold for nobody's job: $a"
note "nobody's --gpu-mem=2G job: $(py 'json.loads(a[0])["allocated_bytes"] >> 20' "$a") MiB, then out of memory; limits read-only"
echo ok
