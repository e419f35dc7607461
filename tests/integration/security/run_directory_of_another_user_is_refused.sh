#!/usr/bin/env bash
# A daemonless run directory decides a tenant's limits, so only its user
# (or root) may own it and nobody else may write it. Alice pre-creates the
# directory Mallory's `gpuslice run` will use (world-writable, with her
# own region in it, as she could with /tmp/gpuslice-<uid>): Mallory's run
# and a shim pointed there both refuse it, saying whose it is. A directory
# of Mallory's own that others can write is refused too; a private one
# works.
. "$(dirname "$0")/lib.sh" "$1"
unset GPUSLICE_SOCKET
sim_node
cat_err() { cat "$WORK/$1.err" 2>/dev/null; }

# Alice's trap: her directory, her region, a 64 GiB "cap" for Mallory.
mkdir -m 777 "$WORK/trap"
chown $ALICE:$ALICE "$WORK/trap"
as_uid $ALICE GPUSLICE_RUN_DIR="$WORK/trap" "$G" run --slice mal --memory 64GiB -- true \
	>/dev/null 2>&1 || true
chmod 777 "$WORK/trap"

rc=0
as_uid $MALLORY GPUSLICE_RUN_DIR="$WORK/trap" "$G" run --memory 1GiB -- \
	"$ALLOC" --api plain --chunk 256MiB >"$WORK/r.out" 2>"$WORK/r.err" || rc=$?
[ "$rc" -ne 0 ] || fail "gpuslice run used a run directory owned by another user: $(cat "$WORK/r.out")"
grep -q "belongs to uid $ALICE" "$WORK/r.err" ||
	fail "the refusal does not say whose directory it is: $(cat_err r)"

: >"$WORK/s.log"
chmod 666 "$WORK/s.log"
out=$(as_uid $MALLORY GPUSLICE_RUN_DIR="$WORK/trap" GPUSLICE_SLICE=mal GPUSLICE_LOG="$WORK/s.log" \
	LD_PRELOAD="$SHIM" "$ALLOC" --api plain --chunk 256MiB --limit 512MiB 2>/dev/null || true)
jcheck "$out" 'd["error"] == "CUDA_ERROR_NOT_PERMITTED"' ||
	fail "the shim joined a region in another user's directory: $out"
grep -q "belongs to uid $ALICE" "$WORK/s.log" || fail "the shim's log: $(cat "$WORK/s.log")"

# Mallory's own directory, but writable by everyone: refused.
mkdir -m 777 "$WORK/open"
chown $MALLORY:$MALLORY "$WORK/open"
chmod 777 "$WORK/open"
rc=0
as_uid $MALLORY GPUSLICE_RUN_DIR="$WORK/open" "$G" run --memory 1GiB -- true \
	2>"$WORK/o.err" || rc=$?
[ "$rc" -ne 0 ] || fail "gpuslice run used a world-writable run directory"
grep -q "writable by others" "$WORK/o.err" || fail "open dir: $(cat_err o)"

# A private directory (made by the run itself, 0700): works, cap holds.
mkdir -m 755 "$WORK/home"
chown $MALLORY:$MALLORY "$WORK/home"
out=$(as_uid $MALLORY GPUSLICE_RUN_DIR="$WORK/home/run" "$G" run --memory 1GiB -- \
	"$ALLOC" --api plain --chunk 256MiB 2>"$WORK/p.err")
jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 0 < d["allocated_bytes"] <= 1 << 30' ||
	fail "a run in a private directory: $out $(cat_err p)"
mode=$(stat -c %a "$WORK/home/run")
expect_eq "mode of the run directory it made" "$mode" "700"
echo "ok: run directories of others (or open to others) refused; private ones work"
