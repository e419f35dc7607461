#!/usr/bin/env bash
# musl_program_keeps_its_cap: a program linked against musl (Alpine's libc)
# run by `gpuslice run` gets libgpuslice-musl.so, picked from its ELF
# interpreter (/lib/ld-musl-*), and the memory cap holds: it sees the cap
# as the device's size and its allocations stop at it with
# CUDA_ERROR_OUT_OF_MEMORY, while without the shim they grow past it.
# When the musl build is missing beside the shim, `gpuslice run` refuses to
# start the program rather than run it unlimited.
#
# The driver is the sim's libcuda.so.1, built for glibc; it loads under
# musl through gs-musl-glue, a stand-in for Alpine's gcompat (see
# musl_glibc_glue.c), as a real driver's would. Skips (77) without
# musl-gcc (musl-tools).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../shim/lib.sh" "$1"

PROBE=$B/tests/gs-musl-cap-probe
GLUE=$B/tests/musl-glue/ld-linux-x86-64.so.2
if [ ! -e "$B/lib/libgpuslice-musl.so" ] || [ ! -x "$PROBE" ] || [ ! -e "$GLUE" ]; then
	echo "SKIP: no musl build (musl-gcc missing: install musl-tools)"
	exit 77
fi
sim_up
readelf -l "$PROBE" | grep -q 'interpreter: /lib/ld-musl-' ||
	fail "gs-musl-cap-probe is not a musl program"

# musl searches only LD_LIBRARY_PATH and its own folders: the glue, and
# the zstd and lz4 libraries the sim links, from this machine.
mkdir -p "$WORK/musl-libs"
cp "$GLUE" "$WORK/musl-libs/"
for lib in libzstd.so.1 liblz4.so.1; do
	p=$(ldd "$B/sim/libcuda.so.1" | awk -v l="$lib" '$1 == l { print $3 }')
	[ -n "$p" ] || fail "cannot find $lib, which the sim's libcuda.so.1 needs"
	ln -s "$p" "$WORK/musl-libs/$lib"
done
export LD_LIBRARY_PATH=$B/sim:$WORK/musl-libs
CAP=$((1024 * 1024 * 1024))
CHUNK=$((64 * 1024 * 1024))
LIMIT=$((2 * CAP))

out=$("$PROBE" "$CHUNK" "$LIMIT") || fail "gs-musl-cap-probe cannot reach the sim under musl"
jcheck "$out" "d['error'] == 0 and d['allocated'] == $LIMIT"

out=$("${RUN[@]}" --memory 1GiB -- "$PROBE" "$CHUNK" "$LIMIT" 2>"$WORK/err") ||
	fail "gpuslice run of a musl program failed: $(cat "$WORK/err")"
# 2 = CUDA_ERROR_OUT_OF_MEMORY
jcheck "$out" "d['total'] == $CAP and d['error'] == 2 and 0 < d['allocated'] <= $CAP"
echo "ok: a musl program under the shim stopped at $(jget "$out" allocated) of a $CAP-byte cap"

# One slice, two libcs: a glibc gs-alloc holds 768 MiB while the musl
# program grows; together they stay within the slice's cap.
"${RUN[@]}" --memory 2GiB --slice mixed -- "$B/bin/gs-alloc" --api plain \
	--chunk 256MiB --limit 768MiB --hold 20 >"$WORK/glibc.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 200); do
	grep -q '^{' "$WORK/glibc.out" 2>/dev/null && break
	sleep 0.05
done
g=$(last_json "$WORK/glibc.out")
[ -n "$g" ] || fail "the glibc gs-alloc did not report: $(cat "$WORK/glibc.out")"
jcheck "$g" "d['allocated_bytes'] == 768 << 20"
out=$("${RUN[@]}" --slice mixed -- "$PROBE" "$CHUNK" "$LIMIT" 2>"$WORK/err3") ||
	fail "the musl program in the shared slice failed: $(cat "$WORK/err3")"
jcheck "$out" "d['error'] == 2 and 0 < d['allocated'] and d['allocated'] + (768 << 20) <= 2 * $CAP"
echo "ok: glibc (768 MiB) and musl ($(jget "$out" allocated) bytes) processes share one 2 GiB cap"

# A shim folder without the musl build: refused, not run unlimited.
mkdir -p "$WORK/glibc-only"
cp "$B/lib/libgpuslice.so" "$WORK/glibc-only/"
rc=0
GPUSLICE_SHIM=$WORK/glibc-only/libgpuslice.so "${RUN[@]}" --memory 1GiB -- \
	"$PROBE" "$CHUNK" "$LIMIT" >"$WORK/out2" 2>"$WORK/err2" || rc=$?
[ "$rc" -eq 1 ] || fail "a musl program without libgpuslice-musl.so: exit $rc, want 1"
[ ! -s "$WORK/out2" ] || fail "the program ran without its limits: $(cat "$WORK/out2")"
grep -q 'runs on musl' "$WORK/err2" || fail "no reason given: $(cat "$WORK/err2")"
echo "ok: without libgpuslice-musl.so the musl program is refused: $(cat "$WORK/err2")"
