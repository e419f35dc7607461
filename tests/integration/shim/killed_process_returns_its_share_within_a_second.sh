#!/usr/bin/env bash
# A process holding 2 GiB of a 4 GiB slice is killed with -9. It never
# detaches, so its share must come back through reaping: here nobody else
# asks for memory meanwhile, so it is `gpuslice run`'s periodic reap that
# must return it, within 1 s, as seen in the slice's books (read without
# reaping). The process is a grandchild of `gpuslice run` (run through a
# shell), so the runner's own wait does not notice it. Then a new process
# gets the whole slice again.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
G=$((1 << 30))
P=$B/tests/gs-region-probe

"${RUN[@]}" --memory 4GiB --slice k9 -- sh -c \
	"\"$B/bin/gs-alloc\" --api plain --chunk 2GiB --limit 2GiB --hold 60 >\"$WORK/held\" & echo \$! >\"$WORK/pid\"; wait; exec sleep 30" &
PIDS+=($!)
wait_file "$WORK/held"
wait_file "$WORK/pid"
jcheck "$(cat "$WORK/held")" "d['allocated_bytes'] == 2 * $G"
before=$("$P" "$RUNDIR" k9)
jcheck "$before" "d['mem_used'] >= 2 * $G"
holder=$(cat "$WORK/pid")
t0=$(date +%s.%N)
kill -9 "$holder"
freed=""
for _ in $(seq 100); do
	now=$("$P" "$RUNDIR" k9)
	case $now in *'"mem_used":0,'*)
		freed=$(date +%s.%N)
		break ;;
	esac
	sleep 0.02
done
[ -n "$freed" ] || fail "share not returned after 2 s: $now"
awk -v a="$t0" -v b="$freed" 'BEGIN { d = b - a; printf "returned after %.3f s\n", d; exit !(d <= 1.0) }' ||
	fail "share returned too late"
out=$("${RUN[@]}" --slice k9 -- "$B/bin/gs-alloc" --api plain --chunk 256MiB || true)
jcheck "$out" "d['allocated_bytes'] > 3 * $G"
echo ok
