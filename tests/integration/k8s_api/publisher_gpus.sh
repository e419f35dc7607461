#!/usr/bin/env bash
# The publisher follows the node's GPUs: a GPU lost takes its devices (and
# its now-unneeded slices) away, a GPU added brings them, a health field
# gpusliced reports becomes a taint, and while gpusliced is down the
# published slices stay as they were. Uses fake_daemon.py (a gpusliced
# stand-in whose GPU list a test can rewrite) and the API server stand-in.
. "$(dirname "$0")/lib.sh" "$1"

K=$B/tests/gs-krs-run
[ -x "$K" ] || { echo "SKIP: gs-krs-run not built"; exit 77; }

gpus() { # N [UNHEALTHY_INDEX]: writes a node of N H100s
	python3 - "$WORK/node.json" "$1" "${2:--1}" <<'PY'
import json, sys
n, bad = int(sys.argv[2]), int(sys.argv[3])
def gpu(i):
    g = {"index": i, "uuid": "GPU-%08d-0000-0000-0000-000000000000" % i, "name": "NVIDIA H100 80GB HBM3",
         "model": "H100-SXM5-80GB", "memory_bytes": 85520809984,
         "mig": {"capable": True, "enabled": False, "instances": []}}
    if i == bad:
        g["health"] = {"healthy": False, "reason": "watchdog: ECC errors"}
    return g
json.dump({"driver": "580.65.06", "gpus": [gpu(i) for i in range(n)]}, open(sys.argv[1] + ".tmp", "w"))
PY
	mv "$WORK/node.json.tmp" "$WORK/node.json"
}
gpus 3
python3 "$HERE/fake_daemon.py" "$WORK/d.sock" "$WORK/node.json" 2>>"$WORK/fake.log" &
DPID=$!
PIDS+=($DPID)
for i in $(seq 100); do [ -S "$WORK/d.sock" ] && break; sleep 0.05; done
standin_up api
URL=http://127.0.0.1:$PORT_api
"$K" --server "$URL" --node node-g --socket "$WORK/d.sock" --interval 100 \
	>"$WORK/krs.out" 2>"$WORK/krs.log" &
KPID=$!
PIDS+=($KPID)

check() { # N_GPUS TAINTED
	python3 "$HERE/check_slices.py" "$URL" "" node-g "$1" $(($1 * 26)) "$2"
}
wait_until() {
	local t=$1 i
	shift
	for i in $(seq $((t * 10))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}
wait_until 20 check 3 "" || fail "3 GPUs: $(check 3 "" || true)"
# 3 H100s: 78 devices in 2 device slices + 1 counter slice.
gpus 1
wait_until 20 check 1 "" || fail "GPU lost: $(check 1 "" || true)"
echo "GPU lost: devices and the extra slice gone"
gpus 4 2
wait_until 20 check 4 2 || fail "GPUs added, one unhealthy: $(check 4 2 || true)"
echo "GPUs added; gpusliced's health field became a taint"
kill "$DPID"
wait "$DPID" 2>/dev/null || true
sleep 1
check 4 2 || fail "slices changed while gpusliced was down: $(check 4 2 || true)"
echo "gpusliced down: slices kept"
kill -TERM "$KPID"
wait "$KPID" || fail "gs-krs-run failed"
grep -q "gpusliced at" "$WORK/krs.log" || fail "the daemon outage was not logged"
echo "ok: publisher follows GPUs"
