#!/usr/bin/env bash
# Every tenant can map the region's usage file and take its shared mutex.
# Mallory takes it and stops (a holder that never lets go, like a forged
# owner thread id). Waits on it have deadlines, so the daemon keeps
# answering (freeze.sh); and when the daemon restarts it repairs the
# region: it cannot take the lock within the deadline, so it makes new
# region files, and new work in the slices runs again, capped, while the
# holder is still stopped.
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up
tenant_api $ALICE POST /v1/slices '{"name": "a1", "memory": "2GiB"}' >/dev/null
expect_status "create a1" 201

hold_usage_lock

daemon_stop
daemon_up
grep -q "made new region files" "$WORK/daemon.log" ||
	fail "the daemon did not repair the wedged region"
capped_run $ALICE a1 2
kill -0 "$HPID" || fail "the holder is gone: the test did not test a held lock"
echo "ok: a held region lock is repaired by a daemon restart; the cap holds"
