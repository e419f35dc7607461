#!/usr/bin/env bash
# A copy that passed the shim's stop test just before a swap-out began is
# waited for before the memory moves (shim/gate.c: a gated call marks its
# thread as a launch does, shim/inflight.h): four threads write their own
# movable buffers with cuMemcpyHtoD_v2 without pause, and read them back
# with cuMemcpyDtoH_v2 each round, while the program is swapped out and
# in again and again; every write is found afterwards, the signature
# buffer is exact, and no copy reached an unmapped range (the sim refuses
# it). The sim makes every copy sleep 300 us inside the driver before it
# moves a byte (GPUSLICE_SIM_COPY_DELAY_NS), so a swap-out that did not
# wait for the copies already past the stop would copy out and unmap
# under them every time. The storm is storm.py's.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import os, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from storm import *

run("copies", args=["copy"], env={"GPUSLICE_SIM_COPY_DELAY_NS": "300000"},
    what="copies")
print("ok")
PY
