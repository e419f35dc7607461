#!/usr/bin/env bash
# A claim allocated memory: 8Gi, compute: 25 on gpu-1 is prepared into a
# slice with exactly those limits and a CDI spec (valid against the CDI
# schema, lowest cdiVersion) whose environment and preload alone put a
# workload in the slice: it gets CUDA_ERROR_OUT_OF_MEMORY past 8 GiB and
# 25 % +- 3 pp of GPU time (the sim's own accounting). Preparing again, or
# from two pods at once, returns the same device and makes no new slice.
# Unprepare frees the slice and removes the spec. Prints the prepare
# latency (p50/p99 over 30 rounds, including slice creation). The slice is
# charged to the gpusliced team named like the claim's namespace, which
# /metrics shows per slice (= per claim); the slice carries the claim's
# namespace, name, uid, pod and pod UID as labels, on gpuslice_slice_info
# (the pod UID is what the watchdog will match /proc/PID/cgroup against).
. "$(dirname "$0")/lib.sh" "$1"
node_up
UID1=4f1c2a9e-0000-4000-8000-000000000001
claim c1 "$UID1" gpu-1 '{"memory": "8Gi", "compute": "25"}' \
	'[{"source": "FromClaim", "requests": [], "opaque": {"driver": "gpuslice.io", "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "SliceConfig", "priority": "high", "weight": 3}}}]'

# A gpusliced team named like the namespace gets the claim's slice.
api PUT /v1/teams/ns '{}' >/dev/null
expect_status "team ns" 200
out=$(kdra prepare ns c1 "$UID1")
jcheck "$out" 'd["error"] is None'
jcheck "$out" 'd["devices"][0]["cdi"] == ["gpuslice.io/slice=k8s-'"$UID1"'"]'
jcheck "$out" 'd["devices"][0]["device"] == "gpu-1" and d["devices"][0]["pool"] == "node-a"'
jcheck "$out" 'd["devices"][0]["requests"] == ["gpu"] and d["devices"][0]["share_id"].startswith("9a7e6b1c")'
s=$(api GET "/v1/slices/k8s-$UID1")
expect_status "the claim's slice" 200
jcheck "$s" 'd["memory_bytes"] == 8 * 2**30 and d["compute"] == 25'
jcheck "$s" 'd["gpu"]["index"] == 1 and d["priority"] == "high" and d["weight"] == 3'
jcheck "$s" 'd["team"] == "ns"'
jcheck "$s" 'd["labels"] == {"k8s_namespace": "ns", "k8s_claim": "c1", "k8s_claim_uid": "'"$UID1"'", "k8s_pod": "pod-1", "k8s_pod_uid": "p1"}'
curl -sf --unix-socket "$SOCK" http://localhost/metrics >"$WORK/metrics"
grep -q "^gpuslice_slice_memory_limit_bytes{.*slice=\"k8s-$UID1\".*team=\"ns\".*} 8589934592" "$WORK/metrics" ||
	grep -q "^gpuslice_slice_memory_limit_bytes{.*team=\"ns\".*slice=\"k8s-$UID1\".*} 8589934592" "$WORK/metrics" ||
	fail "no per-claim metric for the slice: $(grep "k8s-$UID1" "$WORK/metrics" | head -3)"
grep -q "^gpuslice_slice_info{gpu=\"1\",slice=\"k8s-$UID1\",team=\"ns\",.*,k8s_claim=\"c1\",k8s_claim_uid=\"$UID1\",k8s_namespace=\"ns\",k8s_pod=\"pod-1\",k8s_pod_uid=\"p1\"} 1\$" "$WORK/metrics" ||
	fail "no per-claim info series: $(grep "^gpuslice_slice_info.*k8s-$UID1" "$WORK/metrics")"

spec=$CDI/gpuslice.io-slice_k8s-$UID1.json
[ -f "$spec" ] || fail "no CDI spec at $spec"
cdi_valid "$spec" || { rc=$?; [ $rc -eq 77 ] && exit 77; fail "CDI spec does not validate"; }
jcheck "$(cat "$spec")" 'd["cdiVersion"] == "0.3.0" and d["kind"] == "gpuslice.io/slice"'
# The container gets the region's files, never the run dir with the API
# socket; its books are its slice's own file (a uid-0 slice's private
# books), where the shim looks for them, never the books of other pods.
slot=$(jq_py "$s" 'd["region"]["slot"]')
jcheck "$s" 'd["region"]["books"] == "'"$RUNDIR/books/usage.0.$slot"'"'
jcheck "$(cat "$spec")" 'sorted(m["hostPath"] for m in d["devices"][0]["containerEdits"]["mounts"]) == sorted(["'"$SHIM"'", "'"$RUNDIR"'/limits", "'"$RUNDIR"'/limits.public", "'"$RUNDIR"'/usage", "'"$RUNDIR"'/books/usage.0.'"$slot"'"])'
jcheck "$(cat "$spec")" '[m["containerPath"] for m in d["devices"][0]["containerEdits"]["mounts"] if m["hostPath"].endswith("/books/usage.0.'"$slot"'")] == ["'"$RUNDIR"'/usage.0"]'
[ "$(stat -c %a "$RUNDIR/books")" = 700 ] || fail "the books directory is not root's alone: $(stat -c %a "$RUNDIR/books")"
cdi_env "k8s-$UID1" >"$WORK/env"
grep -qx "LD_PRELOAD=$SHIM" "$WORK/env" || fail "no preload in the CDI env: $(cat "$WORK/env")"
grep -qx "GPUSLICE_SLICE=k8s-$UID1" "$WORK/env" || fail "no GPUSLICE_SLICE in the CDI env"
ls "$CDI" | grep -v '^gpuslice.io-slice_' && fail "stray files in the CDI dir"

