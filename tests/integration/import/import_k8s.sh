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
for fg in device-plugin-example.yaml:H100 dp-mps-a100.yaml:A100-40GB \
	dp-timeslicing-mig.yaml:H100; do
	f=${fg%%:*}
	"$gs" import device-plugin "$data/$f" --gpu "${fg#*:}" --k8s >"$tmp/dp-$f.json"
	n=$((n + 1))
done
for f in dra-claim-parentuuid.yaml dra-gpuconfig-mps.yaml \
	dra-gpuconfig-timeslicing.yaml dra-template-v1.yaml; do
	"$gs" import dra "$data/$f" --k8s >"$tmp/dra-$f.json"
	n=$((n + 1))
done

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
dcs = [o for o in mps["items"] if o["kind"] == "DeviceClass"]
if not dcs or not dcs[0]["spec"].get("extendedResourceName", "").startswith("nvidia.com/"):
    fails.append("dp-mps-a100: no DeviceClass mapping the extended resource")

# A MIG request keeps its profile as a selector on mig.gpuslice.io.
mig = json.load(open(os.path.join(tmp, "dp-dp-timeslicing-mig.yaml.json")))
sels = [o["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        for o in mig["items"] if o["kind"] == "ResourceClaimTemplate"]
if not any(e["deviceClassName"] == "mig.gpuslice.io" and "profile ==" in
           e["selectors"][0]["cel"]["expression"] for e in sels if "selectors" in e):
    fails.append("dp-timeslicing-mig: no MIG request with a profile selector")

# matchAttribute on the parent GPU becomes a constraint on the uuid.
pu = json.load(open(os.path.join(tmp, "dra-dra-claim-parentuuid.yaml.json")))
cons = pu["items"][0]["spec"]["spec"]["devices"].get("constraints", [])
if not cons or cons[0].get("matchAttribute") != "gpuslice.io/uuid":
    fails.append("dra-claim-parentuuid: constraint lost: %s" % cons)

for m in fails:
    print("FAIL:", m)
sys.exit(1 if fails else 0)
PYEOF
