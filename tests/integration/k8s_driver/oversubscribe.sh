#!/usr/bin/env bash
# gpusliced with swap.oversubscribe 2 (docs/swap.md): the plugin publishes
# each shareable GPU with twice its memory as capacity and the ratio as
# the attribute memoryOversubscribe (1.36 stand-in, every field kept), so
# the scheduler can place two 60 GiB claims on one 80 GB GPU; both are
# prepared (swap: allow). A third, `swap: never` through its SliceConfig,
# is refused at prepare by gpusliced's physical rule, with its reason.
. "$(dirname "$0")/lib.sh" "$1"
K=$B/tests/gs-krs-run
STANDIN=$SRC/tests/integration/k8s_api/apiserver_standin.py
[ -x "$K" ] || { echo "SKIP: gs-krs-run not built"; exit 77; }
cat >"$WORK/swap.yaml" <<'YAML'
swap:
  oversubscribe: 2
  host_memory: 256GiB
YAML
node_up 1xH100-SXM5-80GB --config "$WORK/swap.yaml"
jcheck "$(api GET /v1/gpus)" 'd["swap_oversubscribe"] == 2'
mem=$(jq_py "$(api GET /v1/gpus)" 'd["gpus"][0]["memory_bytes"]')

(python3 "$STANDIN" --port-file "$WORK/sport" --k8s-version 1.36 --node "$NODE" \
	>>"$WORK/standin2.log" 2>&1 & echo $! >"$WORK/spid")
PIDS+=($(cat "$WORK/spid"))
wait_until 10 test -s "$WORK/sport" || fail "the API server stand-in did not start"
url=http://127.0.0.1:$(cat "$WORK/sport")
("$K" --server "$url" --node "$NODE" --socket "$SOCK" --resync-ms 1000 >"$WORK/krs.out" 2>"$WORK/krs.log" &
 echo $! >"$WORK/kpid")
PIDS+=($(cat "$WORK/kpid"))
gpu0() {
	curl -sf "$url/apis/resource.k8s.io/v1/resourceslices" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["items"]:
    for d in s["spec"].get("devices", []):
        if d["name"] == "gpu-0":
            print(json.dumps(d))'
}
wait_until 20 eval '[ -n "$(gpu0)" ]' || fail "gpu-0 was not published: $(tail -3 "$WORK/krs.log")"
d=$(gpu0)
jcheck "$d" 'd["capacity"]["memory"]["value"] == str('"$mem"' * 2 // 2**20 * 2**20)'
jcheck "$d" 'd["capacity"]["memory"]["requestPolicy"]["validRange"]["max"] == str('"$mem"' // 2**20 * 2**20)'
jcheck "$d" 'd["attributes"]["memoryOversubscribe"] == {"string": "2"}'
[ "$(curl -sf "$url/standin/violations")" = "[]" ] || fail "refused: $(curl -sf "$url/standin/violations")"

# Two 60 GiB claims on the 80 GB GPU: 120 GiB promised, within 2 x.
U=0a0b0c0d-0000-4000-8000-0000000000
claim o1 "${U}01" gpu-0 '{"memory": "60Gi", "compute": "25"}'
claim o2 "${U}02" gpu-0 '{"memory": "60Gi", "compute": "25"}'
jcheck "$(kdra prepare ns o1 "${U}01")" 'd["error"] is None'
jcheck "$(kdra prepare ns o2 "${U}02")" 'd["error"] is None'
# A third that must stay resident cannot be beside them.
claim o3 "${U}03" gpu-0 '{"memory": "30Gi", "compute": "25"}' \
	'[{"source": "FromClaim", "requests": [], "opaque": {"driver": "gpuslice.io", "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "SliceConfig", "swap": "never"}}}]'
out=$(kdra prepare ns o3 "${U}03")
jcheck "$out" 'd["error"] is not None and "swap" in d["error"]'
expect_eq "slices" "$(slices | sort | tr '\n' ' ')" "k8s-${U}01 k8s-${U}02 "
echo "ok: 2 x memory published; two 60 GiB claims prepared on one 80 GB GPU; swap: never refused ($(jq_py "$out" 'd["error"]' | cut -c1-120))"
