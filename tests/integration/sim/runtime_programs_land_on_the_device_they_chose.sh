#!/usr/bin/env bash
# An nvcc-built CUDA runtime program (progs/multigpu.cu) selects devices 1
# and 2 with cudaSetDevice, from its main thread and from two more (one
# after cudaInitDevice), and the simulated node's own books say where the
# work went: device 1 holds 1 GiB + 512 MiB (+ one context's 500 MiB),
# device 2 2 GiB (+ 500 MiB), device 0 nothing, and only devices 1 and 2
# were busy. Skipped (77) when nvcc was absent at build time.
. "$(dirname "$0")/lib.sh"

P=$B/tests/sim-progs/gs-simprog-multigpu
[ -x "$P" ] || { echo "SKIP: $P not built (no nvcc at build time)"; exit 77; }
"$GS" sim init --gpus 3xH100-SXM5-80GB >/dev/null

mkfifo "$WORK/in"
"$P" <"$WORK/in" >"$WORK/out" 2>&1 &
PP=$!
PIDS+=("$PP")
exec 3>"$WORK/in"
for _ in $(seq 600); do
	grep -Eq '^(ready|failed)$' "$WORK/out" && break
	kill -0 "$PP" 2>/dev/null || break
	sleep 0.05
done
grep -q '^ready$' "$WORK/out" || { cat "$WORK/out"; fail "the program did not get ready"; }
S=$("$GS" sim status --json)
used() { json "j['gpus'][$1]['memory_used_bytes'] >> 20" <<<"$S"; }
expect_eq "device 0 MiB" "$(used 0)" 0
expect_eq "device 1 MiB" "$(used 1)" $((1024 + 512 + 500))
expect_eq "device 2 MiB" "$(used 2)" $((2048 + 500))
expect_eq "processes on device 0" "$(json "len(j['gpus'][0]['processes'])" <<<"$S")" 0
for g in 1 2; do
	expect_eq "busy on device $g" \
		"$(json "j['gpus'][$g]['processes'][0]['busy_s'] > 0" <<<"$S")" True
done
echo go >&3
exec 3>&-
wait "$PP" || { cat "$WORK/out"; fail "the program failed"; }
grep -q '^done$' "$WORK/out" || { cat "$WORK/out"; fail "the program did not finish"; }
cat "$WORK/out"
echo PASS
