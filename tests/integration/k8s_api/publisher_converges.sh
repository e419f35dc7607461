#!/usr/bin/env bash
# The publisher converges on what a real API server stores: the stand-in
# (as 1.36) sets taints[].timeAdded and canonicalises quantities, as a real
# server does; a GPU fault then costs at most one write per slice of the
# pool (the generation moves once), and nothing more is written over
# several re-lists (resync every second here; 30 s by default). The
# publisher's metrics file counts the writes and names the layout.
. "$(dirname "$0")/../daemon/lib.sh" "$1"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

K=$B/tests/gs-krs-run
X=$B/tests/gs-k8s-xid
[ -x "$K" ] && [ -x "$X" ] || { echo "SKIP: gs-krs-run or gs-k8s-xid not built"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null || { echo "SKIP: python3-jsonschema missing"; exit 77; }

"$G" sim init --gpus 2xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
daemon_up
python3 "$HERE/apiserver_standin.py" --port-file "$WORK/standin.port" --k8s-version 1.36 \
	--node node-1 >>"$WORK/standin.log" 2>&1 &
PIDS+=($!)
wait_until 10 test -s "$WORK/standin.port" || fail "stand-in did not start"
URL=http://127.0.0.1:$(cat "$WORK/standin.port")

"$K" --server "$URL" --node node-1 --socket "$SOCK" --resync-ms 1000 \
	--metrics-file "$WORK/metrics.prom" >"$WORK/krs.out" 2>"$WORK/krs.log" &
KPID=$!
PIDS+=($KPID)

nslices() { curl -sf "$URL/apis/resource.k8s.io/v1/resourceslices" | python3 -c '
import json, sys; print(len(json.load(sys.stdin)["items"]))'; }
writes() { curl -sf "$URL/standin/log" | python3 -c '
import json, sys; print(sum(1 for w in json.load(sys.stdin) if w["status"] < 300))'; }
has_slices() { [ "$(nslices 2>/dev/null || echo 0)" -ge 2 ]; }
wait_until 20 has_slices || fail "no slices published: $(tail -3 "$WORK/krs.log")"
sleep 2.5
n=$(nslices)
w0=$(writes)
echo "published $n slices in $w0 writes"
[ "$w0" -eq "$n" ] || fail "$w0 writes for $n slices before any change: the publisher does not converge"

"$X" "$GPUSLICE_SIM_DIR" 1 79 || fail "could not post an Xid on the sim"
wait_until 10 sh -c "curl -sf '$URL/apis/resource.k8s.io/v1/resourceslices' | grep -q timeAdded" ||
	fail "the fault was not published as a taint"
# Several re-lists (resync 1 s): a publisher comparing text would rewrite
# every slice at each.
sleep 4
w1=$(writes)
echo "GPU fault: $((w1 - w0)) writes for $n slices (over 4 re-lists)"
[ $((w1 - w0)) -le "$n" ] || fail "a GPU fault cost $((w1 - w0)) writes for $n slices"
[ -n "${GS_K8S_FIGURES:-}" ] && echo "slice_writes_per_gpu_fault $((w1 - w0))" >>"$GS_K8S_FIGURES"
violations=$(curl -sf "$URL/standin/violations")
[ "$violations" = "[]" ] || fail "the server refused writes: $violations"

grep -q "^gpuslice_k8s_slice_writes_total{node=\"node-1\"} $w1\$" "$WORK/metrics.prom" ||
	fail "metrics file: $(cat "$WORK/metrics.prom")"
grep -q '^gpuslice_k8s_slice_layout_info{node="node-1",server_minor="36",layout="shared+mig+taints"} 1$' \
	"$WORK/metrics.prom" || fail "no layout in the metrics: $(grep layout "$WORK/metrics.prom")"
grep -q "layout shared+mig+taints" "$WORK/krs.log" || fail "the layout was not logged"
kill -TERM "$KPID"
wait "$KPID" || fail "gs-krs-run failed"
jcheck "$(cat "$WORK/krs.out")" 'd["deferred"] == 0 and d["probes"] >= 3 and d["server_minor"] == 36'
echo ok
