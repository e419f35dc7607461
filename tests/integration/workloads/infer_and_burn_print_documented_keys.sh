#!/usr/bin/env bash
# gs-infer and gs-burn on the sim: one JSON line each with the documented
# keys and sane values; the presets set threads and batch; --requests
# counts exactly; percentiles are ordered; gs-burn reports an allocation
# it cannot get as CUDA_ERROR_OUT_OF_MEMORY and exits 1.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

keys='all(k in d for k in ("program", "source", "resolve", "throughput_rps",
	"p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms", "requests", "threads",
	"batch", "width", "layers", "wall_s", "error"))'

out=$("$B/bin/gs-infer" --light --seconds 1)
jcheck "$out" "$keys" \
	'd["threads"] == 1 and d["batch"] == 1 and d["error"] is None' \
	'd["requests"] > 0 and d["throughput_rps"] > 0' \
	'0 < d["p50_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"]' \
	'd["resolve"] == "dlsym" and d["source"]'

out=$("$B/bin/gs-infer" --heavy --requests 40)
jcheck "$out" "$keys" \
	'd["threads"] == 5 and d["batch"] == 5 and d["requests"] == 40'

out=$("$B/bin/gs-infer" --heavy --threads 2 --requests 7 --via-getprocaddress)
jcheck "$out" 'd["threads"] == 2 and d["batch"] == 5 and d["requests"] == 7' \
	'd["resolve"] == "cuGetProcAddress" and d["error"] is None'

out=$("$B/bin/gs-burn" --seconds 0.5 --memory 256MiB --iters 64)
jcheck "$out" \
	'all(k in d for k in ("wall_s", "kernels", "gflops", "memory_bytes", "iters", "source"))' \
	'd["kernels"] >= 4 and d["gflops"] > 0 and d["wall_s"] >= 0.5' \
	'd["memory_bytes"] == 256 * 2**20 and d["iters"] == 64 and d["error"] is None'

set +e
out=$("$B/bin/gs-burn" --seconds 1 --memory 1TiB)
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "gs-burn with 1TiB exited $rc, want 1: $out"
jcheck "$out" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and d["call"] == "cuMemAlloc"'
echo "ok"
