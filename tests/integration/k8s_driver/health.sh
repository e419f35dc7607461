#!/usr/bin/env bash
# Device health for the kubelet's health stream: every GPU of the node is
# a healthy device; when gpusliced stops answering the listener is called
# and the devices turn UNKNOWN with a reason; when it is back, HEALTHY
# again. The version changes exactly when the list does.
. "$(dirname "$0")/lib.sh" "$1"
node_up
kdra --interval-ms 200 start wait-change 5 health wait-change 10 health \
	wait-change 15 health >"$WORK/health.out" &
P=$!
PIDS+=($P)
lines_ge() { [ "$(wc -l <"$WORK/health.out")" -ge "$1" ]; }
wait_until 10 lines_ge 2 || fail "no first health list: $(cat "$WORK/health.out")"
first=$(sed -n 2p "$WORK/health.out")
jcheck "$first" 'sorted((x["device"], x["status"]) for x in d["devices"]) == [("gpu-0", 1), ("gpu-1", 1)]'
daemon_stop
wait_until 12 lines_ge 4 || fail "no change when the daemon stopped: $(cat "$WORK/health.out")"
jcheck "$(sed -n 3p "$WORK/health.out")" 'd["changed"]'
down=$(sed -n 4p "$WORK/health.out")
jcheck "$down" 'sorted((x["device"], x["status"]) for x in d["devices"]) == [("gpu-0", 0), ("gpu-1", 0)]'
jcheck "$down" 'd["version"] != '"$(jq_py "$first" 'd["version"]')"
daemon_up
wait "$P" || fail "the probe failed: $(cat "$WORK/probe.log")"
jcheck "$(sed -n 5p "$WORK/health.out")" 'd["changed"]'
jcheck "$(sed -n 6p "$WORK/health.out")" 'd["version"] == '"$(jq_py "$first" 'd["version"]')"
echo ok
