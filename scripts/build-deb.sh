#!/usr/bin/env bash
# build-deb.sh - builds the Debian packages (debian/): gpuslice,
# gpuslice-slurm, gpuslice-kubernetes.
#
#   scripts/build-deb.sh [--force] [--no-lintian]
#
# Builds once per input: the packages land in
# ${GS_CACHE:-~/.cache/gpuslice}/deb-<hash>, <hash> being the SHA-256 of
# every tracked or new (not ignored) file that goes into the packages
# (not tests/, docs/, deploy/image/ or the GPU-check scripts), and of the
# CUDA headers' version; a second run with the same inputs only prints
# that directory, and only the three newest such directories are kept. The build runs in a copy of the tree (the work tree
# gains no obj-*/ or debian/<package>/), with DEB_BUILD_OPTIONS=nocheck:
# the tests are ctest's. lintian's report is written to lintian.txt there.
#
# Prints the directory holding the .deb files on its last line. Exit 0
# built or cached; 1 the build failed (its log is kept in the cache as
# build-failed.log); 2 usage; 77 a tool it needs is missing (said why).
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FORCE=0
LINTIAN=1
for a in "$@"; do
	case $a in
	--force) FORCE=1 ;;
	--no-lintian) LINTIAN=0 ;;
	-h | --help)
		sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "build-deb: unknown argument $a" >&2
		exit 2
		;;
	esac
done
for t in dpkg-buildpackage dh cmake git sha256sum; do
	command -v "$t" >/dev/null || {
		echo "build-deb: $t is not installed (scripts/deps.sh installs it)" >&2
		exit 77
	}
done
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
[ -f "$CUDA_HOME/include/cuda.h" ] || {
	echo "build-deb: no $CUDA_HOME/include/cuda.h (set CUDA_HOME)" >&2
	exit 77
}

cd "$SRC"
files() {
	git ls-files -z -co --exclude-standard |
		grep -zv -e '^tests/' -e '^docs/' -e '\.md$' -e '^deploy/image/' \
			-e '^scripts/gpu-' -e '^bench/README' -e '^\.gitignore$' |
		sort -z
}
hash=$({
	files | while IFS= read -r -d '' f; do
		[ -f "$f" ] || continue
		printf '%s\n' "$f"
		sha256sum <"$f"
	done
	grep -m1 'define CUDA_VERSION' "$CUDA_HOME/include/cuda.h"
} | sha256sum | cut -c1-16)
CACHE=${GS_CACHE:-$HOME/.cache/gpuslice}
OUT=$CACHE/deb-$hash
if [ "$FORCE" = 0 ] && ls "$OUT"/gpuslice_*.deb >/dev/null 2>&1; then
	echo "build-deb: cached (inputs $hash)" >&2
	echo "$OUT"
	exit 0
fi

mkdir -p "$CACHE"
TMP=$(mktemp -d "$CACHE/.deb-build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/gpuslice"
files | tar -C "$SRC" --null -T - -cf - | tar -C "$TMP/gpuslice" -xf -
echo "build-deb: building (inputs $hash) in $TMP" >&2
jobs=$(nproc 2>/dev/null || echo 2)
if ! (cd "$TMP/gpuslice" &&
	CUDA_HOME=$CUDA_HOME DEB_BUILD_OPTIONS="nocheck parallel=$jobs" \
		dpkg-buildpackage -b -us -uc) >"$TMP/build.log" 2>&1; then
	mkdir -p "$OUT"
	cp "$TMP/build.log" "$OUT/build-failed.log"
	echo "build-deb: dpkg-buildpackage failed; log: $OUT/build-failed.log" >&2
	tail -20 "$TMP/build.log" >&2
	exit 1
fi
mkdir -p "$TMP/out"
mv "$TMP"/*.deb "$TMP"/*.changes "$TMP"/*.buildinfo "$TMP/out/"
cp "$TMP/build.log" "$TMP/out/build.log"
if [ "$LINTIAN" = 1 ] && command -v lintian >/dev/null; then
	(cd "$TMP/out" && lintian --info --display-info --suppress-tags-from-file /dev/null *.changes) \
		>"$TMP/out/lintian.txt" 2>&1 || true
fi
rm -rf "$OUT"
mv "$TMP/out" "$OUT"
# older builds: the three newest stay
ls -dt "$CACHE"/deb-* 2>/dev/null | tail -n +4 | while read -r old; do rm -rf "$old"; done
echo "build-deb: packages in $OUT" >&2
echo "$OUT"
