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
#     without the shim is killed after one window (reported: about 1 s;
#     asserted: < 4 s);
#   - one of the pod's processes on a GPU none of its claims holds is
#     killed;
#   - the pod's process within its claim, a short burst of the pod's
#     without the shim, and a process of a pod no claim lists, are left
#     alone.
. "$(dirname "$0")/podlib.sh" "$1"

POD=4f1c2a9e-0000-4000-8000-0000000000a1   # the claim's pod
OTHER=4f1c2a9e-0000-4000-8000-0000000000b2 # a pod no claim lists
pod_cgroup "$POD" a
CG_POD=$CG
pod_cgroup "$OTHER" b
CG_OTHER=$CG

# GS_WD_INTERVAL_MS: the watchdog's tick (500 ms here; gpusliced's
# default is 1000), for the bench's figure at either.
cat >"$WORK/kill.yaml" <<YAML
watchdog:
  action: kill
  interval_ms: ${GS_WD_INTERVAL_MS:-500}
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

# The pod's process within its claim (1 GiB of 8), and a process of a pod
# no claim lists (root's, on the other GPU): neither is touched.
tenant within "$CG_POD" "$GPU1" $((1 << 30))
WITHIN=$TENANT
tenant unlisted "$CG_OTHER" "$GPU0" $((1 << 30))
UNLISTED=$TENANT
sleep 1.5 # three ticks
kill -0 "$WITHIN" 2>/dev/null || fail "the pod's process within its claim was killed"

# A short burst of the pod without the shim (0.3 s at 100 %, then it
# exits) is no second over the share: its first NVML sample, which covers
# an unknown part of the tick, is not weighed as the whole tick, so the
# claim's processes (WITHIN among them) are left alone.
[ -x "$B/bin/gs-burn" ] || fail "no gs-burn"
rc=0
env -u LD_PRELOAD CUDA_VISIBLE_DEVICES="$GPU1" sh -c \
	'echo $$ >"$1/cgroup.procs" && exec "$2" --seconds 0.3 --memory 64MiB' sh \
	"$CG_POD" "$B/bin/gs-burn" >"$WORK/burst.out" 2>&1 || rc=$?
[ "$rc" -ne 137 ] ||
	fail "a short burst of the pod's was killed as over-use: $(api GET "/v1/events?slice=k8s-$UID1")"
[ "$rc" -eq 0 ] || fail "the pod's short burst failed ($rc): $(cat "$WORK/burst.out")"
sleep 1.5 # three ticks
kill -0 "$WITHIN" 2>/dev/null ||
	fail "a short burst of the pod's had its claim's processes killed: $(api GET "/v1/events?slice=k8s-$UID1")"
api GET "/v1/events?slice=k8s-$UID1" | grep -q "compute share" &&
	fail "a short burst of the pod's was taken for over-use of the claim's compute share"
kill -9 "$WITHIN"

# Over the claim's compute: a burn of the pod with no LD_PRELOAD runs at
# ~100 % by NVML against the claim's 25 %: killed. Nothing schedules a
# process that skipped the shim, so one window over the share plus the
# grace (about a second) is enough; the delay from its first GPU work (the
# sim's books) to the kill event is reported (issue #28: within 2 s) and
# asserted only loosely (< 4 s: load moves it).
[ -x "$B/bin/gs-burn" ] || fail "no gs-burn"
env -u LD_PRELOAD CUDA_VISIBLE_DEVICES="$GPU1" sh -c \
	'echo $$ >"$1/cgroup.procs" && exec "$2" --seconds 30 --memory 256MiB' sh \
	"$CG_POD" "$B/bin/gs-burn" >"$WORK/burn.out" 2>&1 &
BURN=$!
PIDS+=($BURN)
t_launch=$(date +%s.%N)
python3 - "$BURN" "$G" "$GPUSLICE_SIM_DIR" >"$WORK/t_busy" <<'PY'
import json, subprocess, sys, time
pid, g, simdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def alive():
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
deadline = time.time() + 8
while alive() and time.time() < deadline:
    r = subprocess.run([g, "sim", "status", "--json", "--dir", simdir],
                       capture_output=True, text=True)
    t = time.time()
    try:
        d = json.loads(r.stdout)
    except ValueError:
        continue
    if any(p["pid"] == pid and p["busy_s"] > 0
           for x in d["gpus"] for p in x["processes"]):
        print("%.3f" % t)
        break
    time.sleep(0.02)
PY
t_busy=$(cat "$WORK/t_busy")
[ -n "$t_busy" ] || fail "the pod's burn never ran on the GPU: $(cat "$WORK/burn.out")"
wait_until 8 eval '! kill -0 '"$BURN"' 2>/dev/null' ||
	fail "the pod's burn over its claim's compute share was not killed: $(api GET "/v1/slices/k8s-$UID1")"
ev=$(api GET "/v1/events?slice=k8s-$UID1")
python3 - "$ev" "$t_busy" "$BURN" "$(cat /proc/loadavg)" "${GS_WD_INTERVAL_MS:-500}" "$t_launch" <<'PY' ||
import json, sys
d = json.loads(sys.argv[1]); t = float(sys.argv[2])
ts = sorted(e["ts_ns"] / 1e9 for e in d["events"]
            if e["type"] == "watchdog.kill" and "compute share" in e["message"]
            and sys.argv[3] in e["message"])
assert ts, "no watchdog.kill event for the compute share naming the burn"
dt = ts[0] - t
# The sim's books show work once the first kernel's turn ended: the burn
# may have begun up to one turn earlier (a few ms).
print("bench: k8s pod without the shim over its claim's compute share (25 %%): killed %.2f s after its first GPU work, %.2f s after its launch (watchdog tick %s ms, load %s)"
      % (dt, ts[0] - float(sys.argv[6]), sys.argv[5],
         " ".join(sys.argv[4].split()[:3])))
sys.exit(0 if dt < 4.0 else 1)
PY
	fail "the burn over its claim's compute share was not killed within 4 s of its first GPU work: $ev"

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
