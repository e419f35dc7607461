#!/usr/bin/env bash
# A launch that passed the shim's stop test just before a swap-out began
# is waited for before the memory moves (shim/swap.c, "Launches and the
# stop"): four threads launch kernels without pause into their own movable
# buffers (three launch entry points) while the program is swapped out
# and in again and again, and every kernel's write is found afterwards,
# the signature buffer is exact, and no kernel ran on unmapped memory
# (the sim faults such a kernel, sim/cuda/swapcheck.c). The sim makes
# every launch sleep 300 us inside the driver before it queues its kernel
# (GPUSLICE_SIM_LAUNCH_DELAY_NS), so a swap-out that did not wait for the
# launches already past the stop would copy and unmap under them every
# time. Once on the fast path (no compute limit) and once on the lease
# path (--compute 50). The storm is storm.py's.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import os, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from storm import *

delay = {"GPUSLICE_SIM_LAUNCH_DELAY_NS": "300000"}
run("fast path", env=delay)
run("lease path", extra=["--compute", "50"], env=delay)
print("ok")
PY
