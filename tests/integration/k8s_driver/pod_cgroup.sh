#!/usr/bin/env bash
# A pod cannot slip out of its claim (issue #28 item 5): the watchdog
# places GPU processes by the pod their cgroup names (/proc/PID/cgroup,
# matched against the claim slice's k8s_pod_uid label), not only by the
# shim's registration. The pod's cgroup is a real one, laid out as the
# kubelet's systemd driver and containerd make it, created for the test
# (root and a writable cgroup v2 hierarchy are needed, else SKIP).
#   - a process of the pod that never loads the shim (the sim's libcuda in
#     its own link-map namespace: what unsetting LD_PRELOAD gets) and goes
#     over its claim's 8 GiB is killed within 2 s;
#   - a process of the pod that runs past its claim's 25 % compute share
#     without the shim is killed;
#   - one of the pod's processes on a GPU none of its claims holds is
#     killed;
#   - the pod's process within its claim, and a process of a pod no claim
#     lists, are left alone.
. "$(dirname "$0")/lib.sh" "$1"

BYPASS=$B/tests/gs-daemon-bypass
LIBCUDA=$B/sim/libcuda.so.1
[ -x "$BYPASS" ] && [ -e "$LIBCUDA" ] || { echo "SKIP: no sim libcuda or gs-daemon-bypass"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: making a pod's cgroup needs root"; exit 77; }
CGROOT=""
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	[ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ] && CGROOT=$d && break
done
[ -n "$CGROOT" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

POD=4f1c2a9e-0000-4000-8000-0000000000a1   # the claim's pod
OTHER=4f1c2a9e-0000-4000-8000-0000000000b2 # a pod no claim lists
# The kubelet's layout under a prefix of this test's own (the parser takes
# any prefix, as kind's kubelet.slice), so that a node's real kubepods
# hierarchy is never touched.
TOP=$CGROOT/gpuslice-test-$$.slice
KP=$TOP/kubepods.slice/kubepods-besteffort.slice
mkdir -p "$KP" || { echo "SKIP: cannot make a cgroup under $CGROOT"; exit 77; }
# Children first; a killed process leaves its cgroup a moment later.
CLEANUP_CMDS+=("for i in \$(seq 30); do find '$TOP' -depth -type d -exec rmdir {} + 2>/dev/null; [ -d '$TOP' ] || break; sleep 0.1; done")
# pod_cgroup UID CONTAINER_DIGIT: makes the container's cgroup in $CG.
pod_cgroup() {
	CG=$KP/kubepods-besteffort-pod${1//-/_}.slice/cri-containerd-$(printf "$2%.0s" $(seq 64)).scope
	mkdir -p "$CG" || fail "cannot make $CG"
}
pod_cgroup "$POD" a
CG_POD=$CG
pod_cgroup "$OTHER" b
CG_OTHER=$CG

cat >"$WORK/kill.yaml" <<'YAML'
watchdog:
  action: kill
  interval_ms: 500
YAML
node_up 2xH100-SXM5-80GB --config "$WORK/kill.yaml"
UID1=4f1c2a9e-0000-4000-8000-000000000001
POD_UID=$POD claim c1 "$UID1" gpu-1 '{"memory": "8Gi", "compute": "25"}'
out=$(kdra prepare ns c1 "$UID1")
jcheck "$out" 'd["error"] is None'
s=$(api GET "/v1/slices/k8s-$UID1")
jcheck "$s" 'd["labels"]["k8s_pod_uid"] == "'"$POD"'" and d["gpu"]["index"] == 1'
GPU1=$(jq_py "$s" 'd["gpu"]["uuid"]')
GPU0=$(api GET /v1/gpus | python3 -c '
import json, sys
print([g["uuid"] for g in json.load(sys.stdin)["gpus"] if g["index"] == 0][0])')

# tenant NAME CGROUP GPU BYTES: the bypassing tenant, moved into CGROUP
# before it touches the GPU, with no LD_PRELOAD; waits on a fifo.
tenant() {
	mkfifo "$WORK/$1.go"
	env -u LD_PRELOAD CUDA_VISIBLE_DEVICES="$3" sh -c \
		'echo $$ >"$1/cgroup.procs" && exec "$2" "$3" "$4"' sh \
		"$2" "$BYPASS" "$LIBCUDA" "$4" <"$WORK/$1.go" >"$WORK/$1.out" 2>&1 &
	PIDS+=($!)
	disown $!
	exec {GOFD}>"$WORK/$1.go"
	wait_until 10 grep -q '^pid ' "$WORK/$1.out" ||
		fail "$1 did not start: $(cat "$WORK/$1.out")"
	TENANT=$(awk '/^pid /{print $2; exit}' "$WORK/$1.out")
	grep -q "pod${POD//-/_}\|pod${OTHER//-/_}" "/proc/$TENANT/cgroup" ||
		fail "$1 is not in its pod's cgroup: $(cat "/proc/$TENANT/cgroup")"
	echo go >&$GOFD
	wait_until 10 grep -q '^allocated' "$WORK/$1.out" ||
		fail "$1 could not allocate: $(cat "$WORK/$1.out")"
}

# The pod's process within its claim (1 GiB of 8), and a process of a pod
# no claim lists (root's, on the other GPU): neither is touched.
tenant within "$CG_POD" "$GPU1" $((1 << 30))
WITHIN=$TENANT
tenant unlisted "$CG_OTHER" "$GPU0" $((1 << 30))
UNLISTED=$TENANT
sleep 1.5 # three ticks
kill -0 "$WITHIN" 2>/dev/null || fail "the pod's process within its claim was killed"
kill -9 "$WITHIN"

# Over the claim's compute: a burn of the pod with no LD_PRELOAD runs at
# ~100 % by NVML against the claim's 25 %: killed (two windows of about a
# second each over the share plus the grace, then the kill).
[ -x "$B/bin/gs-burn" ] || fail "no gs-burn"
env -u LD_PRELOAD CUDA_VISIBLE_DEVICES="$GPU1" sh -c \
	'echo $$ >"$1/cgroup.procs" && exec "$2" --seconds 30 --memory 256MiB' sh \
	"$CG_POD" "$B/bin/gs-burn" >"$WORK/burn.out" 2>&1 &
BURN=$!
PIDS+=($BURN)
t0=$(date +%s%N)
wait_until 8 eval '! kill -0 '"$BURN"' 2>/dev/null' ||
	fail "the pod's burn over its claim's compute share was not killed: $(api GET "/v1/slices/k8s-$UID1")"
ms=$((($(date +%s%N) - t0) / 1000000))
api GET "/v1/events?slice=k8s-$UID1" | grep -q "compute share" ||
	fail "no compute-share event on the claim's slice"
echo "over its claim's compute share: killed after $ms ms"

# Over the claim: 12 GiB against 8 GiB (plus the context allowance).
tenant over "$CG_POD" "$GPU1" $((12 << 30))
OVER=$TENANT
wait_until 5 eval '! kill -0 '"$OVER"' 2>/dev/null' ||
	fail "the pod's process over its claim's memory was not killed"
t_alloc=$(awk '/^allocated /{print $2; exit}' "$WORK/over.out")
ev=$(api GET "/v1/events?slice=k8s-$UID1")
python3 - "$ev" "$t_alloc" <<'PY' || fail "the kill came more than 2 s after the allocation: $ev"
import json, sys
d = json.loads(sys.argv[1]); t = float(sys.argv[2])
ts = sorted(e["ts_ns"] / 1e9 for e in d["events"]
            if e["type"] == "watchdog.kill" and "memory limit" in e["message"])
assert ts, "no watchdog.kill event for the memory limit"
print("over its claim: killed %.2f s after the allocation" % (ts[0] - t))
sys.exit(0 if ts[0] - t <= 2.0 else 1)
PY
jcheck "$(api GET "/v1/slices/k8s-$UID1")" '"limit 8192 MiB" in d["reason"]'

# Outside the claim: the pod's process on GPU 0, where it has no claim.
tenant outside "$CG_POD" "$GPU0" $((256 << 20))
OUTSIDE=$TENANT
wait_until 5 eval '! kill -0 '"$OUTSIDE"' 2>/dev/null' ||
	fail "the pod's process on a GPU outside its claims was not killed"
ev=$(api GET "/v1/events?slice=k8s-$UID1")
jcheck "$ev" 'any(e["type"] == "watchdog.kill" and "process '"$OUTSIDE"' " in e["message"] and "no claim of its pod" in e["message"] for e in d["events"])'
echo "outside its claims: killed"

kill -0 "$UNLISTED" 2>/dev/null || fail "a process of a pod no claim lists was killed"
echo "ok: a pod cannot slip out of its claim"
