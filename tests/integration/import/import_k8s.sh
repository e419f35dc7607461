#!/usr/bin/env bash
# `gpuslice import ... --k8s`: NVIDIA device-plugin sharing configs and DRA
# GpuConfigs/claims become gpuslice.io DRA objects. Every object must pass
# the resource.k8s.io/v1 schema of tests/integration/k8s_api (a claim
# template is checked as the claim it stamps out), carry a SliceConfig the
# driver accepts, and keep the translation's fraction (checked on a
# 4-replica MPS config: 25 % compute, a quarter of the GPU's memory).
set -euo pipefail
build=${1:?usage: import_k8s.sh BUILD_DIR}
src=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
gs="$build/bin/gpuslice"
data="$src/tests/data/import"
py=python3
"$py" -c 'import jsonschema' 2>/dev/null || py=/usr/bin/python3
if ! "$py" -c 'import jsonschema' 2>/dev/null; then
	echo "SKIP: python3-jsonschema is not installed" >&2
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=0
for fg in dp-mps-a100.yaml:A100-40GB dp-mps-without-root.yaml:H100; do
	f=${fg%%:*}
	"$gs" import device-plugin "$data/$f" --gpu "${fg#*:}" --k8s >"$tmp/dp-$f.json"
	n=$((n + 1))
done
for f in dra-gpuconfig-mps.yaml dra-gpuconfig-timeslicing.yaml; do
	"$gs" import dra "$data/$f" --k8s >"$tmp/dra-$f.json"
	n=$((n + 1))
done

# What a gpuslice.io claim cannot carry is refused with FILE:LINE and the
# field (the kubelet plugin prepares one device per claim, and a MIG
# device for one claim only), never emitted with another meaning.
refused() { # refused FORMAT FILE PATTERN [ARGS...]
	local fmt=$1 f=$2 pattern=$3 rc=0
	shift 3
	"$gs" import "$fmt" "$data/$f" --k8s "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" != 2 ] || [ -s "$tmp/out" ] || ! grep -Eq -- "$pattern" "$tmp/err"; then
		echo "FAIL: $f: exit $rc, want 2 and /$pattern/: $(cat "$tmp/err")" >&2
		exit 1
	fi
}
refused device-plugin device-plugin-example.yaml \
	"device-plugin-example.yaml:[0-9]+: sharing.timeSlicing.resources\[[0-9]\].replicas: .* MIG device" --gpu H100
refused device-plugin dp-timeslicing-mig.yaml \
	"dp-timeslicing-mig.yaml:[0-9]+: sharing.timeSlicing.resources\[0\].replicas" --gpu H100
refused dra dra-claim-parentuuid.yaml \
	"dra-claim-parentuuid.yaml:[0-9]+: spec.devices.requests\[1\]: a gpuslice.io claim allocates one device"
refused dra dra-template-v1.yaml \
	"dra-template-v1.yaml:[0-9]+: spec.spec.devices.requests\[0\].count: 2 devices"

# --json and --k8s together are a usage error.
rc=0
"$gs" import dra "$data/dra-gpuconfig-mps.yaml" --k8s --json >/dev/null 2>&1 || rc=$?
if [ "$rc" != 2 ]; then
	echo "FAIL: --json --k8s exited $rc, want 2" >&2
	exit 1
fi

PYTHONPATH="$src/tests/integration/k8s_api" "$py" - "$tmp" "$n" <<'PYEOF'
import glob, json, os, sys
import validate

tmp, want = sys.argv[1], int(sys.argv[2])
KNOWN = {"apiVersion", "kind", "priority", "weight", "computeMode",
         "isolation", "mode"}
VALUES = {"priority": {"high", "normal", "low"},
          "mode": {"timeslice", "mps"},
          "computeMode": {"strict", "share"},
          "isolation": {"none", "memory"}}
fails = []
files = sorted(glob.glob(os.path.join(tmp, "*.json")))
if len(files) != want:
    fails.append("%d outputs, want %d" % (len(files), want))
for f in files:
    doc = json.load(open(f))
    name = os.path.basename(f)
    if doc.get("kind") != "List" or not doc.get("items"):
        fails.append("%s: not a non-empty v1 List" % name)
        continue
    objs = []
    for o in doc["items"]:
        if o["kind"] == "ResourceClaimTemplate":
            spec = o["spec"]["spec"]
            objs.append({"apiVersion": o["apiVersion"], "kind": "ResourceClaim",
                         "metadata": {"name": o["metadata"]["name"],
                                      "namespace": "default"},
                         "spec": spec})
            configs = spec["devices"].get("config", [])
        else:
            objs.append(o)
            configs = o["spec"].get("config", [])
        for c in configs:
            op = c["opaque"]
            if op["driver"] != "gpuslice.io":
                fails.append("%s: config for driver %s" % (name, op["driver"]))
            p = op["parameters"]
            if p.get("apiVersion") != "gpuslice.io/v1alpha1" or p.get("kind") != "SliceConfig":
                fails.append("%s: parameters are not a SliceConfig: %s" % (name, p))
            for k, v in p.items():
                if k not in KNOWN:
                    fails.append("%s: SliceConfig field %s unknown to the driver" % (name, k))
                if k in VALUES and v not in VALUES[k]:
                    fails.append("%s: SliceConfig %s=%s not accepted" % (name, k, v))
    fails += ["%s: %s" % (name, m) for m in validate.problems(objs)]

# The MPS config with 4 replicas on an A100-40GB: 25 % and a quarter of
# its memory each.
mps = json.load(open(os.path.join(tmp, "dp-dp-mps-a100.yaml.json")))
tmpl = [o for o in mps["items"] if o["kind"] == "ResourceClaimTemplate"][0]
req = tmpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]
caps = req.get("capacity", {}).get("requests", {})
if (req["deviceClassName"] != "gpu.gpuslice.io" or caps.get("compute") != "25"
        or not caps.get("memory", "").endswith("Mi")
        or abs(int(caps["memory"][:-2]) - 40 * 1024 / 4) > 0.02 * 40 * 1024 / 4):
    fails.append("dp-mps-a100: want gpu.gpuslice.io at compute 25, got %s" % req)
params = tmpl["spec"]["spec"]["devices"]["config"][0]["opaque"]["parameters"]
if params.get("mode") != "mps":
    fails.append("dp-mps-a100: SliceConfig mode %s, want mps" % params.get("mode"))
# Replicas cannot ride on an extended resource (it maps to whole devices):
# no DeviceClass maps one for a shared resource.
dcs = [o for o in mps["items"] if o["kind"] == "DeviceClass"
       and o["spec"].get("extendedResourceName")]
if dcs:
    fails.append("dp-mps-a100: a DeviceClass maps the extended resource of a shared one: %s" % dcs)

for m in fails:
    print("FAIL:", m)
sys.exit(1 if fails else 0)
PYEOF
