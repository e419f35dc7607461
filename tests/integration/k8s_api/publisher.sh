#!/usr/bin/env bash
# The ResourceSlice publisher end to end: a simulated node (2 H100, 1
# A100) under gpusliced, the publisher (gs-krs-run) and the API server
# stand-in. Slices appear and validate; an Xid on a GPU becomes a taint
# (the delay is measured and printed); the API server killed and restarted
# (a GPU failing meanwhile) ends with exactly the right slices; a MIG mode
# change reaches the slices. GS_K8S_INTERVAL=MS sets the publisher's poll period.
. "$(dirname "$0")/../daemon/lib.sh" "$1"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

K=$B/tests/gs-krs-run
X=$B/tests/gs-k8s-xid
[ -x "$K" ] && [ -x "$X" ] || { echo "SKIP: gs-krs-run or gs-k8s-xid not built"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null || { echo "SKIP: python3-jsonschema missing"; exit 77; }

"$G" sim init --gpus 2xH100-SXM5-80GB,1xA100-SXM4-40GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
daemon_up

TOKEN=tok-$RANDOM$RANDOM
echo -n "$TOKEN" >"$WORK/token"
SPID=""
standin() { # [PORT]: starts the stand-in on PORT (0: any), state kept in $WORK
	rm -f "$WORK/standin.port"
	python3 "$HERE/apiserver_standin.py" --port "${1:-0}" --port-file "$WORK/standin.port" \
		--token "$TOKEN" --state "$WORK/standin.state" --node node-1 >>"$WORK/standin.log" 2>&1 &
	SPID=$!
	PIDS+=($SPID)
	wait_until 10 test -s "$WORK/standin.port" || fail "stand-in did not start"
	PORT=$(cat "$WORK/standin.port")
}
standin 0
URL=http://127.0.0.1:$PORT

# Left from an earlier run: slices of this node at generation 7 (one the
# node no longer needs), and another node's slice that must stay.
put_slice() { # NAME NODE GEN
	curl -sf -H "Authorization: Bearer $TOKEN" -X POST "$URL/apis/resource.k8s.io/v1/resourceslices" -d '{
	  "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "'"$1"'"},
	  "spec": {"driver": "gpuslice.io", "nodeName": "'"$2"'", "pool": {"name": "'"$2"'", "generation": '"$3"',
	  "resourceSliceCount": 2}, "devices": [{"name": "gpu-9"}]}}' >/dev/null || fail "could not seed $1"
}
put_slice node-1-gpuslice.io-0 node-1 7
put_slice node-1-gpuslice.io-9 node-1 7
put_slice node-2-gpuslice.io-0 node-2 7

"$K" --server "$URL" --node node-1 --socket "$SOCK" --token-file "$WORK/token" ${GS_K8S_INTERVAL:+--interval "$GS_K8S_INTERVAL"} \
	>"$WORK/krs.out" 2>"$WORK/krs.log" &
KPID=$!
PIDS+=($KPID)

NDEV=$((3 + 25 * 3))
check() { python3 "$HERE/check_slices.py" "$URL" "$TOKEN" node-1 3 "$NDEV" "$@"; }
wait_until 20 check "" || fail "slices did not appear: $(check "" || true)"
echo "slices published: $(check "" && echo ok)"
curl -sf -H "Authorization: Bearer $TOKEN" "$URL/apis/resource.k8s.io/v1/resourceslices/node-1-gpuslice.io-2" |
	python3 -c 'import json,sys; o=json.load(sys.stdin)["metadata"]["ownerReferences"][0]; sys.exit(not (o["kind"] == "Node" and o["name"] == "node-1" and o["uid"]))' ||
	fail "slices are not owned by their Node"
gen=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/apis/resource.k8s.io/v1/resourceslices/node-1-gpuslice.io-0" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["pool"]["generation"])')
[ "$gen" -gt 7 ] || fail "the pool generation did not move past the old slices' (got $gen)"
curl -sf -H "Authorization: Bearer $TOKEN" "$URL/apis/resource.k8s.io/v1/resourceslices/node-2-gpuslice.io-0" \
	>/dev/null || fail "another node's slice was touched"

