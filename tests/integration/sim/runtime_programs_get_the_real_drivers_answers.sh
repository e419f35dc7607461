#!/usr/bin/env bash
# nvcc-built CUDA runtime programs (progs/*.cu) check, each from inside,
# that the sim answers as the real driver does where the tests used to
# find it silently wrong: kernel names of any length and refused launches
# (launches.cu), graphs and stream capture (graphs.cu), memory contents,
# advice and peer copies (memory.cu). Each prints "all ok". Skipped (77)
# when nvcc was absent at build time.
. "$(dirname "$0")/lib.sh"

"$GS" sim init --gpus 2xH100-SXM5-80GB >/dev/null
n=0
for p in launches graphs memory; do
	P=$B/tests/sim-progs/gs-simprog-$p
	[ -x "$P" ] || { echo "SKIP: $P not built (no nvcc at build time)"; exit 77; }
	"$P" >"$WORK/$p.out" 2>&1 || { cat "$WORK/$p.out"; fail "$p: checks failed"; }
	grep -q '^all ok$' "$WORK/$p.out" || { cat "$WORK/$p.out"; fail "$p: did not finish"; }
	echo "$p: all ok"
	n=$((n + 1))
done
[ "$(json "j['gpus'][0]['memory_used_bytes']" < <("$GS" sim status --json))" = 0 ] ||
	fail "memory left on the node after the programs exited"
echo "PASS ($n programs)"
