#!/usr/bin/env bash
# The shared usage file's mutex is the daemon's arbiter's (the file is the
# daemon's, 0644: Mallory is refused it, on permissions). A root process
# stopped holding it - the one way left to wedge it - with Alice's
# processes running: one holding memory, one burning in a 50 % slice.
# Without a restart, the daemon finds the lock out of reach for 3 s and
# builds a fresh shared file (region.repaired event); new runs start,
# capped, and the running processes move to the new file once its
# arbiter has been silent for a second: the memory holder allocates under
# its cap, the burn launches again at its share. (Before layout 5 any
# tenant could take this lock, and before the repair every scheduled
# launch on the node waited for it until gpusliced restarted.)
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up
tenant_api $ALICE POST /v1/slices '{"name": "a1", "memory": "2GiB", "mode": "timeslice"}' >/dev/null
expect_status "create a1" 201
tenant_api $ALICE POST /v1/slices '{"name": "a50", "memory": "2GiB", "compute": 50, "mode": "timeslice"}' >/dev/null
expect_status "create a50" 201
alice_burn a50 4 "$WORK/alone.json"
alone=$(burn_field "$WORK/alone.json" kernels)
alice_burn a50 10 "$WORK/wedged.json" &
BPID=$!
PIDS+=($BPID)
sleep 1
tenant_start $ALICE a a1

hold_usage_lock

wait_until 10 eval '[ "$(node_events region.repaired)" -ge 1 ]' ||
	fail "the daemon did not repair the wedged lock: $(grep region "$WORK/daemon.log")"
capped_run $ALICE a1 2
t0=$(date +%s%N)
echo "alloc $((256 << 20))" >&$TIN
wait_until 15 grep -q "^alloc " "$WORK/a.out" || fail "Alice's running process is stuck: $(cat "$WORK/a.err")"
took=$((($(date +%s%N) - t0) / 1000000))
grep -q "^alloc $((256 << 20)) 0" "$WORK/a.out" || fail "Alice's running process: $(cat "$WORK/a.out")"
echo "alloc $((2 << 30))" >&$TIN
wait_until 15 eval '[ "$(grep -c "^alloc " "$WORK/a.out")" -ge 2 ]' || fail "Alice's process did not answer"
grep -q "^alloc $((2 << 30)) 2$" "$WORK/a.out" || fail "Alice's 2 GiB more past her cap was not refused: $(cat "$WORK/a.out")"
wait $BPID || fail "Alice's burn failed"
wedged=$(burn_field "$WORK/wedged.json" kernels)
echo "Alice's 50 % burn: $alone kernels in 4 s alone, $wedged in 10 s with the lock held from 1 s on"
# About 5 of the 10 s run after the repair: at least half of 4 s alone.
[ "$wedged" -ge $((alone / 2)) ] || fail "Alice's burn did not launch again after the repair: $wedged kernels against $alone in 4 s alone"
kill -0 "$HPID" || fail "the holder is gone: the test did not test a held lock"
echo quit >&$TIN
exec {TIN}>&-
echo "ok: a held shared lock is repaired while the daemon runs; a new run is capped; Alice's running process allocated again in ${took} ms, capped"
