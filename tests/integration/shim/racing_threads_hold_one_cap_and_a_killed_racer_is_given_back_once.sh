#!/usr/bin/env bash
# The memory books without a lock (region/memword.c), through the shim:
# four processes of four threads each allocate and free concurrently in
# one 4 GiB slice, each its own chunk size (drawn at random, 48-288 MiB),
# beside a holder that keeps 256 MiB all along (and its context). Throughout, the sim's own
# count of the node's memory in use and the slice's books in the region
# (read without reaping) never pass the cap. One racer is killed with -9
# mid-race, at whatever point of an update it is: its share comes back
# (by the others' reaping at the cap, or `gpuslice run`'s), exactly once:
# when the racers are done the books hold exactly what the holder held
# before the race, neither more (a share kept) nor less (one given back
# twice).
. "$(dirname "$0")/lib.sh" "$1"
sim_up
G=$((1 << 30))
P=$B/tests/gs-region-probe

"${RUN[@]}" --memory 4GiB --slice race -- "$B/bin/gs-alloc" --api plain \
	--chunk 256MiB --limit 256MiB --hold 60 >"$WORK/held" &
PIDS+=($!)
wait_file "$WORK/held"
jcheck "$(cat "$WORK/held")" "d['allocated_bytes'] == 256 << 20"
before=$("$P" "$RUNDIR" race)
base=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["mem_used"])' "$before")
nbase=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["n_procs"])' "$before")
echo "before the race: $before"

pids=()
for i in 1 2 3 4; do
	chunk=$(((RANDOM % 6 + 1) * 48))MiB
	echo "racer $i: chunk $chunk"
	"${RUN[@]}" --slice race -- sh -c \
		"\"$B/bin/gs-alloc\" --api plain --chunk $chunk --stress 4 --seconds 4 >\"$WORK/a$i\" & echo \$! >\"$WORK/p$i\"; wait" &
	pids+=($!)
done
for i in 1 2 3 4; do wait_file "$WORK/p$i"; done
alive() {
	local p
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null && return 0
	done
	return 1
}
max_sim=0
max_books=0
samples=0
t0=$(date +%s%N)
killed=""
while alive; do
	used=$(sim_mem_used)
	books=$("$P" "$RUNDIR" race | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["mem_used"])')
	samples=$((samples + 1))
	[ "$used" -gt "$max_sim" ] && max_sim=$used
	[ "$books" -gt "$max_books" ] && max_books=$books
	[ "$used" -le $((4 * G)) ] || fail "the sim shows $used bytes in use in a 4 GiB slice"
	[ "$books" -le $((4 * G)) ] || fail "the books show $books bytes in a 4 GiB slice"
	if [ -z "$killed" ] && [ $(($(date +%s%N) - t0)) -gt 1500000000 ]; then
		killed=$(cat "$WORK/p1")
		kill -9 "$killed"
	fi
done
for p in "${pids[@]}"; do wait "$p" || true; done
[ -n "$killed" ] || fail "the race ended before a racer could be killed"
"$PY" - "$WORK" <<'PY' || fail "bad racer results"
import json, sys
for i in range(2, 5):
    lines = [l for l in open(f"{sys.argv[1]}/a{i}") if l.startswith("{")]
    if not lines:
        sys.exit(f"no result from racer {i}")
    d = json.loads(lines[-1])
    if d["error"] not in (None, "CUDA_ERROR_OUT_OF_MEMORY"):
        sys.exit(f"racer {i}: {d}")
    if d.get("allocs", 0) != d.get("frees", 0):
        sys.exit(f"racer {i} leaked: {d}")
    print(f"racer {i}: {d.get('allocs', 0)} allocations")
PY
echo "peaks: the sim $max_sim, the books $max_books bytes ($samples samples)"
[ "$max_books" -gt $((3 * G)) ] || fail "the slice was never loaded: $max_books"
books=""
for _ in $(seq 100); do
	books=$("$P" "$RUNDIR" race)
	case $books in *"\"mem_used\":$base,"*"\"n_procs\":$nbase,"*) break ;; esac
	sleep 0.02
done
jcheck "$books" "d['mem_used'] == $base and d['n_procs'] == $nbase and d['mem_peak'] <= 4 * $G"
echo ok