# The workload gets only the spec's environment (plus the sim's libraries).
mapfile -t CENV <"$WORK/env"
SIMENV=(LD_LIBRARY_PATH="$LD_LIBRARY_PATH" GPUSLICE_SIM_DIR="$GPUSLICE_SIM_DIR" PATH="$PATH")
res=$(env -i "${SIMENV[@]}" "${CENV[@]}" "$B/bin/gs-alloc" --api plain --chunk 256MiB)
jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 7 * 2**30 <= d["allocated_bytes"] <= 8 * 2**30'
echo "memory: $(jq_py "$res" 'd["allocated_bytes"] / 2**30') GiB allocated before CUDA_ERROR_OUT_OF_MEMORY"

# What the container sees: only the mounted files in its run directory
# (hard links stand in for the bind mounts). The shim joins its slice
# from them alone, as root and as an unprivileged uid (the public view).
CTR=$WORK/ctr-run
mkdir -p "$CTR"
chmod 755 "$CTR"
python3 -c '
import json, os, sys
spec, run, ctr = sys.argv[1:]
for m in json.load(open(spec))["devices"][0]["containerEdits"]["mounts"]:
    if os.path.dirname(m["containerPath"]) == run:
        os.link(m["hostPath"], os.path.join(ctr, os.path.basename(m["containerPath"])))
' "$spec" "$RUNDIR" "$CTR"
res=$(env -i "${SIMENV[@]}" "${CENV[@]}" GPUSLICE_RUN_DIR="$CTR" \
	"$B/bin/gs-alloc" --api plain --chunk 256MiB)
jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 7 * 2**30 <= d["allocated_bytes"] <= 8 * 2**30'
if command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ]; then
	# The node's GPUs are the sim's files: open them to that uid too.
	chmod 755 "$WORK" "$GPUSLICE_SIM_DIR"
	chmod 666 "$GPUSLICE_SIM_DIR"/*
	res=$(env -i "${SIMENV[@]}" "${CENV[@]}" GPUSLICE_RUN_DIR="$CTR" \
		setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$B/bin/gs-alloc" --api plain --chunk 256MiB 2>&1) || true
	jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 7 * 2**30 <= d["allocated_bytes"] <= 8 * 2**30'
	echo "container files only: capped as root and as uid 65534"
fi

env -i "${SIMENV[@]}" "${CENV[@]}" "$B/bin/gs-burn" --seconds 12 --memory 256MiB \
	>"$WORK/burn.out" 2>&1 &
BURN=$!
PIDS+=($BURN)
sleep 2
busy() {
	"$G" sim status --json --dir "$GPUSLICE_SIM_DIR" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(p["busy_s"] for g in d["gpus"] for p in g["processes"] if p["pid"] == '"$BURN"'))'
}
t1=$(date +%s.%N); b1=$(busy)
sleep 8
t2=$(date +%s.%N); b2=$(busy)
share=$(python3 -c "print(round(($b2 - $b1) / ($t2 - $t1) * 100, 2))")
echo "compute: $share % of GPU 1 over $(python3 -c "print(round($t2 - $t1, 1))") s (sim)"
python3 -c "import sys; sys.exit(0 if abs($share - 25) <= 3 else 1)" ||
	fail "compute share $share %, want 25 +- 3"
wait "$BURN" || true

# Retried prepare and a second pod: same answer, one slice.
again=$(kdra prepare ns c1 "$UID1")
jcheck "$again" 'd["error"] is None and d["devices"][0]["cdi"] == ["gpuslice.io/slice=k8s-'"$UID1"'"]'
UID2=4f1c2a9e-0000-4000-8000-000000000002
claim c2 "$UID2" gpu-0 '{"memory": "2Gi", "compute": "10"}'
kdra twice ns c2 "$UID2" >"$WORK/twice"
[ "$(grep -c '"error":null' "$WORK/twice")" = 2 ] || fail "two pods on one claim: $(cat "$WORK/twice")"
[ "$(sort -u <(python3 -c '
import json, sys
for l in open(sys.argv[1]): print(json.loads(l)["devices"][0]["cdi"])' "$WORK/twice") | wc -l)" = 1 ] ||
	fail "two pods got different CDI ids: $(cat "$WORK/twice")"
expect_eq "slices" "$(slices | sort | tr '\n' ' ')" "k8s-$UID1 k8s-$UID2 "

# Unprepare frees the slice and the spec; again is a no-op.
out=$(kdra unprepare ns c1 "$UID1" unprepare ns c1 "$UID1" unprepare ns c2 "$UID2")
[ "$(grep -c '"error":null' <<<"$out")" = 3 ] || fail "unprepare: $out"
expect_eq "slices after unprepare" "$(slices | tr '\n' ' ')" ""
[ -z "$(ls "$CDI")" ] || fail "CDI specs left: $(ls "$CDI")"
jcheck "$(cat "$KSTATE/checkpoint.json")" 'd["claims"] == {}'
# The freed memory is there for the next claim on the GPU.
jcheck "$(api GET /v1/gpus)" 'd["gpus"][1]["allocated"]["memory_bytes"] == 0'

b=$(kdra bench 30 ns c1 "$UID1")
jcheck "$b" 'd["errors"] == 0'
echo "NodePrepareResources (driver, incl. slice creation, sim): p50 $(jq_py "$b" 'round(d["prepare_p50_ms"], 2)') ms, p99 $(jq_py "$b" 'round(d["prepare_p99_ms"], 2)') ms; unprepare p99 $(jq_py "$b" 'round(d["unprepare_p99_ms"], 2)') ms"
echo ok
