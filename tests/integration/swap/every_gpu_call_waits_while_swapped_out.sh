#!/usr/bin/env bash
# While a process's memory is swapped out, every kind of GPU call it makes
# (not only launches and synchronous copies) is stopped until the swap-in,
# then does what it should on the right contents: peer, asynchronous and
# 2D copies, 16-bit and 2D memsets, event record/query/synchronise, stream
# query/wait/synchronise, context synchronise, host functions, graph
# launch and stream memory operations. Calls the sim does not implement
# (cuMemcpy2D, cuStreamWriteValue32) must still wait, then answer
# CUDA_ERROR_NOT_SUPPORTED (801) as the sim does.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import sys
sys.path.insert(0, __import__("os").environ["GS_SRC"] + "/tests/integration/swap")
from gate_lib import *

p = GateProg()
if not p.line().get("ready"):
    fail("gs-swap-gate-prog did not start")
for op in ("memcpy_peer", "memcpy_peer_async", "memcpy_dtod_async",
           "memcpy_htod_async", "memset_d16", "memset_d2d32_async",
           "event_record", "event_record_with_flags", "event_query",
           "event_synchronize", "stream_query", "stream_wait_event",
           "stream_synchronize", "ctx_synchronize", "launch_host_func",
           "graph_launch"):
    p.stopped_call(op)
for op in ("memcpy_2d", "stream_write_value"):
    p.stopped_call(op, ok=(0, 801))
if p.close() != 0:
    fail("gs-swap-gate-prog failed")
print("ok")
PY
