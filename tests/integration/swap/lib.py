# lib.py - shared by the swap tests (tests/integration/swap/*.sh): runs
# gs-swap-prog under `gpuslice run --swap` on the sim set up by the shell
# test, talks to it over its stdin/stdout and to the shim's internal swap
# test hook (GPUSLICE_SWAP_TEST_FIFO, shim/swap.c), and reads the sim's
# device memory use.
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
    def __init__(self, swap=True, memory="8GiB", slice=None, env=None,
                 bulk_mib=0):
        self.fifo = f"{WORK}/swap.fifo"
        if not os.path.exists(self.fifo):
            os.mkfifo(self.fifo)
        env = dict(os.environ, GPUSLICE_SWAP_TEST_FIFO=self.fifo, **(env or {}))
        cmd = [f"{B}/bin/gpuslice", "run", "--memory", memory]
        if slice:
            cmd += ["--slice", slice]
        if swap:
            cmd.append("--swap")
        cmd += ["--", f"{B}/tests/gs-swap-prog"]
        if bulk_mib:
            cmd.append(str(bulk_mib))
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        self.replies = 0

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

    def ask(self, verb):
        """Asks the shim to swap out or in, without waiting."""
        with open(self.fifo, "w") as f:
            f.write(verb + "\n")

    def swap(self, verb, timeout=60):
        """Asks the shim to swap out or in; returns (ok, bytes, ns, why)."""
        self.ask(verb)
        return self.answer(timeout)

    def answer(self, timeout=60, verb=""):
        rp = self.fifo + ".reply"
        t0 = time.time()
        while time.time() - t0 < timeout:
            if os.path.exists(rp):
                lines = open(rp).read().splitlines()
                if len(lines) > self.replies:
                    r = lines[self.replies].split()
                    self.replies += 1
                    if r[1] != "ok":
                        return False, 0, 0, " ".join(r[2:])
                    return True, int(r[2]), int(r[3]), ""
            time.sleep(0.02)
        fail(f"no answer to a swap request in {timeout} s")

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
