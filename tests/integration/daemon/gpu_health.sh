#!/usr/bin/env bash
# GPU health in GET /v1/gpus: every GPU starts healthy; an application
# Xid (31, a kernel's bad address) leaves its GPU healthy, a GPU Xid (79,
# fallen off the bus) makes it unhealthy with the Xid as the reason and a
# gpu.unhealthy event; the other GPU stays healthy; a daemon restart starts
# from healthy again. The DRA driver turns this field into device taints
# and the kubelet's health stream.
. "$(dirname "$0")/lib.sh" "$1"
XID=$B/tests/gs-k8s-xid
[ -x "$XID" ] || { echo "SKIP: no gs-k8s-xid in this build"; exit 77; }
daemon_up

health() { # GPU: "healthy" or the reason
	api GET /v1/gpus | python3 -c '
import json, sys
h = json.load(sys.stdin)["gpus"][int(sys.argv[1])]["health"]
print("healthy" if h["healthy"] else h["reason"])' "$1"
}
is_health() { [ "$(health "$1")" = "$2" ]; }

expect_eq "gpu 0 at start" "$(health 0)" healthy
expect_eq "gpu 1 at start" "$(health 1)" healthy

"$XID" "$GPUSLICE_SIM_DIR" 0 31
api GET /v1/events | grep -q 'xid 31' || wait_until 5 eval 'api GET /v1/events | grep -q "xid 31"' ||
	fail "the watchdog did not see Xid 31"
expect_eq "gpu 0 after an application Xid" "$(health 0)" healthy

"$XID" "$GPUSLICE_SIM_DIR" 1 79
wait_until 5 is_health 1 "Xid 79" || fail "gpu 1 not unhealthy after Xid 79: $(health 1)"
expect_eq "gpu 0 next to a failed GPU" "$(health 0)" healthy
api GET /v1/events | grep -q 'gpu.unhealthy' || fail "no gpu.unhealthy event"
m=$(api GET /metrics)
grep -q '^gpuslice_gpu_healthy{gpu="1"} 0$' <<<"$m" || fail "metrics: gpu 1 not 0"
grep -q '^gpuslice_gpu_healthy{gpu="0"} 1$' <<<"$m" || fail "metrics: gpu 0 not 1"

daemon_stop
daemon_up
expect_eq "gpu 1 after a daemon restart" "$(health 1)" healthy
echo ok
