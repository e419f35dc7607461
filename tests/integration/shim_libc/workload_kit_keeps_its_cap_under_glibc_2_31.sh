#!/usr/bin/env bash
# workload_kit_keeps_its_cap_under_glibc_2_31: libgpuslice.so as built here
# loads under an older glibc, Debian bullseye's 2.31 (the glibc of Ubuntu
# 20.04-era images), and enforces the memory cap there. The workload kit's
# gs-alloc and the sim's libcuda.so.1 are built against the bullseye root
# (bullseye.sh) and run by the root's own ld.so under `gpuslice run`:
# every allocation API tried stops at the cap with
# CUDA_ERROR_OUT_OF_MEMORY and sees the cap as the device's size, while
# the same program without the shim grows past it. Skips (77) when the
# root cannot be bootstrapped.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../shim/lib.sh" "$1"
. "$HERE/bullseye.sh"

sim_up
bullseye_root
bullseye_build

# The environment is what it claims: glibc 2.31, and a program built on
# this machine needs a newer one there.
"$LDSO" --library-path "$LIBPATH" "$ROOT/lib/x86_64-linux-gnu/libc.so.6" |
	head -n 1 | grep -q 'release version 2\.31' ||
	fail "the bullseye root's libc is not glibc 2.31"
if "$LDSO" --library-path "$LIBPATH" "$B/bin/gs-alloc" --help >/dev/null 2>&1; then
	fail "this machine's gs-alloc runs under the root's glibc: the root is not older than the build's glibc"
fi

BL=("$LDSO" --library-path "$LIBPATH:$BBIN")
CAP=$((1024 * 1024 * 1024))

# Without the shim the program grows to its limit: the cap below is the
# shim's doing.
out=$("${BL[@]}" "$BBIN/gs-alloc" --api plain --chunk 128MiB --limit 2GiB)
jcheck "$out" 'd["error"] is None and d["allocated_bytes"] == 2 << 30'

for api in plain vmm managed; do
	"${RUN[@]}" --memory 1GiB -- "${BL[@]}" "$BBIN/gs-alloc" --api "$api" \
		--chunk 128MiB --limit 2GiB >"$WORK/out.$api" 2>"$WORK/err.$api" ||
		fail "gs-alloc --api $api under the shim exited $?: $(cat "$WORK/err.$api")"
	if grep -q 'cannot be preloaded' "$WORK/err.$api"; then
		fail "bullseye's ld.so ignored the shim: $(cat "$WORK/err.$api")"
	fi
	out=$(last_json "$WORK/out.$api")
	jcheck "$out" "d['error'] == 'CUDA_ERROR_OUT_OF_MEMORY' and 0 < d['allocated_bytes'] <= $CAP"
	jcheck "$out" "d['total_bytes'] == $CAP"
	echo "ok: --api $api under glibc 2.31 stopped at $(jget "$out" allocated_bytes) of a $CAP-byte cap"
done
