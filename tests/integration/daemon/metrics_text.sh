#!/usr/bin/env bash
# /metrics parses as Prometheus text (format 0.0.4: HELP and TYPE before a
# family's samples, each family in one group, well-formed labels and
# values), carries gpu/slice/team labels on per-slice series, and holds
# exactly the names docs/metrics.md documents.
. "$(dirname "$0")/lib.sh" "$1"

daemon_up
api POST /v1/slices '{"name": "m\"q", "memory": "1GiB"}' >/dev/null
expect_status "a name with a quote is refused" 400
api POST /v1/slices '{"name": "met-1", "memory": "1GiB", "compute": 20}' >/dev/null
expect_status "met-1" 201
api POST /v1/slices '{"name": "met-2", "mode": "mps", "memory": "2GiB", "compute": 10}' >/dev/null
expect_status "met-2" 201
api PUT /v1/teams/ops '{"guarantee": {"memory": "4GiB"}}' >/dev/null
api GET /metrics >"$WORK/metrics"
curl -s -D "$WORK/headers" -o /dev/null --unix-socket "$SOCK" http://localhost/metrics
grep -qi '^content-type: text/plain; version=0.0.4' "$WORK/headers" ||
	fail "content type: $(cat "$WORK/headers")"
"$G" --socket "$SOCK" list >/dev/null

python3 - "$WORK/metrics" "$SRC/docs/metrics.md" "$SRC/docs/grafana-dashboard.json" <<'PY'
import re, sys

text = open(sys.argv[1]).read()
doc = open(sys.argv[2]).read()
name_re = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
label_re = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
sample = re.compile(r"^(%s)(\{(%s(,%s)*)?\})? (\S+)( -?\d+)?$" % (name_re, label_re, label_re))
help_re = re.compile(r"^# HELP (%s) (.*)$" % name_re)
type_re = re.compile(r"^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$" % name_re)

fams, order, types, errs = {}, [], {}, []
current = None
assert text.endswith("\n"), "the page must end with a newline"
for n, line in enumerate(text.split("\n")[:-1], 1):
    m = help_re.match(line)
    if m:
        current = m.group(1)
        if current in fams:
            errs.append("line %d: %s described twice" % (n, current))
        fams[current] = []
        order.append(current)
        continue
    m = type_re.match(line)
    if m:
        if m.group(1) != current:
            errs.append("line %d: TYPE for %s after HELP for %s" % (n, m.group(1), current))
        types[m.group(1)] = m.group(2)
        continue
    if line.startswith("#"):
        errs.append("line %d: stray comment %r" % (n, line))
        continue
    m = sample.match(line)
    if not m:
        errs.append("line %d: not a sample: %r" % (n, line))
        continue
    name = m.group(1)
    if name != current:
        errs.append("line %d: %s outside its family (current %s)" % (n, name, current))
    try:
        float(m.group(5))
    except ValueError:
        errs.append("line %d: bad value %r" % (n, m.group(5)))
    labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
    if name.startswith("gpuslice_slice_") and name != "gpuslice_slice_operations_total":
        for k in ("gpu", "slice", "team"):
            if k not in labels:
                errs.append("line %d: %s lacks label %s" % (n, name, k))
    if types.get(name) == "counter" and float(m.group(5)) < 0:
        errs.append("line %d: negative counter" % n)
    fams[current].append((labels, m.group(5)))

for f in order:
    if not f.startswith("gpuslice_"):
        errs.append("%s lacks the gpuslice_ prefix" % f)
    if f not in types:
        errs.append("%s has no TYPE" % f)

documented = set(re.findall(r"^\| `(gpuslice_[a-z0-9_]+)` \|", doc, re.M))
exposed = set(order)
for f in sorted(documented - exposed):
    errs.append("documented but not exposed: " + f)
for f in sorted(exposed - documented):
    errs.append("exposed but not documented: " + f)

import json
dash = json.load(open(sys.argv[3]))
used = set()
for p in dash["panels"]:
    for t in p.get("targets", []):
        used |= set(re.findall(r"gpuslice_[a-z0-9_]+", t["expr"]))
for v in dash["templating"]["list"]:
    used |= set(re.findall(r"gpuslice_[a-z0-9_]+", json.dumps(v)))
for f in sorted(used - documented):
    errs.append("the Grafana dashboard uses an undocumented name: " + f)

slices = {l["slice"] for l, v in fams.get("gpuslice_slice_memory_limit_bytes", [])}
if slices != {"met-1", "met-2"}:
    errs.append("slices in metrics: %r" % slices)
lim = {l["slice"]: float(v) for l, v in fams["gpuslice_slice_memory_limit_bytes"]}
if lim.get("met-1") != float(1 << 30):
    errs.append("met-1 limit %r" % lim.get("met-1"))
info = {l["slice"]: l for l, v in fams["gpuslice_slice_info"]}
if info["met-2"].get("mode") != "mps":
    errs.append("met-2 info %r" % info["met-2"])
if not any(l.get("team") == "ops" for l, v in fams["gpuslice_team_memory_guarantee_bytes"]):
    errs.append("team ops missing")
if errs:
    print("\n".join(errs[:30]))
    sys.exit(1)
print("ok: %d families, %d samples" % (len(order), sum(len(v) for v in fams.values())))
PY
