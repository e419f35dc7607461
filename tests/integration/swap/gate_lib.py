# gate_lib.py - for the swap tests of the stop at every GPU call: runs
# gs-swap-gate-prog (gate_prog.c) under `gpuslice run --swap` the way
# lib.py's Prog runs gs-swap-prog, and checks one call at a time.
import os, subprocess, time
from lib import *


class GateProg(Prog):
    def __init__(self, memory="8GiB"):
        Prog.n += 1
        self.slice = f"swapgate{Prog.n}"
        self.log = f"{WORK}/{self.slice}.shim.log"
        env = dict(os.environ, GPUSLICE_LOG="debug:" + self.log)
        cmd = [f"{B}/bin/gpuslice", "run", "--slice", self.slice,
               "--memory", memory, "--swap", "--",
               f"{B}/tests/gs-swap-gate-prog"]
        self.swap_args = []
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.swapped = 0
        self.pending = None

    def stopped_call(self, op, hold=0.5, ok=(0,)):
        """Swaps out, asks for `op`, checks it has not returned after
        `hold` s, swaps in, and checks what it returned and did."""
        good, moved, _, why, _ = self.swap("out")
        if not good or moved == 0:
            fail(f"{op}: swap out: {why}")
        t0 = time.time()
        self.send(op)
        if self.readable(hold):
            fail(f"{op} returned while the memory was out: {self.line()}")
        good, _, _, why, _ = self.swap("in")
        if not good:
            fail(f"{op}: swap in: {why}")
        ret = self.line()
        waited = time.time() - t0
        res = self.line()
        print(f"{op}: waited {waited:.2f} s, returned {ret['r']}, {res['bad']} wrong words after")
        if ret["r"] not in ok:
            fail(f"{op}: CUresult {ret['r']} (expected one of {ok})")
        if res["bad"] != 0:
            fail(f"{op}: {res['bad']} wrong words after the swap round trip")
