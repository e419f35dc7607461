# lib.py - shared by the swap tests (the shell scripts beside it): runs
# gs-swap-prog under `gpuslice run --swap --slice NAME` on the sim set up
# by the shell test, talks to it over its stdin/stdout, swaps it with
# `gpuslice swap out|in NAME`, and reads the sim's device memory use.
import json, os, subprocess, sys, time

B = os.environ["B"]
WORK = os.environ["WORK"]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def sim_used():
    out = subprocess.run([f"{B}/bin/gpuslice", "sim", "status", "--json",
                          "--dir", os.environ["SIMDIR"]],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["gpus"][0]["memory_used_bytes"]


class Prog:
    n = 0

    def __init__(self, swap=True, memory="8GiB", slice=None, env=None,
                 bulk_mib=0, run_dir=None, bulk_sparse=False):
        Prog.n += 1
        self.slice = slice or f"swapt{Prog.n}"
        self.log = f"{WORK}/{self.slice}.shim.log"
        env = dict(os.environ, GPUSLICE_LOG="debug:" + self.log,
                   **(env or {}))
        # A daemon's slice (memory=None) has its limits from the daemon.
        cmd = [f"{B}/bin/gpuslice", "run", "--slice", self.slice]
        if memory:
            cmd += ["--memory", memory]
        if swap and memory:
            cmd.append("--swap")
        self.swap_args = ["--run-dir", run_dir] if run_dir else []
        cmd += ["--", f"{B}/tests/gs-swap-prog"]
        if bulk_mib:
            cmd.append(str(bulk_mib))
            if bulk_sparse:
                cmd.append("sparse")
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.swapped = 0
        self.pending = None

    def line(self, timeout=60):
        l = self.p.stdout.readline()
        if not l:
            fail("gs-swap-prog ended early")
        d = json.loads(l)
        if "error" in d:
            fail(f"gs-swap-prog: {d}")
        return d

    def send(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()

    def ask(self, verb, timeout=60):
        """`gpuslice swap VERB SLICE`, without waiting for it."""
        self.pending = subprocess.Popen(
            [f"{B}/bin/gpuslice", "swap", verb, self.slice,
             "--timeout", str(timeout)] + self.swap_args,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def answer(self):
        """(ok, bytes moved, seconds, what stderr said, record)."""
        out, err = self.pending.communicate(timeout=600)
        rc = self.pending.returncode
        self.pending = None
        rec = json.loads(out.splitlines()[-1]) if out.strip() else {}
        moved = abs(rec.get("swapped_bytes", self.swapped) - self.swapped)
        self.swapped = rec.get("swapped_bytes", self.swapped)
        return rc == 0, moved, rec.get("seconds", 0), err.strip(), rec

    def swap(self, verb, timeout=60):
        self.ask(verb, timeout)
        return self.answer()

    def shim_times(self, verb):
        """The shim's own time per swap VERB, in ns, from its log."""
        import re
        pat = re.compile(r"swap %s: CUresult 0, (\d+) bytes in (\d+) ns" % verb)
        return [(int(m.group(1)), int(m.group(2)))
                for m in pat.finditer(open(self.log).read())]

    def readable(self, timeout):
        """Whether the program printed a line within `timeout` s."""
        import select
        return bool(select.select([self.p.stdout], [], [], timeout)[0])

    def prog_pid(self):
        """The pid of gs-swap-prog (the child of `gpuslice run`)."""
        out = subprocess.run(["pgrep", "-P", str(self.p.pid)],
                             capture_output=True, text=True).stdout.split()
        return int(out[0]) if out else self.p.pid

    def close(self):
        self.p.stdin.close()
        return self.p.wait(timeout=60)
