#!/usr/bin/env bash
# A process that asks for an IPC handle of its memory is pinned: every
# later swap-out is refused with the reason (naming cuIpcGetMemHandle),
# its memory stays on the GPU, and its contents are untouched. Before the
# IPC call the same process swaps out and in.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import sys
sys.path.insert(0, __import__("os").environ["GS_SRC"] + "/tests/integration/swap")
from lib import *

p = Prog()
ready = p.line()
ok, moved, ns, why, rec = p.swap("out")
ok2, _, _, _, _ = p.swap("in")
if not (ok and ok2 and moved > 0):
    fail(f"not pinned yet, the round trip should work: {why}")
p.send("ipc")
print("ipc call:", p.line())
used = sim_used()
ok, moved, ns, why, rec = p.swap("out")
print("swap out after IPC:", ok, why)
if ok or "pinned" not in why or "cuIpcGetMemHandle" not in why or "cuIpcGetMemHandle" not in rec["pinned"]:
    fail(f"a pinned process was swapped or the reason is missing: {ok} {why!r}")
if sim_used() != used:
    fail("device memory changed after a refused swap-out")
p.send("check")
chk = p.line()
if chk["bad"] != 0 or chk["chased"] != ready["expect_chased"]:
    fail(f"contents after the refusal: {chk}")
if p.close() != 0:
    fail("gs-swap-prog failed")
print("ok")
PY
