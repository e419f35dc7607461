#!/usr/bin/env bash
# A program on a slice run with --swap, swapped with `gpuslice swap`, allocates small and large buffers
# (packed into shared chunks, or a chunk of their own) with signatures and
# stores a device pointer inside a device buffer. cuMemGetAddressRange and
# cuPointerGetAttribute answer each allocation's own base and size. After
# a swap-out the sim's device memory in use drops by what was moved; after
# the swap-in every signature reads back, a kernel following the stored
# pointer reads the right word, and freeing everything returns the device
# memory. The host copies are held only while swapped out: the swap-in
# gives back as many bytes of them as it moved (the shim's debug log).
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import sys
sys.path.insert(0, __import__("os").environ["GS_SRC"] + "/tests/integration/swap")
from lib import *

base = sim_used()
p = Prog()
ready = p.line()
if not ready["range_ok"]:
    fail(f"address range or range attribute not the allocation's own: {ready}")
chk = (p.send("check"), p.line())[1]
if chk["bad"] != 0 or chk["chased"] != ready["expect_chased"]:
    fail(f"before any swap: {chk}")
before = sim_used()
ok, moved, ns, why, rec = p.swap("out")
if not ok:
    fail("swap out: " + why)
after = sim_used()
print(f"swapped out {moved} bytes in {ns * 1e3:.2f} ms; sim used {before} -> {after}; record {rec}")
if rec["swap_outs"] != 1 or rec["swapped_bytes"] != moved:
    fail(f"the slice's swap record does not say what moved: {rec}")
# The buffers: 11 MiB large ones in chunks of their own (4 + 8 MiB) and
# one 2 MiB chunk that holds all nine small ones (packed).
if moved != 14 << 20 or before - after != moved:
    fail(f"device memory should drop by what was moved ({moved}): {before} -> {after}")
ok, back, ns, why, rec = p.swap("in")
if not ok or back != moved or rec["swapped_bytes"] != 0 or rec["swap_ins"] != 1:
    fail(f"swap in: {ok} {back} {why} {rec}")
if sim_used() != before:
    fail(f"after swap-in, device memory {sim_used()} != {before}")
import re
given = [int(m) for m in re.findall(r"swap in: (\d+) bytes of host copies given back", open(p.log).read())]
if given != [moved]:
    fail(f"the swap-in should give back {moved} bytes of host copies; the shim's log says {given}")
chk = (p.send("check"), p.line())[1]
if chk["bad"] != 0 or chk["chased"] != ready["expect_chased"]:
    fail(f"after the round trip: {chk}")
p.send("free"); p.line()
ok, moved, ns, why, rec = p.swap("out")  # nothing left to move
if not ok or moved != 0:
    fail(f"a swap-out with nothing allocated: {ok} {moved} {why}")
if p.close() != 0:
    fail("gs-swap-prog failed")
if sim_used() != base:
    fail(f"device memory after exit {sim_used()} != {base} before")
print("ok")
PY
