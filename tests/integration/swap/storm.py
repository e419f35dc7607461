# storm.py - the swap race tests' storm (launch_storm_prog.c): four
# threads of gs-swap-launch-storm write into their own movable buffers
# without pause (by launches, or by copies with its "copy" argument) while
# the test swaps the program out and in ROUNDS times; then every write
# must be found, the signature buffer exact, and no call failed. The sim
# is asked to delay each launch or copy inside the driver (env), so that
# a swap-out that did not wait for the calls already past the shim's stop
# would copy and unmap under them every time.
import os, subprocess, time

from lib import *

ROUNDS = 12


class Storm(Prog):
    def __init__(self, extra, args, env):
        Prog.n += 1
        self.slice = f"storm{Prog.n}"
        self.log = f"{WORK}/{self.slice}.shim.log"
        env = dict(os.environ, GPUSLICE_LOG="debug:" + self.log, **env)
        cmd = [f"{B}/bin/gpuslice", "run", "--slice", self.slice,
               "--memory", "8GiB", "--swap"] + extra + [
               "--", f"{B}/tests/gs-swap-launch-storm", "4"] + args
        self.swap_args = []
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.swapped = 0
        self.pending = None


def run(path, extra=(), args=(), env=None, what="launches"):
    """One storm: `extra` for `gpuslice run`, `args` after the thread
    count, `env` for the sim; `what` names the writes in messages."""
    p = Storm(list(extra), list(args), env or {})
    try:
        storm(p, path, what)
    finally:
        # A failed check leaves the program stopped for good (swapped out,
        # or its swap-in refused): end it and `gpuslice run`.
        if p.p.poll() is None:
            subprocess.run(["kill", "-9", str(p.prog_pid())])
            p.p.kill()
            p.p.wait()


def storm(p, path, what):
    if not p.line().get("ready"):
        fail(f"{path}: gs-swap-launch-storm did not start")
    time.sleep(0.3)  # the threads are writing
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
    print(f"{path}: {outs} swap round trips in {time.time() - t0:.1f} s under {res['launches']} {what} ({res['rounds']} checked rounds): {res}")
    if res["errors"] != 0:
        fail(f"{path}: {res['errors']} failed calls, the first CUresult {res['first_error']} (700: a kernel ran on unmapped memory; 1: a copy reached an unmapped range)")
    if res["bad"] != 0:
        fail(f"{path}: {res['bad']} writes or signature words lost across the swaps")
    if res["rounds"] < ROUNDS:
        fail(f"{path}: only {res['rounds']} rounds checked: the {what} did not race the swaps")
    if p.close() != 0:
        fail(f"{path}: gs-swap-launch-storm failed")