# ---- someone else deletes a slice (the kubelet does on re-registration):
# the watch sees it and the publisher restores it at once ----
t0=$(date +%s%N)
curl -sf -H "Authorization: Bearer $TOKEN" -X DELETE \
	"$URL/apis/resource.k8s.io/v1/resourceslices/node-1-gpuslice.io-1" >/dev/null || fail "delete"
for i in $(seq 1000); do
	curl -sf -H "Authorization: Bearer $TOKEN" \
		"$URL/apis/resource.k8s.io/v1/resourceslices/node-1-gpuslice.io-1" >/dev/null && break
	sleep 0.01
done
t1=$(date +%s%N)
check "" || fail "a deleted slice was not restored: $(check "" || true)"
echo "a slice deleted by someone else was back after $(((t1 - t0) / 1000000)) ms"

# ---- an Xid 79 on GPU 1 becomes a taint; measure how long it takes ----
t0=$(date +%s%N)
"$X" "$GPUSLICE_SIM_DIR" 1 79 || fail "could not post an Xid on the sim"
# Poll with curl (cheap) for the taint; the full check follows.
for i in $(seq 1000); do
	curl -sf -H "Authorization: Bearer $TOKEN" "$URL/apis/resource.k8s.io/v1/resourceslices" |
		grep -q 'gpuslice.io/unhealthy' && break
	sleep 0.01
done
t1=$(date +%s%N)
check 1 >/dev/null || fail "GPU 1 was not tainted: $(check 1 || true)"
ms=$(((t1 - t0) / 1000000))
echo "taint visible on the API server ${ms} ms after the Xid (sim; includes gpusliced's Xid poll)"
echo "$ms" >"$WORK/taint_ms"
[ -n "${GS_K8S_FIGURES:-}" ] && echo "$ms" >>"$GS_K8S_FIGURES"
# Generous bound: the issue asks for 1 s; allow 5x under a loaded machine.
[ "$ms" -lt 5000 ] || fail "taint took ${ms} ms"

# An application Xid (31) is not a GPU fault: no taint on GPU 0.
"$X" "$GPUSLICE_SIM_DIR" 0 31
sleep 1
check 1 || fail "an application Xid tainted a GPU"

# ---- API server down, a GPU fails meanwhile, API server back ----
kill -9 "$SPID"
wait "$SPID" 2>/dev/null || true
"$X" "$GPUSLICE_SIM_DIR" 0 48
# The publisher must try (and fail) to publish the new taint while the API
# server is down; on a loaded machine that can take a few seconds.
wait_until 20 grep -q "publish failed" "$WORK/krs.log" ||
	fail "no failed publish during the outage: $(tail -5 "$WORK/krs.log")"
standin "$PORT"
wait_until 20 check 0,1 || fail "after the outage: $(check 0,1 || true)"
echo "after the outage: $(check 0,1 && echo exact)"

# ---- MIG mode change on GPU 1 (H100: no reset needed on the sim) ----
api POST /v1/slices '{"name": "m1", "mode": "mig", "mig-profile": "1g.10gb", "gpu": 1}' >/dev/null
expect_status "MIG slice" 201
wait_until 20 check 0,1 1 || fail "MIG mode change not published: $(check 0,1 1 || true)"
echo "MIG mode change published"

# ---- gpusliced restarted: GPU health starts clean, taints go ----
daemon_stop
daemon_up
wait_until 20 check "" 1 || fail "taints stayed after a gpusliced restart: $(check "" 1 || true)"
echo "gpusliced restart cleared the taints"

# ---- stop: counters say the outage was seen and nothing is left over ----
kill -TERM "$KPID"
wait "$KPID" || fail "gs-krs-run exited with an error: $(tail -5 "$WORK/krs.log")"
stats=$(cat "$WORK/krs.out")
echo "publisher: $stats"
jcheck "$stats" 'd["failures"] >= 1 and d["publishes"] >= 3'
check "" 1 >/dev/null || fail "final state: $(check "" 1 || true)"
grep -q "publish failed" "$WORK/krs.log" || fail "the outage was not logged"
echo "ok: publisher"
