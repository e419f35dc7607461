# lib.sh - shared by the DRA driver's end-to-end tests: `. lib.sh BUILD_DIR`.
# On top of the daemon tests' lib.sh (a simulated node, gpusliced on this
# test's dirs, cleanup): the ResourceClaim stand-in (claims_standin.py)
# with a kubeconfig pointing at it, the driver's state and CDI dirs, and
# helpers to write claims and call the driver through gs-kdra-probe.
. "$(dirname "${BASH_SOURCE[0]}")/../daemon/lib.sh" "$1"

PROBE=$B/tests/gs-kdra-probe
SHIM=$B/lib/libgpuslice.so
KSTATE=$WORK/kstate
CDI=$WORK/cdi
CLAIMS=$WORK/claims
NODE=node-a
SCHEMA_DIR=${GS_CDI_SCHEMA_DIR:-/work/shared/reference/kubernetes}
[ -x "$PROBE" ] || { echo "SKIP: no gs-kdra-probe in this build"; exit 77; }
mkdir -p "$CLAIMS"

# standin_up: starts the claims stand-in and writes $WORK/kubeconfig.
standin_up() {
	# Started from a subshell so that it is not a job of this shell: the
	# cleanup's kill -9 then makes no "Killed" noise.
	(python3 "$SRC/tests/integration/k8s_driver/claims_standin.py" "$CLAIMS" \
		"$WORK/port" >>"$WORK/standin.log" 2>&1 &
	 echo $! >"$WORK/standin.pid")
	PIDS+=($(cat "$WORK/standin.pid"))
	wait_until 10 test -s "$WORK/port" || fail "the claims stand-in did not start"
	cat >"$WORK/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: http://127.0.0.1:$(cat "$WORK/port")
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
}

# node_up [GPUS [DAEMON_ARGS...]]: a simulated node with GPUS,
# gpusliced (given DAEMON_ARGS), the stand-in.
node_up() {
	local gpus=${1:-2xH100-SXM5-80GB}
	[ $# -gt 0 ] && shift
	"$G" sim init --gpus "$gpus" --dir "$GPUSLICE_SIM_DIR" >/dev/null
	eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
	daemon_up "$@"
	standin_up
}

# claim NAME UID DEVICE CONSUMED_JSON [CONFIG_JSON] [DRIVER] [POOL]:
# writes an allocated ResourceClaim ns/NAME, reserved for pod-1 (its UID
# is $POD_UID, default "p1").
claim() {
	mkdir -p "$CLAIMS/ns"
	python3 - "$CLAIMS/ns/$1.json" "$1" "$2" "$3" "$4" "${5:-[]}" \
		"${6:-gpuslice.io}" "${7:-$NODE}" "${POD_UID:-p1}" <<'PY'
import json, sys
path, name, uid, dev, cc, cfg, drv, pool, pod_uid = sys.argv[1:]
c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"namespace": "ns", "name": name, "uid": uid},
     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
         "deviceClassName": "gpuslice.io"}}]}},
     "status": {"allocation": {
         "devices": {"results": [{"request": "gpu", "driver": drv,
                                  "pool": pool, "device": dev,
                                  "shareID": "9a7e6b1c-0000-4000-8000-" + uid[-12:],
                                  "consumedCapacity": json.loads(cc)}],
                     "config": json.loads(cfg)},
         "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
             {"key": "metadata.name", "operator": "In", "values": [pool]}]}]}},
         "reservedFor": [{"resource": "pods", "name": "pod-1", "uid": pod_uid}]}}
json.dump(c, open(path, "w"))
PY
}

# kdra CMD...: runs the driver on this node's dirs; JSON lines on stdout.
kdra() {
	"$PROBE" --node "$NODE" --state "$KSTATE" --cdi "$CDI" --socket "$SOCK" \
		--kubeconfig "$WORK/kubeconfig" --shim "$SHIM" \
		--cdi-hook "$B/bin/gpuslice-cdi-hook" "$@" \
		2>>"$WORK/probe.log"
}

# sim_busy PID: seconds of GPU time the sim has charged process PID.
sim_busy() {
	"$G" sim status --json --dir "$GPUSLICE_SIM_DIR" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(p["busy_s"] for g in d["gpus"] for p in g["processes"] if p["pid"] == int(sys.argv[1])))' "$1"
}

# slices: the daemon's slice names, one a line.
slices() {
	api GET /v1/slices | python3 -c '
import json, sys
for s in json.load(sys.stdin)["slices"]:
    print(s["name"])'
}

# cdi_env SLICE: the CDI spec's env for SLICE, as NAME=VALUE lines.
cdi_env() {
	python3 - "$CDI/gpuslice.io-slice_$1.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for e in s["devices"][0]["containerEdits"]["env"]:
    print(e)
PY
}

# cdi_valid FILE: checks FILE against the CDI JSON schema (exit 77 without
# python3-jsonschema).
cdi_valid() {
	python3 - "$1" "$SCHEMA_DIR" <<'PY'
import json, os, sys, warnings
warnings.simplefilter("ignore", DeprecationWarning)
try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed"); sys.exit(77)
spec = json.load(open(sys.argv[1]))
d = sys.argv[2]
schema = json.load(open(os.path.join(d, "cdi-schema.json")))
defs = json.load(open(os.path.join(d, "defs.json")))
resolver = jsonschema.RefResolver(base_uri="file://" + d + "/", referrer=schema,
                                  store={"defs.json": defs,
                                         "file://" + d + "/defs.json": defs})
jsonschema.Draft7Validator(schema, resolver=resolver).validate(spec)
PY
}
