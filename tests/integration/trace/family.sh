#!/usr/bin/env bash
# bench trace --family: two variants of the reporting part, one seed each,
# print a row per variant and the family's worst case on one line each
# (the text `make bench` reads), --json carries every level 90..130 per
# variant; bad family flags exit 2 with one line. Small on purpose: the
# figures themselves are docs/placement.md's and `make bench`'s.
set -euo pipefail
B=${1:?build dir}
SRC=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
DATA=$SRC/tests/data/trace
G=$B/bin/gpuslice
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--nodes "$DATA/openb_node_list_gpu_node.csv" --pods "$DATA/openb_pod_list_default.csv")

"$G" bench trace "${args[@]}" --family report --family-variants 16-17 \
	--seeds 42 --jobs 2 >"$tmp/text" 2>"$tmp/err"
grep -q '^v16:' "$tmp/text"
grep -q '^v17:' "$tmp/text"
[ "$(grep -c '^family worst case at 100: gpuslice - FGD <= [-+][0-9.]* (v1[67]:' "$tmp/text")" -eq 1 ]
[ "$(grep -c '^family worst case at 90-130: gpuslice - FGD <= ' "$tmp/text")" -eq 1 ]
! grep '^family' "$tmp/text" | grep -qi 'nan'

"$G" bench trace "${args[@]}" --family report --family-variants 16-16 \
	--seeds 42 --policy fgd,bestfit,gpuslice --json >"$tmp/json" 2>/dev/null
python3 - "$tmp/json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
v = doc["variants"]
assert len(v) == 1 and v[0]["index"] == 16, v
assert [l["arrived_pct"] for l in v[0]["levels"]] == [90, 100, 110, 120, 130]
for l in v[0]["levels"]:
    # the best baseline is the better of FGD and BestFit here
    assert l["best_baseline"] <= l["fgd"] + 1e-9, l
    assert l["best_policy"] in ("fgd", "bestfit"), l
    assert abs(l["delta_mean"] - (l["gpuslice"] - l["fgd"])) < 1e-6, l
    assert l["delta_worst_seed"] >= l["delta_mean"] - 1e-9, l
assert 5 <= v[0]["constrain_pct"] <= 40 and 1 <= v[0]["max_models"] <= 5
PY

fails=0
bad() { # fragment args...
	local frag=$1
	shift
	local rc=0
	"$G" bench trace "${args[@]}" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 2 ] || ! grep -qF -- "$frag" "$tmp/err" || [ "$(wc -l <"$tmp/err")" -ne 1 ]; then
		echo "FAIL: bench trace $*: $(cat "$tmp/err")" >&2
		fails=$((fails + 1))
	fi
}
bad "expected tune, report or all" --family nope
bad "expected A-B within 0-39" --family report --family-variants 30-50
bad "--family-variants needs --family" --family-variants 1-2
bad "--family replaces --constrain" --family tune --constrain 10
bad "expected milli-GPU from 0 to 1000" --eps -3
[ "$fails" -eq 0 ]
echo "bench trace --family: ok"
