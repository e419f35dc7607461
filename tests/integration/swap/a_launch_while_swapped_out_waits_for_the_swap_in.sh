#!/usr/bin/env bash
# While its memory is swapped out, the program is stopped at its next GPU
# call: a kernel launch (and the synchronisation after it), or a copy,
# does not return until the swap-in, and then computes on the right contents. Addresses
# are the same before and after.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import sys, time
sys.path.insert(0, __import__("os").environ["GS_SRC"] + "/tests/integration/swap")
from lib import *

p = Prog()
ready = p.line()
ok, moved, ns, why, rec = p.swap("out")
if not ok or moved == 0:
    fail("swap out: " + why)
t0 = time.time()
p.send("check")  # launches the pointer-chasing kernel, then reads back
if p.readable(1.5):
    fail(f"the program ran GPU work while swapped out: {p.line()}")
ok, back, ns, why, rec = p.swap("in")
if not ok:
    fail("swap in: " + why)
chk = p.line()
waited = time.time() - t0
print(f"launch waited {waited:.2f} s for the swap-in; {chk}")
if chk["bad"] != 0 or chk["chased"] != ready["expect_chased"]:
    fail(f"after the stop: {chk}")
if waited < 1.5:
    fail(f"the launch did not wait ({waited:.2f} s)")

# A copy (no launch) is stopped the same way.
ok, moved, ns, why, rec = p.swap("out")
t0 = time.time()
p.send("read")
if p.readable(1.5):
    fail(f"the program copied from its memory while swapped out: {p.line()}")
ok2, _, _, why2, _ = p.swap("in")
rd = p.line()
print(f"copy waited {time.time() - t0:.2f} s for the swap-in; {rd}")
if not (ok and ok2) or rd["bad"] != 0 or time.time() - t0 < 1.5:
    fail(f"copy during swap-out: {ok} {ok2} {why} {why2} {rd}")
if p.close() != 0:
    fail("gs-swap-prog failed")
print("ok")
PY
