#!/usr/bin/env bash
# The region's process table is writable by every tenant. Mallory writes
# entries into her own small slice naming two processes that are not
# hers - a root process on the GPU and Alice's process in Alice's slice -
# and then goes over her cap, with the watchdog set to kill. The watchdog
# checks each entry against the kernel (uid, start time, the slice the
# process asked for): the forged entries are evicted and reported, and
# nobody but Mallory's own processes can be a target. Both victims live.
. "$(dirname "$0")/lib.sh" "$1"
BYPASS=$B/tests/gs-daemon-bypass
[ -x "$BYPASS" ] || { echo "SKIP: no gs-daemon-bypass"; exit 77; }

sim_node
node_up kill
api POST /v1/slices "{\"name\": \"alice\", \"memory\": \"4GiB\", \"owner\": $ALICE}" >/dev/null
expect_status "create alice" 201
tenant_api $MALLORY POST /v1/slices '{"name": "evil", "memory": "256MiB"}' >/dev/null
expect_status "Mallory creates evil" 201

# Victim 1: a root process holding 1 GiB on the GPU, in no slice.
mkfifo "$WORK/root.go"
"$BYPASS" "$B/sim/libcuda.so.1" $((1 << 30)) <"$WORK/root.go" >"$WORK/root.out" 2>&1 &
ROOTV=$!
PIDS+=("$ROOTV")
exec {RGO}>"$WORK/root.go"
echo go >&$RGO
wait_until 10 grep -q '^allocated' "$WORK/root.out" || fail "root victim: $(cat "$WORK/root.out")"

# Victim 2: Alice's process in her own slice, 1 GiB, well within her cap.
as_uid $ALICE "$G" run --slice alice -- "$ALLOC" --api plain --chunk 512MiB \
	--limit 1GiB --hold 60 >"$WORK/alice.out" 2>"$WORK/alice.err" &
PIDS+=($!)
wait_until 10 grep -q allocated_bytes "$WORK/alice.out" ||
	fail "Alice's process did not start: $(cat "$WORK/alice.out" "$WORK/alice.err")"
ALICEV=$(pgrep -u $ALICE -x gs-alloc | head -1)
[ -n "$ALICEV" ] || fail "no Alice process found"
PIDS+=("$ALICEV") # $! above is the subshell running as_uid

# Mallory forges both into her slice.
as_uid $MALLORY "$FORGE" proc "$RUNDIR" evil "$ROOTV" >/dev/null || fail "forging (root victim) failed"
as_uid $MALLORY "$FORGE" proc "$RUNDIR" evil "$ALICEV" >/dev/null || fail "forging (Alice) failed"

# The forgeries go: evicted by the watchdog (a watchdog.forged event) or
# reaped by the region's own housekeeping (an entry whose process runs as
# another uid than the one it claims), whichever looks first. Several
# watchdog ticks later both victims live and nothing of hers is over.
probe_n() {
	"$B/tests/gs-region-probe" "$RUNDIR" evil | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_procs"])'
}
wait_until 5 eval '[ "$(probe_n)" = 0 ]' ||
	fail "the forged entries are still listed: $("$B/tests/gs-region-probe" "$RUNDIR" evil)"
sleep 1.5
kill -0 "$ROOTV" 2>/dev/null || fail "the watchdog killed a root process through a forged entry"
kill -0 "$ALICEV" 2>/dev/null || fail "the watchdog killed Alice's process through a forged entry"
state=$(api GET /v1/slices/evil | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
expect_eq "evil's state (nothing of hers is over)" "$state" "ready"
state=$(api GET /v1/slices/alice | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
expect_eq "alice's state" "$state" "ready"
echo "forged entries reported by the watchdog: $(events_of evil watchdog.forged)"

# Mallory's own process over her cap is still caught (and killed).
mkfifo -m 666 "$WORK/m.go"
as_uid $MALLORY "$BYPASS" "$B/sim/libcuda.so.1" $((1 << 30)) \
	<"$WORK/m.go" >"$WORK/m.out" 2>&1 &
PIDS+=($!)
exec {MGO}>"$WORK/m.go"
wait_until 5 grep -q '^pid ' "$WORK/m.out" || fail "Mallory's bypass did not start"
MV=$(awk '/^pid /{print $2; exit}' "$WORK/m.out")
tenant_api $MALLORY POST /v1/slices/evil/attach "{\"pid\": $MV}" >/dev/null
expect_status "Mallory attaches her process" 200
echo go >&$MGO
wait_until 10 eval '! kill -0 '"$MV"' 2>/dev/null' ||
	fail "Mallory's own process over her cap was not killed"
kill -0 "$ROOTV" 2>/dev/null || fail "the root process died with Mallory's"
kill -0 "$ALICEV" 2>/dev/null || fail "Alice's process died with Mallory's"
echo "ok: forged entries evicted; only the owner's process was killed"
