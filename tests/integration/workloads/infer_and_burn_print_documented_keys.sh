#!/usr/bin/env bash
# gs-infer and gs-burn on the sim: one JSON line each with the documented
# keys and sane values; the presets set threads and batch; --requests
# counts exactly; percentiles are ordered; gs-burn reports an allocation
# it cannot get as CUDA_ERROR_OUT_OF_MEMORY and exits 1.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

out=$("$B/bin/gs-infer" --light --seconds 1)
one_line "$out"
for k in program source throughput_rps p50_ms p90_ms p99_ms requests \
	threads batch width layers error; do
	jget "$out" "$k" >/dev/null
done
jcheck "$out" 'd["threads"] == 1 and d["batch"] == 1 and d["error"] is None'
jcheck "$out" 'd["requests"] > 0 and d["throughput_rps"] > 0'
jcheck "$out" '0 < d["p50_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"]'

out=$("$B/bin/gs-infer" --heavy --requests 40)
one_line "$out"
jcheck "$out" 'd["threads"] == 5 and d["batch"] == 5 and d["requests"] == 40'

out=$("$B/bin/gs-infer" --heavy --threads 2 --requests 7 --via-getprocaddress)
jcheck "$out" 'd["threads"] == 2 and d["batch"] == 5 and d["requests"] == 7'
jcheck "$out" 'd["resolve"] == "cuGetProcAddress"'

out=$("$B/bin/gs-burn" --seconds 0.5 --memory 256MiB --iters 64)
one_line "$out"
for k in wall_s kernels gflops memory_bytes iters source; do
	jget "$out" "$k" >/dev/null
done
jcheck "$out" 'd["kernels"] >= 4 and d["gflops"] > 0 and d["wall_s"] >= 0.5'
jcheck "$out" 'd["memory_bytes"] == 256 * 2**20 and d["error"] is None'

set +e
out=$("$B/bin/gs-burn" --seconds 1 --memory 1TiB)
rc=$?
set -e
one_line "$out"
[ "$rc" -eq 1 ] || fail "gs-burn with 1TiB exited $rc, want 1: $out"
jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and d["call"] == "cuMemAlloc"'
echo "ok"
