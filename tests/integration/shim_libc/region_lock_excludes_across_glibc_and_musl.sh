#!/usr/bin/env bash
# region_lock_excludes_across_glibc_and_musl: the region's locks are robust
# process-shared pthread mutexes that glibc processes (gpuslice run,
# gpusliced, glibc workloads) and musl workloads under libgpuslice-musl.so
# take together. With shim/musl_mutex.c (the musl build's mutexes) they
# exclude each other: four processes, two of each libc, add 1 to a shared
# counter 50,000 times each under the lock and the sum is exact; and a
# holder killed with -9 is reported to the next taker as EOWNERDEAD,
# whichever libc either of them runs on. Skips (77) without musl-gcc.
set -euo pipefail

B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
G=$B/tests/gs-mutex-cross
M=$B/tests/gs-mutex-cross-musl
[ -x "$M" ] || { echo "SKIP: no musl build (musl-gcc missing: install musl-tools)"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-mutex-cross.XXXXXX")
HOLDER=
cleanup() {
	[ -z "$HOLDER" ] || kill -9 "$HOLDER" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
F=$WORK/lock

"$G" "$F" init || fail "glibc cannot make the mutex"
pids=()
for p in "$G" "$M" "$G" "$M"; do
	"$p" "$F" count 50000 &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a counting process failed"
done
n=$("$G" "$F" read)
[ "$n" -eq 200000 ] || fail "counter is $n after 4 x 50000 locked increments: the libcs do not exclude each other"
echo "ok: glibc and musl processes counted 200000 under one mutex"

# hold_and_die HOLDER TAKER: HOLDER takes the lock and is killed; TAKER
# must be told the owner died.
hold_and_die() {
	local out
	"$1" "$F" hold >"$WORK/held" &
	HOLDER=$!
	for _ in $(seq 100); do
		[ -s "$WORK/held" ] && break
		sleep 0.05
	done
	[ -s "$WORK/held" ] || fail "$(basename "$1") did not take the lock"
	kill -9 "$HOLDER"
	wait "$HOLDER" 2>/dev/null || true
	HOLDER=
	out=$("$2" "$F" take) || fail "$(basename "$2") could not take the lock"
	[ "$out" = ownerdead ] ||
		fail "$(basename "$2") after $(basename "$1") died holding the lock: '$out', want 'ownerdead'"
	echo "ok: $(basename "$1") died holding it, $(basename "$2") was told (EOWNERDEAD)"
}
hold_and_die "$M" "$G"
hold_and_die "$G" "$M"
hold_and_die "$M" "$M"
[ "$("$G" "$F" take)" = ok ] || fail "the lock is not free and consistent at the end"
