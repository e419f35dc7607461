#!/usr/bin/env bash
# bench trace: --json prints exactly the documented contract on stdout
# (progress, if any, goes to stderr), --out writes results.csv and a
# well-formed SVG, the table names every policy, --help exits 0.
set -euo pipefail
B=${1:?build dir}
SRC=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
DATA=$SRC/tests/data/trace
G=$B/bin/gpuslice
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$G" bench trace --help >"$tmp/help"
grep -q -- '--nodes FILE' "$tmp/help"

"$G" bench trace --nodes "$DATA/openb_node_list_gpu_node.csv" \
	--pods "$DATA/openb_pod_list_default.csv" \
	--policy fgd,bestfit,gpuslice --seeds 42-44 --json --jobs 2 \
	--out "$tmp/out" >"$tmp/stdout" 2>"$tmp/stderr"

python3 - "$tmp" <<'PY'
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
doc = json.load(open(d + "/stdout"))          # stdout is one JSON document
assert list(doc) == ["results"], list(doc)
res = doc["results"]
pols = ["fgd", "bestfit", "gpuslice"]
assert len(res) == 3 * 41, len(res)
for p in pols:
    lv = [e["arrived_pct"] for e in res if e["policy"] == p]
    assert lv == list(range(90, 131)), (p, lv)
for e in res:
    for k in ("unallocated_pct_mean", "unallocated_pct_sd", "frag_pct_mean"):
        assert isinstance(e[k], (int, float)), (k, e)
    assert 0 <= e["unallocated_pct_mean"] <= 100
    assert e["seeds"] == 3
at = {e["policy"]: e["unallocated_pct_mean"] for e in res if e["arrived_pct"] == 100}
assert at["gpuslice"] < at["fgd"] < at["bestfit"], at
assert abs(at["fgd"] - 4.77) < 1.0 and abs(at["bestfit"] - 7.14) < 1.0, at

rows = open(d + "/out/results.csv").read().splitlines()
assert rows[0] == "policy,arrived_pct,unallocated_pct_mean,unallocated_pct_sd,frag_pct_mean,frag_pct_sd,seeds", rows[0]
assert len(rows) == 1 + 3 * 131, len(rows)

svg = ET.parse(d + "/out/unallocated.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
assert svg.tag == ns + "svg"
assert len(svg.findall(ns + "polyline")) == 3
texts = " ".join(t.text or "" for t in svg.iter(ns + "text"))
for name in ("FGD", "BestFit", "gpuslice"):
    assert name in texts, name
print("contract ok:", at)
PY

"$G" bench trace --nodes "$DATA/openb_node_list_gpu_node.csv" \
	--pods "$DATA/openb_pod_list_default.csv" --policy random,gpuslice \
	--seeds 7 >"$tmp/table" 2>/dev/null
grep -q '^Unallocated GPU' "$tmp/table"
grep -q '^Fragmentation' "$tmp/table"
grep -q '^Random ' "$tmp/table"
grep -q '^gpuslice ' "$tmp/table"
echo "bench trace CLI: ok"
