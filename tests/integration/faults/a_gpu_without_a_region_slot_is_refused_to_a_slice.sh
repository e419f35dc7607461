#!/usr/bin/env bash
# A GPU the region's GPU table has no room for (every slot taken) gets no
# slot, so nothing on it could be charged to the slice: the slice's
# process is refused a context on it (CUDA_ERROR_DEVICE_UNAVAILABLE, the
# shim says why) instead of running on it without its memory cap.
set -euo pipefail
B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no simulated CUDA driver"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-gputable.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset GPUSLICE_RUN_DIR GPUSLICE_SOCKET GPUSLICE_FAULT GPUSLICE_FAULT_COUNTS \
      GPUSLICE_SIM_DIR GPUSLICE_SLICE GPUSLICE_LOG || true
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B/bin/gpuslice" sim init --gpus 1xH100-SXM5-80GB --dir "$WORK/sim" >/dev/null
eval "$("$B/bin/gpuslice" sim env --dir "$WORK/sim")"
"$B/tests/gs-fill-gpu-table" "$WORK/run" || fail "the GPU table did not fill"
set +e
out=$("$B/bin/gpuslice" run --memory 1GiB --run-dir "$WORK/run" -- \
	env GPUSLICE_LOG="$WORK/shim.log" \
	"$B/bin/gs-alloc" --api plain --chunk 256MiB)
rc=$?
set -e
echo "exit $rc: $out"
python3 - "$out" <<'PY' || fail "the program ran on a GPU without a slot"
import json, sys
d = json.loads(sys.argv[1].splitlines()[-1])
assert (d.get("allocated_bytes") or 0) <= 1 << 30, d
assert d.get("error") == "CUDA_ERROR_DEVICE_UNAVAILABLE", d
PY
grep -q "has no slot in the region" "$WORK/shim.log" ||
	fail "the shim did not say why: $(cat "$WORK/shim.log")"
echo ok
