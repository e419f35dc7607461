#!/usr/bin/env bash
# An MPS slice capped at 2 GiB: the shim's cap holds in an MPS client
# (allocation stops with CUDA_ERROR_OUT_OF_MEMORY at no more than 2 GiB,
# the slice's measured peak is within a chunk of the cap, and memory
# queries inside the slice say 2 GiB, which MPS's own pinned-memory limit
# does not do), for a plain and a VMM allocation.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
G=$((1 << 30))
for api in plain vmm; do
	"${RUN[@]}" --mode mps --memory 2GiB --report -- "$B/bin/gs-alloc" \
		--api "$api" --chunk 256MiB >"$WORK/out.$api" 2>"$WORK/rep.$api" || true
done
"$PY" - "$WORK" "$G" <<'PY' || fail "see above"
import json, sys
w, G = sys.argv[1], int(sys.argv[2])
bad = 0
for api in ("plain", "vmm"):
    out = json.loads(open(f"{w}/out.{api}").read())
    rep = [l for l in open(f"{w}/rep.{api}") if l.startswith("{")]
    rep = json.loads(rep[-1]) if rep else {}
    ok = (out["error"] == "CUDA_ERROR_OUT_OF_MEMORY"
          and out["allocated_bytes"] <= 2 * G
          and out["total_bytes"] == 2 * G
          and 2 * G - (256 << 20) < rep.get("memory_peak_bytes", 0) <= 2 * G
          and rep.get("mode") == "mps")
    print(f"{api}: allocated {out['allocated_bytes'] / G:.2f} GiB, "
          f"peak {rep.get('memory_peak_bytes', 0) / G:.3f} GiB, {out['error']}, "
          f"mode {rep.get('mode')}: {'ok' if ok else 'FAIL'}")
    bad += not ok
sys.exit(1 if bad else 0)
PY
