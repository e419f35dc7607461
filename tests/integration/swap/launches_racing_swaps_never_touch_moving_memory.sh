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
# path (--compute 50).
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
export B WORK SIMDIR
"$PY" - <<'PY'
import os, subprocess, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from lib import *

ROUNDS = 12


class Storm(Prog):
    def __init__(self, extra):
        Prog.n += 1
        self.slice = f"storm{Prog.n}"
        self.log = f"{WORK}/{self.slice}.shim.log"
        env = dict(os.environ, GPUSLICE_LOG="debug:" + self.log,
                   GPUSLICE_SIM_LAUNCH_DELAY_NS="300000")
        cmd = [f"{B}/bin/gpuslice", "run", "--slice", self.slice,
               "--memory", "8GiB", "--swap"] + extra + [
               "--", f"{B}/tests/gs-swap-launch-storm", "4"]
        self.swap_args = []
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.swapped = 0
        self.pending = None


def run(extra, path):
    p = Storm(extra)
    try:
        storm(p, path)
    finally:
        # A failed check leaves the program stopped for good (swapped out,
        # or its swap-in refused): end it and `gpuslice run`.
        if p.p.poll() is None:
            subprocess.run(["kill", "-9", str(p.prog_pid())])
            p.p.kill()
            p.p.wait()


def storm(p, path):
    if not p.line().get("ready"):
        fail(f"{path}: gs-swap-launch-storm did not start")
    time.sleep(0.3)  # the threads are launching
    outs = 0
    t0 = time.time()
    for i in range(ROUNDS):
        ok, moved, _, why, _ = p.swap("out")
        if not ok or moved == 0:
            fail(f"{path}: swap out {i}: {why}")
        outs += 1
        time.sleep(0.02)
        ok, _, _, why, _ = p.swap("in")
        if not ok:
            fail(f"{path}: swap in {i}: {why}")
        time.sleep(0.05)
    p.send("stop")
    res = p.line()
    print(f"{path}: {outs} swap round trips in {time.time() - t0:.1f} s under {res['launches']} launches ({res['rounds']} checked rounds): {res}")
    if res["errors"] != 0:
        fail(f"{path}: {res['errors']} failed calls, the first CUresult {res['first_error']} (700: a kernel ran on unmapped memory)")
    if res["bad"] != 0:
        fail(f"{path}: {res['bad']} kernel writes or signature words lost across the swaps")
    if res["rounds"] < ROUNDS:
        fail(f"{path}: only {res['rounds']} rounds checked: the launches did not race the swaps")
    if p.close() != 0:
        fail(f"{path}: gs-swap-launch-storm failed")


run([], "fast path")
run(["--compute", "50"], "lease path")
print("ok")
PY
