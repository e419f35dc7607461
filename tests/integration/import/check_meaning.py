#!/usr/bin/env python3
"""check_meaning.py DIR - the --k8s outputs import_meaning.sh left in DIR
mean what their inputs meant (see import_meaning.sh). Exit 1 with one
FAIL line per problem."""
import json
import os
import sys

# NVML's memory of the H100 80GB, as the catalog (data/mig-profiles.json)
# holds it: the GPU the device-plugin configs are imported for.
H100_MIB = 81559
GPU_CAPACITY = {"compute": 100, "memory": H100_MIB}

d = sys.argv[1]
fails = []


def load(name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def mib(q):
    for suf, mult in (("Gi", 1024), ("Mi", 1)):
        if q.endswith(suf):
            return int(q[:-2]) * mult
    return int(q) // (1 << 20)


def pods_per_gpu(req):
    """How many pods of this request the scheduler fits on one GPU that
    publishes compute 100 and the H100's memory as consumable capacity
    (a request without capacity takes the whole GPU)."""
    caps = req.get("capacity", {}).get("requests", {})
    if not caps:
        return 1
    fit = []
    if "compute" in caps:
        fit.append(GPU_CAPACITY["compute"] // int(caps["compute"]))
    else:
        fit.append(1)
    if "memory" in caps:
        fit.append(GPU_CAPACITY["memory"] // mib(caps["memory"]))
    else:
        fit.append(1)
    return min(fit)


def requests(obj):
    spec = obj["spec"]["spec"] if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]
    return spec["devices"]["requests"], spec["devices"].get("config", [])


# 1. Device plugin: replicas per GPU == pods per GPU, sharing kept.
for f in ("dp-timeslicing-10", "dp-timeslicing-renamed", "dp-mps-no-root",
          "dp-configmap", "dp-helm-values", "dp-operator-values",
          "dp-two-configs"):
    plugin = load(f + ".json")
    ours = [o for o in load(f + ".k8s.json")["items"]
            if o["kind"] == "ResourceClaimTemplate"]
    want = [(c.get("name", ""), c["strategy"], r["replicas"])
            for c in plugin["configs"] for r in c["resources"]]
    if len(ours) != len(want):
        fails.append("%s: %d templates for %d shared resources" % (f, len(ours), len(want)))
        continue
    for (src, strategy, replicas), t in zip(want, ours):
        reqs, cfgs = requests(t)
        got = pods_per_gpu(reqs[0]["exactly"])
        if got != replicas:
            fails.append("%s %s: %d replicas per GPU became %d pods per GPU (%s)"
                         % (f, src, replicas, got, reqs[0]["exactly"]))
        params = cfgs[0]["opaque"]["parameters"]
        mode = "mps" if strategy == "mps" else "timeslice"
        if params.get("mode") != mode:
            fails.append("%s %s: SliceConfig mode %s, want %s" % (f, src, params.get("mode"), mode))
        if strategy == "time-slicing" and params.get("computeMode") != "share":
            fails.append("%s %s: time-slicing replicas had no compute limit; want computeMode share, got %s"
                         % (f, src, params))
        if src and not t["metadata"]["name"].startswith(src):
            fails.append("%s: template %s does not name its config %s" % (f, t["metadata"]["name"], src))
for f, n in (("dp-configmap", 2), ("dp-helm-values", 2), ("dp-operator-values", 1)):
    names = [c.get("name") for c in load(f + ".json")["configs"]]
    if len(names) != n or None in names:
        fails.append("%s: configs %s, want %d named ones" % (f, names, n))

# 2. A shared ResourceClaim stays one claim, with its name and namespace.
items = load("dra-shared-claim.k8s.json")["items"]
if [(o["kind"], o["metadata"].get("name"), o["metadata"].get("namespace")) for o in items] != \
        [("ResourceClaim", "one-gpu", "team-a")]:
    fails.append("dra-shared-claim: want one ResourceClaim team-a/one-gpu, got %s"
                 % [(o["kind"], o["metadata"]) for o in items])

# 3. Every template of a file, each with its name; MIG stays MIG.
items = load("dra-two-templates.k8s.json")["items"]
got = [(o["kind"], o["metadata"].get("name"), o["metadata"].get("namespace")) for o in items]
if got != [("ResourceClaimTemplate", "full", "ml"), ("ResourceClaimTemplate", "small", "ml")]:
    fails.append("dra-two-templates: got %s" % got)
else:
    ex = requests(items[1])[0][0]["exactly"]
    if ex["deviceClassName"] != "mig.gpuslice.io" or \
            "2g.20gb" not in ex["selectors"][0]["cel"]["expression"]:
        fails.append("dra-two-templates: the 2g.20gb request became %s" % ex)
    if requests(items[0])[0][0]["exactly"]["deviceClassName"] != "gpu.gpuslice.io":
        fails.append("dra-two-templates: the full GPU is not gpu.gpuslice.io")
ex = requests(load("dra-mig-any.k8s.json")["items"][0])[0][0]["exactly"]
if ex["deviceClassName"] != "mig.gpuslice.io":
    fails.append("dra-mig-any: a MIG request of any profile became %s" % ex)

# 4. Selectors on attributes both drivers publish, kept for gpuslice.io.
ex = requests(load("dra-cel-common.k8s.json")["items"][0])[0][0]["exactly"]
exprs = [x["cel"]["expression"] for x in ex.get("selectors", [])]
if len(exprs) != 2 or any("gpu.nvidia.com" in e for e in exprs) or \
        'device.attributes["gpuslice.io"].productName == \'NVIDIA H100 80GB HBM3\'' not in exprs or \
        not exprs[1].startswith('device.driver == "gpuslice.io" && device.attributes["gpuslice.io"].cudaComputeCapability'):
    fails.append("dra-cel-common: selectors became %s" % exprs)

# 5. Per-client MPS limits with one client: the claim's capacity.
t = load("dra-mps-one-client.k8s.json")["items"][0]
reqs, cfgs = requests(t)
caps = reqs[0]["exactly"].get("capacity", {}).get("requests", {})
if caps != {"compute": "50", "memory": "10Gi"} or cfgs[0]["opaque"]["parameters"].get("mode") != "mps":
    fails.append("dra-mps-one-client: want compute 50, memory 10Gi, mode mps; got %s %s" % (caps, cfgs))

# 6. No two objects of one output share a kind, namespace and name (kubectl
# apply would keep only the last).
for name in sorted(os.listdir(d)):
    if name.endswith(".k8s.json"):
        keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
                for o in load(name)["items"]]
        if len(set(keys)) != len(keys):
            fails.append("%s: objects share a name: %s" % (name, keys))

# 7. The schema, when python3-jsonschema is there.
try:
    import validate
except ImportError:
    validate = None
if validate is not None:
    for name in sorted(os.listdir(d)):
        if not name.endswith(".k8s.json"):
            continue
        objs = []
        for o in load(name)["items"]:
            if o["kind"] == "ResourceClaimTemplate":
                o = {"apiVersion": o["apiVersion"], "kind": "ResourceClaim",
                     "metadata": {"name": o["metadata"]["name"],
                                  "namespace": o["metadata"].get("namespace", "default")},
                     "spec": o["spec"]["spec"]}
            objs.append(o)
        fails += ["%s: %s" % (name, m) for m in validate.problems(objs, pool=False)]

for m in fails:
    print("FAIL:", m)
sys.exit(1 if fails else 0)
