#!/usr/bin/env bash
# build-image.sh - the gpuslice container image without a container daemon:
# Debian bookworm's essential packages plus the project's own .debs
# (gpuslice, gpuslice-kubernetes) bootstrapped by mmdebstrap into one
# reproducible tarball (SOURCE_DATE_EPOCH fixed by debian/changelog's
# date), written as an OCI image layout by oci-layout.py.
#
#   deploy/image/build-image.sh [--force]
#
# Builds the packages first (scripts/build-deb.sh, itself cached), then
# the image once per input into ${GS_CACHE:-~/.cache/gpuslice}/image-<hash>
# (the packages' hash and this folder's files; the two newest are kept):
# an OCI layout directory
# holding the tag gpuslice:<version>. Prints that directory on its last
# line. Push it with skopeo (docs/kubernetes.md):
#   skopeo copy oci:DIR:<version> docker://REGISTRY/gpuslice:<version>
#
# The image holds gpusliced, gpuslice, gpuslice-kubelet-plugin,
# gs-k8s-extender, the workload kit, the shim (also at the stable path
# /usr/lib/gpuslice/libgpuslice.so the DaemonSet's init container copies
# to the host) and the simulator; no NVIDIA library (the NVIDIA Container
# Toolkit mounts the driver's at run time).
#
# Exit 0 built or cached; 1 failed (log kept as build-failed.log); 77 a
# tool or the Debian archive is out of reach (said why).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
FORCE=0
[ "${1:-}" = --force ] && FORCE=1
for t in mmdebstrap python3 sha256sum; do
	command -v "$t" >/dev/null || {
		echo "build-image: $t is not installed (scripts/deps.sh installs it)" >&2
		exit 77
	}
done
[ "$(id -u)" = 0 ] || {
	echo "build-image: mmdebstrap's root mode needs root here" >&2
	exit 77
}

rc=0
DEBS=$(bash "$SRC/scripts/build-deb.sh" --no-lintian | tail -1) || rc=$?
[ "$rc" = 0 ] || exit "$rc"
version=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
epoch=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Timestamp)
hash=$({
	echo "$DEBS"
	sha256sum "$HERE/build-image.sh" "$HERE/oci-layout.py"
} | sha256sum | cut -c1-16)
CACHE=${GS_CACHE:-$HOME/.cache/gpuslice}
OUT=$CACHE/image-$hash
if [ "$FORCE" = 0 ] && [ -f "$OUT/index.json" ]; then
	echo "build-image: cached (inputs $hash)" >&2
	echo "$OUT"
	exit 0
fi
mkdir -p "$CACHE"
TMP=$(mktemp -d "$CACHE/.image-build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

debs=("$DEBS"/gpuslice_*.deb "$DEBS"/gpuslice-kubernetes_*.deb)
include=ca-certificates
for d in "${debs[@]}"; do include="$include,$d"; done
echo "build-image: bootstrapping bookworm with ${debs[*]##*/}" >&2
# Leaner: no documentation, manual pages or locales in the image.
if ! SOURCE_DATE_EPOCH=$epoch mmdebstrap --mode=root --variant=essential \
	--include="$include" \
	--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--customize-hook='mkdir -p "$1/usr/lib/gpuslice" && ln -sf "$(cd "$1" && ls usr/lib/*/libgpuslice.so | head -1 | sed "s|^usr/lib/|../|")" "$1/usr/lib/gpuslice/libgpuslice.so"' \
	--customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
	bookworm "$TMP/rootfs.tar" >"$TMP/mmdebstrap.log" 2>&1; then
	if grep -qiE 'could not resolve|failed to fetch|temporary failure|network is unreachable|connection (refused|timed out)' "$TMP/mmdebstrap.log"; then
		echo "build-image: the Debian archive is out of reach: $(grep -iE 'resolve|fetch|unreachable|connection' "$TMP/mmdebstrap.log" | head -1)" >&2
		exit 77
	fi
	mkdir -p "$OUT"
	cp "$TMP/mmdebstrap.log" "$OUT/build-failed.log"
	echo "build-image: mmdebstrap failed; log: $OUT/build-failed.log" >&2
	tail -15 "$TMP/mmdebstrap.log" >&2
	exit 1
fi
python3 "$HERE/oci-layout.py" "$TMP/rootfs.tar" "$TMP/oci" "$version" "$epoch"
rm -rf "$OUT"
mv "$TMP/oci" "$OUT"
ls -dt "$CACHE"/image-* 2>/dev/null | tail -n +3 | while read -r old; do rm -rf "$old"; done
echo "build-image: gpuslice:$version in $OUT ($(du -sh "$OUT" | cut -f1))" >&2
echo "$OUT"
