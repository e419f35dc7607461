#!/usr/bin/env bash
# The region's shared mutex is closed to tenants (the usage file is the
# daemon's, 0644: Mallory is refused it). A root process stopped holding
# it - a holder that never lets go - is what is left. Waits on it have
# deadlines, so the daemon keeps answering (freeze.sh); and when the
# daemon restarts it repairs the region: it cannot take the lock within
# the deadline, so it makes new region files, and new work in the slices
# runs again, capped, while the holder is still stopped.
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
