#!/usr/bin/env bash
# A slice capped at 4 GiB: gs-alloc stops with CUDA_ERROR_OUT_OF_MEMORY
# for every allocation API, whether it resolves the driver with dlsym or
# through cuGetProcAddress_v2, having allocated at most 4 GiB; what the
# slice holds at its peak (allocations plus the context's own memory,
# which the cap covers too) is within one chunk of the cap. cuMemGetInfo,
# cuDeviceTotalMem and NVML (v1 and v2) report total = 4 GiB inside the
# slice and the real GPU outside it.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
G=$((1 << 30))
chunk=$((256 << 20))

for api in plain pitch managed async pool vmm array; do
	for via in "" --via-getprocaddress; do
		"${RUN[@]}" --memory 4GiB --report -- "$B/bin/gs-alloc" \
			--api "$api" --chunk 256MiB $via \
			>"$WORK/out.$api$via" 2>"$WORK/rep.$api$via" || true
	done
done
"$PY" - "$WORK" "$G" "$chunk" <<'PY' || fail "see above"
import json, sys
w, G, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = 0
for api in "plain pitch managed async pool vmm array".split():
    for via in ("", "--via-getprocaddress"):
        out = json.loads(open(f"{w}/out.{api}{via}").read())
        rep = [l for l in open(f"{w}/rep.{api}{via}") if l.startswith("{")]
        rep = json.loads(rep[-1]) if rep else {}
        ok = (out["api"] == api and out["error"] == "CUDA_ERROR_OUT_OF_MEMORY"
              and out["allocated_bytes"] <= 4 * G
              and out["total_bytes"] == 4 * G
              and 4 * G - chunk < rep.get("memory_peak_bytes", 0) <= 4 * G
              and (not via or out["resolve"] == "cuGetProcAddress"))
        print(f"{api:8} {via or 'dlsym':21} allocated {out['allocated_bytes'] / G:.2f} GiB, "
              f"slice peak {rep.get('memory_peak_bytes', 0) / G:.3f} GiB, "
              f"{out['error']}: {'ok' if ok else 'FAIL'}")
        bad += not ok
sys.exit(1 if bad else 0)
PY

# The contract line.
out=$("${RUN[@]}" --memory 4GiB -- "$B/bin/gs-alloc" --api vmm --chunk 256MiB || true)
jcheck "$out" "d['allocated_bytes'] <= 4 * $G and d['error'] == 'CUDA_ERROR_OUT_OF_MEMORY'"

# Views inside and outside a slice.
in=$("${RUN[@]}" --memory 4GiB -- "$B/tests/gs-shim-probe")
jcheck "$in" "d['cu_total'] == 4 * $G and d['cu_device_total'] == 4 * $G"
jcheck "$in" "d['nvml_total'] == 4 * $G and d['nvml2_total'] == 4 * $G"
jcheck "$in" "0 < d['nvml_used'] < $G and d['nvml_used'] + d['nvml_free'] == 4 * $G"
jcheck "$in" "d['cu_free'] == d['nvml_free']"
out=$("$B/tests/gs-shim-probe")
jcheck "$out" "d['cu_total'] > 64 * $G and d['nvml_total'] > 64 * $G"
echo ok
