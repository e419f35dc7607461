#!/usr/bin/env bash
# shim_needs_nothing_newer_than_glibc_2_17: libgpuslice.so must load under
# every glibc from 2.17 on (CentOS 7, UBI 8, Ubuntu 20.04, Amazon Linux 2),
# or ld.so ignores the LD_PRELOAD and the workload runs unlimited. Reads
# the versions of the symbols it imports (objdump -T) and of the version
# needs (readelf -V), and fails naming every symbol bound to a GLIBC
# version newer than 2.17 (shim/libc_compat.c pins old versions). The musl
# build, when there is one, must need no glibc version at all.
set -euo pipefail

B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
SO=$B/lib/libgpuslice.so
MUSL=$B/lib/libgpuslice-musl.so
command -v objdump >/dev/null || { echo "SKIP: objdump (binutils) missing"; exit 77; }
# libc_compat.c pins x86_64's versions; other architectures are not built
# for old glibc yet.
[ "$(uname -m)" = x86_64 ] || { echo "SKIP: the glibc floor is pinned for x86_64 only"; exit 77; }
[ -e "$SO" ] || { echo "FAIL: $SO not built" >&2; exit 1; }

# "NAME VERSION" for every imported symbol with a GLIBC_ version newer
# than 2.17, from objdump -T's "(GLIBC_x.y[.z]) NAME" columns.
newer() {
	objdump -T "$1" | awk '
		/\*UND\*/ && match($0, /GLIBC_[0-9]+\.[0-9]+(\.[0-9]+)?/) {
			v = substr($0, RSTART + 6, RLENGTH - 6)
			split(v, p, ".")
			if (p[1] + 0 > 2 || (p[1] + 0 == 2 && p[2] + 0 > 17))
				print $NF " GLIBC_" v
		}' | sort -u
}

bad=$(newer "$SO")
if [ -n "$bad" ]; then
	echo "FAIL: libgpuslice.so imports symbols newer than GLIBC_2.17 (add them to GS_GLIBC_FLOOR in shim/libc_compat.c):" >&2
	echo "$bad" >&2
	exit 1
fi
# The version needs too (a need without a symbol would still be checked
# by an old ld.so).
needs=$(readelf -V "$SO" | awk '/Name: GLIBC_/ { for (i = 1; i <= NF; i++) if ($i ~ /^GLIBC_[0-9]/) print $i }' | sort -u)
for v in $needs; do
	n=${v#GLIBC_}
	IFS=. read -r maj min _ <<<"$n"
	if [ "$maj" -gt 2 ] || { [ "$maj" -eq 2 ] && [ "$min" -gt 17 ]; }; then
		echo "FAIL: libgpuslice.so needs version $v (readelf -V)" >&2
		exit 1
	fi
done
[ -n "$needs" ] || { echo "FAIL: no GLIBC version needs read from $SO: the check reads nothing" >&2; exit 1; }
# Before glibc 2.34 the dl* and pthread_* functions it pins lived in these.
for lib in libpthread.so.0 libdl.so.2; do
	objdump -p "$SO" | grep -q "NEEDED *$lib" ||
		{ echo "FAIL: libgpuslice.so does not list $lib as needed: glibc < 2.34 would not find its pinned symbols" >&2; exit 1; }
done
echo "ok: libgpuslice.so needs at most $(echo "$needs" | sort -V | tail -1)"

if [ -e "$MUSL" ]; then
	if objdump -T "$MUSL" | grep -q 'GLIBC_'; then
		echo "FAIL: libgpuslice-musl.so imports glibc-versioned symbols:" >&2
		objdump -T "$MUSL" | grep 'GLIBC_' >&2
		exit 1
	fi
	objdump -p "$MUSL" | grep -q 'NEEDED *libc.so$' ||
		{ echo "FAIL: libgpuslice-musl.so does not need musl's libc.so" >&2; exit 1; }
	echo "ok: libgpuslice-musl.so is linked against musl only"
fi
