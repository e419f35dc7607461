#!/usr/bin/env bash
# gpuslice-kubelet-plugin as a whole on the simulated node, against the
# API server stand-in (tests/integration/k8s_api/apiserver_standin.py,
# which checks every object written against the resource.k8s.io/v1 schema)
# and the kubelet stand-in (kubelet.py client):
#   - the plugin publishes the node's ResourceSlices (schema-valid);
#   - the kubelet starts: it deletes the node's slices and registers the
#     plugin; the plugin publishes them again;
#   - a claim allocated on a published device (created on the stand-in,
#     real UID) is prepared over gRPC into a capped slice, then unprepared;
#   - the plugin's peak RSS stays within 16 MiB (not under ASan);
#   - SIGTERM removes the registration socket and exits 0.
. "$(dirname "$0")/../daemon/lib.sh" "$1"
PLUGIN=$B/bin/gpuslice-kubelet-plugin
[ -x "$PLUGIN" ] || { echo "SKIP: no gpuslice-kubelet-plugin in this build"; exit 77; }
python3 -c 'import grpc' 2>/dev/null || /usr/bin/python3 -c 'import grpc' 2>/dev/null ||
	{ echo "SKIP: python3-grpcio is not installed"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null ||
	{ echo "SKIP: python3-jsonschema is not installed (the API stand-in needs it)"; exit 77; }
command -v protoc >/dev/null || { echo "SKIP: protoc is not installed"; exit 77; }
NODE=node-a
REG=$WORK/reg
CDI=$WORK/cdi
TOKEN=e2e-token

"$G" sim init --gpus 1xH100-SXM5-80GB,1xA100-SXM4-40GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
daemon_up
python3 "$SRC/tests/integration/k8s_api/apiserver_standin.py" --port-file "$WORK/port" \
	--token "$TOKEN" >>"$WORK/apiserver.log" 2>&1 &
PIDS+=($!)
wait_until 10 test -s "$WORK/port" || fail "the API server stand-in did not start"
URL=http://127.0.0.1:$(cat "$WORK/port")
cat >"$WORK/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster: {server: "$URL"}
users:
- name: plugin
  user: {token: $TOKEN}
contexts:
- name: standin
  context: {cluster: standin, user: plugin}
current-context: standin
KC
# kapi METHOD PATH [BODY]: the stand-in's answer on stdout.
kapi() {
	local args=(-s --max-time 10 -H "Authorization: Bearer $TOKEN" -X "$1")
	[ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	curl "${args[@]}" "$URL$2"
}
# devices: this node's published device names, sorted, one line.
devices() {
	kapi GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D$NODE" |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join(sorted(x["name"] for s in d["items"] for x in s["spec"].get("devices", []))))'
}
has_whole_gpus() { devices | grep -q "gpu-0 " && devices | grep -q "gpu-1"; }

"$PLUGIN" --node-name "$NODE" --registry-dir "$REG" --plugin-dir "$WORK/plugin" \
	--state-dir "$WORK/kstate" --cdi-dir "$CDI" --daemon-socket "$SOCK" \
	--kubeconfig "$WORK/kubeconfig" --shim "$B/lib/libgpuslice.so" \
	--publish-interval-ms 200 --log-level debug --log-file "$WORK/plugin.log" \
	2>>"$WORK/plugin.log" &
PLUGIN_PID=$!
PIDS+=("$PLUGIN_PID")
kubelet() {
	python3 "$SRC/tests/integration/k8s_transport/kubelet.py" client "$REG" "$@" ||
		fail "kubelet stand-in: $* (plugin log: $(tail -5 "$WORK/plugin.log"))"
}

wait_until 20 has_whole_gpus ||
	fail "no ResourceSlices published: '$(devices)' (plugin log: $(tail -5 "$WORK/plugin.log"))"
echo "published: $(devices | wc -w) devices ($(devices | tr ' ' '\n' | grep -c mig) MIG placements)"
expect_eq "schema violations" "$(kapi GET /standin/violations | tr -d ' \n')" "[]"

# The kubelet starts: wipes the node's slices, then registers the plugin.
for s in $(kapi GET "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D$NODE" |
	python3 -c 'import json, sys; print(" ".join(i["metadata"]["name"] for i in json.load(sys.stdin)["items"]))'); do
	kapi DELETE "/apis/resource.k8s.io/v1/resourceslices/$s" >/dev/null
done
info=$(kubelet v1 register)
jcheck "$info" 'd["type"] == "DRAPlugin" and d["name"] == "gpuslice.io" and d["supported_versions"][:2] == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]'
wait_until 20 has_whole_gpus || fail "slices not re-published after registration"

# A claim allocated on gpu-0 (8Gi, 25 %), with the UID the server gave it.
claim=$(python3 - "$NODE" <<'PY'
import json, sys
node = sys.argv[1]
print(json.dumps({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "inference-0", "namespace": "team-a"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.gpuslice.io",
        "capacity": {"requests": {"memory": "8Gi", "compute": "25"}}}}]}},
    "status": {"allocation": {"devices": {"results": [{
        "request": "gpu", "driver": "gpuslice.io", "pool": node,
        "device": "gpu-0", "shareID": "0c1d2e3f-0000-4000-8000-000000000001",
        "consumedCapacity": {"memory": "8Gi", "compute": "25"}}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{
            "key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}))
PY
)
created=$(kapi POST /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims "$claim")
UID1=$(jq_py "$created" 'd["metadata"]["uid"]')
[ -n "$UID1" ] && [ "$UID1" != None ] || fail "claim not created: $created"
out=$(kubelet v1 prepare team-a inference-0 "$UID1")
jcheck "$out" 'd["claims"]["'"$UID1"'"]["error"] == ""'
jcheck "$out" 'd["claims"]["'"$UID1"'"]["devices"][0]["cdi_device_ids"] == ["gpuslice.io/slice=k8s-'"$UID1"'"] and d["claims"]["'"$UID1"'"]["devices"][0]["share_id"] == "0c1d2e3f-0000-4000-8000-000000000001"'
s=$(api GET "/v1/slices/k8s-$UID1")
expect_status "the claim's slice" 200
jcheck "$s" 'd["memory_bytes"] == 8 * 2**30 and d["compute"] == 25 and d["gpu"]["index"] == 0'

out=$(kubelet v1beta1 unprepare team-a inference-0 "$UID1")
jcheck "$out" 'd["claims"]["'"$UID1"'"]["error"] == ""'
api GET "/v1/slices/k8s-$UID1" >/dev/null
expect_status "the slice after unprepare" 404

hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$PLUGIN_PID/status")
echo "gpuslice-kubelet-plugin peak RSS: $((hwm / 1024)).$(((hwm % 1024) * 10 / 1024)) MiB (VmHWM, publisher and driver included)"
# (grep -q would end the pipe early: ldd's SIGPIPE fails it under pipefail)
if [ "$(ldd "$PLUGIN" | grep -c libasan || true)" = 0 ]; then
	[ "$hwm" -le $((16 * 1024)) ] || fail "plugin peak RSS $hwm KiB is over 16 MiB"
fi

kill -TERM "$PLUGIN_PID"
rc=0
wait "$PLUGIN_PID" || rc=$?
expect_eq "plugin exit status after SIGTERM" "$rc" 0
[ ! -e "$REG/gpuslice.io-reg.sock" ] || fail "registration socket left after SIGTERM"
expect_eq "schema violations at the end" "$(kapi GET /standin/violations | tr -d ' \n')" "[]"
echo "ok: published, re-published after the kubelet's wipe, prepared and unprepared a real claim"
