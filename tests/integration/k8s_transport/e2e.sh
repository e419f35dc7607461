#!/usr/bin/env bash
# gpuslice-kubelet-plugin end to end on the simulated node: the real
# binary (transport + driver) with gpusliced on a sim and the claims
# stand-in as API server (tests/integration/k8s_driver/lib.sh), driven by
# the kubelet stand-in (kubelet.py client) over gRPC:
#   - a v1 prepare of an 8Gi/25% claim makes slice k8s-<uid> with those
#     limits and answers its CDI device and the allocation's share ID;
#   - a v1beta1 prepare works the same, without share_id;
#   - claims that cannot be prepared (another node's device, a missing
#     claim) come back as per-claim errors naming the cause, next to a good
#     claim in the same request, and leave no slice behind;
#   - unprepare over both versions frees the slices and CDI specs;
#   - the plugin's peak RSS stays within 16 MiB (not under ASan);
#   - SIGTERM removes the registration socket and exits 0.
. "$(dirname "$0")/../k8s_driver/lib.sh" "$1"
PLUGIN=$B/bin/gpuslice-kubelet-plugin
[ -x "$PLUGIN" ] || { echo "SKIP: no gpuslice-kubelet-plugin in this build"; exit 77; }
python3 -c 'import grpc' 2>/dev/null || /usr/bin/python3 -c 'import grpc' 2>/dev/null ||
	{ echo "SKIP: python3-grpcio is not installed"; exit 77; }
command -v protoc >/dev/null || { echo "SKIP: protoc is not installed"; exit 77; }
node_up

REG=$WORK/reg
PDIR=$WORK/plugin
"$PLUGIN" --node-name "$NODE" --registry-dir "$REG" --plugin-dir "$PDIR" \
	--state-dir "$KSTATE" --cdi-dir "$CDI" --daemon-socket "$SOCK" \
	--kubeconfig "$WORK/kubeconfig" --shim "$SHIM" --no-publish \
	--log-level debug --log-file "$WORK/plugin.log" 2>>"$WORK/plugin.log" &
PLUGIN_PID=$!
PIDS+=("$PLUGIN_PID")
wait_until 10 test -S "$REG/gpuslice.io-reg.sock" ||
	fail "no registration socket: $(tail -5 "$WORK/plugin.log")"
kubelet() {
	python3 "$SRC/tests/integration/k8s_transport/kubelet.py" client "$REG" "$@" ||
		fail "kubelet stand-in: $* (plugin log: $(tail -5 "$WORK/plugin.log"))"
}

UID1=5b2d3c4e-0000-4000-8000-000000000001
UID2=5b2d3c4e-0000-4000-8000-000000000002
UID3=5b2d3c4e-0000-4000-8000-000000000003
UID4=5b2d3c4e-0000-4000-8000-000000000004
claim c1 "$UID1" gpu-1 '{"memory": "8Gi", "compute": "25"}' \
	'[{"source": "FromClaim", "requests": [], "opaque": {"driver": "gpuslice.io", "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "SliceConfig", "priority": "high"}}}]'
claim c2 "$UID2" gpu-0 '{"memory": "2Gi", "compute": "10"}'
claim c3 "$UID3" gpu-0 '{"memory": "2Gi", "compute": "10"}' '[]' gpuslice.io node-b

# v1: devices, CDI ID and share ID from the allocation.
out=$(kubelet v1 prepare ns c1 "$UID1")
jcheck "$out" 'list(d["claims"]) == ["'"$UID1"'"] and d["claims"]["'"$UID1"'"]["error"] == ""'
jcheck "$out" 'd["claims"]["'"$UID1"'"]["devices"][0]["cdi_device_ids"] == ["gpuslice.io/slice=k8s-'"$UID1"'"]'
jcheck "$out" 'd["claims"]["'"$UID1"'"]["devices"][0]["pool_name"] == "node-a" and d["claims"]["'"$UID1"'"]["devices"][0]["device_name"] == "gpu-1"'
jcheck "$out" 'd["claims"]["'"$UID1"'"]["devices"][0]["share_id"].startswith("9a7e6b1c")'
s=$(api GET "/v1/slices/k8s-$UID1")
expect_status "the claim's slice" 200
jcheck "$s" 'd["memory_bytes"] == 8 * 2**30 and d["compute"] == 25 and d["priority"] == "high"'
[ -f "$CDI/gpuslice.io-slice_k8s-$UID1.json" ] || fail "no CDI spec for c1"

