#!/usr/bin/env bash
# The region's process table has 1024 slots for the whole node. Mallory
# starts 1030 idle processes that name her slice and writes an entry for
# each into the table by hand, filling it. One uid may hold at most 256
# slots: the excess is reclaimed (by the daemon's reaping, or by the next
# attach that finds the table full), so Alice still starts her job in her
# own slice, capped.
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up
tenant_api $MALLORY POST /v1/slices '{"name": "m", "memory": "1GiB"}' >/dev/null
expect_status "create m" 201
tenant_api $ALICE POST /v1/slices '{"name": "a1", "memory": "2GiB"}' >/dev/null
expect_status "create a1" 201

as_uid $MALLORY GPUSLICE_SLICE=m sh -c 'for i in $(seq 1030); do sleep 120 & done; wait' &
PIDS+=($!)
CLEANUP_CMDS+=("pkill -9 -u $MALLORY -x sleep")
wait_until 30 eval '[ "$(pgrep -u '"$MALLORY"' -x sleep | wc -l)" -ge 1030 ]' ||
	fail "Mallory's processes did not start"
# shellcheck disable=SC2046
as_uid $MALLORY "$FORGE" proc "$RUNDIR" m $(pgrep -u $MALLORY -x sleep) >"$WORK/forge.out" 2>&1 || true
n=$(grep -c '^slot ' "$WORK/forge.out" || true)
[ "$n" -ge 1000 ] || fail "the forger wrote only $n entries: $(tail -2 "$WORK/forge.out")"

capped_run $ALICE a1 2
wait_until 5 eval '[ "$("$B/tests/gs-region-probe" "$RUNDIR" m | python3 -c "import json,sys; print(json.load(sys.stdin)[\"n_procs\"])")" -le 256 ]' ||
	fail "Mallory still holds more than 256 slots: $("$B/tests/gs-region-probe" "$RUNDIR" m)"
echo "ok: $n forged slots; Mallory is trimmed to 256, Alice runs"
