#!/usr/bin/env bash
# The watchdog is the safety net for compute too, from what NVML shows,
# whether or not a process carries the shim (action kill):
#  - Mallory's process burning the GPU in no slice is killed within 2 s;
#    root's is reported (watchdog.unsliced) but never killed;
#  - Mallory's slice with a 20 % share, whose process dropped the shim
#    (LD_PRELOAD removed under `gpuslice run`), runs at ~100 % by NVML: the
#    slice is over its share and the process is killed within 2 s;
#  - a process that keeps to its 20 % under the shim is left alone.
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up kill

# killed_within PID SECONDS: the process is gone within SECONDS.
killed_within() {
	wait_until "$2" eval '! kill -0 '"$1"' 2>/dev/null'
}

# ---- in no slice ----
as_uid $MALLORY "$BURN" --seconds 30 --memory 256MiB >/dev/null 2>&1 &
MB=$!
PIDS+=("$MB")
"$BURN" --seconds 4 --memory 256MiB >"$WORK/root.out" 2>&1 &
RB=$!
PIDS+=("$RB")
t0=$(date +%s%N)
killed_within "$MB" 5 || fail "Mallory's process in no slice was not killed"
ms=$((($(date +%s%N) - t0) / 1000000))
note_ms=$ms
wait "$RB" || fail "root's process in no slice was killed (or failed): $(cat "$WORK/root.out")"
[ "$(node_events watchdog.unsliced)" -ge 1 ] || fail "root's process was not reported"
[ "$(node_events watchdog.kill)" -ge 1 ] || fail "no watchdog.kill event for Mallory's process"
[ "$ms" -le 2500 ] || fail "Mallory's process in no slice lived ${ms} ms"

# ---- over its compute share, the shim removed ----
tenant_api $MALLORY POST /v1/slices '{"name": "c20", "mode": "timeslice", "compute": 20}' >/dev/null
expect_status "create c20" 201
as_uid $MALLORY "$G" run --slice c20 -- env -u LD_PRELOAD "$BURN" --seconds 30 \
	--memory 256MiB >/dev/null 2>"$WORK/c20.err" &
PIDS+=($!)
wait_until 5 pgrep -u $MALLORY -x gs-burn >/dev/null || fail "the burn did not start: $(cat "$WORK/c20.err")"
CB=$(pgrep -u $MALLORY -x gs-burn | head -1)
PIDS+=("$CB")
t0=$(date +%s%N)
killed_within "$CB" 6 || fail "a process at ~100 % in a 20 % slice was not killed: $(api GET /v1/slices/c20)"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(events_of c20 watchdog.kill)" -ge 1 ] || fail "no watchdog.kill event on c20"
api GET "/v1/events?slice=c20" | grep -q "compute share" || fail "the event does not name the compute share"
[ "$ms" -le 3000 ] || fail "the process over its share lived ${ms} ms"

# ---- within its share under the shim: left alone ----
tenant_api $MALLORY POST /v1/slices '{"name": "ok20", "mode": "timeslice", "compute": 20}' >/dev/null
expect_status "create ok20" 201
as_uid $MALLORY "$G" run --slice ok20 -- "$BURN" --seconds 4 --memory 256MiB \
	>"$WORK/ok.out" 2>"$WORK/ok.err" ||
	fail "the slice within its share was stopped: $(cat "$WORK/ok.err") $(api GET '/v1/events?limit=50' | tail -c 1500)"
[ "$(events_of ok20 watchdog.kill)" = 0 ] || fail "the watchdog acted on a slice within its share"
echo "ok: in no slice killed after ${note_ms} ms (root's reported only); over its share killed after ${ms} ms; within its share untouched"
