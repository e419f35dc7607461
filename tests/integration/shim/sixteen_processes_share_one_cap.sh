#!/usr/bin/env bash
# 16 processes in one 4 GiB slice allocate and free concurrently (two
# threads each). The sim's own per-process usage (allocations plus each
# context's 500 MiB), summed over the node, is sampled throughout and must
# never exceed the cap; processes that find no room for their context get
# an ordinary CUDA_ERROR_OUT_OF_MEMORY. When all have exited, the slice's
# books are back to zero.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
G=$((1 << 30))
P=$B/tests/gs-region-probe

# The sim's contexts cost 500 MiB each, so at most eight processes can hold
# one in this slice, and fewer still room to allocate: the others must fail
# cleanly, at context creation or allocation.
# A holder keeps the slice (and its books) alive across the whole test.
"${RUN[@]}" --memory 4GiB --slice many -- sleep 60 &
PIDS+=($!)
for _ in $(seq 50); do
	"$P" "$RUNDIR" many | grep -q '"found":true' && break
	sleep 0.1
done
pids=()
for i in $(seq 16); do
	"${RUN[@]}" --slice many -- "$B/bin/gs-alloc" --api plain \
		--chunk 128MiB --stress 2 --seconds 2 >"$WORK/a$i" 2>&1 &
	pids+=($!)
done
alive() {
	local p
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && return 0
	done
	return 1
}
max=0
samples=0
while alive; do
	used=$(sim_mem_used)
	samples=$((samples + 1))
	if [ "$used" -gt "$max" ]; then max=$used; fi
	[ "$used" -le $((4 * G)) ] || fail "the sim shows $used bytes in use in a 4 GiB slice"
	sleep 0.02
done
for p in "${pids[@]}"; do wait "$p" || true; done
ran=$("$PY" - "$WORK" <<'PY'
import json, sys
ran = 0
for i in range(1, 17):
    lines = [l for l in open(f"{sys.argv[1]}/a{i}") if l.startswith("{")]
    if not lines:
        sys.exit(f"no result from process {i}")
    d = json.loads(lines[-1])
    if d["error"] not in (None, "CUDA_ERROR_OUT_OF_MEMORY"):
        sys.exit(f"process {i}: {d}")
    if d.get("allocs", 0) > 0:
        if d["allocs"] != d["frees"]:
            sys.exit(f"process {i} leaked: {d}")
        ran += 1
print(ran)
PY
) || fail "bad results: $ran"
echo "$ran of 16 got to allocate; peak the sim saw: $max bytes ($samples samples)"
[ "$ran" -ge 4 ] || fail "only $ran processes got to run"
[ "$max" -gt $((2 * G)) ] || fail "the slice was never loaded: $max"
jcheck "$("$P" "$RUNDIR" many)" "d['mem_used'] == 0 and d['mem_peak'] <= 4 * $G and d['n_procs'] == 1"
echo ok
