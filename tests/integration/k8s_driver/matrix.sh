#!/usr/bin/env bash
# Each supported API server (1.34, 1.35, 1.36) with the DRA gates users
# run (defaults, and each gate turned the other way) against the stand-in
# that behaves as that release (k8s_api/apiserver_versions.py): the
# publisher learns what the server keeps, publishes a layout it accepts
# (no write refused, no field dropped), a claim on the published devices
# (memory 8Gi + compute 25 on a shareable GPU, or one partition of 4 where
# the server has no consumable capacity) is prepared into a slice of those
# limits that stops a workload at its memory (CUDA_ERROR_OUT_OF_MEMORY)
# and holds it within 3 pp of its compute share (a 4 s burn),
# and a GPU fault becomes taints where the server keeps them, or
# withdraws the GPU's devices where it does not, at most one write per
# slice. Cells: "VERSION GATES" lines below.
. "$(dirname "$0")/lib.sh" "$1"
K=$B/tests/gs-krs-run
X=$B/tests/gs-k8s-xid
STANDIN=$SRC/tests/integration/k8s_api/apiserver_standin.py
[ -x "$K" ] && [ -x "$X" ] || { echo "SKIP: gs-krs-run or gs-k8s-xid not built"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null || { echo "SKIP: python3-jsonschema missing"; exit 77; }
"$G" sim init --gpus 2xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
daemon_up

cat >"$WORK/post_claim.py" <<'PY'
import json, sys, urllib.request
c = json.load(open(sys.argv[2]))
req = urllib.request.Request(sys.argv[1] + "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims",
                             data=json.dumps(c).encode(), method="POST",
                             headers={"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req))["metadata"]["uid"])
PY

# layout_ok.py URL CC PD VERSION: the slices hold the layout of the cell
# (exit 0), or print why not.
cat >"$WORK/layout_ok.py" <<'PY'
import json, sys, urllib.request
url, cc, pd, ver = sys.argv[1], sys.argv[2] == "true", sys.argv[3] == "true", sys.argv[4]
items = json.load(urllib.request.urlopen(url + "/apis/resource.k8s.io/v1/resourceslices"))["items"]
devs = {d["name"]: d for s in items for d in s["spec"].get("devices", [])}
sets = [c for s in items for c in s["spec"].get("sharedCounters", [])]
def no(why):
    print(why)
    sys.exit(1)
if not items:
    no("no slices")
v = json.load(urllib.request.urlopen(url + "/standin/violations"))
if v:
    no("refused: %s" % v[:2])
if cc != ("gpu-1" in devs and devs["gpu-1"].get("allowMultipleAllocations") is True):
    no("shareable gpu-1: %s, want %s" % (not cc, cc))
if cc == ("gpu-1-part-0-of-4" in devs):
    no("partitions: %s, want %s" % (cc, not cc))
mig = any("-mig-" in n for n in devs)
# 1.34 with both gates: the GPUs are not in MIG mode, so each is
# published whole (its placements only when MIG is on).
want_mig = pd and not (ver == "1.34" and cc)
if mig != want_mig or bool(sets) != pd:
    no("MIG placements %s (want %s), counter sets %s (want %s)" % (mig, want_mig, bool(sets), pd))
PY
# fault_ok.py URL TAINTS: GPU 1's devices tainted (TAINTS true) or gone.
cat >"$WORK/fault_ok.py" <<'PY'
import json, sys, urllib.request
url, tt = sys.argv[1], sys.argv[2] == "true"
items = json.load(urllib.request.urlopen(url + "/apis/resource.k8s.io/v1/resourceslices"))["items"]
devs = [d for s in items for d in s["spec"].get("devices", [])]
g1 = [d for d in devs if d["name"].startswith("gpu-1")]
g0 = [d for d in devs if d["name"].startswith("gpu-0")]
if not g0 or any(d.get("taints") for d in g0):
    print("GPU 0 tainted or gone")
    sys.exit(1)
if tt:
    ok = g1 and all(t.get("timeAdded") for d in g1 for t in d.get("taints", [{}]))
    print("" if ok else "GPU 1 not tainted (with timeAdded)")
    sys.exit(0 if ok else 1)
print("GPU 1 still published" if g1 else "")
sys.exit(0 if not g1 else 1)
PY

CELLS=${GS_K8S_CELLS:-"1.34 -
1.34 DRAConsumableCapacity=true,DRAPartitionableDevices=true,DRADeviceTaints=true
1.34 DRAPartitionableDevices=true
1.35 -
1.35 DRAConsumableCapacity=true,DRAPartitionableDevices=true,DRADeviceTaints=true
1.36 -
1.36 DRAConsumableCapacity=false
1.36 DRAPartitionableDevices=false
1.36 DRADeviceTaints=false"}

gates_on() { # VERSION GATES GATE: whether GATE is on in the cell
	python3 - "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[4])
import apiserver_versions as v
g = "" if sys.argv[2] == "-" else sys.argv[2]
sys.exit(0 if v.Version(sys.argv[1], g).on(sys.argv[3]) else 1)
PY
}

# claim_share SHARE ENV...: runs gs-burn with the claim's container
# environment ENV and prints the share of its GPU it got (percent, the
# sim's busy time over 4 s after a 1 s start); fails (status 1, the
# reason printed) when it is more than 3 pp from SHARE. The burn is asked
# for 10 s and stopped once measured: each `gpuslice sim status` takes up
# to a second under load, and a burn that ended inside the window (its
# context gone from the sim) would read as 0 s.
claim_share() {
	local want=$1 burn b1 b2 t1 t2 share
	shift
	env -i LD_LIBRARY_PATH="$LD_LIBRARY_PATH" GPUSLICE_SIM_DIR="$GPUSLICE_SIM_DIR" PATH="$PATH" \
		"$@" "$B/bin/gs-burn" --seconds 10 --memory 256MiB >"$WORK/burn.out" 2>&1 &
	burn=$!
	sleep 1
	t1=$(date +%s.%N); b1=$(sim_busy "$burn")
	sleep 4
	t2=$(date +%s.%N); b2=$(sim_busy "$burn")
	kill -0 "$burn" 2>/dev/null ||
		{ wait "$burn"; echo "gs-burn ended early: $(tail -2 "$WORK/burn.out")"; return 1; }
	kill -TERM "$burn"
	wait "$burn" 2>/dev/null || true
	share=$(python3 -c "print(round(($b2 - $b1) / ($t2 - $t1) * 100, 2))")
	python3 -c "import sys; sys.exit(0 if abs($share - $want) <= 3 else 1)" ||
		{ echo "compute share $share %, want $want +- 3 (busy $b1 s, then $b2 s)"; return 1; }
	echo "$share"
}

cell() { # VERSION GATES
	local ver=$1 gates=$2 d=$WORK/cell-$1-$RANDOM sp kp url
	mkdir -p "$d"
	(python3 "$STANDIN" --port-file "$d/port" --k8s-version "$ver" \
		--feature-gates "$([ "$gates" = - ] || echo "$gates")" --node "$NODE" \
		>>"$d/standin.log" 2>&1 & echo $! >"$d/pid")
	sp=$(cat "$d/pid")
	PIDS+=($sp)
	wait_until 10 test -s "$d/port" || fail "$ver $gates: stand-in did not start"
	url=http://127.0.0.1:$(cat "$d/port")
	"$K" --server "$url" --node "$NODE" --socket "$SOCK" --resync-ms 1000 >"$d/krs.out" 2>"$d/krs.log" &
	kp=$!
	PIDS+=($kp)
	local cc=false pd=false tt=dummy
	gates_on "$ver" "$gates" DRAConsumableCapacity "$SRC/tests/integration/k8s_api" && cc=true
	gates_on "$ver" "$gates" DRAPartitionableDevices "$SRC/tests/integration/k8s_api" && pd=true
	gates_on "$ver" "$gates" DRADeviceTaints "$SRC/tests/integration/k8s_api" && tt=true || tt=false
	wait_until 20 python3 "$WORK/layout_ok.py" "$url" "$cc" "$pd" "$ver" ||
		fail "$ver $gates: slices not as expected: $(python3 "$WORK/layout_ok.py" "$url" "$cc" "$pd" "$ver"; tail -3 "$d/krs.log")"
	# A claim on what was published.
	local uid dev cap mem comp
	uid=4f1c2a9e-0000-4000-8000-$(printf '%012d' $RANDOM)
	if $cc; then
		dev=gpu-1 cap='{"memory": "8Gi", "compute": "25"}' mem=$((8 << 30)) comp=25
	else
		mem=$(jq_py "$(api GET /v1/gpus)" 'd["gpus"][1]["memory_bytes"] // 2**20 // 4 * 2**20')
		dev=gpu-1-part-0-of-4 cap='{}' comp=25
	fi
	claim "c$uid" "$uid" "$dev" "$cap"
	# The server gives the claim its UID, as a real one does.
	local name=c$uid
	uid=$(python3 "$WORK/post_claim.py" "$url" "$CLAIMS/ns/c$uid.json") || fail "$ver $gates: the claim was refused"
	cat >"$d/kubeconfig" <<KC
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
	out=$("$PROBE" --node "$NODE" --state "$d/kstate" --cdi "$d/cdi" --socket "$SOCK" \
		--kubeconfig "$d/kubeconfig" --shim "$SHIM" prepare ns "$name" "$uid" 2>>"$d/probe.log")
	jcheck "$out" 'd["error"] is None and d["devices"][0]["device"] == "'"$dev"'"'
	s=$(api GET "/v1/slices/k8s-$uid")
	jcheck "$s" 'd["memory_bytes"] == '"$mem"' and d["compute"] == '"$comp"' and d["gpu"]["index"] == 1'
	# The claim's container environment caps the workload at its memory
	mapfile -t CENV < <(python3 -c '
import json, sys
for e in json.load(open(sys.argv[1]))["devices"][0]["containerEdits"]["env"]:
    print(e)' "$d/cdi/gpuslice.io-slice_k8s-$uid.json")
	res=$(env -i LD_LIBRARY_PATH="$LD_LIBRARY_PATH" GPUSLICE_SIM_DIR="$GPUSLICE_SIM_DIR" PATH="$PATH" \
		"${CENV[@]}" "$B/bin/gs-alloc" --api plain --chunk 512MiB)
	jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and '"$mem"' - 2**30 <= d["allocated_bytes"] <= '"$mem"
	# ... and at its compute share: 25 % +- 3 pp of GPU 1 (the sim's own
	# accounting), over a short burn.
	local share
	share=$(claim_share "$comp" "${CENV[@]}") || fail "$ver $gates: $share"
	echo "$ver ${gates}: compute $share % of GPU 1 (share $comp %)"
	out=$("$PROBE" --node "$NODE" --state "$d/kstate" --cdi "$d/cdi" --socket "$SOCK" \
		--kubeconfig "$d/kubeconfig" --shim "$SHIM" unprepare ns "$name" "$uid" 2>>"$d/probe.log")
	jcheck "$out" 'd["error"] is None'
	if ! $cc; then
		# Two partitions of GPU 0 in one claim: one slice of their sum.
		python3 - "$CLAIMS/ns/p$uid.json" "$NODE" <<'PY'
import json, sys
r = [{"request": "gpu", "driver": "gpuslice.io", "pool": sys.argv[2], "device": "gpu-0-part-%d-of-4" % k}
     for k in (1, 2)]
json.dump({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"namespace": "ns", "name": "pp", "uid": "x"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
               "deviceClassName": "partition.gpuslice.io", "allocationMode": "ExactCount", "count": 2}}]}},
           "status": {"allocation": {"devices": {"results": r}}}}, open(sys.argv[1], "w"))
PY
		local puid
		puid=$(python3 "$WORK/post_claim.py" "$url" "$CLAIMS/ns/p$uid.json") || fail "$ver $gates: the 2-partition claim was refused"
		out=$("$PROBE" --node "$NODE" --state "$d/kstate" --cdi "$d/cdi" --socket "$SOCK" \
			--kubeconfig "$d/kubeconfig" --shim "$SHIM" prepare ns pp "$puid" 2>>"$d/probe.log")
		jcheck "$out" 'd["error"] is None and [x["device"] for x in d["devices"]] == ["gpu-0-part-1-of-4", "gpu-0-part-2-of-4"]'
		jcheck "$(api GET "/v1/slices/k8s-$puid")" 'd["memory_bytes"] == 2 * '"$mem"' and d["compute"] == 50 and d["gpu"]["index"] == 0'
		out=$("$PROBE" --node "$NODE" --state "$d/kstate" --cdi "$d/cdi" --socket "$SOCK" \
			--kubeconfig "$d/kubeconfig" --shim "$SHIM" unprepare ns pp "$puid" 2>>"$d/probe.log")
		jcheck "$out" 'd["error"] is None'
	fi

	# A GPU fault: taints where kept, else the GPU's devices withdrawn.
	sleep 1.5
	local w0 w1 n n0
	w0=$(curl -sf "$url/standin/log" | python3 -c 'import json,sys; print(sum(1 for w in json.load(sys.stdin) if w["status"] < 300 and "slices" in w["path"]))')
	n0=$(curl -sf "$url/apis/resource.k8s.io/v1/resourceslices" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
	"$X" "$GPUSLICE_SIM_DIR" 1 79 || fail "could not post an Xid"
	wait_until 10 python3 "$WORK/fault_ok.py" "$url" "$tt" ||
		fail "$ver $gates: the fault was not published: $(python3 "$WORK/fault_ok.py" "$url" "$tt")"
	sleep 3
	n=$(curl -sf "$url/apis/resource.k8s.io/v1/resourceslices" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["items"]))')
	w1=$(curl -sf "$url/standin/log" | python3 -c 'import json,sys; print(sum(1 for w in json.load(sys.stdin) if w["status"] < 300 and "slices" in w["path"]))')
	# Each slice of the pool before or after the fault is written at most
	# once (a withdrawn GPU's slice is deleted).
	[ "$n0" -gt "$n" ] && n=$n0
	[ $((w1 - w0)) -le "$n" ] || fail "$ver $gates: a GPU fault cost $((w1 - w0)) writes for $n slices"
	[ "$(curl -sf "$url/standin/violations")" = "[]" ] || fail "$ver $gates: refused: $(curl -sf "$url/standin/violations")"
	curl -sf "$url/standin/writes" >"$d/writes.json" || fail "$ver $gates: no write log"
	kill -TERM "$kp"
	wait "$kp" || fail "$ver $gates: gs-krs-run failed"
	kill "$sp"
	echo "$ver ${gates}: layout $(jq_py "$(cat "$d/krs.out")" 'd["layout"]'), claim on $dev, fault: $((w1 - w0)) writes for $n slices"
	# The next cell's node starts healthy.
	daemon_stop
	daemon_up
}

while read -r ver gates; do
	[ -n "$ver" ] && cell "$ver" "$gates"
done <<<"$CELLS"

# Every slice the publisher wrote in any cell, against the validators
# generated from the upstream OpenAPI (kubernetes-models, via npm; the
# check alone is skipped, with its reason, where npm cannot fetch it).
python3 -c '
import glob, json, sys
objs = [o for f in glob.glob(sys.argv[1] + "/cell-*/writes.json") for o in json.load(open(f))
        if o.get("kind") == "ResourceSlice"]
json.dump(objs, open(sys.argv[1] + "/all_writes.json", "w"))
print("%d slice writes" % len(objs))' "$WORK"
rc=0
out=$("$SRC/tests/integration/k8s_api/km_check.sh" "$WORK/all_writes.json") || rc=$?
case $rc in
0) echo "upstream OpenAPI (kubernetes-models): every slice written is valid" ;;
77) echo "upstream OpenAPI check skipped: $out" ;;
*) fail "slices invalid against the upstream OpenAPI: $out" ;;
esac
echo ok
