#!/usr/bin/env bash
# gpu-check.sh --sim: the checks run against a private simulated node (the
# script's own self-test where no GPU is at hand). A few quick checks: each
# prints a PASS/FAIL/SKIP line, gpu-check.json and gpu-check.md record
# them with the sim as their source, and the memory cap holds on the sim,
# for a driver-API program and for an nvcc-built CUDA-runtime one.
set -euo pipefail
B=$(cd "$1" && pwd)
SRC=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
W=$(mktemp -d /tmp/gs-gpucheck-sim.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
[ -f "$B/sim/libcuda.so.1" ] && [ -f "$B/lib/libgpuslice.so" ] || {
	echo "no sim or shim in this build"
	exit 77
}

rc=0
out=$(bash "$SRC/scripts/gpu-check.sh" "$B" --sim --out "$W/o" \
	--only memory_cap_plain,memory_cap_managed,launch_cost,cudart,pytorch 2>&1) || rc=$?
echo "$out"
[ $rc = 0 ] || fail "exit $rc"
grep -q '^PASS memory_cap_plain ' <<<"$out" || fail "no PASS line for memory_cap_plain"
# The cudart check needs nvcc (CI has it); without it it says SKIP.
want=PASS passed=4
if ! [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && ! command -v nvcc >/dev/null; then
	want=SKIP passed=3
fi
grep -q "^$want cudart " <<<"$out" || fail "cudart (an nvcc-built runtime program under a cap) should be $want on the sim"
[ "$(grep -cE '^(PASS|FAIL|SKIP) ' <<<"$out")" = 5 ] || fail "want 5 result lines"
python3 - "$W/o" "$passed" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/gpu-check.json"))
assert d["source"].startswith("sim"), d["source"]
names = [c["name"] for c in d["checks"]]
assert names == ["memory_cap_plain", "cudart", "pytorch", "launch_cost", "memory_cap_managed"], names  # the order gpu-check runs them in
cap = d["checks"][0]["figures"]
assert cap["allocated_bytes"] <= cap["cap_bytes"] and cap["error"] == "CUDA_ERROR_OUT_OF_MEMORY", cap
passed = int(sys.argv[2])
assert d["failed"] == 0 and d["passed"] == passed and d["skipped"] == 5 - passed, d
md = open(sys.argv[1] + "/gpu-check.md").read()
assert "| memory_cap_plain | PASS |" in md and "sim" in md
PY
echo ok
