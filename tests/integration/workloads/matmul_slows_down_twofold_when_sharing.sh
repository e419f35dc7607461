#!/usr/bin/env bash
# The seed study's small batch job under time-slicing: one gs-matmul alone
# on a simulated GPU, then two at once on the same GPU. Each of the pair
# should take about twice as long as the one alone (generous bounds,
# 1.5x-2.8x, for a loaded 2-core machine).
#
# The matrices are 512x512 rather than the study's 256x256: a 256 matmul
# lasts 16 us on the sim's H100, about what one simulated launch costs the
# host, so the job alone would be bound by the launching CPU and the ratio
# would measure the host, not the time-slicing. At 512 (127 us a kernel)
# the GPU's time dominates, as it must for this check.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

iters=${GS_TEST_MATMUL_ITERS:-4000}
n=${GS_TEST_MATMUL_N:-512}
alone=$("$B/bin/gs-matmul" --iterations "$iters" --n "$n")
jcheck "$alone" "d['iterations'] == $iters and d['n'] == $n and d['error'] is None"
t1=$(jget "$alone" wall_s)

"$B/bin/gs-matmul" --iterations "$iters" --n "$n" >"$WORK/a.json" &
a=$!
"$B/bin/gs-matmul" --iterations "$iters" --n "$n" >"$WORK/b.json" &
b=$!
PIDS+=("$a" "$b")
wait "$a" || fail "first of the pair failed: $(cat "$WORK/a.json")"
wait "$b" || fail "second of the pair failed: $(cat "$WORK/b.json")"
for f in a b; do
	out=$(cat "$WORK/$f.json")
	jcheck "$out" 'd["error"] is None'
	t2=$(jget "$out" wall_s)
	"$PY" -c "
import sys
r = $t2 / $t1
print('alone %.3fs, shared %.3fs, ratio %.2f' % ($t1, $t2, r))
sys.exit(0 if 1.5 <= r <= 2.8 else 1)" || fail "ratio out of 1.5..2.8"
done
echo "ok"
