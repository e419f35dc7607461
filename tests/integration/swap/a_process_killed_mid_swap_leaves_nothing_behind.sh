#!/usr/bin/env bash
# A process killed in the middle of a swap-out (the copy slowed by the
# sim's bus model to a fraction of a GB/s), and one killed while swapped
# out: the sim's device memory is back to what it was before the program
# started, and the slice's books hold nothing and no process.
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import json, os, signal, subprocess, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from lib import *

def books(name):
    out = subprocess.run([f"{B}/tests/gs-region-probe",
                          os.environ["GPUSLICE_RUN_DIR"], name],
                         capture_output=True, text=True).stdout
    return json.loads(out)

def settle(base, name):
    t0 = time.time()
    while time.time() - t0 < 10:
        b = books(name)
        if sim_used() == base and (not b["found"] or
                                   (b["mem_used"] == 0 and b["n_procs"] == 0)):
            return b
        time.sleep(0.1)
    fail(f"after the kill: sim used {sim_used()} (was {base}), books {books(name)}")

base = sim_used()
for when in ("mid-swap-out", "swapped-out"):
    name = "killed-" + when
    # 14 MiB at 0.05 GB/s: about 0.3 s of copying.
    env = {"GPUSLICE_SIM_BUS_GBPS": "0.05"} if when == "mid-swap-out" else {}
    p = Prog(slice=name, env=env)
    p.line()
    if books(name)["mem_used"] == 0:
        fail("the slice's books hold nothing while the program runs")
    if when == "mid-swap-out":
        p.ask("out")
        time.sleep(0.1)
        if p.pending.poll() is not None:
            fail("the swap-out finished before the kill: not mid-swap")
    else:
        ok, moved, ns, why, rec = p.swap("out")
        if not ok:
            fail("swap out: " + why)
    os.kill(p.prog_pid(), signal.SIGKILL)
    p.p.wait(timeout=30)
    if p.pending is not None:
        p.pending.kill()
        p.pending.wait()
    b = settle(base, name)
    print(f"killed {when}: sim used back to {base}, books {b}")
print("ok")
PY
