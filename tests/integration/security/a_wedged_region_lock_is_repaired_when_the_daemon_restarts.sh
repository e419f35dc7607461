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
node_up
tenant_api $ALICE POST /v1/slices '{"name": "a1", "memory": "2GiB"}' >/dev/null
expect_status "create a1" 201

as_uid $MALLORY "$HOLD" mutex "$RUNDIR/usage" >"$WORK/hold.out" 2>&1 &
PIDS+=($!)
wait_until 5 grep -q held "$WORK/hold.out" || fail "the holder did not take the lock: $(cat "$WORK/hold.out")"
# $! is the subshell that runs as_uid; the holder is its child.
HPID=$(pgrep -u $MALLORY -f "gs-daemon-lock-holder mutex $RUNDIR/usage" | head -1)
[ -n "$HPID" ] || fail "no holder process"
PIDS+=("$HPID")
kill -STOP "$HPID"

daemon_stop
daemon_up
grep -q "made new region files" "$WORK/daemon.log" ||
	fail "the daemon did not repair the wedged region"
capped_run $ALICE a1 2
kill -0 "$HPID" || fail "the holder is gone: the test did not test a held lock"
echo "ok: a held region lock is repaired by a daemon restart; the cap holds"
