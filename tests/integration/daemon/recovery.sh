#!/usr/bin/env bash
# A restart after kill -9 reconciles the store with what runs: slices whose
# processes still run are kept, on_exit=delete slices whose processes are
# gone are cleaned up (on_exit=keep ones stay), MIG slices keep their
# instance and MPS control daemons keep running. While the daemon runs, an
# on_exit=delete slice goes when its last process does.
. "$(dirname "$0")/lib.sh" "$1"

daemon_up
api POST /v1/slices '{"name": "keep", "mode": "timeslice", "memory": "1GiB", "on_exit": "keep"}' >/dev/null
expect_status "keep" 201
api POST /v1/slices '{"name": "live", "mode": "timeslice", "memory": "1GiB", "on_exit": "delete"}' >/dev/null
api POST /v1/slices '{"name": "dead", "mode": "timeslice", "memory": "1GiB", "on_exit": "delete"}' >/dev/null
api POST /v1/slices '{"name": "gone", "mode": "timeslice", "memory": "1GiB", "on_exit": "delete"}' >/dev/null
# MIG: an idle instance left by a deleted slice is reused, not duplicated.
out=$(api POST /v1/slices '{"name": "mig", "mode": "mig", "mig-profile": "1g.10gb", "gpu": 1}')
expect_status "mig" 201
mig_uuid=$(jq_py "$out" 'd["mig"]["uuid"]')
api DELETE /v1/slices/mig >/dev/null
out=$(api POST /v1/slices '{"name": "mig2", "mode": "mig", "mig-profile": "1g.10gb", "gpu": 1}')
expect_status "mig2" 201
jcheck "$out" 'd["mig"]["uuid"] == "'"$mig_uuid"'"'
api POST /v1/slices '{"name": "mps", "mode": "mps", "memory": "1GiB", "compute": 20}' >/dev/null
expect_status "no GPU for MPS: 0 is time-sliced, 1 in MIG mode" 409
# MPS inside a MIG instance: one control daemon for that instance.
out=$(api POST /v1/slices '{"name": "mps", "mode": "mig+mps", "mig-profile": "2g.20gb", "memory": "4GiB", "compute": 50, "gpu": 1}')
expect_status "mig+mps" 201
jcheck "$out" '"/gpu1-gi" in d["env"]["CUDA_MPS_PIPE_DIRECTORY"] and d["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"'
mps_daemons() {
	api GET /v1/gpus | python3 -c 'import json,sys; print(" ".join(str(x["pid"]) for x in json.load(sys.stdin)["gpus"][1]["mps"]["daemons"]))'
}
wait_until 10 eval '[ -n "$(mps_daemons)" ]' || fail "no MPS control daemon for the instance"
mps_pid=$(mps_daemons)

sleep 300 & live_pid=$!; PIDS+=($live_pid); disown $!
sleep 300 & dead_pid=$!; PIDS+=($dead_pid); disown $!
sleep 300 & gone_pid=$!; PIDS+=($gone_pid); disown $!
api POST /v1/slices/live/attach "{\"pid\": $live_pid}" >/dev/null
api POST /v1/slices/dead/attach "{\"pid\": $dead_pid}" >/dev/null
api POST /v1/slices/gone/attach "{\"pid\": $gone_pid}" >/dev/null
expect_status "attach" 200

# While running: the last process of an on_exit=delete slice ends.
kill -9 "$gone_pid"
wait_until 5 eval '[ "$(api GET /v1/slices/gone >/dev/null; st)" = 404 ]' ||
	fail "gone was not deleted when its process ended"
api GET "/v1/events?slice=gone" | grep -q 'slice.cleaned' || fail "no slice.cleaned event"

# Crash, a process ends while the daemon is down, restart.
daemon_kill9
kill -9 "$dead_pid"
daemon_up
out=$(api GET /v1/slices)
jcheck "$out" 'sorted(s["name"] for s in d["slices"]) == ["keep", "live", "mig2", "mps"]'
jcheck "$out" '[s["pids"] for s in d["slices"] if s["name"] == "live"] == [['"$live_pid"']]'
jcheck "$out" '[s["mig"]["uuid"] for s in d["slices"] if s["name"] == "mig2"] == ["'"$mig_uuid"'"]'
grep -q 'recovered slices kept=4 cleaned=1' "$WORK/daemon.log" || fail "recovery counts"
kill -0 "$mps_pid" || fail "the MPS control daemon did not survive"
wait_until 5 eval '[ "$(mps_daemons)" = "$mps_pid" ]' ||
	fail "the restarted daemon does not adopt the MPS control daemon"
api DELETE /v1/slices/mps >/dev/null
wait_until 10 eval '! kill -0 '"$mps_pid"' 2>/dev/null' || fail "MPS daemon not stopped with its last slice"

# A clean stop keeps everything too.
daemon_stop
daemon_up
out=$(api GET /v1/slices)
jcheck "$out" 'sorted(s["name"] for s in d["slices"]) == ["keep", "live", "mig2"]'
# And an MPS slice now finds GPU 0 once it is free of time-sliced slices.
for n in keep live; do api DELETE /v1/slices/$n >/dev/null; done
out=$(api POST /v1/slices '{"name": "mps0", "mode": "mps", "memory": "1GiB", "compute": 20}')
expect_status "mps on a freed GPU" 201
jcheck "$out" 'd["gpu"]["index"] == 0'
echo "ok: recovery"
