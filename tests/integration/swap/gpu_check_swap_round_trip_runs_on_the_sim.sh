#!/usr/bin/env bash
# make gpu-check's swap check (tests/gpu/swap_check.sh), run by
# gpu-check.sh --sim against a private simulated node: the round trip of a
# CUDA runtime program's buffers (the sim cannot run PyTorch, and says
# so) passes with equal checksums and reports the swap-in rate; without
# nvcc it says SKIP. The PyTorch program and the driver are at least
# compiled here. Without a GPU, gpu-check prints a SKIP line for it.
set -euo pipefail
B=$(cd "$1" && pwd)
SRC=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
W=$(mktemp -d /tmp/gs-gpucheck-swap.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
[ -f "$B/sim/libcuda.so.1" ] && [ -f "$B/lib/libgpuslice.so" ] || {
	echo "SKIP: no sim or shim in this build"
	exit 77
}
python3 -m py_compile "$SRC/tests/gpu/swap_torch.py" "$SRC/tests/gpu/swap_drive.py" ||
	fail "the swap check's Python does not compile"
bash -n "$SRC/tests/gpu/swap_check.sh" || fail "swap_check.sh does not parse"

rc=0
out=$(bash "$SRC/scripts/gpu-check.sh" "$B" --sim --only swap --out "$W/o" 2>&1) || rc=$?
echo "$out"
[ $rc = 0 ] || fail "exit $rc"
if ! [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && ! command -v nvcc >/dev/null; then
	grep -q '^SKIP swap ' <<<"$out" || fail "without nvcc the swap check should say SKIP"
	echo ok
	exit 0
fi
grep -q '^PASS swap .*checksums equal after; swap-in [0-9.]* GB/s' <<<"$out" || fail "no PASS line with the swap-in rate"
grep -q 'cannot import torch.*swap_cudart stands in' <<<"$out" || fail "does not say that the CUDA runtime program stood in for PyTorch"
python3 - "$W/o" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/gpu-check.json"))
c = d["checks"][0]
assert c["name"] == "swap" and c["status"] == "pass", c
f = c["figures"]
assert f["checksums_before"] == f["checksums_after"] and f["swap_in_gbps"] > 0 and f["swap_out_bytes"] >= f["bytes"], f
PY

# no GPU: a SKIP line for the swap check, and nothing run
if ! (command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'); then
	out=$(bash "$SRC/scripts/gpu-check.sh" "$B" --out "$W/none" 2>&1) || fail "without a GPU: exit $?: $out"
	grep -q '^SKIP swap .*no GPU' <<<"$out" || fail "without a GPU, no SKIP line for the swap check: $out"
fi
echo ok
