#!/usr/bin/env bash
# Runs sweep.py (see its header) in a scratch directory.
set -euo pipefail
B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
[ -e "$B/sim/libnvidia-ml.so.1" ] || { echo "SKIP: no simulated NVML"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-faults.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset GPUSLICE_RUN_DIR GPUSLICE_SOCKET GPUSLICE_FAULT || true
python3 "$(dirname "$0")/sweep.py" "$B" "$WORK"
