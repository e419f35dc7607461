#!/usr/bin/env bash
# A tenant cannot join another user's slice and spend its budget: naming
# it in GPUSLICE_SLICE (the shim refuses GPU work: Mallory's view of the
# limits does not even show a slice of that name) or with `gpuslice run
# --slice` (the API does not show it) both fail; the owner joins it as
# before.
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up
api POST /v1/slices "{\"name\": \"alice\", \"memory\": \"2GiB\", \"owner\": $ALICE}" >/dev/null
expect_status "create alice's slice" 201

# Mallory points the shim at Alice's slice by hand.
: >"$WORK/m.log"; chmod 666 "$WORK/m.log"
out=$(as_uid $MALLORY GPUSLICE_SLICE=alice GPUSLICE_RUN_DIR="$RUNDIR" \
	GPUSLICE_LOG="$WORK/m.log" LD_PRELOAD="$SHIM" "$ALLOC" --api plain --chunk 256MiB --limit 512MiB \
	2>"$WORK/m.err" || true)
jcheck "$out" 'd.get("allocated_bytes", 0) == 0 and d["error"] == "CUDA_ERROR_NOT_PERMITTED"' ||
	fail "Mallory used Alice's slice through GPUSLICE_SLICE: $out $(cat "$WORK/m.err")"
grep -q "cannot attach: no slice of that name.*refusing GPU work" "$WORK/m.log" ||
	fail "the refusal is not that Mallory sees no such slice: $(cat "$WORK/m.log")"
u=$(api GET /v1/slices/alice | python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"]["processes"])' 2>/dev/null || echo "?")
[ "$u" = "0" ] || [ "$u" = "?" ] || fail "Mallory's process is attached to alice: $u"

# ... and through gpuslice run --slice.
rc=0
as_uid $MALLORY "$G" run --slice alice -- "$ALLOC" --api plain --chunk 256MiB \
	--limit 512MiB >"$WORK/r.out" 2>"$WORK/r.err" || rc=$?
[ "$rc" -ne 0 ] || fail "gpuslice run --slice joined another user's slice: $(cat "$WORK/r.out")"
grep -q '"allocated_bytes": *[1-9]' "$WORK/r.out" &&
	fail "Mallory allocated in Alice's slice: $(cat "$WORK/r.out")"

# Alice herself joins it, both ways, and her cap holds.
out=$(as_uid $ALICE GPUSLICE_SLICE=alice GPUSLICE_RUN_DIR="$RUNDIR" \
	LD_PRELOAD="$SHIM" "$ALLOC" --api plain --chunk 256MiB --limit 512MiB 2>"$WORK/a.err")
jcheck "$out" 'd["allocated_bytes"] == 512 << 20 and d["error"] is None' ||
	fail "Alice cannot use her own slice: $out $(cat "$WORK/a.err")"
out=$(as_uid $ALICE "$G" run --slice alice -- "$ALLOC" --api plain --chunk 256MiB 2>"$WORK/a2.err")
jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 0 < d["allocated_bytes"] <= 2 << 30' ||
	fail "Alice's run in her slice: $out $(cat "$WORK/a2.err")"
echo "ok: another user's slice cannot be joined; its owner joins it"
