#!/usr/bin/env bash
# Issue #25, What 8 (safe defaults): the watchdog's default action was
# `flag`, so on a node shared by tenants a process over its slice's cap
# kept running unless the operator had chosen `kill`. The default is now
# `auto`: it kills wherever the node's slices belong to more than one
# owner, and flags where they are all one user's (a workstation).
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up   # no watchdog settings: the default

# over_cap UID SLICE: a process of UID in SLICE, without the shim, takes
# 4 GiB in the 1 GiB slice. OUT: OPID.
over_cap() {
	rm -f "$WORK/o.in" "$WORK/o.out"
	mkfifo -m 666 "$WORK/o.in"
	as_uid "$1" "$G" run --slice "$2" -- env -u LD_PRELOAD LD_LIBRARY_PATH="$LD_LIBRARY_PATH" \
		python3 "$TENANT" <"$WORK/o.in" >"$WORK/o.out" 2>"$WORK/o.err" &
	PIDS+=($!)
	exec {OIN}>"$WORK/o.in"
	wait_until 10 grep -q '^pid ' "$WORK/o.out" || fail "the process did not start: $(cat "$WORK/o.out" "$WORK/o.err")"
	OPID=$(awk '/^pid /{print $2; exit}' "$WORK/o.out")
	PIDS+=("$OPID")
	echo "alloc $((4 << 30))" >&$OIN
	wait_until 5 grep -q '^alloc ' "$WORK/o.out" || fail "no answer to the allocation"
}

# ---- one user's node: flagged, not killed ----
tenant_api $ALICE POST /v1/slices '{"name": "a1", "mode": "timeslice", "memory": "1GiB"}' >/dev/null
expect_status "create a1" 201
over_cap $ALICE a1
wait_until 5 eval '[ "$(events_of a1 watchdog.flag)" -ge 1 ]' || fail "a1 over its cap was not flagged"
sleep 1
kill -0 "$OPID" 2>/dev/null || fail "on a one-user node the default killed Alice's process"
exec {OIN}>&-
kill "$OPID" 2>/dev/null || true

# ---- a second owner on the node: killed ----
tenant_api $MALLORY POST /v1/slices '{"name": "m1", "mode": "timeslice", "memory": "1GiB"}' >/dev/null
expect_status "create m1" 201
over_cap $MALLORY m1
wait_until 5 eval '! kill -0 '"$OPID"' 2>/dev/null' ||
	fail "with two tenants on the node, the default did not stop Mallory's process over its cap"
[ "$(events_of m1 watchdog.kill)" -ge 1 ] || fail "no watchdog.kill event on m1"
exec {OIN}>&-
echo "ok: default watchdog flags on a one-user node and kills once a second tenant has slices"
