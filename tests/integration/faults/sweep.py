#!/usr/bin/env python3
"""sweep.py - drives every error path of gpusliced's slice creation,
deletion, MIG changes and restart, SQLite-style: for each injection site
(GPUSLICE_FAULT, include/gs/faultinj.h) and N = 1, 2, ..., a fresh daemon
whose Nth call of that site fails runs the same script of requests; then a
daemon without faults is started on the same state, and what it holds
must be exactly what was acknowledged: every request that succeeded is
there, every one that failed left nothing behind (no slice, no region
entry, no MIG instance made for it). The daemon must also answer
/healthz after every failure. N grows until a run no longer hits the
site (the script never reached its Nth call).

usage: sweep.py BUILD_DIR WORK_DIR [SITE...]
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time

B, WORK = sys.argv[1], sys.argv[2]
SITES = sys.argv[3:] or [
    "sqlite.write", "sqlite.exec", "region.write", "alloc.write",
    "nvmlDeviceSetMigMode", "nvmlDeviceCreateGpuInstanceWithPlacement",
    "nvmlGpuInstanceCreateComputeInstance", "nvmlComputeInstanceDestroy",
    "nvmlGpuInstanceDestroy",
]
MAX_N = 40
G = os.path.join(B, "bin", "gpuslice")
D = os.path.join(B, "bin", "gpusliced")

# The script: (method, path, body, effect on the expected set of slices)
SCRIPT = [
    ("POST", "/v1/slices", {"name": "a", "memory": "1GiB"}, ("add", "a")),
    ("POST", "/v1/slices", {"name": "b", "memory": "2GiB", "compute": 30},
     ("add", "b")),
    ("DELETE", "/v1/slices/a", None, ("del", "a")),
    ("POST", "/v1/slices", {"name": "m", "mode": "mig",
                            "mig-profile": "1g.10gb", "gpu": 1},
     ("add", "m")),
    ("POST", "/v1/slices", {"name": "c", "memory": "1GiB"}, ("add", "c")),
    ("DELETE", "/v1/slices/m", None, ("del", "m")),
    ("POST", "/v1/slices", {"name": "m2", "mode": "mig",
                            "mig-profile": "1g.10gb", "gpu": 1},
     ("add", "m2")),
    ("DELETE", "/v1/slices/m2", None, ("del", "m2")),
    # The planner destroys the idle 1g instance to make room.
    ("POST", "/v1/slices", {"name": "big", "mode": "mig",
                            "mig-profile": "7g.80gb", "gpu": 1},
     ("add", "big")),
]


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(self.path)
        self.sock = s


def call(sock, method, path, body=None):
    c = UnixHTTP(sock)
    hdr = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, json.dumps(body) if body is not None else None,
              hdr)
    r = c.getresponse()
    data = r.read()
    c.close()
    try:
        return r.status, json.loads(data or b"null")
    except ValueError:
        return r.status, data.decode(errors="replace")


class Daemon:
    def __init__(self, run, fault):
        self.sock = os.path.join(run, "run", "api.sock")
        env = dict(os.environ)
        env.pop("GPUSLICE_FAULT", None)
        if fault:
            env["GPUSLICE_FAULT"] = fault
        env["GPUSLICE_SIM_DIR"] = os.path.join(run, "sim")
        # The model's invariants checked after every mutation (aborts).
        env["GPUSLICE_CHECK_INVARIANTS"] = "1"
        self.log = open(os.path.join(run, "daemon.log"), "ab")
        self.p = subprocess.Popen(
            [D, "--state-dir", os.path.join(run, "state"), "--socket",
             self.sock, "--gpus", "sim"], env=env, stdout=self.log,
            stderr=subprocess.STDOUT)
        self.started = False
        for _ in range(200):
            if self.p.poll() is not None:
                return
            try:
                if call(self.sock, "GET", "/healthz")[0] == 200:
                    self.started = True
                    return
            except OSError:
                pass
            time.sleep(0.05)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


def sim_instances(run):
    env = dict(os.environ, GPUSLICE_SIM_DIR=os.path.join(run, "sim"))
    out = subprocess.run([G, "sim", "status", "--json", "--dir",
                          os.path.join(run, "sim")], env=env,
                         capture_output=True, text=True, check=True).stdout
    d = json.loads(out)
    return sum(len(g.get("mig_instances") or []) for g in d["gpus"])


def fail(msg, run):
    sys.stderr.write("FAIL: %s\n" % msg)
    try:
        with open(os.path.join(run, "daemon.log"), errors="replace") as f:
            sys.stderr.write("--- daemon log (tail) ---\n" +
                             "".join(f.readlines()[-30:]))
    except OSError:
        pass
    sys.exit(1)


def one(site, n):
    run = os.path.join(WORK, "%s-%d" % (site, n))
    os.makedirs(run)
    subprocess.run([G, "sim", "init", "--gpus", "2xH100-SXM5-80GB", "--dir",
                    os.path.join(run, "sim")], check=True,
                   stdout=subprocess.DEVNULL)
    d = Daemon(run, "%s:%d" % (site, n))
    expected, failures, mig_deletes = set(), 0, 0
    if not d.started:
        # A failure while starting: the daemon must say so and exit
        # non-zero, never serve an empty or half-made state.
        rc = d.p.wait(10)
        d.log.close()
        if rc == 0:
            fail("%s:%d: the daemon exited 0 without serving" % (site, n), run)
        with open(os.path.join(run, "daemon.log"), errors="replace") as f:
            if "injected" not in f.read():
                fail("%s:%d: the daemon did not say why it stopped"
                     % (site, n), run)
        failures = 1
    else:
        for method, path, body, (op, name) in SCRIPT:
            st, resp = call(d.sock, method, path, body)
            if 200 <= st < 300:
                if op == "add":
                    expected.add(name)
                else:
                    expected.discard(name)
                    mig_deletes += name.startswith("m")
            else:
                failures += 1
                if not isinstance(resp, dict) or "error" not in resp:
                    fail("%s:%d: %s %s answered %d without an error "
                         "object: %r" % (site, n, method, path, st, resp),
                         run)
            hs, _ = call(d.sock, "GET", "/healthz")
            if hs != 200:
                fail("%s:%d: /healthz %d after %s %s" % (site, n, hs,
                                                        method, path), run)
            # What the running daemon shows is what it acknowledged.
            ls, lst = call(d.sock, "GET", "/v1/slices")
            live = {s["name"] for s in lst["slices"]} if ls == 200 else None
            if live != expected:
                fail("%s:%d: after %s %s the daemon shows %s, acknowledged %s"
                     % (site, n, method, path, sorted(live or []),
                        sorted(expected)), run)
        d.stop()
    # A daemon without faults on the same state: exactly what was
    # acknowledged, and no MIG instance that no slice holds.
    d2 = Daemon(run, None)
    if not d2.started:
        fail("%s:%d: the daemon does not start again after the faults"
             % (site, n), run)
    st, lst = call(d2.sock, "GET", "/v1/slices")
    got = {s["name"] for s in lst["slices"]}
    if got != expected:
        d2.stop()
        fail("%s:%d: after a restart: %s, acknowledged %s" %
             (site, n, sorted(got), sorted(expected)), run)
    for s in lst["slices"]:
        if s.get("state") not in ("ready", "pending"):
            d2.stop()
            fail("%s:%d: slice %s is %s after the restart" %
                 (site, n, s["name"], s.get("state")), run)
    n_mig_slices = len([s for s in lst["slices"]
                        if str(s.get("mode", "")).startswith("mig")])
    d2.stop()
    # A deleted MIG slice leaves its instance idle for the next one (by
    # design: creating instances is slow): at most one idle instance per
    # acknowledged delete of a MIG slice; a failed request adds none.
    n_inst = sim_instances(run)
    if n_inst > n_mig_slices + mig_deletes:
        fail("%s:%d: %d MIG instances on the node, %d MIG slices, %d "
             "MIG slices deleted" % (site, n, n_inst, n_mig_slices,
                                     mig_deletes), run)
    with open(os.path.join(run, "daemon.log"), errors="replace") as f:
        fired = "fault injected: %s call %d" % (site, n) in f.read()
    shutil.rmtree(run, ignore_errors=True)
    return failures, fired


def main():
    total = 0
    for site in SITES:
        hit = 0
        fired_any = False
        for n in range(1, MAX_N + 1):
            f, fired = one(site, n)
            total += 1
            if not fired:
                break  # the script no longer reaches the Nth call
            fired_any = True
            hit += f > 0
        if not fired_any:
            sys.stderr.write("FAIL: %s: the script never reaches this "
                             "site\n" % site)
            sys.exit(1)
        print("ok: %-44s fired in %2d run(s), %2d failed a request or "
              "the start; state exact after each" % (site, n - (not fired),
                                                     hit), flush=True)
    print("ok: %d runs" % total)


main()
