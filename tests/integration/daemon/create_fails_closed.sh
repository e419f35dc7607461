#!/usr/bin/env bash
# Fail closed on create: when the slice's limits cannot be written to the
# shared region, the create does not answer 201 ready. Injected by holding
# the region's writers' lock (limits.lock: only the daemon's own uid can
# open it, as this test runs) past the daemon's deadline. The create then
# answers 503 with the reason, the slice is in no listing, not in the
# region, a slice.failed event says why, and once the lock is free the
# same name can be created: nothing was half-applied.
. "$(dirname "$0")/lib.sh" "$1"
HOLD=$B/tests/gs-daemon-lock-holder
PROBE=$B/tests/gs-region-probe
[ -x "$HOLD" ] && [ -x "$PROBE" ] || { echo "SKIP: no gs-daemon-lock-holder or gs-region-probe"; exit 77; }

daemon_up
api POST /v1/slices '{"name": "before", "memory": "1GiB"}' >/dev/null
expect_status "create before" 201
[ -f "$RUNDIR/limits.lock" ] || fail "no writers' lock file in $RUNDIR"
mode=$(stat -c %a "$RUNDIR/limits.lock")
expect_eq "limits.lock mode" "$mode" "600"

"$HOLD" flock "$RUNDIR/limits.lock" >"$WORK/hold.out" 2>&1 &
HPID=$!
PIDS+=("$HPID")
wait_until 5 grep -q held "$WORK/hold.out" || fail "holder: $(cat "$WORK/hold.out")"

body=$(api POST /v1/slices '{"name": "web", "memory": "2GiB", "compute": 25}')
[ "$(st)" != 201 ] || fail "create answered 201 although its limits were not published: $body"
expect_status "create web with the region unwritable" 503
jcheck "$body" 'd["error"] == "UNAVAILABLE" and "shared region" in d["message"]'

kill -9 "$HPID"; wait "$HPID" 2>/dev/null || true

api GET /v1/slices/web >/dev/null
expect_status "get web after the failed create" 404
list=$(api GET /v1/slices)
jcheck "$list" 'not any(s["name"] == "web" for s in d["slices"])'
found=$("$PROBE" "$RUNDIR" web || true)
jcheck "$found" 'd["found"] == False'
ev=$(api GET '/v1/events?slice=web')
jcheck "$ev" 'any(e["type"] == "slice.failed" and "shared region" in e["message"] for e in d["events"])'

# Nothing half-applied: the name is free, and this time it is ready.
body=$(api POST /v1/slices '{"name": "web", "memory": "2GiB", "compute": 25}')
expect_status "create web again" 201
found=$("$PROBE" "$RUNDIR" web)
jcheck "$found" 'd["found"] == True'
healthy || fail "daemon unhealthy"
echo "ok: a create whose limits cannot be published answers 503 and leaves nothing behind"
