#!/usr/bin/env bash
# An MPS slice is ready only once its MPS control daemon runs: the create
# brings the daemon up between its two phases, so a process started the
# moment the create answers is a client of that server (before, the
# reconciler started it on its next tick, up to a second later, and such a
# process ran as a context of its own, not held to its thread share).
# When the control daemon cannot start, the create fails closed: 503 with
# the reason, no slice, a slice.failed event; a second try within the
# start back-off fails at once and says when to try again; a slice that
# is not MPS is unaffected.
. "$(dirname "$0")/lib.sh" "$1"

daemon_up
mps_pids() { # GPU: pids of the MPS control daemons the API shows on it
	api GET /v1/gpus | python3 -c '
import json, sys
g = [x for x in json.load(sys.stdin)["gpus"] if x["index"] == int(sys.argv[1])][0]
print(" ".join(str(d["pid"]) for d in g["mps"]["daemons"]))' "$1"
}
[ -z "$(mps_pids 1)" ] || fail "an MPS control daemon runs before any MPS slice"
out=$(api POST /v1/slices '{"name": "m1", "mode": "mps", "memory": "1GiB", "compute": 30, "gpu": 1}')
expect_status "create m1" 201
pids=$(mps_pids 1) # at once: no waiting for the reconciler's tick
[ -n "$pids" ] || fail "m1 answered ready but no MPS control daemon runs on gpu 1"
pipe=$(jq_py "$out" 'd["env"]["CUDA_MPS_PIPE_DIRECTORY"]')
[ -s "$pipe/nvidia-cuda-mps-control.pid" ] || fail "no control daemon pid file in m1's pipe directory $pipe"
expect_eq "control daemon pid file" "$(cat "$pipe/nvidia-cuda-mps-control.pid")" "$pids"

# The control program exists but cannot start a daemon (the one m1 had
# quits with its last slice first: control daemons outlive gpusliced).
api DELETE /v1/slices/m1 >/dev/null
wait_until 5 eval '[ -z "$(mps_pids 1)" ]' || fail "m1's MPS control daemon still runs after its delete"
daemon_stop
cat >"$WORK/broken-mps" <<'SH'
#!/bin/sh
echo "broken-mps: cannot start" >&2
exit 1
SH
chmod +x "$WORK/broken-mps"
cat >"$WORK/cfg.yaml" <<YAML
mps:
  control: $WORK/broken-mps
YAML
daemon_up --config "$WORK/cfg.yaml"
body=$(api POST /v1/slices '{"name": "m2", "mode": "mps", "memory": "1GiB", "compute": 30, "gpu": 1}')
[ "$(st)" != 201 ] || fail "m2 answered 201 although its MPS control daemon could not start: $body"
expect_status "create m2 with a broken control daemon" 503
jcheck "$body" 'd["error"] == "UNAVAILABLE" and "MPS control daemon could not start" in d["message"]'
api GET /v1/slices/m2 >/dev/null
expect_status "get m2 after the failed create" 404
ev=$(api GET '/v1/events?slice=m2')
jcheck "$ev" 'any(e["type"] == "slice.failed" and "MPS control daemon" in e["message"] for e in d["events"])'
body=$(api POST /v1/slices '{"name": "m2", "mode": "mps", "memory": "1GiB", "compute": 30, "gpu": 1}')
expect_status "create m2 again within the back-off" 503
jcheck "$body" '"last start failed" in d["message"] and "try again" in d["message"]'
# Turns do not need it.
api POST /v1/slices '{"name": "t1", "mode": "timeslice", "memory": "1GiB", "gpu": 1}' >/dev/null
expect_status "create t1" 201
healthy || fail "daemon unhealthy"
echo "ok: an MPS slice is ready with its server up, and fails closed without one"
