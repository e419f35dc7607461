#!/usr/bin/env bash
# A pod that joins a shared claim after its first prepare is held to the
# claim like the first one (issue #28: every pod of a shared claim is
# attributed to it by the watchdog, whenever it joins). Each prepare
# rewrites the claim's consumers file (<run dir>/k8s-pods/<slice>) from
# status.reservedFor, with no cap of a label's value:
#   - the claim is prepared for pod A; then eight more pods join it
#     (status.reservedFor grows to nine, past the six UIDs that fit in the
#     k8s_pod_uid label) and pod B, the last of them, prepares it;
#   - B's process that unsets LD_PRELOAD is left alone within the claim
#     and killed when it goes over the claim's 8 GiB;
#   - a process of pod C, a consumer of another claim but not of this
#     one, on this claim's GPU is still stopped;
#   - a consumers directory others may write is refused by the plugin and
#     ignored by the watchdog;
#   - unprepare removes the consumers file.
. "$(dirname "$0")/podlib.sh" "$1"

POD_A=4f1c2a9e-0000-4000-8000-0000000000a1
POD_B=4f1c2a9e-0000-4000-8000-0000000000b9
POD_C=4f1c2a9e-0000-4000-8000-0000000000c1
pod_cgroup "$POD_B" b
CG_B=$CG
pod_cgroup "$POD_C" c
CG_C=$CG

cat >"$WORK/kill.yaml" <<'YAML'
watchdog:
  action: kill
  interval_ms: 500
YAML
node_up 2xH100-SXM5-80GB --config "$WORK/kill.yaml"
UID1=4f1c2a9e-0000-4000-8000-000000000001
UID2=4f1c2a9e-0000-4000-8000-000000000002
POD_UID=$POD_A claim c1 "$UID1" gpu-1 '{"memory": "8Gi", "compute": "25"}'
jcheck "$(kdra prepare ns c1 "$UID1")" 'd["error"] is None'
POD_UID=$POD_C claim c2 "$UID2" gpu-0 '{"memory": "8Gi", "compute": "25"}'
jcheck "$(kdra prepare ns c2 "$UID2")" 'd["error"] is None'
s=$(api GET "/v1/slices/k8s-$UID1")
GPU1=$(jq_py "$s" 'd["gpu"]["uuid"]')
RUN=$(jq_py "$s" 'd["env"]["GPUSLICE_RUN_DIR"]')
PODS_FILE=$RUN/k8s-pods/k8s-$UID1
[ -f "$PODS_FILE" ] || fail "no consumers file $PODS_FILE after the first prepare"
[ "$(tail -n +2 "$PODS_FILE")" = "$POD_A" ] ||
	fail "the consumers file does not name pod A alone: $(cat "$PODS_FILE")"

# Eight pods join the claim; B, the ninth consumer, prepares it.
python3 - "$CLAIMS/ns/c1.json" "$POD_B" <<'PY'
import json, sys
path, last = sys.argv[1:]
c = json.load(open(path))
rf = c["status"]["reservedFor"]
for i in range(7):
    rf.append({"resource": "pods", "name": "pod-%d" % (i + 2),
               "uid": "4f1c2a9e-0000-4000-8000-0000000000%02d" % (0xd0 + i)})
rf.append({"resource": "pods", "name": "pod-b", "uid": last})
json.dump(c, open(path, "w"))
PY
jcheck "$(kdra prepare ns c1 "$UID1")" 'd["error"] is None'
[ "$(tail -n +2 "$PODS_FILE" | wc -l)" -eq 9 ] && grep -qx "$POD_B" "$PODS_FILE" ||
	fail "the consumers file does not name the nine pods: $(cat "$PODS_FILE")"
jcheck "$(api GET "/v1/slices/k8s-$UID1")" 'd["labels"]["k8s_pod_uid"] == "'"$POD_A"'"'

# B's process within the claim (1 GiB of 8): left alone.
tenant within "$CG_B" "$GPU1" $((1 << 30))
WITHIN=$TENANT
sleep 1.5 # three ticks
kill -0 "$WITHIN" 2>/dev/null || fail "pod B's process within the claim was killed"
kill -9 "$WITHIN"

# B's process over the claim: 12 GiB against 8 GiB. Before, B was in no
# list: its root process on the GPU was only flagged as in no slice.
tenant over "$CG_B" "$GPU1" $((12 << 30))
OVER=$TENANT
wait_until 5 eval '! kill -0 '"$OVER"' 2>/dev/null' ||
	fail "pod B's process over the claim's memory was not killed: $(api GET "/v1/events?slice=k8s-$UID1")"
t_alloc=$(awk '/^allocated /{print $2; exit}' "$WORK/over.out")
ev=$(api GET "/v1/events?slice=k8s-$UID1")
python3 - "$ev" "$t_alloc" "$OVER" <<'PY' || fail "no memory-limit kill of B's process on the claim's slice: $ev"
import json, sys
d = json.loads(sys.argv[1]); t = float(sys.argv[2])
ts = sorted(e["ts_ns"] / 1e9 for e in d["events"]
            if e["type"] == "watchdog.kill" and "memory limit" in e["message"]
            and sys.argv[3] in e["message"])
assert ts, "no watchdog.kill event for the memory limit naming the process"
print("pod B, joined later, over the claim: killed %.2f s after the allocation" % (ts[0] - t))
PY

# C is a consumer of c2 (GPU 0), not of c1: its process on c1's GPU is
# outside its claims, and stopped.
tenant outside "$CG_C" "$GPU1" $((256 << 20))
OUTSIDE=$TENANT
wait_until 5 eval '! kill -0 '"$OUTSIDE"' 2>/dev/null' ||
	fail "pod C's process on a GPU none of its claims holds was not killed"
jcheck "$(api GET "/v1/events?slice=k8s-$UID2")" 'any(e["type"] == "watchdog.kill" and "process '"$OUTSIDE"' " in e["message"] and "no claim of its pod" in e["message"] for e in d["events"])'

# A consumers directory others may write is believed by neither side: the
# plugin refuses to write in it (the prepare fails with the reason), the
# watchdog ignores it and says so.
chmod 0777 "$RUN/k8s-pods"
out=$(kdra prepare ns c1 "$UID1")
jcheck "$out" 'd["error"] is not None and "closed to others'"'"' writes" in d["error"]'
wait_until 5 grep -q "k8s-pods is not a directory of root's that only root may write" "$WORK/daemon.log" ||
	fail "the watchdog did not refuse a consumers directory others may write"
chmod 0755 "$RUN/k8s-pods"

out=$(kdra unprepare ns c1 "$UID1")
jcheck "$out" 'd["error"] is None'
[ ! -e "$PODS_FILE" ] || fail "unprepare left the consumers file $PODS_FILE"
echo "ok: a pod that joins a shared claim later is held to it"
