#!/usr/bin/env python3
"""validate.py - checks resource.k8s.io/v1 objects against gpuslice's schema
(resource_v1_schema.json) plus the pool rules a JSON schema cannot say.

usage: validate.py FILE|-   (an object, a JSON array of objects, or a *List)
Exit 0 when every object is valid; 1 with one line per problem otherwise.
Also importable: problems(objs) -> list of messages.
"""
import json
import os
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "resource_v1_schema.json")) as f:
    SCHEMA = json.load(f)


def _before_135(defs):
    """The definitions as 1.34 has them: a slice may hold devices and the
    counter sets they consume (1.35 made them separate slices)."""
    defs = json.loads(json.dumps(defs))
    for d in defs.values():
        if isinstance(d, dict) and d.get("not") == {"required": ["devices", "sharedCounters"]}:
            del d["not"]
    return defs


def _validator(kind, minor=36):
    defs = SCHEMA["definitions"] if minor >= 35 else _before_135(SCHEMA["definitions"])
    sub = {"$ref": "#/definitions/" + kind, "definitions": defs}
    return jsonschema.Draft7Validator(sub)


def _objects(doc):
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and doc.get("kind", "").endswith("List"):
        return doc.get("items", [])
    return [doc]


def pool_problems(slices):
    """Rules across the slices of one pool (driver, pool name)."""
    out = []
    pools = {}
    for s in slices:
        sp = s.get("spec", {})
        pools.setdefault((sp.get("driver"), sp.get("pool", {}).get("name")), []).append(s)
    for (drv, pool), ss in pools.items():
        gens = {s["spec"]["pool"]["generation"] for s in ss}
        newest = max(gens)
        cur = [s for s in ss if s["spec"]["pool"]["generation"] == newest]
        counts = {s["spec"]["pool"]["resourceSliceCount"] for s in cur}
        if len(counts) != 1 or counts.pop() != len(cur):
            out.append("pool %s/%s generation %d: resourceSliceCount does not match the %d slices"
                       % (drv, pool, newest, len(cur)))
        names, sets = set(), {}
        for s in cur:
            for cs in s["spec"].get("sharedCounters", []):
                if cs["name"] in sets:
                    out.append("pool %s: counter set %s twice" % (pool, cs["name"]))
                sets[cs["name"]] = cs["counters"]
        for s in cur:
            for d in s["spec"].get("devices", []):
                if d["name"] in names:
                    out.append("pool %s: device %s twice" % (pool, d["name"]))
                names.add(d["name"])
                n = len(d.get("attributes", {})) + len(d.get("capacity", {}))
                if n > 32:
                    out.append("device %s: %d attributes + capacities (max 32)" % (d["name"], n))
                for c in d.get("consumesCounters", []):
                    cs = sets.get(c["counterSet"])
                    if cs is None:
                        out.append("device %s consumes unknown counter set %s" % (d["name"], c["counterSet"]))
                        continue
                    for k in c["counters"]:
                        if k not in cs:
                            out.append("device %s consumes unknown counter %s/%s" % (d["name"], c["counterSet"], k))
    return out


def problems(objs, pool=True, minor=36):
    """Schema problems of each object, and with `pool` the rules across
    the slices of a pool (a single write is checked without them);
    `minor` picks the release's rules where they differ (1.34: 34)."""
    out = []
    for o in objs:
        kind = o.get("kind") if isinstance(o, dict) else None
        if kind not in ("ResourceSlice", "DeviceClass", "ResourceClaim"):
            out.append("object of unknown kind %r" % (kind,))
            continue
        name = o.get("metadata", {}).get("name", "?")
        for e in sorted(_validator(kind, minor).iter_errors(o), key=lambda e: list(e.path)):
            path = "/".join(str(p) for p in e.path)
            out.append("%s %s: %s: %s" % (kind, name, path or "(top)", e.message[:200]))
    if pool:
        out += pool_problems([o for o in objs if isinstance(o, dict) and o.get("kind") == "ResourceSlice"
                              and isinstance(o.get("spec"), dict) and "pool" in o["spec"]])
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    text = sys.stdin.read() if sys.argv[1] == "-" else open(sys.argv[1]).read()
    p = problems(_objects(json.loads(text)))
    for m in p:
        print(m)
    return 1 if p else 0


if __name__ == "__main__":
    sys.exit(main())
