#!/usr/bin/env bash
# A slice capped at 4 GiB: cudart programs (static and shared cudart)
# stop with cudaErrorMemoryAllocation for every runtime allocation API
# (cudaMalloc, cudaMallocPitch, cudaMallocManaged, cudaMallocAsync, a
# pool, cudaMalloc3DArray), having allocated at most 4 GiB, and the
# slice's peak (allocations plus the context's own memory) is within one
# chunk of the cap, exactly as for the driver-API tests in
# tests/integration/shim. cudaMemGetInfo shows the slice (total 4 GiB)
# inside it and the whole GPU outside.
. "$(dirname "$0")/lib.sh" "$1"
shim_needs_plain_build
sim_up
G=$((1 << 30))
chunk=$((256 << 20))
progs=("$B/tests/cudart/gs-cudart-static" "$B/tests/cudart/gs-cudart-shared")

for prog in "${progs[@]}"; do
	k=$(basename "$prog")
	for api in malloc pitch managed async pool array3d; do
		"${RUN[@]}" --memory 4GiB --report -- "$prog" alloc "$api" 256 \
			>"$WORK/out.$k.$api" 2>"$WORK/rep.$k.$api" || true
	done
done
"$PY" - "$WORK" "$G" "$chunk" <<'PY' || fail "see above"
import json, sys
w, G, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = 0
for k in ("gs-cudart-static", "gs-cudart-shared"):
    for api in "malloc pitch managed async pool array3d".split():
        try:
            out = json.loads(open(f"{w}/out.{k}.{api}").read())
        except ValueError:
            print(f"{k} {api}: no result:", open(f"{w}/out.{k}.{api}").read(),
                  open(f"{w}/rep.{k}.{api}").read())
            bad += 1
            continue
        rep = [l for l in open(f"{w}/rep.{k}.{api}") if l.startswith("{")]
        rep = json.loads(rep[-1]) if rep else {}
        ok = (out["api"] == api and out["error"] == "cudaErrorMemoryAllocation"
              and 4 * G - 2 * chunk <= out["allocated_bytes"] <= 4 * G
              and out["total_bytes"] == 4 * G
              and 4 * G - chunk < rep.get("memory_peak_bytes", 0) <= 4 * G)
        print(f"{k:17} {api:8} allocated {out['allocated_bytes'] / G:.2f} GiB, "
              f"slice peak {rep.get('memory_peak_bytes', 0) / G:.3f} GiB, "
              f"{out['error']}: {'ok' if ok else 'FAIL'}")
        bad += not ok
sys.exit(1 if bad else 0)
PY

in=$("${RUN[@]}" --memory 4GiB -- "$B/tests/cudart/gs-cudart-static" meminfo)
jcheck "$in" "d['total_bytes'] == 4 * $G and 0 < d['free_bytes'] < 4 * $G"
out=$("$B/tests/cudart/gs-cudart-static" meminfo)
jcheck "$out" "d['total_bytes'] > 64 * $G"
echo ok
