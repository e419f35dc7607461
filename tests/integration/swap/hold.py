# hold.py - shared by the daemon swap tests (daemon_*.sh beside it): runs
# gs-swap-hold in a daemon's slice (`gpuslice run --slice NAME`), talks to
# it over stdin/stdout, and reads the daemon's view (show, events) through
# the CLI and the API socket.
import json, os, select, subprocess, sys, time

B = os.environ["B"]
G = B + "/bin/gpuslice"
SOCK = os.environ["SOCK"]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Hold:
    def __init__(self, slice, env=None, uid=None, wait_ready=True):
        self.slice = slice
        self.log = f"{os.environ['WORK']}/{slice}.shim.log"
        e = dict(os.environ, GPUSLICE_LOG="debug:" + self.log, **(env or {}))
        # uid: run as that tenant (no groups), as the security tests do
        pre = [] if uid is None else [
            "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "env", "HOME=/"]
        if uid is not None:
            e["GPUSLICE_LOG"] = "warn"  # its log file is not its to write
        self.p = subprocess.Popen(pre + [G, "run", "--slice", slice, "--",
                                   B + "/tests/gs-swap-hold"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=e)
        if wait_ready:
            self.ready()

    def ready(self, timeout=60):
        """Waits for gs-swap-hold's first line (its context is made)."""
        r = self.line(timeout)
        if not r.get("ready"):
            fail(f"{self.slice}: gs-swap-hold did not start: {r}")

    def line(self, timeout=120):
        if not select.select([self.p.stdout], [], [], timeout)[0]:
            fail(f"{self.slice}: no answer within {timeout} s")
        l = self.p.stdout.readline()
        if not l:
            fail(f"{self.slice}: gs-swap-hold ended early")
        return json.loads(l)

    def cmd(self, c, timeout=120):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        return self.line(timeout)

    def close(self):
        self.p.stdin.close()
        return self.p.wait(timeout=60)


def show(name):
    out = subprocess.run([G, "show", name, "--json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["swap"]


def events(slice=None):
    q = "/v1/events?limit=1000" + (f"&slice={slice}" if slice else "")
    out = subprocess.run(["curl", "-sf", "--unix-socket", SOCK,
                          "http://localhost" + q], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["events"]


def wait_for(what, fn, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    fail(f"{what}: not within {timeout} s")


MIB = 1 << 20


class FileHold:
    """gs-swap-hold started by lib.sh's hold_bg: commands into its FIFO,
    answers read from its output file (the lines not read yet)."""

    def __init__(self, slice):
        self.slice = slice
        self.inp = f"{os.environ['WORK']}/{slice}.in"
        self.out = f"{os.environ['WORK']}/{slice}.out"
        self.seen = 0

    def lines(self):
        with open(self.out) as f:
            return [json.loads(l) for l in f.read().splitlines() if l]

    def line(self, timeout=120):
        t0 = time.time()
        while time.time() - t0 < timeout:
            ls = self.lines()
            if len(ls) > self.seen:
                self.seen += 1
                return ls[self.seen - 1]
            time.sleep(0.05)
        fail(f"{self.slice}: no answer within {timeout} s")

    def quiet_for(self, seconds):
        """True when no new answer came within `seconds`."""
        time.sleep(seconds)
        return len(self.lines()) == self.seen

    def send(self, c):
        with open(self.inp, "w") as f:
            f.write(c + "\n")

    def cmd(self, c, timeout=120):
        self.send(c)
        return self.line(timeout)
