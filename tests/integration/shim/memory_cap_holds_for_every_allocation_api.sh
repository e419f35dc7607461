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
			--api "$api" --chunk 256MiB $via >"$WORK/out" 2>"$WORK/rep" || true
		out=$(cat "$WORK/out")
		rep=$(last_json "$WORK/rep")
		jcheck "$out" "d['api'] == '$api' and d['error'] == 'CUDA_ERROR_OUT_OF_MEMORY'"
		jcheck "$out" "d['allocated_bytes'] <= 4 * $G"
		jcheck "$out" "d['total_bytes'] == 4 * $G"
		jcheck "$rep" "4 * $G - $chunk < d['memory_peak_bytes'] <= 4 * $G"
		[ -z "$via" ] || jcheck "$out" "d['resolve'] == 'cuGetProcAddress'"
	done
done

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
