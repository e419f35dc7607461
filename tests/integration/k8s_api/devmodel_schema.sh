#!/usr/bin/env bash
# What the device model writes validates against the resource.k8s.io/v1
# schema (validate.py), for every catalog model, a GPU without MIG, an
# 8-GPU node and an unhealthy GPU; the schema itself refuses broken
# objects, and the DeviceClass / ResourceClaim fixtures validate.
. "$(dirname "$0")/lib.sh" "$1"

D=$B/tests/gs-kdev-dump
[ -x "$D" ] || { echo "SKIP: gs-kdev-dump not built"; exit 77; }
V="python3 $HERE/validate.py"

python3 - "$WORK" <<'PY'
import json, sys
w = sys.argv[1]
models = ["A100-SXM4-40GB", "A100-SXM4-80GB", "A30-24GB", "H100-SXM5-80GB", "H100-NVL-94GB",
          "H200-141GB", "GH200-96GB", "GH200-144GB", "B200-180GB", "GB200-186GB"]
def gpu(i, model, capable=True, mem=85520809984):
    return {"index": i, "uuid": "GPU-%08d-1111-2222-3333-444444444444" % i, "name": "NVIDIA " + model,
            "model": model, "memory_bytes": mem, "mig": {"capable": capable, "enabled": False, "instances": []}}
json.dump({"driver": "580.65.06", "gpus": [gpu(i, m) for i, m in enumerate(models)]}, open(w + "/all.json", "w"))
json.dump({"driver": "580.65.06", "gpus": [gpu(i, "H100-SXM5-80GB") for i in range(8)]}, open(w + "/h100x8.json", "w"))
json.dump({"driver": "", "gpus": [gpu(0, "L4", False, 24152899584)]}, open(w + "/nomig.json", "w"))
json.dump({"GPU-00000001-1111-2222-3333-444444444444": {"healthy": False, "reason": "Xid 79 (fell off the bus)"}},
          open(w + "/health.json", "w"))
PY
for f in all h100x8 nomig; do
	"$D" node-1.example "$WORK/$f.json" >"$WORK/$f.out" || fail "dump $f"
	$V "$WORK/$f.out" || fail "$f: slices do not validate"
done
"$D" node-1 "$WORK/h100x8.json" "$WORK/health.json" >"$WORK/taint.out" || fail "dump taint"
$V "$WORK/taint.out" || fail "tainted slices do not validate"
grep -q '"gpuslice.io/unhealthy"' "$WORK/taint.out" || fail "no taint"

# The schema is not a rubber stamp: each broken copy is refused.
python3 - "$WORK/taint.out" "$HERE" <<'PY'
import copy, json, sys
sys.path.insert(0, sys.argv[2])
import validate
good = json.load(open(sys.argv[1]))
assert validate.problems(good) == [], validate.problems(good)
def broken(name, f):
    s = copy.deepcopy(good)
    f(s)
    if not validate.problems(s):
        sys.exit("schema accepted: " + name)
broken("device name with capitals", lambda s: s[0]["spec"]["devices"][0].__setitem__("name", "GPU-0"))
broken("65 devices with counters", lambda s: s[0]["spec"]["devices"].extend(
    [dict(s[0]["spec"]["devices"][1], name="x%d" % i) for i in range(64)]))
broken("devices and sharedCounters together", lambda s: s[0]["spec"].__setitem__("sharedCounters", s[-1]["spec"]["sharedCounters"]))
broken("no pool", lambda s: s[0]["spec"].pop("pool"))
broken("nodeName and allNodes", lambda s: s[0]["spec"].__setitem__("allNodes", True))
broken("bad taint effect", lambda s: [d.__setitem__("taints", [{"key": "a", "effect": "Sometimes"}]) for d in s[0]["spec"]["devices"][:1]])
broken("string attribute over 64", lambda s: s[0]["spec"]["devices"][0]["attributes"].__setitem__("model", {"string": "x" * 65}))
broken("attribute with two values", lambda s: s[0]["spec"]["devices"][0]["attributes"].__setitem__("model", {"string": "a", "int": 1}))
broken("bad quantity", lambda s: s[0]["spec"]["devices"][0]["capacity"]["memory"].__setitem__("value", "80 GiB"))
broken("unknown counter set", lambda s: s[0]["spec"]["devices"][1]["consumesCounters"][0].__setitem__("counterSet", "gpu-99"))
broken("wrong slice count", lambda s: s[0]["spec"]["pool"].__setitem__("resourceSliceCount", 1))
broken("duplicate device", lambda s: s[1]["spec"]["devices"].append(s[0]["spec"]["devices"][0]))
broken("validValues and validRange", lambda s: s[0]["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"].__setitem__("validValues", ["1"]))
broken("driver name too long", lambda s: s[0]["spec"].__setitem__("driver", "a" * 64))
broken("9 counter sets", lambda s: s[-1]["spec"]["sharedCounters"].extend(
    [dict(s[-1]["spec"]["sharedCounters"][0], name="c%d" % i) for i in range(1)]))
print("schema refuses every broken copy")
PY
$V "$HERE/fixtures.json" || fail "fixtures do not validate"
echo "ok: devmodel schema"
