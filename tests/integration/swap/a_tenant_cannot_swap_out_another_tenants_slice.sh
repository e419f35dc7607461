#!/usr/bin/env bash
# Issue #27: a tenant cannot trigger another tenant's swap-out beyond
# what the policy allows. Alice's low-priority slice holds 1 GiB of a
# simulated 24 GiB GPU that a swap: never slice of root's otherwise fills.
# Mallory, with her own hands on her own owner file (gs-swap-need-forge):
#   1. posts a need of 1 GiB claiming root's high-priority slice: the
#      daemon does not even list it (her file does not serve that slice):
#      Alice keeps her memory and root's slice gets no event;
#   2. posts a need of 1 GiB for her own slice, more than its books hold:
#      not believed (an event says so), Alice keeps her memory.
# Then root's high-priority slice allocating for real does get Alice's
# memory: the policy allows that, so the setup could move it.
# Needs root and setpriv (../security/lib.sh); skipped otherwise.
. "$(dirname "$0")/tenants_lib.sh" "$1"
NEED_FORGE=$B/tests/gs-swap-need-forge
[ -x "$NEED_FORGE" ] && [ -x "$B/tests/gs-swap-hold" ] ||
	{ echo "SKIP: no gs-swap-need-forge or gs-swap-hold in this build"; exit 77; }
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no sim libcuda"; exit 77; }
tenants_swap_node
export B WORK SOCK GS_SRC=$SRC BALLAST_MIB ALICE MALLORY NEED_FORGE RUNDIR
python3 - <<'PY'
import json, os, subprocess, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
alice, mallory = int(os.environ["ALICE"]), int(os.environ["MALLORY"])

def as_mallory(*cmd):
    return subprocess.run(["setpriv", f"--reuid={mallory}", f"--regid={mallory}",
                           "--clear-groups", "env", "HOME=/"] + list(cmd),
                          capture_output=True, text=True)

def region_of(name):
    out = subprocess.run([G, "show", name, "--json"], capture_output=True,
                         text=True, check=True).stdout
    r = json.loads(out)["region"]
    return r["slot"], r["generation"]

bl = Hold("ballast")
if bl.cmd(f"alloc {os.environ['BALLAST_MIB']} 20")["err"] != 0:
    fail("ballast")
al = Hold("al", uid=alice)
r = al.cmd("alloc 1024 64")
if r["alloc"] != 1024:
    fail(f"al: {r}")
mal = Hold("mal", uid=mallory)  # her owner file and a context on its books

def forge(slot, gen, what):
    f = subprocess.Popen(["setpriv", f"--reuid={mallory}", f"--regid={mallory}",
                          "--clear-groups", os.environ["NEED_FORGE"],
                          os.environ["RUNDIR"], str(slot), str(gen),
                          str(1 << 30), "4"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = f.communicate(timeout=30)
    if f.returncode != 0 or "posted" not in out:
        fail(f"Mallory could not write her own owner file ({what}): {out} {err}")
    print(what, out.strip())

slot, gen = region_of("rh")
forge(slot, gen, "a need claiming root's high-priority slice:")
sw = show("al")
if sw["swap_outs"] != 0:
    fail(f"a forged need for another owner's slice swapped Alice out: {sw}")
if [e for e in events("rh") if e["type"].startswith("swap.")]:
    fail(f"the daemon served a need Mallory's file cannot speak for: {events('rh')}")

slot, gen = region_of("mal")
forge(slot, gen, "a need of more than her books hold:")
sw = show("al")
if sw["swap_outs"] != 0:
    fail(f"Mallory's inflated need swapped Alice out: {sw}")
ev = wait_for("a refusal of Mallory's need",
              lambda: [e for e in events("mal") if e["type"] == "swap.refused"], 10)
print(" ", ev[0]["message"])
if "more than its books hold" not in ev[0]["message"]:
    fail(f"the refusal does not say why: {ev}")

# What the policy does allow: a real high-priority allocation.
rh = Hold("rh")
r = rh.cmd("alloc 512 64", timeout=120)
if r["alloc"] != 512 or r["err"] != 0:
    fail(f"root's high-priority slice did not get memory: {r}")
if show("al")["swap_outs"] != 1:
    fail(f"the policy's own swap-out of Alice's slice did not happen: {show('al')}")
# Alice (low priority) comes back once root's slice leaves.
rh.close()
if al.cmd("check", timeout=120)["bad"] != 0:
    fail("Alice's contents")
print("ok")
PY
