#!/usr/bin/env bash
# Every tenant can map the region's usage file and take its shared mutex.
# Mallory takes it and stops (a holder that never lets go, like a forged
# owner thread id). Waits on it have deadlines, so the daemon keeps
# answering (freeze.sh); and when the daemon restarts it repairs the
# region: it cannot take the lock within the deadline, so it makes new
# region files, and new work in the slices runs again, capped, while the
# holder is still stopped.
. "$(dirname "$0")/lib.sh" "$1"
HOLD=$B/tests/gs-daemon-lock-holder
[ -x "$HOLD" ] || { echo "SKIP: no gs-daemon-lock-holder"; exit 77; }

sim_node
daemon_up
chmod 755 "$RUNDIR"
tenant_api $ALICE POST /v1/slices '{"name": "a1", "memory": "2GiB"}' >/dev/null
expect_status "create a1" 201

as_uid $MALLORY "$HOLD" mutex "$RUNDIR/usage" >"$WORK/hold.out" 2>&1 &
HPID=$!
PIDS+=("$HPID")
wait_until 5 grep -q held "$WORK/hold.out" || fail "the holder did not take the lock: $(cat "$WORK/hold.out")"
kill -STOP "$HPID"

daemon_stop
daemon_up
grep -q "made new region files" "$WORK/daemon.log" ||
	fail "the daemon did not repair the wedged region"
out=$(timeout 30 setpriv --reuid=$ALICE --regid=$ALICE --clear-groups \
	env HOME=/ GPUSLICE_SOCKET="$SOCK" "$G" run --slice a1 -- \
	"$ALLOC" --api plain --chunk 256MiB 2>"$WORK/a.err") ||
	fail "Alice's run after the restart failed: $(cat "$WORK/a.err")"
jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 0 < d["allocated_bytes"] <= 2 << 30' ||
	fail "Alice's run after the restart: $out"
kill -0 "$HPID" || fail "the holder is gone: the test did not test a held lock"
echo "ok: a held region lock is repaired by a daemon restart; the cap holds"
