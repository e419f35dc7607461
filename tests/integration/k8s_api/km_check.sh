#!/usr/bin/env bash
# km_check.sh FILE: checks the resource.k8s.io/v1 objects in FILE (a JSON
# array) against the validators kubernetes-models generates from the
# upstream OpenAPI (km_check.mjs). The package is installed once with npm
# into ~/.cache/gpuslice/kubernetes-models-<version> (outside the clone);
# exit 77 with the reason when node/npm or the package cannot be had.
# GS_KM_VERSION picks the package version (default below).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VER=${GS_KM_VERSION:-5.1.0}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/gpuslice/kubernetes-models-$VER
command -v node >/dev/null && command -v npm >/dev/null ||
	{ echo "SKIP: node and npm are not installed (scripts/deps.sh installs them)"; exit 77; }
if [ ! -f "$CACHE/node_modules/kubernetes-models/package.json" ]; then
	mkdir -p "$CACHE" || { echo "SKIP: cannot create $CACHE"; exit 77; }
	if ! timeout 180 npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error \
		"kubernetes-models@$VER" >"$CACHE.log" 2>&1; then
		echo "SKIP: npm could not install kubernetes-models@$VER: $(tail -1 "$CACHE.log")"
		exit 77
	fi
fi
# ESM resolves packages from the script's directory upwards: run a copy
# placed in the cache.
cp "$HERE/km_check.mjs" "$CACHE/km_check.mjs"
node "$CACHE/km_check.mjs" "$1"
