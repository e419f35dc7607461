#!/usr/bin/env bash
# Bad claims and failing services: each prepare returns a clear error to
# the kubelet (naming the field or the cause) and leaves nothing behind -
# no slice in gpusliced, no CDI spec, no checkpoint entry - including when
# the failure comes after the slice was made (the CDI dir cannot be
# written) and when the API server errs or does not answer in time.
. "$(dirname "$0")/lib.sh" "$1"
node_up
U=7d2e0c11-0000-4000-8000-0000000000

# nothing_left WHAT: no slice, no CDI spec, no checkpoint entry.
nothing_left() {
	expect_eq "$1: slices" "$(slices | tr '\n' ' ')" ""
	[ -z "$(ls "$CDI" 2>/dev/null)" ] || fail "$1: CDI specs left: $(ls "$CDI")"
	if [ -f "$KSTATE/checkpoint.json" ]; then
		jcheck "$(cat "$KSTATE/checkpoint.json")" 'd["claims"] == {}'
	fi
}

# refused N WANT: prepare claim bN (uid $U<N>) fails with WANT in the error.
refused() {
	local out
	out=$(kdra prepare ns "b$1" "$U$1")
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
sys.exit(0 if d["error"] and sys.argv[2] in d["error"] and d["devices"] == [] else 1)' \
		"$out" "$2" || fail "claim b$1: want an error with '$2', got $out"
	echo "b$1: $(jq_py "$out" 'd["error"]')"
	nothing_left "claim b$1"
}

CFG='[{"source": "FromClaim", "requests": [], "opaque": {"driver": "gpuslice.io", "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "SliceConfig", %s}}}]'
claim b10 "${U}10" gpu-0 '{"memory": "8Gi", "compute": "25"}' "$(printf "$CFG" '"weight": "heavy"')"
refused 10 "SliceConfig field 'weight' must be an integer 1..1000"
claim b11 "${U}11" gpu-0 '{"memory": "8Gi", "compute": "25"}' "$(printf "$CFG" '"priority": "high", "gpus": 2')"
refused 11 "SliceConfig has an unknown field 'gpus'"
claim b12 "${U}12" gpu-0 '{"memory": "8Gi", "compute": "25"}' \
	'[{"source": "FromClaim", "opaque": {"driver": "gpuslice.io", "parameters": {"apiVersion": "gpuslice.io/v2", "kind": "SliceConfig"}}}]'
refused 12 "field 'apiVersion' must be gpuslice.io/v1alpha1"
claim b13 "${U}13" gpu-0 '{"memory": "8Gi", "compute": "25"}' '[]' gpuslice.io node-b
refused 13 "is in pool node-b, not on this node node-a"
claim b14 "${U}14" gpu-0 '{"memory": "8Gi", "compute": "25"}' '[]' gpu.nvidia.com
refused 14 "allocates no device of driver gpuslice.io"
claim b15 "${U}15" gpu-5 '{"memory": "8Gi", "compute": "25"}'
refused 15 "device gpu-5 is not on this node"
claim b16 "${U}16" gpu-0 '{"memory": "81Gi", "compute": "25"}'
refused 16 "consumedCapacity.memory 81Gi is more than device gpu-0 has"
claim b17 "${U}17" gpu-0 '{"memory": "8Gi", "compute": "250"}'
refused 17 "consumedCapacity.compute 250 is outside 1..100"
claim b18 "${U}18" gpu-0 '{"memory": "8 Gi"}'
refused 18 "consumedCapacity.memory: quantity '8 Gi'"
refused 19 'not found'                    # no such claim on the API server
claim b20 "${U}99" gpu-0 '{"memory": "8Gi", "compute": "25"}'
refused 20 "has UID ${U}99, the kubelet asked for ${U}20"

# gpusliced says no (60 + 60 GiB on one 80 GiB GPU): its reason comes back.
claim b21 "${U}21" gpu-0 '{"memory": "60Gi", "compute": "25"}'
claim b22 "${U}22" gpu-0 '{"memory": "60Gi", "compute": "25"}'
jcheck "$(kdra prepare ns b21 "${U}21")" 'd["error"] is None'
out=$(kdra prepare ns b22 "${U}22")
jcheck "$out" 'd["error"] is not None and "gpusliced" in d["error"]'
echo "b22: $(jq_py "$out" 'd["error"]')"
expect_eq "slices with b21 only" "$(slices | tr '\n' ' ')" "k8s-${U}21 "
jcheck "$(cat "$KSTATE/checkpoint.json")" 'list(d["claims"]) == ["'"${U}21"'"]'
jcheck "$(kdra unprepare ns b21 "${U}21")" 'd["error"] is None'
nothing_left "after b21"

# The CDI spec cannot be written after the slice was made: the slice goes.
rm -rf "$CDI"; echo "not a directory" >"$CDI"
claim b23 "${U}23" gpu-1 '{"memory": "8Gi", "compute": "25"}'
out=$(kdra prepare ns b23 "${U}23")
jcheck "$out" 'd["error"] is not None and "cannot create" in d["error"]'
echo "b23: $(jq_py "$out" 'd["error"]')"
rm -f "$CDI"
nothing_left "claim b23 (CDI write failed)"

# The API server fails, refuses, or does not answer in time.
echo 500 >"$CLAIMS/fault"
refused 23 "API server"
echo 403 >"$CLAIMS/fault"
refused 23 "API server"
echo hang >"$CLAIMS/fault"
t0=$(date +%s)
refused 23 "API server"
t=$(( $(date +%s) - t0 ))
[ "$t" -le 30 ] || fail "a hanging API server held prepare for $t s"
: >"$CLAIMS/fault"
jcheck "$(kdra prepare ns b23 "${U}23")" 'd["error"] is None'
grep -q "Bearer test-token" "$CLAIMS/requests.log" || fail "the kubeconfig's token was not sent"

# The daemon is gone: a clear error, nothing recorded.
jcheck "$(kdra unprepare ns b23 "${U}23")" 'd["error"] is None'
daemon_stop
out=$(kdra prepare ns b23 "${U}23")
jcheck "$out" 'd["error"] is not None'
echo "daemon down: $(jq_py "$out" 'd["error"]')"
jcheck "$(cat "$KSTATE/checkpoint.json")" 'd["claims"] == {}'
[ -z "$(ls "$CDI")" ] || fail "CDI specs left with the daemon down"
echo ok
