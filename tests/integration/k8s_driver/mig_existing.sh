#!/usr/bin/env bash
# An API server without DRAPartitionableDevices (1.36 with the gate off)
# and a GPU already in MIG mode with instances made beforehand (nvidia-smi
# mig, as an administrator or mig-parted does): the plugin publishes those
# instances as plain devices (no counters) and nothing else of the GPU (no
# whole GPU, no placements), the server keeps every field, and a claim on
# one is prepared into a MIG slice on that very instance.
. "$(dirname "$0")/lib.sh" "$1"
K=$B/tests/gs-krs-run
SMI=$B/sim/nvidia-smi
STANDIN=$SRC/tests/integration/k8s_api/apiserver_standin.py
[ -x "$K" ] && [ -x "$SMI" ] || { echo "SKIP: gs-krs-run or the sim's nvidia-smi not built"; exit 77; }
"$G" sim init --gpus 1xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
"$SMI" -i 0 -mig 1 >/dev/null || fail "MIG mode could not be turned on"
"$SMI" mig -i 0 -cgi 3g.40gb:4 -C >/dev/null || fail "could not make 3g.40gb at 4"
"$SMI" mig -i 0 -cgi 1g.10gb:0 -C >/dev/null || fail "could not make 1g.10gb at 0"
daemon_up
jcheck "$(api GET /v1/gpus)" 'sorted((i["profile"], i["start"]) for i in d["gpus"][0]["mig"]["instances"]) == [("1g.10gb", 0), ("3g.40gb", 4)]'
uuid3=$(api GET /v1/gpus | python3 -c '
import json, sys
print([i["uuid"] for i in json.load(sys.stdin)["gpus"][0]["mig"]["instances"] if i["profile"] == "3g.40gb"][0])')

(python3 "$STANDIN" --port-file "$WORK/sport" --k8s-version 1.36 \
	--feature-gates DRAPartitionableDevices=false --node "$NODE" >>"$WORK/standin.log" 2>&1 &
 echo $! >"$WORK/spid")
PIDS+=($(cat "$WORK/spid"))
wait_until 10 test -s "$WORK/sport" || fail "the API server stand-in did not start"
url=http://127.0.0.1:$(cat "$WORK/sport")
("$K" --server "$url" --node "$NODE" --socket "$SOCK" --resync-ms 1000 >"$WORK/krs.out" 2>"$WORK/krs.log" &
 echo $! >"$WORK/kpid")
PIDS+=($(cat "$WORK/kpid"))
devices() {
	curl -sf "$url/apis/resource.k8s.io/v1/resourceslices" | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
print(" ".join(sorted(d["name"] for s in items for d in s["spec"].get("devices", []))))'
}
wait_until 20 eval '[ "$(devices)" = "gpu-0-mig-1g-10gb-0 gpu-0-mig-3g-40gb-4" ]' ||
	fail "published: '$(devices)', want the two instances only; $(tail -3 "$WORK/krs.log")"
curl -sf "$url/apis/resource.k8s.io/v1/resourceslices" | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
assert not any(s["spec"].get("sharedCounters") for s in items), "counter sets published"
for s in items:
    for d in s["spec"].get("devices", []):
        assert "consumesCounters" not in d, d["name"] + " consumes counters"
        assert d["attributes"]["type"]["string"] == "mig", d["name"]
' || fail "the instances are not plain MIG devices"
[ "$(curl -sf "$url/standin/violations")" = "[]" ] || fail "refused: $(curl -sf "$url/standin/violations")"

# A claim on the 3g.40gb instance: its slice is that instance.
U=e1b2c3d4-0000-4000-8000-0000000000e1
claim e1 "$U" gpu-0-mig-3g-40gb-4 '{}'
cat >"$WORK/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: $url
users:
- name: kubelet-plugin
  user:
    token: test-token
contexts:
- name: standin
  context:
    cluster: standin
    user: kubelet-plugin
current-context: standin
KC
uid=$(python3 - "$url" "$CLAIMS/ns/e1.json" <<'PY'
import json, sys, urllib.request
c = json.load(open(sys.argv[2]))
req = urllib.request.Request(sys.argv[1] + "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims",
                             data=json.dumps(c).encode(), method="POST",
                             headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req))["metadata"]["uid"])
PY
) || fail "the claim was refused"
out=$(kdra prepare ns e1 "$uid")
jcheck "$out" 'd["error"] is None and d["devices"][0]["device"] == "gpu-0-mig-3g-40gb-4"'
s=$(api GET "/v1/slices/k8s-$uid")
jcheck "$s" 'd["mig"]["profile"] == "3g.40gb" and d["mig"]["uuid"] == "'"$uuid3"'"'
jcheck "$(api GET /v1/gpus)" 'len(d["gpus"][0]["mig"]["instances"]) == 2'
jcheck "$(kdra unprepare ns e1 "$uid")" 'd["error"] is None'
echo "ok: existing MIG instances published as plain devices; a claim got the 3g.40gb one ($uuid3)"
