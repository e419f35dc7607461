#!/usr/bin/env bash
# Work queued before a swap-out is finished before the memory moves: a
# fill of a buffer and a 1.5 s kernel queued without waiting; the swap-out
# asked right after answers only once the kernel is done, and after the
# swap-in the buffer holds what the fill wrote.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import sys, time
sys.path.insert(0, __import__("os").environ["GS_SRC"] + "/tests/integration/swap")
from gate_lib import *

p = GateProg()
if not p.line().get("ready"):
    fail("gs-swap-gate-prog did not start")
p.send("drain")
t0 = time.time()
ret = p.line()
if ret["r"] != 0:
    fail(f"queueing the work: CUresult {ret['r']}")
ok, moved, _, why, _ = p.swap("out")
took = time.time() - t0
print(f"swap-out answered {took:.2f} s after the 1.5 s kernel was queued; {moved} bytes")
if not ok or moved == 0:
    fail("swap out: " + why)
if took < 1.3:
    fail(f"the swap-out did not wait for the kernel in flight ({took:.2f} s)")
ok, _, _, why, _ = p.swap("in")
if not ok:
    fail("swap in: " + why)
p.send("check_drain")
res = p.line()
if res["bad"] != 0:
    fail(f"{res['bad']} wrong words after the swap round trip")
if p.close() != 0:
    fail("gs-swap-gate-prog failed")
print("ok")
PY
