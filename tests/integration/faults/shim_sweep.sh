#!/usr/bin/env bash
# Runs shim_sweep.py (see its header) in a scratch directory.
set -euo pipefail
B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no simulated CUDA driver"; exit 77; }
[ -e "$B/lib/libgpuslice.so" ] || { echo "SKIP: no libgpuslice.so"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-shimfaults.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset GPUSLICE_RUN_DIR GPUSLICE_SOCKET GPUSLICE_FAULT GPUSLICE_FAULT_COUNTS \
      GPUSLICE_SIM_DIR GPUSLICE_SLICE GPUSLICE_LOG || true
python3 "$(dirname "$0")/shim_sweep.py" "$B" "$WORK"
