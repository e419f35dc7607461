#!/usr/bin/env bash
# A tenant cannot freeze gpusliced. While another process holds flock on
# the limits a tenant can open (limits.public, its view; the daemon's own
# limits and limits.lock are closed to tenants) or holds, stopped, the
# usage file's shared mutex (the daemon's, 0644: closed to tenants too,
# so only a root process can), slice creation, listing, deletion and
# /healthz all still answer, each within 2 s.
. "$(dirname "$0")/lib.sh" "$1"
HOLD=$B/tests/gs-daemon-lock-holder
[ -x "$HOLD" ] || { echo "SKIP: no gs-daemon-lock-holder"; exit 77; }

DURING="while a tenant holds a lock"

# As root, the holder runs as an unprivileged user (nobody), as a hostile
# tenant would; otherwise as this test's user.
TENANT=()
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	TENANT=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi

# hold MODE PATH [root]: starts a holder (a tenant, or root), waits until
# it holds, stops it.
hold() {
	local who=("${TENANT[@]}")
	[ "${3:-}" = root ] && who=()
	"${who[@]}" "$HOLD" "$1" "$2" >"$WORK/hold.out" 2>&1 &
	HPID=$!
	PIDS+=("$HPID")
	wait_until 5 grep -q held "$WORK/hold.out" || fail "holder did not take $1 on $2: $(cat "$WORK/hold.out")"
	kill -STOP "$HPID"
}

unhold() {
	kill -9 "$HPID" 2>/dev/null || true
	wait "$HPID" 2>/dev/null || true
}

# exercise TAG: three rounds over more than a housekeeping tick.
exercise() {
	local i
	for i in 1 2 3; do
		timed "healthz ($1 $i)" call GET /healthz
		timed "create ($1 $i)" call POST /v1/slices "{\"name\": \"$1-$i\", \"memory\": \"1GiB\"}"
		timed "list ($1 $i)" call GET /v1/slices
		timed "get ($1 $i)" call GET "/v1/slices/$1-$i"
		timed "delete ($1 $i)" call DELETE "/v1/slices/$1-$i"
		sleep 0.7
	done
}

daemon_up
api POST /v1/slices '{"name": "first", "memory": "1GiB"}' >/dev/null
expect_status "create first" 201
[ -f "$RUNDIR/limits" ] || fail "no region limits file in $RUNDIR"

if [ ${#TENANT[@]} -gt 0 ]; then
	# The lock the daemon's writers take is closed to tenants.
	timeout 5 "${TENANT[@]}" "$HOLD" flock "$RUNDIR/limits.lock" >"$WORK/deny.out" 2>&1 &&
		fail "a tenant could lock limits.lock"
	grep -q "Permission denied" "$WORK/deny.out" || fail "limits.lock: $(cat "$WORK/deny.out")"
	timeout 5 "${TENANT[@]}" "$HOLD" flock "$RUNDIR/limits" >"$WORK/deny.out" 2>&1 &&
		fail "a tenant could open the daemon's limits"
	grep -q "Permission denied" "$WORK/deny.out" || fail "limits: $(cat "$WORK/deny.out")"
	timeout 5 "${TENANT[@]}" "$HOLD" mutex "$RUNDIR/usage" >"$WORK/deny.out" 2>&1 &&
		fail "a tenant could take the shared usage mutex"
	grep -q "Permission denied" "$WORK/deny.out" || fail "usage: $(cat "$WORK/deny.out")"
fi

hold flock "$RUNDIR/limits.public"
exercise flock
unhold

hold mutex "$RUNDIR/usage" root
exercise mutex
unhold

# And once the holder is gone, everything still works.
timed "create after" call POST /v1/slices '{"name": "after", "memory": "1GiB"}'
healthy || fail "daemon unhealthy after the holders left"
echo "ok: create, list, get, delete and healthz answered within 2 s under both locks"
