#!/usr/bin/env bash
# NVML's Xid events become faulted slices: on a time-sliced GPU only the
# slice whose process faulted; on an MPS GPU every slice with a client of
# the server, and the MPS control daemon is restarted.
. "$(dirname "$0")/lib.sh" "$1"

FAULT=$B/bin/gs-fault
[ -x "$FAULT" ] && [ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no gs-fault or sim libcuda"; exit 77; }
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR" 2>/dev/null || true)"
daemon_up
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"

state_of() {
	api GET "/v1/slices/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'
}
is_state() { [ "$(state_of "$1")" = "$2" ]; }
env_of() { # SLICE: the slice's environment as shell words
	api GET "/v1/slices/$1" | python3 -c '
import json, shlex, sys
print(" ".join("%s=%s" % (k, shlex.quote(v)) for k, v in json.load(sys.stdin)["env"].items()))'
}

# ---- time-sliced GPU 0: only the culprit ----
api POST /v1/slices '{"name": "bad", "mode": "timeslice", "memory": "4GiB", "gpu": 0}' >/dev/null
expect_status "bad" 201
api POST /v1/slices '{"name": "good", "mode": "timeslice", "memory": "4GiB", "gpu": 0}' >/dev/null
sleep 300 & good_pid=$!; PIDS+=($good_pid); disown $good_pid
api POST /v1/slices/good/attach "{\"pid\": $good_pid}" >/dev/null
rc=0
env $(env_of bad) "$G" run --slice bad --run-dir "$RUNDIR" -- "$FAULT" --after-ms 500 >"$WORK/fault.json" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "gs-fault did not fail: $(cat "$WORK/fault.json")"
wait_until 10 is_state bad faulted || fail "the faulting slice was not marked faulted"
out=$(api GET /v1/slices/bad)
jcheck "$out" '"Xid 31" in d["reason"]'
is_state good ready || fail "a slice on the same time-sliced GPU was marked too"
api GET "/v1/events?slice=bad" | grep -q 'slice.faulted' || fail "no slice.faulted event"
api GET /metrics | grep -q '^gpuslice_faults_total 1$' || fail "metrics: faults"

# ---- MPS on GPU 1: every client of the server, and a restart ----
api POST /v1/slices '{"name": "m-bad", "mode": "mps", "memory": "4GiB", "compute": 30, "gpu": 1}' >/dev/null
expect_status "m-bad" 201
api POST /v1/slices '{"name": "m-ok", "mode": "mps", "memory": "4GiB", "compute": 30, "gpu": 1}' >/dev/null
api POST /v1/slices '{"name": "m-idle", "mode": "mps", "memory": "4GiB", "compute": 30, "gpu": 1}' >/dev/null
mps_pid() {
	api GET /v1/gpus | python3 -c 'import json,sys; d=json.load(sys.stdin)["gpus"][1]["mps"]["daemons"]; print(d[0]["pid"] if d else "")'
}
wait_until 10 eval '[ -n "$(mps_pid)" ]' || fail "no MPS daemon on gpu 1"
before=$(mps_pid)
sleep 300 & ok_pid=$!; PIDS+=($ok_pid); disown $ok_pid
api POST /v1/slices/m-ok/attach "{\"pid\": $ok_pid}" >/dev/null
env $(env_of m-bad) "$G" run --slice m-bad --run-dir "$RUNDIR" -- "$FAULT" --after-ms 500 >"$WORK/mfault.json" 2>&1 || true
wait_until 10 is_state m-bad faulted || fail "the MPS culprit was not marked faulted"
wait_until 10 is_state m-ok faulted || fail "another client of the MPS server was not marked"
is_state m-idle ready || fail "a slice without clients was marked"
wait_until 10 eval '[ -n "$(mps_pid)" ] && [ "$(mps_pid)" != '"$before"' ]' ||
	fail "the MPS control daemon was not restarted"
api GET /v1/events | grep -q 'mps.restart' || fail "no mps.restart event"
echo "ok: faults"