# v1beta1, in one request with two claims that cannot be prepared.
out=$(kubelet v1beta1 prepare ns c2 "$UID2" ns c3 "$UID3" ns missing "$UID4")
jcheck "$out" 'sorted(d["claims"]) == sorted(["'"$UID2"'", "'"$UID3"'", "'"$UID4"'"])'
jcheck "$out" 'd["claims"]["'"$UID2"'"]["error"] == "" and d["claims"]["'"$UID2"'"]["devices"][0]["cdi_device_ids"] == ["gpuslice.io/slice=k8s-'"$UID2"'"]'
jcheck "$out" '"share_id" not in d["claims"]["'"$UID2"'"]["devices"][0]'
jcheck "$out" '"node-b" in d["claims"]["'"$UID3"'"]["error"] and d["claims"]["'"$UID3"'"]["devices"] == []'
jcheck "$out" '"missing" in d["claims"]["'"$UID4"'"]["error"] and d["claims"]["'"$UID4"'"]["devices"] == []'
echo "errors the kubelet gets: $(jq_py "$out" '[d["claims"][u]["error"] for u in ("'"$UID3"'", "'"$UID4"'")]')"
expect_eq "slices" "$(slices | sort | tr '\n' ' ')" "$(printf 'k8s-%s\n' "$UID1" "$UID2" | sort | tr '\n' ' ')"

# Prepare again (a kubelet retry): same answer, no new slice.
again=$(kubelet v1 prepare ns c1 "$UID1")
jcheck "$again" 'd["claims"]["'"$UID1"'"]["devices"][0]["cdi_device_ids"] == ["gpuslice.io/slice=k8s-'"$UID1"'"]'
expect_eq "slices after a retry" "$(slices | wc -l)" "2"

# Unprepare over both versions; the unprepared-twice claim is fine.
out=$(kubelet v1 unprepare ns c1 "$UID1" ns c3 "$UID3")
jcheck "$out" 'all(v["error"] == "" for v in d["claims"].values()) and len(d["claims"]) == 2'
out=$(kubelet v1beta1 unprepare ns c2 "$UID2" ns c1 "$UID1")
jcheck "$out" 'all(v["error"] == "" for v in d["claims"].values()) and len(d["claims"]) == 2'
expect_eq "slices after unprepare" "$(slices | tr '\n' ' ')" ""
[ -z "$(ls "$CDI")" ] || fail "CDI specs left: $(ls "$CDI")"

hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$PLUGIN_PID/status")
echo "gpuslice-kubelet-plugin peak RSS: $((hwm / 1024)).$(((hwm % 1024) * 10 / 1024)) MiB (VmHWM; real driver, publisher off)"
# (grep -q would end the pipe early: ldd's SIGPIPE fails it under pipefail)
if [ "$(ldd "$PLUGIN" | grep -c libasan || true)" = 0 ]; then
	[ "$hwm" -le $((16 * 1024)) ] || fail "plugin peak RSS $hwm KiB is over 16 MiB"
fi

kill -TERM "$PLUGIN_PID"
rc=0
wait "$PLUGIN_PID" || rc=$?
expect_eq "plugin exit status after SIGTERM" "$rc" 0
[ ! -e "$REG/gpuslice.io-reg.sock" ] || fail "registration socket left after SIGTERM"
echo "ok: the real plugin prepared and unprepared claims for the kubelet stand-in"
