#!/usr/bin/env python3
"""check_slices.py - asserts that the stand-in holds exactly the node's
expected ResourceSlices. Exit 0 when all hold, 1 with the first reason.

usage: check_slices.py URL TOKEN NODE N_GPUS DEVICES TAINTED [MIG_ENABLED]
  DEVICES      expected device count in the pool
  TAINTED      comma-separated GPU indices whose devices must be tainted
               ("" for none); every other device must be untainted
  MIG_ENABLED  comma-separated GPU indices whose gpu-N says migEnabled
"""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate  # noqa: E402


def main():
    url, token, node, ngpu, ndev, tainted = sys.argv[1:7]
    mig = sys.argv[7] if len(sys.argv) > 7 else None
    tainted = {int(x) for x in tainted.split(",") if x}
    req = urllib.request.Request(url + "/apis/resource.k8s.io/v1/resourceslices",
                                 headers={"Authorization": "Bearer " + token})
    items = json.load(urllib.request.urlopen(req, timeout=5))["items"]
    mine = [s for s in items if s["spec"].get("nodeName") == node]
    p = validate.problems(mine)
    if p:
        return "invalid: " + "; ".join(p[:3])
    gens = {s["spec"]["pool"]["generation"] for s in mine}
    if len(gens) != 1:
        return "mixed generations %s" % sorted(gens)
    names = [s["metadata"]["name"] for s in mine]
    want = ["%s-gpuslice.io-%d" % (node, k) for k in range(len(mine))]
    if sorted(names) != sorted(want):
        return "slice names %s, want %s" % (sorted(names), want)
    devs = [d for s in mine for d in s["spec"].get("devices", [])]
    if len(devs) != int(ndev):
        return "%d devices, want %s" % (len(devs), ndev)
    sets = [c for s in mine for c in s["spec"].get("sharedCounters", [])]
    whole = [d for d in devs if "-mig-" not in d["name"]]
    if len(whole) != int(ngpu):
        return "%d whole GPUs, want %s" % (len(whole), ngpu)
    for d in devs:
        idx = int(d["name"].split("-")[1])
        has = bool(d.get("taints"))
        if has != (idx in tainted):
            return "device %s taint=%s, want %s" % (d["name"], has, idx in tainted)
    if mig is not None:
        on = {int(x) for x in mig.split(",") if x}
        for d in whole:
            idx = int(d["name"].split("-")[1])
            if d["attributes"]["migEnabled"]["bool"] != (idx in on):
                return "%s migEnabled=%s" % (d["name"], d["attributes"]["migEnabled"]["bool"])
    if not sets:
        return "no counter sets"
    return None


if __name__ == "__main__":
    try:
        why = main()
    except Exception as e:  # the stand-in may be down: not yet
        why = "%s: %s" % (type(e).__name__, e)
    if why:
        print(why)
        sys.exit(1)
