#!/usr/bin/env bash
# gs-alloc grows with each allocation API until the GPU is full: every API
# must stop with CUDA_ERROR_OUT_OF_MEMORY within one chunk of the memory
# that was free after the context was made (capacity minus the context's
# overhead). Also: --limit stops first with "error":null; memory held by a
# process killed with -9 comes back; --stress frees all it allocates.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

for api in plain pitch managed async pool vmm array; do
	# Managed memory stops at the device's size by default (on a real GPU
	# it would oversubscribe); the sim counts it, so let it run into the cap.
	extra=()
	[ "$api" = managed ] && extra=(--limit 1TiB)
	out=$("$B/bin/gs-alloc" --api "$api" --chunk 1GiB "${extra[@]}") ||
		fail "gs-alloc --api $api exited non-zero: $out"
	jcheck "$out" \
		"d['api'] == '$api' and d['error'] == 'CUDA_ERROR_OUT_OF_MEMORY'" \
		'd["stopped"] == "error" and d["chunks"] >= 70' \
		'd["free_bytes_before"] < d["total_bytes"]' \
		'd["allocated_bytes"] <= d["free_bytes_before"]' \
		'd["free_bytes_before"] - d["allocated_bytes"] < d["planned_chunk_bytes"] + 2**21'
done

out=$("$B/bin/gs-alloc" --api vmm --chunk 512MiB --limit 4GiB)
jcheck "$out" 'd["error"] is None and d["stopped"] == "limit"' \
	'd["allocated_bytes"] == 4 * 2**30 and d["chunks"] == 8'

# Hold most of the GPU, die by SIGKILL, and the memory must come back.
"$B/bin/gs-alloc" --api plain --chunk 8GiB --hold 60 >"$WORK/hold.json" &
holder=$!
PIDS+=("$holder")
for _ in $(seq 200); do
	[ -s "$WORK/hold.json" ] && break
	sleep 0.1
done
jcheck "$(cat "$WORK/hold.json")" 'd["allocated_bytes"] >= 64 * 2**30'
out=$("$B/bin/gs-alloc" --api plain --chunk 1GiB)
jcheck "$out" 'd["allocated_bytes"] < 16 * 2**30'
kill -9 "$holder"
wait "$holder" 2>/dev/null || true
out=$("$B/bin/gs-alloc" --api plain --chunk 1GiB)
jcheck "$out" 'd["allocated_bytes"] >= 70 * 2**30'

for api in plain async pool vmm; do
	out=$("$B/bin/gs-alloc" --api "$api" --chunk 4GiB --stress 4 --seconds 0.5) ||
		fail "gs-alloc --stress with $api failed: $out"
	jcheck "$out" 'd["mode"] == "stress" and d["stress_threads"] == 4' \
		'd["allocs"] > 0 and d["allocs"] == d["frees"]' \
		'd["free_bytes_after"] == d["free_bytes_before"]'
done
echo "ok"
